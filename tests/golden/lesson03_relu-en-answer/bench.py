"""Measure this lesson's performance claims on your own GPU: python bench.py

1. ReLU bandwidth: the kernel in relu.py over a BLOCK sweep, against torch.relu and a device copy.
2. Figure 3-2 (answer edition, which has fused.py): bias -> ReLU -> dropout as one fused Triton
   kernel, against eager PyTorch and torch.compile of the same.

Times are medians of triton.testing.do_bench after warm-up (the first call, which compiles, is not
timed), at 2^28 float32 elements or less if the GPU has less memory. GB/s counts bytes read plus
bytes written; "vs copy" is the device copy's time over this time.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def size_for_gpu(log2=28):
    free, _ = torch.cuda.mem_get_info()
    n = 1 << log2
    while n * 4 * 4 > free * 0.7 and n > 1 << 20:
        n //= 2
    return n


def timed(fn):
    from triton.testing import do_bench
    fn()
    return do_bench(fn, warmup=100, rep=500, return_mode="median")


def relu_table(n):
    from relu import relu
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    copy = timed(lambda: out.copy_(x))
    rows = [("device copy", copy), ("torch.relu", timed(lambda: torch.relu(x)))]
    for block in (128, 256, 512, 1024, 2048, 4096):
        rows.append((f"relu.py, BLOCK={block}", timed(lambda: relu(x, BLOCK=block))))
    return [{"name": name, "ms": ms, "gbps": 2 * n * 4 / ms / 1e6, "vs_copy": copy / ms} for name, ms in rows]


def fusion_table(n, p=0.1, seed=1234):
    import torch.nn.functional as F
    from fused import bias_relu_dropout
    cols = 4096
    x = torch.randn(n // cols, cols, device="cuda")
    b = torch.randn(cols, device="cuda")
    out = torch.empty_like(x)
    copy = timed(lambda: out.copy_(x))
    eager = lambda: F.dropout(torch.relu(x + b), p)
    compiled = torch.compile(eager)
    rows = [("device copy", copy),
            ("fused Triton, tl.rand4x, BLOCK=512", timed(lambda: bias_relu_dropout(x, b, p, seed))),
            ("fused Triton, tl.rand per element, BLOCK=512",
             timed(lambda: bias_relu_dropout(x, b, p, seed, four_per_call=False))),
            ("eager F.dropout(torch.relu(x + b))", timed(eager)),
            ("torch.compile of the same", timed(compiled))]
    return [{"name": name, "ms": ms, "gbps": 2 * x.numel() * 4 / ms / 1e6, "vs_copy": copy / ms} for name, ms in rows]


def fusion_correctness(p=0.1, seed=1234):
    """NaN survives the ReLU, the kept fraction matches 1 - p, kept values are scaled, seeds repeat."""
    from fused import bias_relu_dropout
    cols = 4096
    x = torch.randn(1024, cols, device="cuda")
    b = torch.randn(cols, device="cuda")
    x[0, :8] = float("nan")
    out = bias_relu_dropout(x, b, p, seed)
    reference = torch.relu(x + b)
    positive = reference > 0
    kept = (out != 0) & positive
    n_pos = int(positive.sum())
    fraction = int(kept.sum()) / n_pos
    bound = 5 * math.sqrt(p * (1 - p) / n_pos)
    scaled = torch.allclose(out[kept], reference[kept] / (1 - p), rtol=1e-6, atol=0)
    return {"nan_kept": bool(torch.isnan(out[0, :8]).all()), "kept_fraction": fraction,
            "expected_fraction": 1 - p, "binomial_5_sigma": bound, "fraction_ok": abs(fraction - (1 - p)) <= bound,
            "scaled_ok": scaled, "same_seed_same_mask": _same(out, bias_relu_dropout(x, b, p, seed)),
            "other_seed_other_mask": not _same(out, bias_relu_dropout(x, b, p, seed + 1))}


def _same(a, b):
    return bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)))


def show(title, rows):
    print(title)
    print(f"  {'':46} {'ms':>8} {'GB/s':>8} {'vs copy':>8}")
    for row in rows:
        print(f"  {row['name']:46} {row['ms']:8.3f} {row['gbps']:8.0f} {row['vs_copy']:8.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--log2", type=int, default=28, help="log2 of the element count (default 28)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU; the Triton interpreter's speed says nothing about a GPU.")
        return 2
    import triton
    n = size_for_gpu(args.log2)
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
              "elements": n, "relu": relu_table(n)}
    print(f"{result['device']} · torch {result['torch']} · triton {result['triton']} · {n} float32 elements")
    show("ReLU", result["relu"])
    if (HERE / "fused.py").exists():
        result["fusion"] = fusion_table(n)
        result["fusion_correctness"] = fusion_correctness()
        show("bias -> ReLU -> dropout (p=0.1), bias of 4096 broadcast over rows", result["fusion"])
        print("fused kernel checks:", json.dumps(result["fusion_correctness"]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
