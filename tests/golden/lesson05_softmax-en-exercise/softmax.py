import torch
import triton
import triton.language as tl


# Row softmax, one program per row: out[row, :] = softmax(x[row, :]).
# BLOCK is a power of two not below N; N and the strides are ordinary arguments, so a new row length does not always compile again.
@triton.jit
def softmax_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr):
    # This program's row number, and the block's BLOCK column indices; mask marks the N columns that exist.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    # Padding lanes read -inf, which never becomes the maximum, and exp(-inf) = 0 leaves the sum alone. Convert to float32 before computing.
    xv = tl.load(x + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
    # The numerically stable numerator: with the row's maximum subtracted first, no exponent exceeds 0 and nothing overflows.
    num = ______  # TODO: the stable numerator e^(x - row maximum) (replace ______)
    # The second reduction: the row's numerators summed are the denominator.
    den = tl.sum(num, axis=0)
    # Store the row with out's own strides, under the same mask.
    tl.store(out + row * stride_om + cols * stride_on, num / den, mask=mask)


# The chunked kernel for long rows: one program still handles a whole row, but CHUNK elements at a time, in two passes.
# Only one piece lives in registers, so an SM holds several programs at once; the price is reading the row twice.
@triton.jit
def softmax_chunked_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, CHUNK)
    x_row = x + row * stride_xm
    out_row = out + row * stride_om
    # First pass: the maximum so far, row_max, and the sum den = sum(exp(x - row_max)).
    row_max = -float("inf")
    den = 0.0
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(part, axis=0))
        # When the maximum grows, the old sum is multiplied by exp(old maximum - new maximum) to move it onto the new base.
        # While the maximum is still -inf (nothing but -inf read), shift by 0, to avoid -inf - (-inf) = NaN.
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        den = den * tl.exp(row_max - shift) + tl.sum(tl.exp(part - shift), axis=0)
        row_max = new_max
    # Second pass: read the row again (mostly from the L2 cache) and store exp(x - row_max) / den.
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        tl.store(out_row + (start + cols) * stride_on, tl.exp(part - row_max) / den, mask=start + cols < N)


def warps_for(block):
    # 16 values per thread: num_warps = BLOCK / 512, at least 1 warp, at most 32 (one program has at most 1024 threads).
    return min(max(block // 512, 1), 32)


def softmax(x, MAX_BLOCK=16384, CHUNK=8192, num_warps=None):
    # The input is a 2-D float32, float16 or bfloat16 tensor; each row gets its own softmax.
    assert x.dim() == 2 and x.dtype in (torch.float32, torch.float16, torch.bfloat16)
    # empty_like returns an out stored by columns for a transposed (column-major) x, so out's strides are passed separately.
    out = torch.empty_like(x)
    M, N = x.shape
    # With a dimension of 0 there is nothing to compute; with N = 0, BLOCK would be 0 as well and could not launch.
    if M == 0 or N == 0:
        return out
    args = (x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1))
    BLOCK = triton.next_power_of_2(N)
    # A row that fits one block (BLOCK up to MAX_BLOCK = 16384, still 16 values per thread) is read once by one program; longer rows are read twice, in pieces.
    if BLOCK <= MAX_BLOCK:
        softmax_kernel[(M,)](*args, BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    else:
        softmax_chunked_kernel[(M,)](*args, CHUNK=CHUNK, num_warps=num_warps or warps_for(CHUNK))
    return out


if __name__ == "__main__":
    # Worked example: python softmax.py (without a GPU: TRITON_INTERPRET=1 python softmax.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0]], device=device)
    print(softmax(x).tolist())
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    # A long row (the chunked kernel): the first 9000 elements of row 1 are -inf, so its first piece (8192 elements) is all -inf.
    long = torch.randn(3, 20000, device=device)
    long[1, :9000] = float("-inf")
    torch.testing.assert_close(softmax(long), torch.softmax(long, dim=1))
