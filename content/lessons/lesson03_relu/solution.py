import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def relu_kernel(x, out, n, BLOCK: tl.constexpr):
    # @text:offsets
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # @text:mask
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    # @text:store
    tl.store(out + offsets, tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL), mask=mask)  # @blank arg=1


def relu(x, BLOCK=256):
    # @text:contiguous
    assert x.is_contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([-2.0, 0.0, 3.0, -4.0, 5.0], device=device)
    torch.testing.assert_close(relu(x), torch.relu(x))
    print(relu(x).tolist())
