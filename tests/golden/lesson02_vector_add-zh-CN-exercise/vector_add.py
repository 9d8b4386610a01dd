import torch
import triton
import triton.language as tl


# 向量加法内核：每个 program 处理 BLOCK 个下标。
# x、y、out 是指向首元素的指针；stride_* 是相邻元素之间相隔的元素个数。
# n 是普通参数而不是 tl.constexpr，这样不同长度的输入不会各自重新编译。
@triton.jit
def add_kernel(x, y, out, n, stride_x, stride_y, stride_out, BLOCK: tl.constexpr):
    # 本 program 在一维网格中的编号：0, 1, …, cdiv(n, BLOCK) - 1。
    pid = tl.program_id(0)
    # 本 program 负责的下标：一个长度为 BLOCK 的块。
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    # 最后一块可能越过 n：mask 为假的 lane 既不能读也不能写。
    mask = offsets < n
    # 写回 x + y：两个输入都按各自的 stride 寻址（第 i 个元素位于 指针 + i * stride，以元素计），
    # 并且只读 mask 为真的 lane；存储同样只写 mask 为真的 lane。
    tl.store(out + offsets * stride_out, ______, mask=mask)  # TODO: 读取 x 与 y 并相加（替换 ______）


def vector_add(x, y, BLOCK=1024):
    # 本课处理一维张量：x 与 y 的形状、dtype 和设备必须相同，内存布局可以不同。
    assert x.dim() == 1 and x.shape == y.shape and x.dtype == y.dtype and x.device == y.device
    # 对跨步视图，empty_like 返回一个连续的新张量，所以 out 的 stride 单独传入。
    out = torch.empty_like(x)
    n = out.numel()
    # 网格向上取整：cdiv(n, BLOCK) 个 program 覆盖全部 n 个元素（n = 0 时一个也不启动）。
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.stride(0), y.stride(0), out.stride(0), BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # 种子示例：python vector_add.py（没有 GPU 时：TRITON_INTERPRET=1 python vector_add.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device)
    y = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0], device=device)
    print(vector_add(x, y).tolist())
    # 跨步视图：wide[::2] 的 stride 是 2；内核按 stride 读取，不需要先复制成连续张量。
    wide = torch.arange(10.0, device=device)
    print(wide[::2].stride(0), vector_add(wide[::2], y).tolist())
    torch.testing.assert_close(vector_add(wide[::2], y), wide[::2] + y, rtol=0, atol=0)
