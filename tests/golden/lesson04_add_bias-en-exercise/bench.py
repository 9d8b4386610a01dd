"""Lesson 4's measurements, reproducible on your GPU: python bench.py

1. tiles: add_bias over a sweep of (BLOCK_M, BLOCK_N) on a row-major float32 x of 4096 columns,
   against eager PyTorch `x + bias` and a device copy.
2. layouts: the default tile on views of the same size: x transposed (column-major, and so is the
   out that empty_like makes for it), x sliced from a wider tensor (a row stride that is a multiple
   of 16 elements, and one that is not), and a transposed x written to a row-major out (the kernel
   launched directly: a transpose and a bias add in one pass), with torch's own versions.

Times are medians of triton.testing.do_bench after warm-up; the first call (JIT) is never timed.
GB/s counts the bytes an operation must move: x read once, the output written once, the bias read
once; "vs copy" is the row-major device copy's time over the row's time.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import bench_main, row, time_ms  # noqa: E402

TILES = ((16, 16), (32, 32), (64, 64), (128, 128), (16, 128), (32, 128), (8, 256), (4, 1024), (2, 2048), (1, 4096))
DEFAULT = (32, 32)


def tiles_table(kernel, x, bias, nbytes):
    out = torch.empty_like(x)
    copy = time_ms(lambda: out.copy_(x))
    rows = [row("device copy", copy, nbytes, copy, "copy"),
            row("eager x + bias", time_ms(lambda: x + bias), nbytes, copy, "baseline")]
    for bm, bn in TILES:
        ms = time_ms(lambda: kernel.add_bias(x, bias, BLOCK_M=bm, BLOCK_N=bn))
        rows.append(row(f"add_bias, BLOCK_M={bm}, BLOCK_N={bn}", ms, nbytes, copy, param=bm * bn))
    return rows, copy


def to_row_major(kernel, xt, bias, out, bm, bn):
    """The kernel launched on a column-major x and a row-major out: the layout changes on the way."""
    import triton
    m, n = xt.shape
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    kernel.add_bias_kernel[grid](xt, bias, out, m, n, xt.stride(0), xt.stride(1), bias.stride(0),
                                 out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn)
    return out


def layouts_table(kernel, x, bias, nbytes, copy):
    m, n = x.shape
    bm, bn = DEFAULT
    rows = [row("device copy (row-major)", copy, nbytes, copy, "copy"),
            row("add_bias, x row-major", time_ms(lambda: kernel.add_bias(x, bias)), nbytes, copy)]
    xt = x.t().contiguous().t()          # the same values, stored column by column
    rows.append(row("add_bias, x column-major",
                    time_ms(lambda: kernel.add_bias(xt, bias)), nbytes, copy))
    rows.append(row("eager x + bias, x column-major", time_ms(lambda: xt + bias), nbytes, copy, "baseline"))
    out = torch.empty(m, n, device=x.device)
    rows.append(row("kernel, x column-major -> out row-major",
                    time_ms(lambda: to_row_major(kernel, xt, bias, out, bm, bn)), nbytes, copy))
    rows.append(row("torch copy, column-major -> row-major", time_ms(lambda: out.copy_(xt)), nbytes, copy,
                    "baseline"))
    del xt, out
    for extra, label in ((64, "sliced, row stride N + 64"), (7, "sliced, row stride N + 7")):
        wide = torch.empty(m, n + extra, device=x.device)
        wide[:, :n] = x
        xs = wide[:, :n]
        rows.append(row(f"add_bias, x {label}", time_ms(lambda: kernel.add_bias(xs, bias)), nbytes, copy))
        del wide, xs
    return rows


def layout_checks(kernel, x, bias):
    """The layouts the table times give x + bias exactly (on the first rows, to spare memory)."""
    x = x[:64]
    m, n = x.shape
    expected = x + bias
    xt = x.t().contiguous().t()
    wide = torch.zeros(m, n + 7, device=x.device)
    wide[:, :n] = x
    out = torch.empty(m, n, device=x.device)
    return {"column-major x gives x + bias": torch.equal(kernel.add_bias(xt, bias), expected),
            "sliced x gives x + bias": torch.equal(kernel.add_bias(wide[:, :n], bias), expected),
            "column-major x -> row-major out gives x + bias":
                torch.equal(to_row_major(kernel, xt, bias, out, *DEFAULT), expected)}


def measure(kernel, n, smoke):
    device = "cpu" if smoke else "cuda"
    cols = 64 if smoke else 4096
    x = torch.randn(max(n // cols, 2), cols, device=device)
    bias = torch.randn(cols, device=device)
    nbytes = 2 * x.numel() * x.element_size() + bias.numel() * bias.element_size()
    tiles, copy = tiles_table(kernel, x, bias, nbytes)
    layouts = layouts_table(kernel, x, bias, nbytes, copy)
    sweep = [r for r in tiles if r["role"] == "kernel"]
    best = max(sweep, key=lambda r: r["vs_copy"])
    worst = min(sweep, key=lambda r: r["vs_copy"])
    by_name = {r["name"]: r for r in tiles + layouts}
    tile = lambda r: r["name"].split(", ", 1)[1]
    values = {f"tile_{bm}x{bn}_vs_copy": f"{r['vs_copy']:.2f}" for (bm, bn), r in zip(TILES, sweep)}
    values.update(
        rows=str(x.shape[0]), cols=str(cols),
        copy_ms=f"{copy:.3f}", copy_gbps=f"{tiles[0]['gbps']:.0f}",
        eager_ms=f"{tiles[1]['ms']:.3f}", eager_vs_copy=f"{tiles[1]['vs_copy']:.2f}",
        best_tile=tile(best), best_ms=f"{best['ms']:.3f}", best_gbps=f"{best['gbps']:.0f}",
        best_vs_copy=f"{best['vs_copy']:.2f}",
        worst_tile=tile(worst), worst_vs_copy=f"{worst['vs_copy']:.2f}",
        default_vs_copy=values[f"tile_{DEFAULT[0]}x{DEFAULT[1]}_vs_copy"],
        column_major_vs_copy=f"{layouts[2]['vs_copy']:.2f}",
        eager_column_major_vs_copy=f"{layouts[3]['vs_copy']:.2f}",
        to_row_major_vs_copy=f"{layouts[4]['vs_copy']:.2f}",
        torch_transpose_copy_vs_copy=f"{layouts[5]['vs_copy']:.2f}",
        sliced_aligned_vs_copy=f"{by_name['add_bias, x sliced, row stride N + 64']['vs_copy']:.2f}",
        sliced_odd_vs_copy=f"{by_name['add_bias, x sliced, row stride N + 7']['vs_copy']:.2f}")
    checks = layout_checks(kernel, x, bias)
    if not smoke:   # the lesson's claim: the best tile moves its bytes at 0.95 of copy bandwidth or more
        checks["best tile reaches 0.95 of device-copy bandwidth"] = best["vs_copy"] >= 0.95
    return {"tables": {"tiles": tiles, "layouts": layouts}, "values": values, "checks": checks}


if __name__ == "__main__":
    sys.exit(bench_main(measure, default_log2=28))
