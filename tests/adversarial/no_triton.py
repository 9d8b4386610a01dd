# expect: status=pass; flags=no_triton
# No Triton at all: torch computes the answer.
import torch


def relu(x, BLOCK=256):
    return torch.relu(x)
