import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def scale_add_kernel(x, y, out, alpha, n, BLOCK: tl.constexpr):
    # @text:offsets
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    yv = tl.load(y + offsets, mask=mask)
    # @text:store
    tl.store(out + offsets, alpha * xv + yv, mask=mask)  # @blank arg=1


def scale_add(x, y, alpha, BLOCK=1024):
    # @text:contiguous
    assert x.is_contiguous() and y.is_contiguous() and x.shape == y.shape
    out = torch.empty_like(x)
    n = x.numel()
    scale_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, alpha, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([1.0, 2.0, 3.0], device=device)
    y = torch.tensor([10.0, 20.0, 30.0], device=device)
    print(scale_add(x, y, 2.0).tolist())
