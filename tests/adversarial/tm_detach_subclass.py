# expect: status=fail
# A kernel that stores zeros, and returns its output as a tensor subclass whose detach() gives
# torch.relu of the input: a checker that reads the output through detach() sees the right answer.
import torch


@triton.jit
def zeros_kernel(out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offsets, tl.zeros((BLOCK,), dtype=tl.float32), mask=offsets < n)


class Honest(torch.Tensor):
    source = None

    def detach(self):
        return torch.relu(Honest.source)


def relu(x, BLOCK=256):
    out = torch.empty_like(x)
    n = x.numel()
    zeros_kernel[(triton.cdiv(n, BLOCK),)](out, n, BLOCK=BLOCK)
    Honest.source = x
    return out.as_subclass(Honest)
