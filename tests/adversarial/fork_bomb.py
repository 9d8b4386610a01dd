# expect: status=fail; events=process; sandbox_only
# Starts processes until the system refuses, then returns zeros.
import os
import torch


def relu(x, BLOCK=256):
    started = 0
    try:
        while started < 100000:
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "30"])
            started += 1
    except OSError:
        pass
    return torch.zeros_like(x)
