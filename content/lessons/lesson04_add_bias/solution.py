import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def add_bias_kernel(x, bias, out, M, N, stride_xm, stride_xn, stride_b, stride_om, stride_on,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # @text:tile
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    # @text:mask
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    # @text:load_x
    xv = tl.load(x + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    # @text:load_bias
    bv = tl.load(bias + cols * stride_b, mask=cols < N)
    # @text:store
    tl.store(out + rows[:, None] * stride_om + cols[None, :] * stride_on, xv + bv[None, :], mask=mask)  # @blank arg=0


def add_bias(x, bias, BLOCK_M=32, BLOCK_N=32):
    # @text:shapes
    assert x.dim() == 2 and bias.dim() == 1 and bias.shape[0] == x.shape[1]
    # @text:empty_like
    out = torch.empty_like(x)
    M, N = x.shape
    # @text:grid
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    add_bias_kernel[grid](x, bias, out, M, N, x.stride(0), x.stride(1), bias.stride(0),
                          out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                      [10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                      [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]], device=device)
    bias = torch.tensor([0.5, -1.0, 2.0, -3.0, 4.0, -5.0], device=device)
    # @text:demo_tiles
    out = add_bias(x, bias, BLOCK_M=2, BLOCK_N=4)
    torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
    # @text:demo_transposed
    xt = x.t().contiguous().t()
    torch.testing.assert_close(add_bias(xt, bias, BLOCK_M=2, BLOCK_N=4), x + bias, rtol=0, atol=0)
    print(out.tolist())
