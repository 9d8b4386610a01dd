# expect: status=fail; events=signal; sandbox_only
# Kills every other process it can see (the checker's included) and every one it may signal (-1),
# then returns zeros.
import os
import signal
import torch


def relu(x, BLOCK=256):
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()] + [os.getppid(), -1]:
        if pid not in (0, os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return torch.zeros_like(x)
