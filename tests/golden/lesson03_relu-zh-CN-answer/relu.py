import torch
import triton
import triton.language as tl


# ReLU 内核：每个 program 处理 BLOCK 个连续元素。
# n 是普通参数而不是 tl.constexpr，所以大多数新长度直接复用已编译的内核。
# 但 Triton 会按整数参数的取值分类特化（等于 1、能被 16 整除、其他值；超出 32 位的另算），
# 每一类第一次出现时编译一个新变体；换 BLOCK 或 dtype 也会重新编译。
@triton.jit
def relu_kernel(x, out, n, BLOCK: tl.constexpr):
    # 本 program 负责的元素下标：一个长度为 BLOCK 的块。
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # 最后一个块可能越过 n：被屏蔽的 lane 既不读也不写。
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    # 逐元素计算 ReLU 并写回；结果必须与 torch.relu 完全一致，包括 NaN。
    tl.store(out + offsets, tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL), mask=mask)


def relu(x, BLOCK=256):
    # 内核按一维连续内存寻址，所以要求输入是连续的。
    assert x.is_contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # 种子示例：python relu.py（没有 GPU 时：TRITON_INTERPRET=1 python relu.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([-2.0, 0.0, 3.0, -4.0, 5.0], device=device)
    torch.testing.assert_close(relu(x), torch.relu(x))
    print(relu(x).tolist())
