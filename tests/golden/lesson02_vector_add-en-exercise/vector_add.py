import torch
import triton
import triton.language as tl


# Vector addition kernel: each program handles BLOCK indices.
# x, y and out point to the first elements; stride_* is how many elements apart neighbours are.
# n is an ordinary argument, not a tl.constexpr, so inputs of new lengths do not recompile.
@triton.jit
def add_kernel(x, y, out, n, stride_x, stride_y, stride_out, BLOCK: tl.constexpr):
    # This program's number in the one-dimensional grid: 0, 1, …, cdiv(n, BLOCK) - 1.
    pid = tl.program_id(0)
    # The indices this program owns: one block of BLOCK elements.
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    # The last block may run past n: lanes whose mask is false may neither read nor write.
    mask = offsets < n
    # Store x + y: address each input by its own stride (element i lies at pointer + i * stride,
    # counted in elements) and read only the lanes whose mask is true; the store, too, writes only those.
    tl.store(out + offsets * stride_out, ______, mask=mask)  # TODO: read x and y and add them (replace ______)


def vector_add(x, y, BLOCK=1024):
    # This lesson handles 1-D tensors: x and y must have the same shape, dtype and device; their memory layouts may differ.
    assert x.dim() == 1 and x.shape == y.shape and x.dtype == y.dtype and x.device == y.device
    # For a strided view, empty_like returns a new contiguous tensor, so the stride of out is passed on its own.
    out = torch.empty_like(x)
    n = out.numel()
    # The grid rounds up: cdiv(n, BLOCK) programs cover all n elements (none start when n = 0).
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.stride(0), y.stride(0), out.stride(0), BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # The seed example: python vector_add.py (without a GPU: TRITON_INTERPRET=1 python vector_add.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device)
    y = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0], device=device)
    print(vector_add(x, y).tolist())
    # A strided view: wide[::2] has stride 2; the kernel reads by the stride, with no contiguous copy first.
    wide = torch.arange(10.0, device=device)
    print(wide[::2].stride(0), vector_add(wide[::2], y).tolist())
    torch.testing.assert_close(vector_add(wide[::2], y), wide[::2] + y, rtol=0, atol=0)
