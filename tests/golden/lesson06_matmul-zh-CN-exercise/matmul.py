import torch
import triton
import triton.language as tl


# 分块矩阵乘：C = A @ B，A 是 (M, K)，B 是 (K, N)。每个 program 负责 C 的一个 BLOCK_M × BLOCK_N 块。
# M、N、K 和各个 stride 是普通参数；块的大小、GROUP_M 与 PRECISION 是编译期常量。
@triton.jit
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    # 分组次序：GROUP_M 行块为一组，组内先沿列的方向排。同时运行的 program 共用 A 的行块和 B 的列块，它们留在 L2 里。
    # 最后一组可能不满 GROUP_M 行。每个块恰好对应一个 pid。
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    pid_n = (pid % group) // rows_in_group
    # 本块的行下标、列下标，以及一段之内的 K 下标。
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # A 的一块 (BLOCK_M, BLOCK_K) 与 B 的一块 (BLOCK_K, BLOCK_N) 的指针，都按各自的 stride 计算。
    # 越过 M、N 的行与列用 % 折回矩阵里：读的是真实元素，结果在写回时被掩码丢掉。
    a_ptrs = a + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    # 累加器在 float32 中：无论输入是 float16、bfloat16 还是 float32。
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # K 的尾段：越过 K 的部分读成 0，对点积没有贡献。K 小于 BLOCK_K 时只有这一步。
        av = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        bv = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        # 块乘积加到累加器上（tensor core）；PRECISION 为 float32 输入选择 "tf32" 或 "ieee"。
        acc = ______  # TODO: 块乘积加到累加器上（替换 ______）
        # 两组指针沿 K 前进 BLOCK_K 个元素，指向下一段。
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # 转成 C 的 dtype（只舍入这一次），行与列都在范围内的元素才写回。
    c_ptrs = c + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3, precision="tf32"):
    # A 是 (M, K)，B 是 (K, N)，dtype 相同；两者都可以不连续（例如转置的 B），内核按 stride 寻址。
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    # C 是新建的连续张量，dtype 与输入相同。
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # 一维 grid：每个块一个 program。M 或 N 为 0 时一个也不启动；K 为 0 时照常启动，C 全为 0。
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PRECISION=precision,
                        num_warps=num_warps, num_stages=num_stages)
    return c


# 自动调优的候选配置，适合 Hopper（H100、H200）：大块、8 个 warp、3 到 5 级流水，float16 时共享内存不超过每个 block 的上限。
# 装不下的配置（例如 float32 时的某些大块）在调优时会被跳过。
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
    # 同一个内核，由 triton.autotune 按 (M, N, K, PRECISION) 以及输入的 dtype 选出最快的配置；每个新形状的第一次调用要把每个配置都试一遍。
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    key = (M, N, K, a.dtype, precision)
    # 同一个形状从第二次调用起不再经过自动调优器：直接用记下的配置调用 matmul()，与亲手写出这个配置的调用完全相同。
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
    # 具体演示：python matmul.py（没有 GPU 时：TRITON_INTERPRET=1 python matmul.py）
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    b = torch.tensor([[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], device=device)
    print(matmul(a, b).tolist())
    # 随机的 float16 输入与 float32 中计算的乘积比较；转置的 B 与连续的 B 给出完全相同的结果。
    a = torch.randn(300, 200, device=device, dtype=torch.float16)
    b = torch.randn(200, 100, device=device, dtype=torch.float16)
    torch.testing.assert_close(matmul(a, b), (a.float() @ b.float()).half(), rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(matmul(a, b.t().contiguous().t()), matmul(a, b), rtol=0, atol=0)
