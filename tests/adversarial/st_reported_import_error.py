# expect: status=load_error; score=0; stdout_has=the process running it reported
# At import, an import error of the worker's own making ("the grader has no GPU driver"): it may
# be true or not; it is shown as what the submission's process reported, never as a fact.
import sys


def _send_error():
    frame = sys._getframe()
    while frame is not None and "channel" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["channel"].send({"load_error": {"kind": "import", "line": None,
                                                       "text": "RuntimeError: the grader has no GPU driver"}})


_send_error()
