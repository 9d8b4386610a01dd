import torch
import triton
import triton.language as tl


# Cross-entropy forward, one program per row: lse[row] = log(sum(exp(logits[row, :]))),
# loss[row] = lse[row] - logits[row, target[row]] (loss = 0 for a row whose target is ignore_index).
# BLOCK is the chunk length; V and the strides are ordinary arguments, so a new vocabulary size does not recompile.
@triton.jit
def cross_entropy_kernel(logits, target, loss, lse, V, stride_m, stride_v, ignore_index, BLOCK: tl.constexpr):
    # This program's row number (as int64: M × V may exceed 2^31, and row * stride_m would overflow in int32), the BLOCK column indices of a chunk, and where the row starts in logits.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    row_ptr = logits + row * stride_m
    # The maximum so far, m, and the sum s = sum(exp(x - m)); before any element is read, m = -inf and s = 0.
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        # One chunk; lanes past the row's end are loaded as -inf, which never becomes the maximum, and exp(-inf) = 0 leaves the sum unchanged. Converted to float32 before any arithmetic.
        x = tl.load(row_ptr + (start + cols) * stride_v, mask=start + cols < V, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        # While the maximum is still -inf (everything read so far is -inf), shift by 0, to avoid -inf - (-inf) = NaN.
        shift = tl.where(new_m == -float("inf"), 0.0, new_m)
        # The online update: the old sum times exp(old maximum - shift), converted to the new base, plus the sum of this chunk's exp(x - shift).
        s = ______  # TODO: the online update's sum s (replace ______)
        m = new_m
    # After the whole row: logsumexp = maximum + log(sum).
    row_lse = m + tl.log(s)
    # The row's int64 class index; an ignored row (ignore_index) does not read its target logit, since -100 is not a valid column.
    t = tl.load(target + row)
    x_t = tl.load(row_ptr + t * stride_v, mask=t != ignore_index, other=0.0).to(tl.float32)
    # Two outputs: lse as computed; loss = lse - target logit, 0 for an ignored row.
    tl.store(lse + row, row_lse)
    tl.store(loss + row, tl.where(t == ignore_index, 0.0, row_lse - x_t))


def warps_for(block):
    # 16 values per thread: num_warps = BLOCK / 512, at least 1 warp, at most 16 (BLOCK is at most 8192).
    return min(max(block // 512, 1), 16)


def cross_entropy(logits, target, ignore_index=-100, MAX_BLOCK=8192, num_warps=None):
    # logits: 2-D float32, float16 or bfloat16; target: 1-D int64, one class index per row.
    assert logits.dim() == 2 and logits.dtype in (torch.float32, torch.float16, torch.bfloat16)
    assert target.dim() == 1 and target.dtype == torch.int64 and target.shape[0] == logits.shape[0]
    M, V = logits.shape
    assert V > 0
    # Both outputs are float32, whatever the logits' dtype; with M = 0 there is no row to compute.
    loss = torch.empty(M, device=logits.device, dtype=torch.float32)
    lse = torch.empty(M, device=logits.device, dtype=torch.float32)
    if M == 0:
        return loss, lse
    # The chunk length is the power of two not below V, at most MAX_BLOCK = 8192; rows of up to 8192 columns are read in one chunk, longer rows by the loop.
    BLOCK = min(triton.next_power_of_2(V), MAX_BLOCK)
    cross_entropy_kernel[(M,)](logits, target, loss, lse, V, logits.stride(0), logits.stride(1), ignore_index,
                               BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    return loss, lse


if __name__ == "__main__":
    # Worked example: python cross_entropy.py (without a GPU: TRITON_INTERPRET=1 python cross_entropy.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0], [0.0, 0.0, 0.0]], device=device)
    target = torch.tensor([2, 0, -100], device=device)
    loss, lse = cross_entropy(logits, target)
    print("loss", loss.tolist())
    print("lse ", lse.tolist())
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(logits, target, reduction="none"))
    torch.testing.assert_close(lse, torch.logsumexp(logits, dim=1))
    # Long rows: 50257 classes (7 chunks); row 1's first 9000 elements are -inf, so its whole first chunk (8192) is -inf; row 2 is ignored.
    long = torch.randn(3, 50257, device=device)
    long[1, :9000] = float("-inf")
    labels = torch.tensor([7, 50256, -100], device=device)
    torch.testing.assert_close(cross_entropy(long, labels)[0],
                               torch.nn.functional.cross_entropy(long, labels, reduction="none"))
