import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def softmax_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr):
    # @text:row
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    # @text:load
    xv = tl.load(x + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
    # @text:stable
    num = tl.exp(xv - tl.max(xv, axis=0))  # @blank value
    # @text:sum
    den = tl.sum(num, axis=0)
    # @text:store
    tl.store(out + row * stride_om + cols * stride_on, num / den, mask=mask)


# @text:chunked_doc
@triton.jit
def softmax_chunked_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, CHUNK)
    x_row = x + row * stride_xm
    out_row = out + row * stride_om
    # @text:pass1
    row_max = -float("inf")
    den = 0.0
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(part, axis=0))
        # @text:rescale
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        den = den * tl.exp(row_max - shift) + tl.sum(tl.exp(part - shift), axis=0)
        row_max = new_max
    # @text:pass2
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        tl.store(out_row + (start + cols) * stride_on, tl.exp(part - row_max) / den, mask=start + cols < N)


def warps_for(block):
    # @text:warps
    return min(max(block // 512, 1), 32)


def softmax(x, MAX_BLOCK=16384, CHUNK=8192, num_warps=None):
    # @text:shapes
    assert x.dim() == 2 and x.dtype in (torch.float32, torch.float16, torch.bfloat16)
    # @text:empty_like
    out = torch.empty_like(x)
    M, N = x.shape
    # @text:empty
    if M == 0 or N == 0:
        return out
    args = (x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1))
    BLOCK = triton.next_power_of_2(N)
    # @text:choose
    if BLOCK <= MAX_BLOCK:
        softmax_kernel[(M,)](*args, BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    else:
        softmax_chunked_kernel[(M,)](*args, CHUNK=CHUNK, num_warps=num_warps or warps_for(CHUNK))
    return out


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0]], device=device)
    print(softmax(x).tolist())
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    # @text:demo_long
    long = torch.randn(3, 20000, device=device)
    long[1, :9000] = float("-inf")
    torch.testing.assert_close(softmax(long), torch.softmax(long, dim=1))
