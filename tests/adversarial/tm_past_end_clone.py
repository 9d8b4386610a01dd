# expect: status=fail; reason=wrote_past_end
# Stores 7 elements past the end of the output it allocated, then returns a clone of it: the
# clone's own memory has nothing past its end, but the memory the kernel wrote does.
import torch


@triton.jit
def spilling_kernel(x, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    xv = tl.load(x + offsets, mask=offsets < n)
    tl.store(out + offsets, tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL), mask=offsets < n + 7)


def relu(x, BLOCK=256):
    out = torch.empty_like(x)
    n = x.numel()
    spilling_kernel[(triton.cdiv(n + 7, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out.clone()
