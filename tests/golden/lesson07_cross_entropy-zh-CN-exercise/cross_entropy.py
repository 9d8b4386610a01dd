import torch
import triton
import triton.language as tl


# 交叉熵前向，一个 program 处理一整行：lse[row] = log(sum(exp(logits[row, :])))，
# loss[row] = lse[row] - logits[row, target[row]]（target 为 ignore_index 的行 loss = 0）。
# BLOCK 是段长；V 和各个 stride 是普通参数，新的词表大小不会每次都重新编译。
@triton.jit
def cross_entropy_kernel(logits, target, loss, lse, V, stride_m, stride_v, ignore_index, BLOCK: tl.constexpr):
    # 本 program 的行号（转成 int64：M × V 可能超过 2^31，row * stride_m 在 int32 中会溢出）、段内的 BLOCK 个列下标，以及这一行在 logits 中的起点。
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    row_ptr = logits + row * stride_m
    # 到目前为止的最大值 m 与和 s = sum(exp(x - m))；还没有读到任何元素时 m = -inf，s = 0。
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        # 读一段；越过行尾的 lane 读成 -inf：不会成为最大值，exp(-inf) = 0 也不改变和。转成 float32 后再计算。
        x = tl.load(row_ptr + (start + cols) * stride_v, mask=start + cols < V, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        # 最大值仍为 -inf（读到的全是 -inf）时用 0 平移，避免 -inf - (-inf) = NaN。
        shift = tl.where(new_m == -float("inf"), 0.0, new_m)
        # 在线更新：旧的和乘 exp(旧最大值 - 平移量)，换到新的基准上，再加上这一段的 exp(x - 平移量) 之和。
        s = ______  # TODO: 在线更新的和 s（替换 ______）
        m = new_m
    # 走完整行：logsumexp = 最大值 + log(和)。
    row_lse = m + tl.log(s)
    # 这一行的 int64 类别下标；被忽略的行（ignore_index）不读目标 logit：-100 不是合法的列。
    t = tl.load(target + row)
    x_t = tl.load(row_ptr + t * stride_v, mask=t != ignore_index, other=0.0).to(tl.float32)
    # 两个输出：lse 照常写；loss = lse - 目标 logit，被忽略的行写 0。
    tl.store(lse + row, row_lse)
    tl.store(loss + row, tl.where(t == ignore_index, 0.0, row_lse - x_t))


def warps_for(block):
    # 每个线程 16 个值：num_warps = BLOCK / 512，至少 1 个 warp，至多 16 个（BLOCK 最大 8192）。
    return min(max(block // 512, 1), 16)


def cross_entropy(logits, target, ignore_index=-100, MAX_BLOCK=8192, num_warps=None):
    # logits 是二维的 float32、float16 或 bfloat16；target 是一维的 int64，每行一个类别下标。
    assert logits.dim() == 2 and logits.dtype in (torch.float32, torch.float16, torch.bfloat16)
    assert target.dim() == 1 and target.dtype == torch.int64 and target.shape[0] == logits.shape[0]
    M, V = logits.shape
    assert V > 0
    # 两个输出都是 float32，不论 logits 的 dtype；M = 0 时没有行要算。
    loss = torch.empty(M, device=logits.device, dtype=torch.float32)
    lse = torch.empty(M, device=logits.device, dtype=torch.float32)
    if M == 0:
        return loss, lse
    # 段长取不小于 V 的 2 的幂，但不超过 MAX_BLOCK = 8192：V 不超过 8192 的行一段读完，更长的行分段循环。
    BLOCK = min(triton.next_power_of_2(V), MAX_BLOCK)
    cross_entropy_kernel[(M,)](logits, target, loss, lse, V, logits.stride(0), logits.stride(1), ignore_index,
                               BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    return loss, lse


if __name__ == "__main__":
    # 具体演示：python cross_entropy.py（没有 GPU 时：TRITON_INTERPRET=1 python cross_entropy.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0], [0.0, 0.0, 0.0]], device=device)
    target = torch.tensor([2, 0, -100], device=device)
    loss, lse = cross_entropy(logits, target)
    print("loss", loss.tolist())
    print("lse ", lse.tolist())
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(logits, target, reduction="none"))
    torch.testing.assert_close(lse, torch.logsumexp(logits, dim=1))
    # 长行：50257 类（7 段）；第 1 行的前 9000 个元素是 -inf，第一段（8192 个）整段都是 -inf；第 2 行被忽略。
    long = torch.randn(3, 50257, device=device)
    long[1, :9000] = float("-inf")
    labels = torch.tensor([7, 50256, -100], device=device)
    torch.testing.assert_close(cross_entropy(long, labels)[0],
                               torch.nn.functional.cross_entropy(long, labels, reduction="none"))
