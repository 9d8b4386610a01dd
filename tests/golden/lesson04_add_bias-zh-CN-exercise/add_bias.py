import torch
import triton
import triton.language as tl


# 加偏置内核：out[m, n] = x[m, n] + bias[n]。program (i, j) 负责第 i 个行块与第 j 个列块相交的 BLOCK_M × BLOCK_N 块。
# M、N 和各个 stride 是普通参数而不是 tl.constexpr，这样新的形状和布局不会各自重新编译。
@triton.jit
def add_bias_kernel(x, bias, out, M, N, stride_xm, stride_xn, stride_b, stride_om, stride_on,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # 本 program 负责的行下标和列下标：两个一维向量。
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    # 二维掩码：(BLOCK_M, 1) 与 (1, BLOCK_N) 广播成整块；行和列都在范围内的元素才读写。
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    # x 中这一块元素的地址：行下标乘 x 的行 stride，加列下标乘 x 的列 stride。x 可能是转置或切片的视图。
    xv = tl.load(x + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    # 本列块的 BLOCK_N 个偏置（bias 也可能不连续）。
    bv = tl.load(bias + cols * stride_b, mask=cols < N)
    # 加上沿行广播的偏置并写回。out 是另一个张量，它的布局不一定与 x 相同。
    tl.store(______, xv + bv[None, :], mask=mask)  # TODO: 写回地址（替换 ______）


def add_bias(x, bias, BLOCK_M=32, BLOCK_N=32):
    # x 的形状是 (M, N)，bias 是 (N,)；两者都可以不连续，内核按 stride 寻址。
    assert x.dim() == 2 and bias.dim() == 1 and bias.shape[0] == x.shape[1]
    # empty_like 对稠密的 x 保留它的 stride（转置的 x 得到按列存放的 out），对切片视图返回连续的 out。
    out = torch.empty_like(x)
    M, N = x.shape
    # 二维 grid：第 0 维是行块数，对应 program_id(0)；第 1 维是列块数，对应 program_id(1)。
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    add_bias_kernel[grid](x, bias, out, M, N, x.stride(0), x.stride(1), bias.stride(0),
                          out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    # 具体演示：python add_bias.py（没有 GPU 时：TRITON_INTERPRET=1 python add_bias.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                      [10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                      [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]], device=device)
    bias = torch.tensor([0.5, -1.0, 2.0, -3.0, 4.0, -5.0], device=device)
    # 用 2 × 4 的小块：grid 为 (2, 2)，两个方向都有尾块。
    out = add_bias(x, bias, BLOCK_M=2, BLOCK_N=4)
    torch.testing.assert_close(out, x + bias, rtol=0, atol=0)
    # 同样的数值按列存放：stride 变成 (1, 3)，内核一个字不改。
    xt = x.t().contiguous().t()
    torch.testing.assert_close(add_bias(xt, bias, BLOCK_M=2, BLOCK_N=4), x + bias, rtol=0, atol=0)
    print(out.tolist())
