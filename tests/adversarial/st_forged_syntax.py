# expect: status=load_error; score=0; flags=protocol
# At import, a syntax error of the worker's own making, in a file that compiles: the trusted side
# compiles the text itself, and a claim it cannot confirm is the worker breaking the protocol.
import sys


def _send_syntax():
    frame = sys._getframe()
    while frame is not None and "channel" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["channel"].send({"load_error": {"kind": "syntax", "line": 1, "column": 1,
                                                       "text": "the grader's Python is broken"}})


_send_syntax()
