import torch
import triton
import triton.language as tl


# 按行 softmax，一个 program 处理一整行：out[row, :] = softmax(x[row, :])。
# BLOCK 是不小于 N 的 2 的幂；N 和各个 stride 是普通参数，新的行长不会每次都重新编译。
@triton.jit
def softmax_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr):
    # 本 program 的行号，以及块内的 BLOCK 个列下标；mask 标出真正存在的 N 列。
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    # 填充 lane 读成 -inf：它不会成为最大值，exp(-inf) = 0 也不改变和。转成 float32 后再计算。
    xv = tl.load(x + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
    # 数值稳定的分子：先减去行最大值，每个指数都不大于 0，不会溢出。
    num = tl.exp(xv - tl.max(xv, axis=0))
    # 第二次归约：整行分子之和就是分母。
    den = tl.sum(num, axis=0)
    # 按 out 自己的 stride 写回这一行，同一个掩码。
    tl.store(out + row * stride_om + cols * stride_on, num / den, mask=mask)


# 长行的分段内核：一个 program 仍处理一整行，但每次只取 CHUNK 个元素，分两遍。
# 寄存器里只放一段，所以一个 SM 能同时驻留多个 program；代价是这一行要读两遍。
@triton.jit
def softmax_chunked_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, CHUNK)
    x_row = x + row * stride_xm
    out_row = out + row * stride_om
    # 第一遍：到目前为止的最大值 row_max 与和 den = sum(exp(x - row_max))。
    row_max = -float("inf")
    den = 0.0
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(part, axis=0))
        # 最大值变大时，旧的和乘 exp(旧最大值 - 新最大值)，换到新的基准上。
        # 最大值仍为 -inf（读到的全是 -inf）时用 0 平移，避免 -inf - (-inf) = NaN。
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        den = den * tl.exp(row_max - shift) + tl.sum(tl.exp(part - shift), axis=0)
        row_max = new_max
    # 第二遍：再读一遍这一行（大多来自 L2 缓存），写出 exp(x - row_max) / den。
    for start in range(0, N, CHUNK):
        part = tl.load(x_row + (start + cols) * stride_xn, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        tl.store(out_row + (start + cols) * stride_on, tl.exp(part - row_max) / den, mask=start + cols < N)


def warps_for(block):
    # 每个线程 16 个值：num_warps = BLOCK / 512，至少 1 个 warp，至多 32 个（一个 program 最多 1024 个线程）。
    return min(max(block // 512, 1), 32)


def softmax(x, MAX_BLOCK=16384, CHUNK=8192, num_warps=None):
    # 输入是二维张量，float32、float16 或 bfloat16；每一行各自做 softmax。
    assert x.dim() == 2 and x.dtype in (torch.float32, torch.float16, torch.bfloat16)
    # empty_like 对转置（按列存放）的 x 返回同样按列存放的 out，所以 out 的 stride 单独传入。
    out = torch.empty_like(x)
    M, N = x.shape
    # 任一维为 0 时没有要算的元素；N = 0 时 BLOCK 也会是 0，不能启动。
    if M == 0 or N == 0:
        return out
    args = (x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1))
    BLOCK = triton.next_power_of_2(N)
    # 行能放进一个块（BLOCK 不超过 MAX_BLOCK = 16384，每个线程仍是 16 个值）时一个 program 读一遍；更长的行分段读两遍。
    if BLOCK <= MAX_BLOCK:
        softmax_kernel[(M,)](*args, BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    else:
        softmax_chunked_kernel[(M,)](*args, CHUNK=CHUNK, num_warps=num_warps or warps_for(CHUNK))
    return out


if __name__ == "__main__":
    # 具体演示：python softmax.py（没有 GPU 时：TRITON_INTERPRET=1 python softmax.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0]], device=device)
    print(softmax(x).tolist())
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    # 长行（分段内核）：第 1 行的前 9000 个元素是 -inf，第一段（8192 个）整段都是 -inf。
    long = torch.randn(3, 20000, device=device)
    long[1, :9000] = float("-inf")
    torch.testing.assert_close(softmax(long), torch.softmax(long, dim=1))
