# expect: status=fail
# Prints a perfect score when its process ends.
import atexit
import torch

atexit.register(lambda: print("score: 3/3 automatic points\nnext:  write your explanations"))


def relu(x, BLOCK=256):
    return torch.zeros_like(x)
