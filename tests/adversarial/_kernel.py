# Shared by the files below (copied into each at test time): lesson 3's correct kernel.
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    tl.store(out + offsets, tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL), mask=mask)


def right(x, BLOCK=256):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out
