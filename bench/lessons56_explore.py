"""Explore the configurations of lessons 5 and 6 on a CUDA GPU, to choose their defaults.

    python bench/lessons56_explore.py                 # both lessons, about 4 minutes on an H200
    python bench/lessons56_explore.py --only softmax  # or --only matmul
    python bench/lessons56_explore.py --json out.json

It imports the lessons' own kernels (content/lessons/lesson05_softmax/solution.py and
content/lessons/lesson06_matmul/solution.py) and times, beside them, a few variants that the
lessons do not ship, so that a later round can tell which is worth teaching:

softmax, rows of 4096 and 16384, float32 and float16, about 2^28 elements each:
  device copy and torch.softmax; the lesson's softmax() as it chooses; its single-block kernel at
  num_warps 4..32 (BLOCK = the row, also for 16384); its chunked two-pass kernel over CHUNK x
  num_warps; the official tutorial's persistent single-block kernel (a loop over rows with
  tl.range(num_stages)); and a persistent form of the chunked kernel (programs = SMs x k).
matmul, float16 at 4096^3 and 8192^3, float32 at 4096^3 (matmul first: it decides lesson 6's goal):
  cuBLAS (torch.matmul; TF32 on and off for float32); the lesson's defaults and row-major order;
  every entry of the lesson's CONFIGS and a few more; the same kernel with the tutorial 09's
  alignment hints instead of the modulo; and a TMA (tensor descriptor) kernel, where this Triton
  has triton.tools.tensor_descriptor.

Each line: variant, ms, GB/s or TFLOP/s, the ratio to the copy or to cuBLAS, registers per thread
and spilled bytes where the kernel is the lesson's own. Times: triton.testing.do_bench medians
(warm-up 10 ms, 30 ms of repetitions), after one untimed call. Nothing here fails on a number.
"""
import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "content" / "lessons" / "lesson05_softmax"))
import solution as softmax_lesson  # noqa: E402
sys.path.pop(0)
del sys.modules["solution"]
sys.path.insert(0, str(ROOT / "content" / "lessons" / "lesson06_matmul"))
import solution as matmul_lesson  # noqa: E402

STARTED = time.monotonic()
RESULTS = []
BUDGET = [330.0]   # seconds; variants not started by then are skipped (--budget)


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=10, rep=30, return_mode="median")


def line(section, name, ms, value, unit, ratio, extra=""):
    RESULTS.append({"section": section, "name": name, "ms": ms, unit: value, "ratio": ratio, "extra": extra})
    print(f"  {name[:62]:62} {ms:8.3f} ms {value:8.0f} {unit:7} {ratio:5.2f}  {extra}", flush=True)


def attempt(section, name, run, measure):
    if time.monotonic() - STARTED > BUDGET[0]:
        print(f"  {name[:62]:62} skipped: past the time budget", flush=True)
        return
    try:
        measure(run)
    except Exception as exc:   # a config that does not fit (shared memory, registers) or an API this Triton lacks
        print(f"  {name[:62]:62} skipped: {type(exc).__name__}: {str(exc).splitlines()[0][:90] if str(exc) else ''}", flush=True)


def regs_of(jit, **constants):
    """n_regs and n_spills of the newest compiled variant of jit (the one just launched)."""
    try:
        for cache in jit.device_caches.values():
            kernels = list(cache[0].values())
            if kernels:
                k = kernels[-1]
                return f"regs {k.n_regs} spills {k.n_spills} smem {k.metadata.shared}"
    except Exception:
        pass
    return ""


# --------------------------------------------------------------------------------------------
# softmax variants that the lesson does not ship
# --------------------------------------------------------------------------------------------

@triton.jit
def tutorial_softmax_kernel(out, x, stride_x, stride_o, M, N, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """python/tutorials/02-fused-softmax.py: persistent programs, a software-pipelined row loop."""
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for r in tl.range(start, M, step, num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        v = tl.load(x + r * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
        num = tl.exp(v - tl.max(v, axis=0))
        tl.store(out + r * stride_o + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def chunked_persistent_kernel(x, out, M, N, stride_xm, stride_om, CHUNK: tl.constexpr):
    """The lesson's chunked two-pass kernel, with persistent programs: at most grid rows in flight,
    so that the second pass finds its row in L2."""
    cols = tl.arange(0, CHUNK)
    for r in range(tl.program_id(0), M, tl.num_programs(0)):
        row_max = -float("inf")
        den = 0.0
        for start in range(0, N, CHUNK):
            part = tl.load(x + r * stride_xm + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
            new_max = tl.maximum(row_max, tl.max(part, axis=0))
            shift = tl.where(new_max == -float("inf"), 0.0, new_max)
            den = den * tl.exp(row_max - shift) + tl.sum(tl.exp(part - shift), axis=0)
            row_max = new_max
        for start in range(0, N, CHUNK):
            part = tl.load(x + r * stride_xm + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
            tl.store(out + r * stride_om + start + cols, tl.exp(part - row_max) / den, mask=start + cols < N)


def softmax_section(elements):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"\nsoftmax: about {elements:,} elements per matrix; GB/s counts one read and one write; ratio = copy time / time")
    for cols in (4096, 16384):
        for dtype in (torch.float32, torch.float16):
            rows = elements // cols
            x = torch.randn(rows, cols, device="cuda", dtype=dtype)
            out = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            section = f"softmax {str(dtype)[6:]} {rows}x{cols}"
            print(f"\n{section}")
            copy = bench(lambda: out.copy_(x))
            gbps = lambda ms: nbytes / ms / 1e6

            def measure_as(name, extra=lambda: ""):
                def measure(run):
                    ms = bench(run)
                    line(section, name, ms, gbps(ms), "GB/s", copy / ms, extra())
                return measure

            line(section, "device copy", copy, gbps(copy), "GB/s", 1.0)
            attempt(section, "torch.softmax", lambda: torch.softmax(x, dim=1), measure_as("torch.softmax"))
            attempt(section, "lesson softmax() default", lambda: softmax_lesson.softmax(x), measure_as("lesson softmax() default"))
            for w in (4, 8, 16, 32):
                name = f"lesson single block BLOCK={cols} num_warps={w}"
                attempt(section, name, lambda: softmax_lesson.softmax(x, MAX_BLOCK=cols, num_warps=w),
                        measure_as(name, lambda: regs_of(softmax_lesson.softmax_kernel)))
            for chunk in (2048, 4096, 8192):
                for w in (4, 8, 16):
                    name = f"lesson chunked CHUNK={chunk} num_warps={w}"
                    attempt(section, name, lambda: softmax_lesson.softmax(x, MAX_BLOCK=0, CHUNK=chunk, num_warps=w),
                            measure_as(name, lambda: regs_of(softmax_lesson.softmax_chunked_kernel)))
            for w in (8, 16):
                for stages in (2, 3):
                    for k in (1, 2):
                        name = f"tutorial persistent num_warps={w} stages={stages} programs={k}xSM"
                        grid = (min(rows, k * sms),)
                        run = lambda: tutorial_softmax_kernel[grid](out, x, x.stride(0), out.stride(0), rows, cols,
                                                                    BLOCK=cols, STAGES=stages, num_warps=w)
                        attempt(section, name, run, measure_as(name, lambda: regs_of(tutorial_softmax_kernel)))
            for chunk, w in ((4096, 8), (8192, 16), (2048, 4)):
                for k in (1, 2, 4, 8):
                    name = f"chunked persistent CHUNK={chunk} num_warps={w} programs={k}xSM"
                    grid = (min(rows, k * sms),)
                    run = lambda: chunked_persistent_kernel[grid](x, out, rows, cols, x.stride(0), out.stride(0),
                                                                  CHUNK=chunk, num_warps=w)
                    attempt(section, name, run, measure_as(name, lambda: regs_of(chunked_persistent_kernel)))
            del x, out
            torch.cuda.empty_cache()
            print(f"  ({time.monotonic() - STARTED:.0f} s so far)")


# --------------------------------------------------------------------------------------------
# matmul variants that the lesson does not ship
# --------------------------------------------------------------------------------------------

@triton.jit
def hinted_matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The lesson's kernel with tutorial 09's edge handling: tl.where(...) and alignment hints
    (tl.multiple_of, tl.max_contiguous) instead of rm % M and rn % N."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    pid_n = (pid % group) // rows_in_group
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    am = tl.max_contiguous(tl.multiple_of(tl.where(rm < M, rm, 0), BLOCK_M), BLOCK_M)
    bn = tl.max_contiguous(tl.multiple_of(tl.where(rn < N, rn, 0), BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a + am[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b + rk[:, None] * stride_bk + bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        av = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        bv = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        acc = tl.dot(av, bv, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The same tiles through tensor descriptors (TMA on Hopper): the hardware copies each tile."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    pid_n = (pid % group) // rows_in_group
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k]), b_desc.load([k, pid_n * BLOCK_N]), acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


EXTRA_CONFIGS = [   # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), beside the lesson's CONFIGS
    (128, 128, 64, 4, 3), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 256, 64, 8, 5),
    (256, 128, 32, 8, 4), (128, 128, 128, 8, 3),
]


def matmul_section():
    print("\nmatmul: TFLOP/s counts 2 M N K; ratio = cuBLAS time / time")
    lesson_configs = [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_warps, c.num_stages)
                      for c in matmul_lesson.CONFIGS]
    for size in (4096, 8192):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        c = torch.empty(size, size, device="cuda", dtype=torch.float16)
        flops = 2.0 * size ** 3
        section = f"matmul float16 {size}^3"
        print(f"\n{section}")
        base = bench(lambda: torch.matmul(a, b))
        tflops = lambda ms: flops / ms / 1e9

        def measure_as(name, extra=lambda: ""):
            def measure(run):
                ms = bench(run)
                line(section, name, ms, tflops(ms), "TFLOP/s", base / ms, extra())
            return measure

        line(section, "torch.matmul (cuBLAS)", base, tflops(base), "TFLOP/s", 1.0)
        attempt(section, "lesson defaults 64x64x32 G8 w4 s3", lambda: matmul_lesson.matmul(a, b),
                measure_as("lesson defaults 64x64x32 G8 w4 s3"))
        attempt(section, "lesson defaults, GROUP_M=1", lambda: matmul_lesson.matmul(a, b, GROUP_M=1),
                measure_as("lesson defaults, GROUP_M=1"))
        for (bm, bn, bk, w, s) in lesson_configs + EXTRA_CONFIGS:
            for g in ((8, 1) if (bm, bn, bk, w, s) in ((128, 256, 64, 8, 3), (128, 128, 64, 8, 4)) else (8,)):
                tag = "CONFIGS" if (bm, bn, bk, w, s) in lesson_configs else "extra"
                name = f"lesson {tag} {bm}x{bn}x{bk} G{g} w{w} s{s}"
                run = lambda: matmul_lesson.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w, num_stages=s)
                attempt(section, name, run, measure_as(name, lambda: regs_of(matmul_lesson.matmul_kernel)))
        attempt(section, "lesson matmul_tuned (autotune over CONFIGS)", lambda: matmul_lesson.matmul_tuned(a, b),
                measure_as("lesson matmul_tuned (autotune over CONFIGS)",
                           lambda: str(matmul_lesson.matmul_kernel_tuned.best_config)))
        for (bm, bn, bk, w, s) in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4), (256, 128, 64, 8, 3)):
            name = f"hinted (tl.where + multiple_of) {bm}x{bn}x{bk} G8 w{w} s{s}"
            grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)
            run = lambda: hinted_matmul_kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0),
                                                     b.stride(1), c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn,
                                                     BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
            attempt(section, name, run, measure_as(name, lambda: regs_of(hinted_matmul_kernel)))
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor
        except ImportError as exc:
            print(f"  TMA variant skipped: {exc}")
            TensorDescriptor = None
        if TensorDescriptor is not None:
            for (bm, bn, bk, w, s) in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4), (256, 128, 64, 8, 3)):
                name = f"TMA descriptors {bm}x{bn}x{bk} G8 w{w} s{s}"

                def run(bm=bm, bn=bn, bk=bk, w=w, s=s):
                    da = TensorDescriptor.from_tensor(a, [bm, bk])
                    db = TensorDescriptor.from_tensor(b, [bk, bn])
                    dc = TensorDescriptor.from_tensor(c, [bm, bn])
                    grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)
                    tma_matmul_kernel[grid](da, db, dc, size, size, size, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                            num_warps=w, num_stages=s)
                attempt(section, name, run, measure_as(name, lambda: regs_of(tma_matmul_kernel)))
        ok = torch.allclose(matmul_lesson.matmul_tuned(a, b).float(), (a.float() @ b.float()), rtol=2e-3, atol=0.5)
        print(f"  matmul_tuned close to a @ b in float32: {ok}")
        del a, b, c
        torch.cuda.empty_cache()
        print(f"  ({time.monotonic() - STARTED:.0f} s so far)")
    size = 4096
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    flops = 2.0 * size ** 3
    section = "matmul float32 4096^3"
    print(f"\n{section}  (ratio = cuBLAS TF32 time / time)")
    cuda = torch.backends.cuda.matmul
    cuda.allow_tf32 = True
    base = bench(lambda: torch.matmul(a, b))
    cuda.allow_tf32 = False
    ieee = bench(lambda: torch.matmul(a, b))
    tflops = lambda ms: flops / ms / 1e9
    line(section, "torch.matmul TF32 (cuBLAS)", base, tflops(base), "TFLOP/s", 1.0)
    line(section, "torch.matmul IEEE float32 (cuBLAS)", ieee, tflops(ieee), "TFLOP/s", base / ieee)

    def measure_as(name, extra=lambda: ""):
        def measure(run):
            ms = bench(run)
            line(section, name, ms, tflops(ms), "TFLOP/s", base / ms, extra())
        return measure

    for precision in ("tf32", "ieee"):
        attempt(section, f"lesson defaults {precision}", lambda: matmul_lesson.matmul(a, b, precision=precision),
                measure_as(f"lesson defaults {precision}", lambda: regs_of(matmul_lesson.matmul_kernel)))
    for (bm, bn, bk, w, s) in lesson_configs + [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)]:
        name = f"lesson tf32 {bm}x{bn}x{bk} G8 w{w} s{s}"
        run = lambda: matmul_lesson.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=s)
        attempt(section, name, run, measure_as(name, lambda: regs_of(matmul_lesson.matmul_kernel)))
    for (bm, bn, bk, w, s) in ((64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3), (128, 128, 16, 8, 2)):
        name = f"lesson ieee {bm}x{bn}x{bk} G8 w{w} s{s}"
        run = lambda: matmul_lesson.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=s, precision="ieee")
        attempt(section, name, run, measure_as(name, lambda: regs_of(matmul_lesson.matmul_kernel)))
    attempt(section, "lesson matmul_tuned tf32", lambda: matmul_lesson.matmul_tuned(a, b),
            measure_as("lesson matmul_tuned tf32", lambda: str(matmul_lesson.matmul_kernel_tuned.best_config)))
    print(f"  ({time.monotonic() - STARTED:.0f} s so far)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("softmax", "matmul"))
    parser.add_argument("--log2", type=int, default=28, help="softmax matrix elements, log2 (default 28)")
    parser.add_argument("--json", metavar="FILE", help="also write every line as JSON")
    parser.add_argument("--budget", type=float, default=330.0, help="seconds after which variants are skipped (default 330)")
    args = parser.parse_args()
    BUDGET[0] = args.budget
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    print(f"{torch.cuda.get_device_name(0)} · torch {torch.__version__} · triton {triton.__version__} · "
          f"{torch.cuda.get_device_properties(0).multi_processor_count} SMs")
    for name, section in (("matmul", matmul_section), ("softmax", lambda: softmax_section(1 << args.log2))):
        if args.only in (None, name):
            try:
                section()
            except Exception:
                traceback.print_exc()
    print(f"\ndone in {time.monotonic() - STARTED:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(RESULTS, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
