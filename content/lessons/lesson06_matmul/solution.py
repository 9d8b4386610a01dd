import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    # @text:order
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    pid_n = (pid % group) // rows_in_group
    # @text:tile
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # @text:pointers
    a_ptrs = a + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    # @text:acc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # @text:k_mask
        av = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        bv = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        # @text:dot
        acc = tl.dot(av, bv, acc, input_precision=PRECISION)  # @blank value
        # @text:advance
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # @text:store
    c_ptrs = c + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3, precision="tf32"):
    # @text:shapes
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    # @text:out
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # @text:grid
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PRECISION=precision,
                        num_warps=num_warps, num_stages=num_stages)
    return c


# @text:configs
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
    # @text:tuned
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    key = (M, N, K, a.dtype, precision)
    # @text:tuned_cached
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
    # @text:demo
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    b = torch.tensor([[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], device=device)
    print(matmul(a, b).tolist())
    # @text:demo_check
    a = torch.randn(300, 200, device=device, dtype=torch.float16)
    b = torch.randn(200, 100, device=device, dtype=torch.float16)
    torch.testing.assert_close(matmul(a, b), (a.float() @ b.float()).half(), rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(matmul(a, b.t().contiguous().t()), matmul(a, b), rtol=0, atol=0)
