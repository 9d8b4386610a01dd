# expect: status=fail; score=0; flags=withheld,torch_computes; fill=xv
# A WRONG fill (the input stored as it is) and, at import, a takeover of the worker from inside:
# the worker's run_one is wrapped so that every case runs the student's kernel (its launch is
# recorded) and then answers with torch.relu; the harness's own snapshot is rewritten so the
# rebinding is not reported. What the trusted side reads itself decides: the output area in the
# memory it shares with the worker holds what the kernel wrote (the cases fail), and the file is
# not the exercise with a fill (the points wait for a review, torch.relu is named).
import sys


def _take_over():
    frame = sys._getframe()
    while frame is not None and not ("channel" in frame.f_locals and "harness" in frame.f_locals):
        frame = frame.f_back
    if frame is None:
        return
    space, harness = frame.f_globals, frame.f_locals["harness"]
    original = space["run_one"]

    def run_one(torch, harness, fn, header, payload, device, path):
        def answer(x, *rest):
            fn(x, *rest)
            return torch.relu(x)
        return original(torch, harness, answer, header, payload, device, path)
    space["run_one"] = run_one
    harness.own_snapshot["run_one"] = run_one


_take_over()
