"""Facts the lesson states, measured on this machine's GPU (run: python bench/semantics_probe.py).

Prints: what each candidate ReLU does with NaN, ±0 and ±inf against torch.relu; whether
`if xv > 0:` compiles; which PTX instructions tl.maximum becomes.
"""

import os
import sys
import tempfile
import textwrap
import importlib.util

import torch
import triton

FILLS = {
    "torch.relu": None,
    "tl.maximum(xv, 0.0)": "tl.maximum(xv, 0.0)",
    "tl.maximum(.., PropagateNan.ALL)": "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)",
    "tl.where(xv > 0.0, xv, 0.0)": "tl.where(xv > 0.0, xv, 0.0)",
}
KERNEL = """
import triton
import triton.language as tl

@triton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    xv = tl.load(x + offsets, mask=mask)
    {body}
"""


def load(body: str, name: str):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, f"{name}.py")
    with open(path, "w") as f:
        f.write(KERNEL.format(body=body))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "Triton interpreter (CPU)"
    print(f"# {name} · torch {torch.__version__} · triton {triton.__version__}")
    x = torch.tensor([float("nan"), -0.0, float("inf"), float("-inf"), -1.5, 2.5], device=device)
    rows = {}
    for label, fill in FILLS.items():
        if fill is None:
            rows[label] = torch.relu(x).tolist()
            continue
        kernel = load(f"tl.store(out + offsets, {fill}, mask=mask)", f"k{len(rows)}")
        out = torch.empty_like(x)
        kernel[(1,)](x, out, x.numel(), BLOCK=8)
        rows[label] = out.tolist()
        if device == "cuda":
            ptx = kernel.warmup(x, out, x.numel(), BLOCK=8, grid=(1,)).asm["ptx"]
            ops = sorted(
                {
                    line.split()[0]
                    for line in ptx.splitlines()
                    if line.strip().startswith(("max.", "min.", "selp.", "setp.", "bra"))
                }
            )
            print(f"PTX ops for {label}: {ops}")
    print("| input | " + " | ".join(rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for i, value in enumerate(x.tolist()):
        print(f"| {value} | " + " | ".join(str(rows[k][i]) for k in rows) + " |")
    body = textwrap.dedent("""
    if xv > 0:
        tl.store(out + offsets, xv, mask=mask)
    else:
        tl.store(out + offsets, 0.0, mask=mask)""").replace("\n", "\n    ")
    kernel = load(body, "kif")
    out = torch.full_like(x, -7.0)
    try:
        kernel[(1,)](x, out, x.numel(), BLOCK=8)
        print(f"`if xv > 0:` ran without error; output {out.tolist()}")
    except Exception as exc:  # what the compiler says is the fact we want
        first = str(exc).strip().splitlines()
        print(f"`if xv > 0:` failed: {type(exc).__name__}: {' / '.join(first[-3:])[:400]}")


if __name__ == "__main__":
    sys.exit(main())
