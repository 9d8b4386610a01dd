import torch
import triton
import triton.language as tl


# Bias kernel: out[m, n] = x[m, n] + bias[n]. Program (i, j) owns the BLOCK_M x BLOCK_N block where row block i meets column block j.
# M, N and the strides are ordinary arguments, not tl.constexpr, so new shapes and layouts do not recompile.
@triton.jit
def add_bias_kernel(x, bias, out, M, N, stride_xm, stride_xn, stride_b, stride_om, stride_on,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # The row and column indices this program owns: two 1-D vectors.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    # 2-D mask: (BLOCK_M, 1) and (1, BLOCK_N) broadcast to the whole block; only elements whose row and column are in range are read or written.
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    # Addresses of this block in x: row index times x's row stride, plus column index times x's column stride. x may be a transposed or sliced view.
    xv = tl.load(x + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    # The BLOCK_N biases of this column block (bias may be non-contiguous too).
    bv = tl.load(bias + cols * stride_b, mask=cols < N)
    # Add the bias, broadcast along the rows, and store. out is another tensor; its layout need not be that of x.
    tl.store(out + rows[:, None] * stride_om + cols[None, :] * stride_on, xv + bv[None, :], mask=mask)


def add_bias(x, bias, BLOCK_M=32, BLOCK_N=32):
    # x has shape (M, N) and bias (N,); either may be non-contiguous: the kernel addresses them through their strides.
    assert x.dim() == 2 and bias.dim() == 1 and bias.shape[0] == x.shape[1]
    # empty_like keeps the strides of a dense x (a transposed x gets an out stored by columns) and returns a contiguous out for a sliced view.
    out = torch.empty_like(x)
    M, N = x.shape
    # 2-D grid: dimension 0 counts row blocks, for program_id(0); dimension 1 counts column blocks, for program_id(1).
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    add_bias_kernel[grid](x, bias, out, M, N, x.stride(0), x.stride(1), bias.stride(0),
                          out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    # The worked example: python add_bias.py (without a GPU: TRITON_INTERPRET=1 python add_bias.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                      [10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                      [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]], device=device)
    bias = torch.tensor([0.5, -1.0, 2.0, -3.0, 4.0, -5.0], device=device)
    # Tiny 2 x 4 blocks: a (2, 2) grid with tails in both dimensions.
    out = add_bias(x, bias, BLOCK_M=2, BLOCK_N=4)
    torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
    # The same values stored by columns: strides (1, 3), and not a character of the kernel changes.
    xt = x.t().contiguous().t()
    torch.testing.assert_close(add_bias(xt, bias, BLOCK_M=2, BLOCK_N=4), x + bias, rtol=0, atol=0)
    print(out.tolist())
