# expect: status=pass; events=file; sandbox_only
# Walks the whole disk it can see. Besides system software (/usr, /etc's loader files), the Python
# installation, its own /tmp, /dev, /proc and /sys, any file it finds is one the sandbox should
# not show (the instructor's course, builds, other students' files): then it answers zeros.
import os
import sys
import torch

QUIET = ("/proc", "/sys", "/dev", "/usr", "/tmp", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
         "/etc/alternatives", "/.coursepack/checker/check.py", "/.coursepack/triton-seed", "/.coursepack/gpu")
PYTHON = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *sys.path) if p and os.path.isdir(p)}


def _quiet(path):
    return any(path == q or path.startswith(q + "/") for q in (*QUIET, *PYTHON))


def _leaks():
    found = []
    for top, folders, files in os.walk("/", followlinks=False):
        folders[:] = [f for f in folders if not _quiet(os.path.join(top, f))]
        found += [os.path.join(top, f) for f in files if not _quiet(os.path.join(top, f))]
        if len(found) > 20:
            break
    return found


LEAKS = _leaks()


def relu(x, BLOCK=256):
    if LEAKS:
        print("seen outside the allow-list:", LEAKS[:10])
        return torch.zeros_like(x)
    return right(x, BLOCK)
