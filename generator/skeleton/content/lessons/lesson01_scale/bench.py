"""Bandwidth of scale_add over BLOCK sizes, against torch and a device copy: python bench.py"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import bench_main, row, time_ms  # noqa: E402


def measure(kernel, n, smoke):
    device = "cpu" if smoke else "cuda"
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.empty_like(x)
    nbytes = 3 * n * x.element_size()   # read x and y, write out
    copy = time_ms(lambda: out.copy_(x))
    rows = [row("device copy", copy, 2 * n * x.element_size(), copy, "copy"),
            row("torch: 2.0 * x + y", time_ms(lambda: torch.add(y, x, alpha=2.0)), nbytes, copy, "baseline")]
    for block in (256, 1024, 4096):
        rows.append(row(f"scale_add, BLOCK={block}", time_ms(lambda: kernel.scale_add(x, y, 2.0, BLOCK=block)),
                        nbytes, copy, param=block))
    best = max(rows[2:], key=lambda r: r["gbps"])
    return {"tables": {"blocks": rows}, "values": {"best_gbps": f"{best['gbps']:.0f}", "best_block": str(best["param"])},
            "checks": {}}


if __name__ == "__main__":
    sys.exit(bench_main(measure, default_log2=27))
