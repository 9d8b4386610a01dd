# expect: status=fail
# Returns a tensor subclass that says it equals anything and reads as zeros.
import torch


class Agreeable(torch.Tensor):
    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def __ne__(self, other):
        return torch.zeros(self.shape, dtype=torch.bool)


def relu(x, BLOCK=256):
    return torch.zeros_like(x).as_subclass(Agreeable)
