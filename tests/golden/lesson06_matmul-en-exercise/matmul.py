import torch
import triton
import triton.language as tl


# Tiled matrix multiplication: C = A @ B, A of shape (M, K), B of shape (K, N). Each program owns one BLOCK_M × BLOCK_N block of C.
# M, N, K and the strides are ordinary arguments; the block sizes, GROUP_M and PRECISION are compile-time constants.
@triton.jit
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    # The grouped order: GROUP_M row blocks form a group, and within it the programs go down the columns first. Programs running together share row blocks of A and column blocks of B, which stay in L2.
    # The last group may have fewer than GROUP_M rows. Every block belongs to exactly one pid.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    pid_n = (pid % group) // rows_in_group
    # This block's row and column indices, and the K indices within one step.
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Pointers to a block of A (BLOCK_M, BLOCK_K) and a block of B (BLOCK_K, BLOCK_N), each from its own strides.
    # Rows and columns past M and N are wrapped back into the matrix by %: they read real elements, whose results the store's mask drops.
    a_ptrs = a + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    # The accumulator is float32, whether the inputs are float16, bfloat16 or float32.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # The tail of K: whatever lies past K reads 0 and adds nothing to the dot product. When K is below BLOCK_K, this is the only step.
        av = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        bv = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        # The block product added to the accumulator (tensor cores); PRECISION picks "tf32" or "ieee" for float32 inputs.
        acc = ______  # TODO: add the block product to the accumulator (replace ______)
        # Both sets of pointers move BLOCK_K elements along K, to the next slab.
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # Convert to C's dtype (the only rounding); only elements whose row and column are both in range are stored.
    c_ptrs = c + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3, precision="tf32"):
    # A is (M, K) and B is (K, N), of the same dtype; either may be non-contiguous (a transposed B, say), since the kernel uses strides.
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    # C is a new contiguous tensor of the inputs' dtype.
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # A 1-D grid: one program per block. With M or N of 0 none starts; with K of 0 they start as usual and C is all zeros.
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PRECISION=precision,
                        num_warps=num_warps, num_stages=num_stages)
    return c


# The autotuner's candidate configurations, suited to Hopper (H100, H200): large blocks, 8 warps, 3 to 5 pipeline stages, within a block's shared memory for float16.
# Configurations that do not fit (some large blocks in float32) are skipped during tuning.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=5),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
]
matmul_kernel_tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K", "PRECISION"])(matmul_kernel)


CHOSEN = {}   # (M, N, K, dtype, precision) -> the configuration autotune chose for it


def matmul_tuned(a, b, precision="tf32"):
    # The same kernel, with triton.autotune choosing the fastest configuration per (M, N, K, PRECISION) and input dtype; the first call for every new shape tries every configuration.
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    key = (M, N, K, a.dtype, precision)
    # From the second call with a shape on, the autotuner is bypassed: matmul() is called with the remembered configuration, exactly as if that configuration had been written out by hand.
    if key in CHOSEN:
        config = CHOSEN[key]
        return matmul(a, b, num_warps=config.num_warps, num_stages=config.num_stages, precision=precision,
                      **config.kwargs)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    matmul_kernel_tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              c.stride(0), c.stride(1), PRECISION=precision)
    CHOSEN[key] = matmul_kernel_tuned.best_config
    return c


if __name__ == "__main__":
    # Worked example: python matmul.py (without a GPU: TRITON_INTERPRET=1 python matmul.py)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    b = torch.tensor([[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], device=device)
    print(matmul(a, b).tolist())
    # Random float16 inputs against the product computed in float32; a transposed B gives exactly the result of a contiguous one.
    a = torch.randn(300, 200, device=device, dtype=torch.float16)
    b = torch.randn(200, 100, device=device, dtype=torch.float16)
    torch.testing.assert_close(matmul(a, b), (a.float() @ b.float()).half(), rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(matmul(a, b.t().contiguous().t()), matmul(a, b), rtol=0, atol=0)
