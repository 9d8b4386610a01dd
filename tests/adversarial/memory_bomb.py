# expect: status=fail
# Asks for far more memory than the limit allows.
import torch


def relu(x, BLOCK=256):
    hog = torch.empty(1 << 40, dtype=torch.uint8)   # 1 TiB
    hog.fill_(1)
    return right(x, BLOCK)
