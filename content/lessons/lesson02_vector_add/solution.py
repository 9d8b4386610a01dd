import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def add_kernel(x, y, out, n, stride_x, stride_y, stride_out, BLOCK: tl.constexpr):
    # @text:pid
    pid = tl.program_id(0)
    # @text:offsets
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    # @text:mask
    mask = offsets < n
    # @text:store
    tl.store(out + offsets * stride_out, tl.load(x + offsets * stride_x, mask=mask) + tl.load(y + offsets * stride_y, mask=mask), mask=mask)  # @blank arg=1


def vector_add(x, y, BLOCK=1024):
    # @text:inputs
    assert x.dim() == 1 and x.shape == y.shape and x.dtype == y.dtype and x.device == y.device
    # @text:out
    out = torch.empty_like(x)
    n = out.numel()
    # @text:launch
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.stride(0), y.stride(0), out.stride(0), BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device)
    y = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0], device=device)
    print(vector_add(x, y).tolist())
    # @text:demo_sliced
    wide = torch.arange(10.0, device=device)
    print(wide[::2].stride(0), vector_add(wide[::2], y).tolist())
    torch.testing.assert_close(vector_add(wide[::2], y), wide[::2] + y, rtol=0, atol=0)
