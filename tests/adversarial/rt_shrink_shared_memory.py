# expect: status=fail; score=0
# Shrinks every file its worker holds (the checker's shared case memory among them) to zero bytes,
# then returns zeros: with an unsealed memfd, the trusted process faulted (SIGBUS) reading the
# region, and every submission it was judging in that job lost its result.
import os

import torch


def relu(x, BLOCK=256):
    for fd in range(3, 512):
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
    return torch.zeros_like(x)
