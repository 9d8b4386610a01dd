# expect: status=pass; events=process; sandbox_only
# Leaves a child behind: a new session (out of the worker's process group, which is all the factory
# used to kill) named cp-sb-spin, spinning a core forever. sb_spin_seen looks for it.
import ctypes
import os


def _spin():
    if os.fork() == 0:
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"cp-sb-spin", 0, 0, 0)   # PR_SET_NAME
            while True:
                pass
        finally:
            os._exit(0)


_spin()


def relu(x, BLOCK=256):
    return right(x, BLOCK)
