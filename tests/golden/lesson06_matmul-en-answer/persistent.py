"""Beyond the exercise: lesson 6's matrix product as a persistent kernel fed by TMA (a GPU of compute
capability 9.0 or newer, float16 or bfloat16, GPU only: the Triton interpreter runs no TMA).

Three changes to matmul.py's kernel, each after Triton's tutorial 09-persistent-matmul:

- persistent programs: as many programs as the GPU has SMs (not one per tile), each walking the
  tiles start, start + NUM_SMS, ... in the same grouped order as matmul.py;
- TMA (the Tensor Memory Accelerator): the tiles of A and B, and the stores of C, are copied by
  the hardware through tensor descriptors (TensorDescriptor, built on the host), with no address
  arithmetic or masks in the kernel: the descriptor knows the shape, and what lies outside it
  reads as 0 and is not written;
- EPILOGUE_SUBTILE: C's tile is stored in two halves of BLOCK_N / 2 columns, which halves the
  shared memory the store needs and leaves room for one more pipeline stage.

Two options of `tl.range` are tried as well: `warp_specialize` (some warps only issue the TMA
copies while the others multiply) and `flatten` (the tile loop and the K loop pipelined as one).

python bench.py times it beside matmul_tuned (rows "persistent.py ...").
"""
import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def tile_position(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """matmul.py's grouped order: tile number -> (tile row, tile column)."""
    group = GROUP_M * tiles_n
    first_m = (tile // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (tile % group) % rows_in_group, (tile % group) // rows_in_group


@triton.jit
def matmul_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                             SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_position(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            av = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            bv = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(av, bv, acc)
        if SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


def available(a, b):
    """Whether this kernel can take a and b: a CUDA GPU of compute capability 9.0 or newer, float16
    or bfloat16, and strides that TMA accepts (the last one 1, the other 16-byte aligned)."""
    return (a.is_cuda and torch.cuda.get_device_capability(a.device)[0] >= 9
            and a.dtype in (torch.float16, torch.bfloat16) and a.dtype == b.dtype
            and all(t.stride(1) == 1 and t.stride(0) * t.element_size() % 16 == 0 for t in (a, b))
            and b.shape[1] * a.element_size() % 16 == 0)


def matmul_persistent(a, b, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, SUBTILE=True, WARP_SPECIALIZE=False,
                      FLATTEN=False, num_warps=8, num_stages=3):
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and available(a, b)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    b_desc = TensorDescriptor.from_tensor(b, [BLOCK_K, BLOCK_N])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N // 2 if SUBTILE else BLOCK_N])
    grid = (min(sms, triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)),)
    matmul_persistent_kernel[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                   BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, NUM_SMS=sms, SUBTILE=SUBTILE,
                                   WARP_SPECIALIZE=WARP_SPECIALIZE, FLATTEN=FLATTEN, num_warps=num_warps, num_stages=num_stages)
    return c


CONFIGS = [   # keyword arguments of matmul_persistent: the winners of bench/lessons56_tune.py on an H200
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, SUBTILE=True, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, SUBTILE=True, num_warps=8, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=16, SUBTILE=True, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, SUBTILE=True, FLATTEN=True, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, SUBTILE=True, WARP_SPECIALIZE=True, num_warps=8,
         num_stages=3),
]
CHOSEN = {}   # (M, N, K, dtype) -> the fastest of CONFIGS


def describe(config):
    return (f"{config['BLOCK_M']}x{config['BLOCK_N']}x{config['BLOCK_K']}, GROUP_M={config['GROUP_M']}, "
            f"warps={config['num_warps']}, stages={config['num_stages']}"
            + (", subtile" if config["SUBTILE"] else "") + (", flatten" if config.get("FLATTEN") else "")
            + (", warp-specialized" if config.get("WARP_SPECIALIZE") else ""))


def matmul_persistent_tuned(a, b):
    """matmul_persistent with the fastest of CONFIGS, timed once per shape and dtype (a
    configuration that does not fit this GPU is skipped), then remembered, like matmul_tuned."""
    key = (a.shape[0], b.shape[1], a.shape[1], a.dtype)
    if key not in CHOSEN:
        timings = []
        for config in CONFIGS:
            try:
                timings.append((triton.testing.do_bench(lambda: matmul_persistent(a, b, **config)), len(timings), config))
            except (OutOfResources, RuntimeError):   # too big for this GPU, or a pass this Triton lacks
                continue
        CHOSEN[key] = min(timings, key=lambda t: t[:2])[2]
    return matmul_persistent(a, b, **CHOSEN[key])
