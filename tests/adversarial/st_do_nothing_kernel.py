# expect: status=pass; score=0; flags=torch_computes,withheld
# A Triton kernel that does nothing, launched next to torch.relu, which computes the answer: the
# launch record shows a kernel of the file, so a check that trusts it sees Triton. The static
# review names torch.relu in the host code.
@triton.jit
def nothing_kernel(x, n, BLOCK: tl.constexpr):
    pass


def relu(x, BLOCK=256):
    nothing_kernel[(1,)](x, x.numel(), BLOCK=BLOCK)
    return torch.relu(x)
