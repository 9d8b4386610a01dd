"""Lesson 3's measurements, reproducible on your GPU: python bench.py

1. blocks: the kernel in relu.py over a BLOCK sweep, against torch.relu and a device copy.
2. fusion: bias + ReLU as two eager PyTorch operations, as torch.compile makes it, and (answer
   edition, which has fused.py) as one Triton kernel; then figure 3-2, bias -> ReLU -> dropout.
3. recompiles: how many kernel variants Triton compiles for a set of new lengths n.

Times are medians of triton.testing.do_bench after warm-up; the first call (JIT) is never timed.
GB/s counts the bytes an operation must move (each input read once, the output written once);
"vs copy" is the device copy's time over the row's time.
"""
import math
import os
import sys
from pathlib import Path

# torch.compile compiles in this process: no pool of compile workers to start and to wait for at
# exit (the timed kernels are the same; with a warm compile cache nothing is compiled at all).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import bench_main, row, time_ms  # noqa: E402

BLOCKS = (256, 1024, 4096)
COLS = 4096
# The case `check.py --bench` times the kernel on from its own process (read from this text, never
# run there): 2^26 elements, 256 MiB in and out, each call on buffers of its own.
TRUSTED_CASE = {"id": "trusted_bench", "dims": {"N": 67108864}, "gpu_only": True}


def blocks_table(kernel, n, device):
    x = torch.randn(n, device=device)
    out = torch.empty_like(x)
    nbytes = 2 * n * x.element_size()
    copy = time_ms(lambda: out.copy_(x))
    rows = [row("device copy", copy, nbytes, copy, "copy"),
            row("torch.relu", time_ms(lambda: torch.relu(x)), nbytes, copy, "baseline")]
    for block in BLOCKS:
        rows.append(row(f"relu.py, BLOCK={block}", time_ms(lambda: kernel.relu(x, BLOCK=block)), nbytes, copy,
                        param=block))
    return rows


def fusion_table(n, device, smoke):
    import torch.nn.functional as F
    x = torch.randn(max(n // COLS, 2), COLS, device=device)
    b = torch.randn(COLS, device=device)
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()   # the unavoidable transfers: read x, write the result
    copy = time_ms(lambda: out.copy_(x))
    eager = lambda: torch.relu(x + b)
    rows = [row("device copy", copy, nbytes, copy, "copy"),
            row("eager torch.relu(x + b)", time_ms(eager), nbytes, copy, "baseline")]
    if not smoke:
        rows.append(row("torch.compile of torch.relu(x + b)", time_ms(torch.compile(eager)), nbytes, copy, "baseline"))
    fused = _fused()
    if fused is not None:
        rows.append(row("fused.py bias_relu, one Triton kernel", time_ms(lambda: fused.bias_relu(x, b)), nbytes, copy))
        rows.append(row("fused.py bias -> ReLU -> dropout (tl.rand4x)",
                        time_ms(lambda: fused.bias_relu_dropout(x, b, 0.1, 1234)), nbytes, copy))
    rows.append(row("eager F.dropout(torch.relu(x + b), 0.1)", time_ms(lambda: F.dropout(eager(), 0.1)), nbytes, copy,
                    "baseline"))
    return rows


def _fused():
    try:
        import fused
    except ImportError:   # the exercise edition has no fused.py: its kernel contains the answer
        return None
    return fused


def dropout_checks(device, rows, p=0.1, seed=1234):
    """The fused dropout keeps NaN, keeps about 1 - p of the positives, scales them, repeats seeds."""
    fused = _fused()
    if fused is None:
        return {}
    x = torch.randn(rows, COLS, device=device)
    b = torch.randn(COLS, device=device)
    x[0, :8] = float("nan")
    out = fused.bias_relu_dropout(x, b, p, seed)
    expected = torch.relu(x + b)
    positive = expected > 0
    kept = (out != 0) & positive
    fraction = int(kept.sum()) / int(positive.sum())
    bound = 5 * math.sqrt(p * (1 - p) / int(positive.sum()))
    same = lambda a, c: bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(c)))
    return {"dropout keeps NaN": bool(torch.isnan(out[0, :8]).all()),
            "dropout keeps 1 - p of the positives (5 sigma)": abs(fraction - (1 - p)) <= bound,
            "kept values scaled by 1/(1-p)": torch.allclose(out[kept], expected[kept] / (1 - p), rtol=1e-6, atol=0),
            "same seed, same mask": same(out, fused.bias_relu_dropout(x, b, p, seed)),
            "bias_relu equals torch.relu(x + b)": same(fused.bias_relu(x, b), expected)}


def recompiles(kernel, device):
    """Kernel variants compiled for new lengths: n is an ordinary argument, yet Triton specializes
    integers that equal 1 or are divisible by 16."""
    lengths = (1, 5, 16, 17, 32, 1000, 1003, 4096, 100003)
    jit = kernel.relu_kernel
    if not hasattr(jit, "device_caches"):   # the interpreter compiles nothing
        return {}
    count = lambda: sum(len(cache[0]) for cache in jit.device_caches.values())
    before = count()
    for n in lengths:
        kernel.relu(torch.randn(n, device=device), BLOCK=256)
    after = count()
    return {"lengths_tried": str(len(lengths)), "variants_compiled": str(after - before)}


def measure(kernel, n, smoke):
    device = "cpu" if smoke else "cuda"
    blocks = blocks_table(kernel, n, device)
    fusion = fusion_table(n, device, smoke)
    by_name = {r["name"]: r for r in blocks + fusion}
    kernels = [r for r in blocks if r["role"] == "kernel"]
    best = max(kernels, key=lambda r: r["vs_copy"])
    values = {f"block{r['param']}_vs_copy": f"{r['vs_copy']:.2f}" for r in kernels}
    values.update(best_block=str(best["param"]), best_vs_copy=f"{best['vs_copy']:.2f}",
                  copy_gbps=f"{blocks[0]['gbps']:.0f}", torch_relu_vs_copy=f"{by_name['torch.relu']['vs_copy']:.2f}",
                  eager_bias_relu_ms=f"{by_name['eager torch.relu(x + b)']['ms']:.3f}",
                  eager_bias_relu_vs_copy=f"{by_name['eager torch.relu(x + b)']['vs_copy']:.2f}",
                  copy_ms=f"{fusion[0]['ms']:.3f}")
    compiled = by_name.get("torch.compile of torch.relu(x + b)")
    if compiled:
        values["compile_bias_relu_vs_copy"] = f"{compiled['vs_copy']:.2f}"
    fused = by_name.get("fused.py bias_relu, one Triton kernel")
    if fused:
        values["fused_bias_relu_ms"] = f"{fused['ms']:.3f}"
        values["fused_bias_relu_vs_copy"] = f"{fused['vs_copy']:.2f}"
        values["eager_over_fused"] = f"{by_name['eager torch.relu(x + b)']['ms'] / fused['ms']:.2f}"
        dropout = by_name["fused.py bias -> ReLU -> dropout (tl.rand4x)"]
        values["fused_dropout_vs_copy"] = f"{dropout['vs_copy']:.2f}"
    values.update(recompiles(kernel, device))
    return {"tables": {"blocks": blocks, "fusion": fusion}, "values": values, "checks": dropout_checks(device, 8 if smoke else 256)}


if __name__ == "__main__":
    sys.exit(bench_main(measure, default_log2=28))
