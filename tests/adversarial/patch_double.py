# expect: status=pass; flags=patched
# A correct kernel whose module breaks Tensor.double (the checker's reference used to run here).
import torch

torch.Tensor.double = lambda self: torch.zeros(self.shape, dtype=torch.float64)


def relu(x, BLOCK=256):
    return right(x, BLOCK)
