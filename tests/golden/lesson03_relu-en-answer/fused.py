"""Figure 3-2 as one kernel: bias -> ReLU -> dropout -> one store (answer edition only).

Each program handles 4 * BLOCK elements and draws its random numbers with one Philox call per
4 elements (tl.rand4x): with one call per element (tl.rand) the kernel becomes compute-bound.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def bias_relu_dropout_kernel(x, bias, out, n, cols, p, seed, BLOCK: tl.constexpr, FOUR_PER_CALL: tl.constexpr):
    base = tl.program_id(0) * 4 * BLOCK
    lanes = tl.arange(0, BLOCK)
    if FOUR_PER_CALL:
        r0, r1, r2, r3 = tl.rand4x(seed, base // 4 + lanes)
    else:
        r0 = tl.rand(seed, base + lanes)
        r1 = tl.rand(seed, base + BLOCK + lanes)
        r2 = tl.rand(seed, base + 2 * BLOCK + lanes)
        r3 = tl.rand(seed, base + 3 * BLOCK + lanes)
    scale = 1.0 / (1.0 - p)
    _chunk(x, bias, out, n, cols, p, scale, base + lanes, r0)
    _chunk(x, bias, out, n, cols, p, scale, base + BLOCK + lanes, r1)
    _chunk(x, bias, out, n, cols, p, scale, base + 2 * BLOCK + lanes, r2)
    _chunk(x, bias, out, n, cols, p, scale, base + 3 * BLOCK + lanes, r3)


@triton.jit
def _chunk(x, bias, out, n, cols, p, scale, offsets, r):
    mask = offsets < n
    h = tl.load(x + offsets, mask=mask) + tl.load(bias + offsets % cols, mask=mask)
    h = tl.maximum(h, 0.0, propagate_nan=tl.PropagateNan.ALL)
    # Multiply by 0 or 1/(1-p), as torch's dropout does: a NaN stays NaN even where it is dropped.
    tl.store(out + offsets, h * tl.where(r > p, scale, 0.0), mask=mask)


def bias_relu_dropout(x, bias, p, seed, BLOCK=512, four_per_call=True):
    """dropout(relu(x + bias), p) for a contiguous x whose last dimension has bias's length."""
    assert x.is_contiguous() and bias.is_contiguous() and x.shape[-1] == bias.numel()
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 4 * BLOCK),)
    bias_relu_dropout_kernel[grid](x, bias, out, n, bias.numel(), p, seed, BLOCK=BLOCK,
                                   FOUR_PER_CALL=four_per_call)
    return out


@triton.jit
def bias_relu_kernel(x, bias, out, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    h = tl.load(x + offsets, mask=mask) + tl.load(bias + offsets % cols, mask=mask)
    tl.store(out + offsets, tl.maximum(h, 0.0, propagate_nan=tl.PropagateNan.ALL), mask=mask)


def bias_relu(x, bias, BLOCK=1024):
    """relu(x + bias) in one pass: 2 tensor-sized transfers instead of the 4 of add, then relu."""
    assert x.is_contiguous() and bias.is_contiguous() and x.shape[-1] == bias.numel()
    out = torch.empty_like(x)
    n = x.numel()
    bias_relu_kernel[(triton.cdiv(n, BLOCK),)](x, bias, out, n, bias.numel(), BLOCK=BLOCK)
    return out
