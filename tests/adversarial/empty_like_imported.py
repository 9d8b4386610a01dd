# expect: status=fail; reason=unwritten
# Takes torch.empty_like before the checker could poison it, and leaves the last element unwritten.
from torch import empty_like


def relu(x, BLOCK=256):
    out = empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(max(n - 1, 0), BLOCK),)](x, out, max(n - 1, 0), BLOCK=BLOCK)
    return out
