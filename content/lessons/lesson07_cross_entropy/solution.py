import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def cross_entropy_kernel(logits, target, loss, lse, V, stride_m, stride_v, ignore_index, BLOCK: tl.constexpr):
    # @text:row
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    row_ptr = logits + row * stride_m
    # @text:state
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        # @text:load
        x = tl.load(row_ptr + (start + cols) * stride_v, mask=start + cols < V, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        # @text:shift
        shift = tl.where(new_m == -float("inf"), 0.0, new_m)
        # @text:online
        s = s * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), axis=0)  # @blank value
        m = new_m
    # @text:lse
    row_lse = m + tl.log(s)
    # @text:target
    t = tl.load(target + row)
    x_t = tl.load(row_ptr + t * stride_v, mask=t != ignore_index, other=0.0).to(tl.float32)
    # @text:store
    tl.store(lse + row, row_lse)
    tl.store(loss + row, tl.where(t == ignore_index, 0.0, row_lse - x_t))


def warps_for(block):
    # @text:warps
    return min(max(block // 512, 1), 16)


def cross_entropy(logits, target, ignore_index=-100, MAX_BLOCK=8192, num_warps=None):
    # @text:shapes
    assert logits.dim() == 2 and logits.dtype in (torch.float32, torch.float16, torch.bfloat16)
    assert target.dim() == 1 and target.dtype == torch.int64 and target.shape[0] == logits.shape[0]
    M, V = logits.shape
    assert V > 0
    # @text:outputs
    loss = torch.empty(M, device=logits.device, dtype=torch.float32)
    lse = torch.empty(M, device=logits.device, dtype=torch.float32)
    if M == 0:
        return loss, lse
    # @text:choose
    BLOCK = min(triton.next_power_of_2(V), MAX_BLOCK)
    cross_entropy_kernel[(M,)](logits, target, loss, lse, V, logits.stride(0), logits.stride(1), ignore_index,
                               BLOCK=BLOCK, num_warps=num_warps or warps_for(BLOCK))
    return loss, lse


if __name__ == "__main__":
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0], [0.0, 0.0, 0.0]], device=device)
    target = torch.tensor([2, 0, -100], device=device)
    loss, lse = cross_entropy(logits, target)
    print("loss", loss.tolist())
    print("lse ", lse.tolist())
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(logits, target, reduction="none"))
    torch.testing.assert_close(lse, torch.logsumexp(logits, dim=1))
    # @text:demo_long
    long = torch.randn(3, 50257, device=device)
    long[1, :9000] = float("-inf")
    labels = torch.tensor([7, 50256, -100], device=device)
    torch.testing.assert_close(cross_entropy(long, labels)[0],
                               torch.nn.functional.cross_entropy(long, labels, reduction="none"))
