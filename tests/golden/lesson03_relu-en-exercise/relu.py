import torch
import triton
import triton.language as tl


# ReLU kernel: each program handles BLOCK consecutive elements.
# n is an ordinary argument, not a tl.constexpr, so most new lengths reuse a compiled kernel.
# Triton still specializes integer arguments by class (equal to 1, divisible by 16, any other
# value; 64-bit when too large for 32 bits) and compiles one variant the first time it meets
# each class; a new BLOCK or dtype compiles too.
@triton.jit
def relu_kernel(x, out, n, BLOCK: tl.constexpr):
    # The indices this program owns: one block of BLOCK elements.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # The last block may run past n: masked lanes neither read nor write.
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    # Compute ReLU element by element and store it; it must equal torch.relu exactly, NaN included.
    tl.store(out + offsets, ______, mask=mask)  # TODO: ReLU (replace ______)


def relu(x, BLOCK=256):
    # The kernel addresses flat, contiguous memory, so the input must be contiguous.
    assert x.is_contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    # The seed example: python relu.py (without a GPU: TRITON_INTERPRET=1 python relu.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.tensor([-2.0, 0.0, 3.0, -4.0, 5.0], device=device)
    torch.testing.assert_close(relu(x), torch.relu(x))
    print(relu(x).tolist())
