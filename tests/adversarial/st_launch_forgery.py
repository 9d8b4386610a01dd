# expect: status=pass; score=0; flags=torch_computes,withheld
# No kernel launched at all: torch computes the answer, and the worker's launch record gets the
# kernel's name written into it (the harness is a local of a frame above the entry's).
import sys


def relu(x, BLOCK=256):
    frame = sys._getframe()
    while frame is not None and "harness" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["harness"].launched.add("relu_kernel")
    return torch.relu(x)
