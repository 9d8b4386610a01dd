"""Lesson 2's measurements, reproducible on your GPU: python bench.py

1. blocks: vector_add over BLOCK = 256 ... 8192, against torch.add and a device copy.
2. layouts: the best BLOCK with contiguous inputs, with x a strided view (every second element of
   a tensor twice as long, stride 2), and with both x and y strided; torch.add on the same views.

Times are medians of triton.testing.do_bench after warm-up; the first call (JIT) is never timed.
Every row counts the bytes the addition must move: 3 tensors of n elements (read x, read y, write
out). The device copy moves the same number of bytes (1.5 n elements read and 1.5 n written), so
"vs copy" (the copy's time over the row's time) is the fraction of copy bandwidth a row reaches.
A strided view makes the GPU fetch more bytes than the addition uses; its rows still count only
the useful ones.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import bench_main, row, time_ms  # noqa: E402

BLOCKS = (256, 512, 1024, 2048, 4096, 8192)
SMOKE_BLOCKS = (256, 1024)
DEFAULT_BLOCK = 1024


def blocks_table(kernel, x, y, copy, smoke):
    nbytes = 3 * x.numel() * x.element_size()
    summed = torch.empty_like(x)
    rows = [row("device copy (same bytes)", copy, nbytes, copy, "copy"),
            row("torch.add(x, y, out=out)", time_ms(lambda: torch.add(x, y, out=summed)), nbytes, copy, "baseline")]
    for block in SMOKE_BLOCKS if smoke else BLOCKS:
        rows.append(row(f"vector_add, BLOCK={block}", time_ms(lambda: kernel.vector_add(x, y, BLOCK=block)),
                        nbytes, copy, param=block))
    return rows


def layouts_table(kernel, n, device, best, copy):
    """The best BLOCK on strided views. Each view has its own storage of 2 n elements; the
    contiguous y of the "x strided" rows is the first half of y's storage (6 n floats in all)."""
    nbytes = 3 * n * 4
    xs = torch.randn(2 * n, device=device)[::2]
    wide_y = torch.randn(2 * n, device=device)
    ys, y = wide_y[::2], wide_y[:n]
    summed = torch.empty(n, device=device)
    block = best["param"]
    rows = [row(f"vector_add, BLOCK={block}, contiguous", best["ms"], nbytes, copy, param=block)]
    for name, a, b in (("x strided", xs, y), ("x and y strided", xs, ys)):
        rows.append(row(f"vector_add, BLOCK={block}, {name}", time_ms(lambda: kernel.vector_add(a, b, BLOCK=block)),
                        nbytes, copy, param=block))
        rows.append(row(f"torch.add, {name}", time_ms(lambda: torch.add(a, b, out=summed)), nbytes, copy,
                        "baseline"))
    same = bool(torch.equal(kernel.vector_add(xs, ys), torch.add(xs, ys)))
    return rows, same


def measure(kernel, n, smoke):
    device = "cpu" if smoke else "cuda"
    n -= n % 2
    src = torch.randn(3 * n // 2, device=device)
    dst = torch.empty_like(src)
    copy = time_ms(lambda: dst.copy_(src))
    del src, dst
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    blocks = blocks_table(kernel, x, y, copy, smoke)
    checks = {"vector_add equals torch.add (contiguous)": bool(torch.equal(kernel.vector_add(x, y), torch.add(x, y)))}
    del x, y   # room for the strided views' storage
    kernels = [r for r in blocks if r["role"] == "kernel"]
    best = max(kernels, key=lambda r: r["vs_copy"])
    layouts, same = layouts_table(kernel, n, device, best, copy)
    checks["vector_add equals torch.add (x and y strided)"] = same
    by_name = {r["name"]: r for r in blocks + layouts}
    block = best["param"]
    values = {f"block{r['param']}_vs_copy": f"{r['vs_copy']:.2f}" for r in kernels}
    values.update(
        device="CPU (Triton interpreter, smoke run)" if smoke else torch.cuda.get_device_name(0),
        elements=f"{n:,}",
        copy_gbps=f"{blocks[0]['gbps']:.0f}",
        torch_vs_copy=f"{blocks[1]['vs_copy']:.2f}",
        best_block=str(block),
        best_gbps=f"{best['gbps']:.0f}",
        best_vs_copy=f"{best['vs_copy']:.2f}",
        default_vs_copy=values[f"block{DEFAULT_BLOCK}_vs_copy"],
        strided_x_vs_copy=f"{by_name[f'vector_add, BLOCK={block}, x strided']['vs_copy']:.2f}",
        strided_xy_vs_copy=f"{by_name[f'vector_add, BLOCK={block}, x and y strided']['vs_copy']:.2f}",
        torch_strided_xy_vs_copy=f"{by_name['torch.add, x and y strided']['vs_copy']:.2f}",
    )
    return {"tables": {"blocks": blocks, "layouts": layouts}, "values": values, "checks": checks}


if __name__ == "__main__":
    sys.exit(bench_main(measure, default_log2=28))
