#!/usr/bin/env python3
"""Self-check for one coursepack lesson. Needs only Python, torch and triton.

    python check.py                 check the kernel file beside this script
    python check.py PATH            check another .py file, or the exercise cell of an .ipynb
    python check.py --json          per-case results as JSON
    python check.py --hint N        hint level N
    python check.py --report F.md   write a submission report
    python check.py --bench         check, then time the kernel with the lesson's bench.py (GPU)

The student's code runs in child processes: a kernel that hangs, crashes or leaves the GPU in an
error state fails its own case with a reason, a fresh child takes the next case, and this script
always ends. The lesson-specific parts (inputs, reference, comparison, reasons) are data below.
"""
import argparse
import difflib
import io
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
import traceback
import zlib
from pathlib import Path

# The data block below is written by coursepack when it builds the pack.
LESSON = json.loads(r"""{
 "bench": "bench.py",
 "bench_tables": {
  "layouts": "Layouts: the default 32 × 32 block on inputs stored by columns, sliced, and changing layout",
  "tiles": "Block-shape sweep: add_bias over (BLOCK_M, BLOCK_N), against eager x + bias and a device copy (float32, 4096 columns)"
 },
 "blank_line": 21,
 "case_names": {
  "bias_sliced": "50 × 70, bias taking every second element (stride 2)",
  "empty_cols": "64 × 0 (no columns)",
  "empty_rows": "0 × 64 (no rows)",
  "large": "4099 × 4097 (large input, GPU only)",
  "odd_sizes": "131 × 257 (not a multiple of the block: many blocks and tails)",
  "one_row": "1 × 300 (a single row)",
  "random_bf16": "100 × 200 (bfloat16)",
  "random_f16": "100 × 200 (float16)",
  "random_f32": "100 × 200 (float32)",
  "seed": "the worked example's 3 × 6 matrix (one 32 × 32 block, tails in both dimensions)",
  "sliced": "100 × 70, x the first 70 columns of a wider tensor (row stride above 70)",
  "special_bf16": "NaN and ±inf meet (bfloat16)",
  "special_f16": "NaN and ±inf meet (float16)",
  "special_f32": "NaN and ±inf meet: inf + (-inf), NaN plus a number, -0.0 + (-0.0) (float32)",
  "tail_both": "37 × 45 (tails in both dimensions)",
  "tail_cols": "64 × 33 (a tail in the columns only: 1 column)",
  "tail_rows": "33 × 64 (a tail in the rows only: 1 row)",
  "transposed": "100 × 70, x a transposed view (stored by columns, strides (1, 100))",
  "whole_tiles": "64 × 96 (2 × 3 whole blocks)"
 },
 "cases": [
  {
   "dims": {
    "M": 3,
    "N": 6
   },
   "group": "normal",
   "id": "seed",
   "values": {
    "bias": [
     "0.5",
     "-1.0",
     "2.0",
     "-3.0",
     "4.0",
     "-5.0"
    ],
    "x": [
     "0.0",
     "1.0",
     "2.0",
     "3.0",
     "4.0",
     "5.0",
     "10.0",
     "11.0",
     "12.0",
     "13.0",
     "14.0",
     "15.0",
     "20.0",
     "21.0",
     "22.0",
     "23.0",
     "24.0",
     "25.0"
    ]
   }
  },
  {
   "dims": {
    "M": 64,
    "N": 96
   },
   "group": "normal",
   "id": "whole_tiles"
  },
  {
   "dims": {
    "M": 100,
    "N": 200
   },
   "group": "normal",
   "id": "random_f32"
  },
  {
   "dims": {
    "M": 100,
    "N": 200
   },
   "dtype": "float16",
   "group": "normal",
   "id": "random_f16"
  },
  {
   "dims": {
    "M": 100,
    "N": 200
   },
   "dtype": "bfloat16",
   "group": "normal",
   "id": "random_bf16"
  },
  {
   "dims": {
    "M": 4099,
    "N": 4097
   },
   "gpu_only": true,
   "group": "normal",
   "id": "large"
  },
  {
   "dims": {
    "M": 33,
    "N": 64
   },
   "group": "boundary",
   "id": "tail_rows"
  },
  {
   "dims": {
    "M": 64,
    "N": 33
   },
   "group": "boundary",
   "id": "tail_cols"
  },
  {
   "dims": {
    "M": 37,
    "N": 45
   },
   "group": "boundary",
   "id": "tail_both"
  },
  {
   "dims": {
    "M": 131,
    "N": 257
   },
   "group": "boundary",
   "id": "odd_sizes"
  },
  {
   "dims": {
    "M": 1,
    "N": 300
   },
   "group": "boundary",
   "id": "one_row"
  },
  {
   "dims": {
    "M": 0,
    "N": 64
   },
   "group": "boundary",
   "id": "empty_rows"
  },
  {
   "dims": {
    "M": 64,
    "N": 0
   },
   "group": "boundary",
   "id": "empty_cols"
  },
  {
   "dims": {
    "M": 100,
    "N": 70
   },
   "group": "boundary",
   "id": "transposed",
   "layout": {
    "x": "transposed"
   }
  },
  {
   "dims": {
    "M": 100,
    "N": 70
   },
   "group": "boundary",
   "id": "sliced",
   "layout": {
    "x": "sliced"
   }
  },
  {
   "dims": {
    "M": 50,
    "N": 70
   },
   "group": "boundary",
   "id": "bias_sliced",
   "layout": {
    "bias": "sliced"
   }
  },
  {
   "dims": {
    "M": 2,
    "N": 6
   },
   "group": "boundary",
   "id": "special_f32",
   "values": {
    "bias": [
     "-inf",
     "inf",
     "nan",
     "1.0",
     "-0.0",
     "2.0"
    ],
    "x": [
     "inf",
     "-inf",
     "1.0",
     "nan",
     "-0.0",
     "-inf",
     "-inf",
     "inf",
     "-inf",
     "3.0",
     "0.0",
     "inf"
    ]
   }
  },
  {
   "dims": {
    "M": 2,
    "N": 6
   },
   "dtype": "float16",
   "group": "boundary",
   "id": "special_f16",
   "values": {
    "bias": [
     "-inf",
     "inf",
     "nan",
     "1.0",
     "-0.0",
     "2.0"
    ],
    "x": [
     "inf",
     "-inf",
     "1.0",
     "nan",
     "-0.0",
     "-inf",
     "-inf",
     "inf",
     "-inf",
     "3.0",
     "0.0",
     "inf"
    ]
   }
  },
  {
   "dims": {
    "M": 2,
    "N": 6
   },
   "dtype": "bfloat16",
   "group": "boundary",
   "id": "special_bf16",
   "values": {
    "bias": [
     "-inf",
     "inf",
     "nan",
     "1.0",
     "-0.0",
     "2.0"
    ],
    "x": [
     "inf",
     "-inf",
     "1.0",
     "nan",
     "-0.0",
     "-inf",
     "-inf",
     "inf",
     "-inf",
     "3.0",
     "0.0",
     "inf"
    ]
   }
  }
 ],
 "compare": {},
 "edition": "answer",
 "edition_name": "answer edition",
 "entry": "add_bias",
 "hint_names": [
  "concept area",
  "direction",
  "key spot",
  "full answer"
 ],
 "hints": [
  "Storing is the same problem as loading: where element $(m, n)$ lives in a tensor is decided by that tensor's strides. Look first at how the load of `x` computes its addresses.",
  "`out` is another tensor: its strides need not be $(N, 1)$, nor those of `x` (`empty_like` keeps the layout of a transposed `x`). The kernel's arguments already include the two strides of `out`.",
  "The store's addresses have exactly the structure of the load of `x`: the base is `out`, the row index `rows[:, None]` times `out`'s row stride, the column index `cols[None, :]` times `out`'s column stride.",
  "`out + rows[:, None] * stride_om + cols[None, :] * stride_on`. With `rows[:, None] * N + cols[None, :]` the `transposed` case fails; borrowing `stride_xm` and `stride_xn` fails the `sliced` case."
 ],
 "inputs": [
  {
   "name": "x",
   "shape": [
    "M",
    "N"
   ]
  },
  {
   "name": "bias",
   "shape": [
    "N"
   ]
  }
 ],
 "lesson": "lesson04_add_bias",
 "lesson_reasons": [
  "misplaced",
  "bias_wrong_axis",
  "x_misread"
 ],
 "locale": "en",
 "messages": {
  "at_line": " (at line {line})",
  "bench_after_failures": "--bench times only a kernel that passes every case: fix the failing cases above first",
  "bench_needs_gpu": "--bench needs a CUDA GPU; the interpreter's speed says nothing about a GPU",
  "bench_none": "this lesson has no bench",
  "bench_not_run": "--bench needs a kernel that runs: deal with the problem above first",
  "bench_note": "GB/s counts bytes read plus bytes written; the first call (JIT compilation) is not timed.",
  "bench_note_flops": "TFLOP/s counts the operation's floating-point operations (2·M·N·K for a matrix product); 'vs base' is the base row's time over the row's time; the first call (JIT compilation and autotuning) is not timed.",
  "bench_title": "bandwidth on {device}, {n} elements per timing, median of many runs after warm-up · {versions}",
  "bench_title_flops": "throughput on {device}, median of many runs after warm-up · {versions}",
  "bench_vs_base": "vs base",
  "bench_vs_copy": "vs copy",
  "crashed": "crashed ({code}): the process running your kernel died",
  "edits_outside": "note: lines changed outside the blank: {lines}. The rules allow changes only at the blank; your instructor will see this.",
  "env_gpu": "environment: {device} · {versions}",
  "env_interpreter": "environment: Triton interpreter on CPU (no CUDA GPU in use) · {versions}",
  "env_unknown": "environment: unknown (the code could not be started)",
  "file_line": "file: {file}",
  "fill_blank": "fill in the blank at {where}: replace ______ with your expression",
  "fill_blank_next": "then run the check again; `python check.py --hint 1` gives a first hint",
  "gpu_fault": "your kernel accessed memory outside its tensors (after a GPU error its process is unusable; the next cases run in a fresh one): check the offsets and the mask",
  "help_bench": "measure bandwidth on a CUDA GPU",
  "help_hint": "print hint level N (1-4)",
  "help_interpreter": "use the Triton interpreter even when a GPU is present",
  "help_json": "print per-case results as JSON",
  "help_kernel": "the kernel file to time (default: the pack's kernel file)",
  "help_log2": "log2 of the element count (made smaller when the GPU lacks memory)",
  "help_path": "a .py file or an .ipynb notebook to check (default: the kernel file beside check.py)",
  "help_report": "write a submission report to FILE",
  "help_smoke": "smoke run: tiny sizes in the Triton interpreter on the CPU, only to see that the bench runs",
  "help_timeout": "seconds allowed for each case",
  "hint_answer_only": "level 4 (the full answer) is only in the answer edition; ask your instructor",
  "hint_heading": "hint, level {level} ({name}):",
  "hint_range": "hint levels go from 1 to 4",
  "import_error": "your file could not be imported ({where}): {text}",
  "import_timeout": "importing your file took longer than {seconds} s and was stopped",
  "interpreter_banner": "results from the interpreter are not GPU measurements; bfloat16 cases need a GPU and are skipped",
  "mismatch": "index {index}: input {input} -> expected {expected}, got {got} ({count} of {n} elements differ)",
  "next_fix": "next:  fix the first failing case, or try `python check.py --hint 1`",
  "next_submit": "next:  write your explanations, then `python check.py --report submission.md`",
  "no_cell_source": "could not find the source of the cell that defines the function",
  "no_exercise_cell": "{file} has no cell tagged 'exercise'",
  "no_such_file": "no such file: {file}",
  "no_triton": "Triton cannot be imported ({platform}). Triton is published for Linux and Windows only; for what to do, see the section \"{section}\" in README.md.",
  "not_tensor": "the function returned {got}, not a tensor",
  "notebook_cell": "this notebook's code cell",
  "notebook_failed": "the self-check did not pass; see the lines above",
  "position_2d": "row {row}, column {column}",
  "raised": "raised {text}",
  "report_answer_here": "_Your answer:_",
  "report_code": "Your code",
  "report_environment": "environment",
  "report_explain_here": "_Explain why this case fails and what you changed:_",
  "report_failures": "Failing cases and your explanation",
  "report_gpu": "GPU run on {device}",
  "report_interpreter": "Triton interpreter on the CPU (not a GPU measurement)",
  "report_no_failures": "Every case passed.",
  "report_output": "Output of check.py",
  "report_questions": "Answers to the questions",
  "report_run_kind": "how it ran",
  "report_static": "static review only (the code was not run)",
  "report_status": "result",
  "report_title": "Submission: {lesson}",
  "report_written": "report written to {file}",
  "score": "score: {got}/{total} automatic points (normal inputs {normal}/{normal_total}, boundary inputs {boundary}/{boundary_total})",
  "score_graded": "+{explanation} for explaining your implementation and {questions} for Q1-Q{count}, graded by your instructor",
  "skip_bf16_interpreter": "skipped: bfloat16 needs a GPU; the Triton interpreter computes it wrongly",
  "skip_needs_gpu": "skipped: needs a CUDA GPU",
  "syntax_error": "syntax error at {where}: {text}",
  "timed_out": "timed out after {seconds} s: the run was stopped",
  "title": "coursepack check · {lesson} · {locale} · {edition}",
  "version_differs": "note: this pack was verified with torch {torch} and triton {triton}; your versions differ",
  "where_cell": "{file}, cell {cell}, line {line}",
  "why": "why: {text}",
  "worker_crashed": "the check process crashed while loading your code ({code}) {text}",
  "wrong_dtype": "the output has dtype {got}, expected {expected}",
  "wrong_shape": "the output has shape {got}, expected {expected}",
  "wrote_past_end_detail": "a write landed at element {index} of an output of {n} elements (outside the tensor)"
 },
 "module": "add_bias.py",
 "platform_section": "Your machine",
 "poison": -1024.0,
 "questions": [
  "q1",
  "q2",
  "q3"
 ],
 "reasons": {
  "bias_wrong_axis": "element (m, n) got the bias of another column: the bias was broadcast along the wrong axis. The bias belongs to the columns: `bv[None, :]` (shape `(1, BLOCK_N)`).",
  "misplaced": "the values are right but in the wrong places: each of them occurs in the correct result, at another position. The store's address must use `out`'s own strides: `empty_like` returns an `out` stored by columns for a transposed `x`.",
  "unwritten": "some elements were never written (they still hold the poison value): check that the grid's two dimensions cover every row block and every column block, in the order of `program_id(0)` and `program_id(1)`, and that the mask does not hide valid elements.",
  "wrong_value": "the result differs from `x + bias`.",
  "wrote_past_end": "a write landed outside `out`: check that the 2-D mask limits both the rows (below M) and the columns (below N), and that the store's address uses `out`'s own strides.",
  "x_misread": "element (m, n) holds another element of `x` plus the right bias: the addresses of `x` are wrong. A transposed or sliced view cannot be addressed like a contiguous tensor; use `x.stride()`."
 },
 "reference": "\"\"\"What lesson 4's kernel computes, in torch, and how to tell its typical mistakes apart.\"\"\"\nimport torch\n\n\ndef reference(x, bias):\n    \"\"\"out[m, n] = x[m, n] + bias[n], rounded once from the exact sum (float64 holds the sum of two\n    float32, float16 or bfloat16 values closely enough that rounding it again is exact).\"\"\"\n    return (x.double() + bias.double()[None, :]).to(x.dtype)\n\n\nSAMPLE = 256   # differing elements looked at, at most (the first ones, row by row)\n# A value looked up among many others is found by chance when the dtype has few values: a lookup\n# runs only when the pool holds at most this many values (about 1/16 of a sign and 8 binades).\nPOOL_LIMIT = {torch.bfloat16: 1 << 7, torch.float16: 1 << 10, torch.float32: 1 << 23}\n\n\ndef classify(inputs, expected, got, bad):\n    \"\"\"The most telling mistake among the differing elements (None: the checker's generic reason).\n\n    inputs: float64 tensors of the output's shape (bias broadcast over the rows); expected, got:\n    float64; bad: True where they differ. A reason is given when it explains at least half of the\n    sampled differing elements that are not NaN.\"\"\"\n    x, b = inputs[\"x\"], inputs[\"bias\"]\n    if x is None or b is None or x.dim() != 2 or not x.numel():\n        return None\n    places = bad.nonzero()[:SAMPLE]\n    m, n = places[:, 0], places[:, 1]\n    g = got[m, n]\n    keep = ~torch.isnan(g)\n    m, n, g = m[keep], n[keep], g[keep]\n    if not len(g):\n        return None\n    dtype = _dtype_of(expected)\n    limit = POOL_LIMIT[dtype]\n    need = (len(g) + 1) // 2\n\n    def explained(pool, addend):\n        return pool.numel() <= limit and int(_found(pool, g, addend, dtype).sum()) >= need\n\n    # The right values at the wrong places: the store ignored out's own strides.\n    if explained(expected.flatten(), torch.zeros_like(g)):\n        return \"misplaced\"\n    # x[m, n] plus the bias of another column: the bias went along the wrong axis.\n    if explained(b[0], x[m, n]):\n        return \"bias_wrong_axis\"\n    # Another element of x plus the right bias: x was read at the wrong address.\n    if explained(x.flatten(), b[m, n]):\n        return \"x_misread\"\n    return None\n\n\ndef _dtype_of(expected):\n    \"\"\"The output's dtype, recovered from its values: every finite value of a bfloat16 (or\n    float16) output is exact in that type, which random float32 values almost never are.\"\"\"\n    finite = expected[torch.isfinite(expected)]\n    for dtype in (torch.bfloat16, torch.float16):\n        if bool((finite.to(dtype).double() == finite).all()):\n            return dtype\n    return torch.float32\n\n\ndef _found(pool, got, addend, dtype):\n    \"\"\"True where some value v of pool gives got == (v + addend) rounded to dtype. Rounding is\n    monotonic, so only the pool values nearest to got - addend can match.\"\"\"\n    pool = torch.unique(pool[torch.isfinite(pool)])   # sorted\n    if not pool.numel():\n        return torch.zeros_like(got, dtype=torch.bool)\n    index = torch.searchsorted(pool, (got - addend).nan_to_num(0.0))\n    hit = torch.zeros_like(got, dtype=torch.bool)\n    for shift in (-2, -1, 0, 1):\n        near = pool[(index + shift).clamp(0, pool.numel() - 1)]\n        hit |= (near + addend).to(dtype).double() == got\n    return hit\n",
 "rubric": {
  "boundary": 1,
  "explanation": 1,
  "normal": 2,
  "pass_total": 8,
  "per_question": 2
 },
 "template": [
  "import torch",
  "import triton",
  "import triton.language as tl",
  "",
  "",
  "# Bias kernel: out[m, n] = x[m, n] + bias[n]. Program (i, j) owns the BLOCK_M x BLOCK_N block where row block i meets column block j.",
  "# M, N and the strides are ordinary arguments, not tl.constexpr, so new shapes and layouts do not recompile.",
  "@triton.jit",
  "def add_bias_kernel(x, bias, out, M, N, stride_xm, stride_xn, stride_b, stride_om, stride_on,",
  "                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):",
  "    # The row and column indices this program owns: two 1-D vectors.",
  "    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
  "    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)",
  "    # 2-D mask: (BLOCK_M, 1) and (1, BLOCK_N) broadcast to the whole block; only elements whose row and column are in range are read or written.",
  "    mask = (rows[:, None] < M) & (cols[None, :] < N)",
  "    # Addresses of this block in x: row index times x's row stride, plus column index times x's column stride. x may be a transposed or sliced view.",
  "    xv = tl.load(x + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)",
  "    # The BLOCK_N biases of this column block (bias may be non-contiguous too).",
  "    bv = tl.load(bias + cols * stride_b, mask=cols < N)",
  "    # Add the bias, broadcast along the rows, and store. out is another tensor; its layout need not be that of x.",
  "    tl.store(______, xv + bv[None, :], mask=mask)  # TODO: the store's address (replace ______)",
  "",
  "",
  "def add_bias(x, bias, BLOCK_M=32, BLOCK_N=32):",
  "    # x has shape (M, N) and bias (N,); either may be non-contiguous: the kernel addresses them through their strides.",
  "    assert x.dim() == 2 and bias.dim() == 1 and bias.shape[0] == x.shape[1]",
  "    # empty_like keeps the strides of a dense x (a transposed x gets an out stored by columns) and returns a contiguous out for a sliced view.",
  "    out = torch.empty_like(x)",
  "    M, N = x.shape",
  "    # 2-D grid: dimension 0 counts row blocks, for program_id(0); dimension 1 counts column blocks, for program_id(1).",
  "    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))",
  "    add_bias_kernel[grid](x, bias, out, M, N, x.stride(0), x.stride(1), bias.stride(0),",
  "                          out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)",
  "    return out",
  "",
  "",
  "if __name__ == \"__main__\":",
  "    # The worked example: python add_bias.py (without a GPU: TRITON_INTERPRET=1 python add_bias.py)",
  "    device = \"cuda\" if torch.cuda.is_available() else \"cpu\"",
  "    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],",
  "                      [10.0, 11.0, 12.0, 13.0, 14.0, 15.0],",
  "                      [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]], device=device)",
  "    bias = torch.tensor([0.5, -1.0, 2.0, -3.0, 4.0, -5.0], device=device)",
  "    # Tiny 2 x 4 blocks: a (2, 2) grid with tails in both dimensions.",
  "    out = add_bias(x, bias, BLOCK_M=2, BLOCK_N=4)",
  "    torch.testing.assert_close(out, x + bias, rtol=0, atol=0)",
  "    # The same values stored by columns: strides (1, 3), and not a character of the kernel changes.",
  "    xt = x.t().contiguous().t()",
  "    torch.testing.assert_close(add_bias(xt, bias, BLOCK_M=2, BLOCK_N=4), x + bias, rtol=0, atol=0)",
  "    print(out.tolist())"
 ],
 "timeout_s": 120,
 "title": "Lesson 4 · 2-D grids, strides and a broadcast bias"
}""")

BLANK = "______"
GUARD = 4096              # poisoned elements on each side of every output, to catch stray writes
HERE = Path(__file__).resolve().parent
EXIT_PASS, EXIT_FAIL, EXIT_UNRUNNABLE = 0, 1, 2
# Words of the CUDA errors that leave a process unusable (a CUDA error is sticky for its process).
GPU_FAULT_WORDS = ("illegal memory access", "illegal address", "misaligned address",
                   "operation not supported on global/shared address space", "unspecified launch failure",
                   "device-side assert", "an illegal instruction", "CUDA error")


def msg(key, **kw):
    return LESSON["messages"][key].format(**kw)


# ---------------------------------------------------------------------------------------------
# Platform: torch and triton must import before anything can run
# ---------------------------------------------------------------------------------------------

def missing_packages():
    """Names of the packages this checker needs that cannot be found (no import, so it is fast)."""
    import importlib.util
    return [name for name in ("torch", "triton") if importlib.util.find_spec(name) is None]


def platform_message(missing):
    where = f"{platform.system() or 'unknown'} {platform.machine()}".strip()
    return msg("no_triton", platform=where, missing=", ".join(missing), section=LESSON["platform_section"])


# ---------------------------------------------------------------------------------------------
# Static review: the file, the blank, edits outside the blank
# ---------------------------------------------------------------------------------------------

class Target:
    """The code under check: a .py file, or the exercise cell of a notebook written to a file."""

    def __init__(self, path, display, text, cell=None):
        self.path, self.display, self.text, self.cell = path, display, text, cell

    def where(self, line):
        if self.cell is not None:
            return msg("where_cell", file=self.display, cell=self.cell, line=line)
        return f"{self.display}:{line}"


def load_target(arg, workdir, display=None):
    path = Path(arg) if arg else HERE / LESSON["module"]
    display = display or (str(arg) if arg else LESSON["module"])
    if not path.exists():
        raise SystemExit(msg("no_such_file", file=display))
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(notebook.get("cells", []), start=1):
            if "exercise" in cell.get("metadata", {}).get("tags", []):
                source = cell["source"]
                text = "".join(source) if isinstance(source, list) else source
                copy = Path(workdir) / LESSON["module"]
                copy.write_text(text, encoding="utf-8")
                return Target(copy, display, text, cell=index)
        raise SystemExit(msg("no_exercise_cell", file=display))
    return Target(path, display, path.read_text(encoding="utf-8"))


def _tokens(text):
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def code_lines(text):
    """The lines of text with comments and trailing blanks removed (None if it won't tokenize)."""
    lines = text.splitlines()
    tokens = _tokens(text)
    if tokens is None:
        return None
    for tok in reversed(tokens):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [line.rstrip() for line in lines]


def blank_lines(text):
    tokens = _tokens(text)
    if tokens is None:
        return [i for i, line in enumerate(text.splitlines(), 1) if BLANK in line.split("#")[0]]
    return sorted({tok.start[0] for tok in tokens if tok.type == tokenize.NAME and tok.string == BLANK})


def without_main_block(lines):
    """The notebook's exercise cell is the kernel file without its `if __name__ == "__main__":` demo."""
    start = next((i for i, line in enumerate(lines) if line.startswith("if __name__ == ")), len(lines))
    return lines[:start]


def review_edits(text, notebook=False):
    """Line numbers changed outside the blank, and the student's fill if the blank line matches."""
    lines = without_main_block(LESSON["template"]) if notebook else LESSON["template"]
    template = code_lines("\n".join(lines) + "\n")
    mine = code_lines(text)
    if mine is None or template is None:
        return [], None
    while mine and not mine[-1]:   # blank lines at the end are no edit (an editor or a notebook adds them)
        mine.pop()
    while template and not template[-1]:
        template.pop()
    blank_index = LESSON["blank_line"] - 1
    head, _, tail = template[blank_index].partition(BLANK)
    pattern = re.compile(re.escape(head.strip()) + r"(.*)" + re.escape(tail.strip()) + "$")
    fill, changed = None, []
    matcher = difflib.SequenceMatcher(a=[l.strip() for l in template], b=[l.strip() for l in mine], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and a0 <= blank_index < a1 and (a1 - a0) == (b1 - b0):
            found = pattern.match(mine[b0 + blank_index - a0].strip())
            if found:
                fill = found.group(1).strip()
                changed += [b + 1 for b in range(b0, b1) if b != b0 + blank_index - a0]
                continue
        changed += list(range(b0 + 1, b1 + 1)) or [max(b0, 1)]
    return sorted(set(changed)), fill


# ---------------------------------------------------------------------------------------------
# Cases: inputs from the lesson's declarations, outputs poisoned and guarded, compared with the
# lesson's reference
# ---------------------------------------------------------------------------------------------

def reference_namespace():
    namespace = {"__name__": "lesson_reference"}
    exec(compile(LESSON["reference"], "reference.py", "exec"), namespace)
    return namespace


def _draw(torch, spec, shape, seed, device="cpu"):
    draw = spec.get("draw") or {}
    low, high = float(draw.get("low", -8.0)), float(draw.get("high", 8.0))
    generator = torch.Generator(device=device).manual_seed(seed)
    values = torch.rand(shape, generator=generator, dtype=torch.float64, device=device) * (high - low) + low
    if draw.get("alternate_signs"):
        flat = values.view(-1)
        flat[0::2] = -flat[0::2].abs()
        flat[1::2] = flat[1::2].abs()
    return values


def _plant(values, planted):
    flat = values.view(-1)
    size = flat.numel()
    if not size:
        return
    step = max(size // len(planted), 1)
    for i, value in enumerate(planted):
        flat[min(i * step, size - 1) if i < len(planted) - 1 else size - 1] = value


def _layout(torch, logical, layout, seed):
    """(storage, view): the tensor the kernel sees is view(storage), with the declared layout."""
    if layout == "transposed":
        if logical.dim() != 2:
            raise ValueError("layout 'transposed' needs a 2-D input")
        return logical.t().contiguous(), lambda s: s.t()
    if layout == "sliced":
        filler = _draw(torch, {}, (), seed)   # the slack holds other numbers, never the right ones
        if logical.dim() == 1:
            n = logical.shape[0]
            storage = torch.full((2 * n,), float(filler), dtype=logical.dtype, device=logical.device)
            storage[0::2] = logical
            return storage, lambda s: s[0::2]
        rows, cols = logical.shape
        storage = _draw(torch, {}, (rows, cols + 7), seed + 1, logical.device.type).to(logical.dtype)
        storage[:, :cols] = logical
        return storage, lambda s: s[:, :cols]
    return logical.contiguous(), lambda s: s


def make_inputs(torch, case, device):
    """The case's arguments, in declared order: (name, on-device value, reference value) triples.
    Reference values live on the CPU, drawn the same on every machine, except for a case that runs
    only on a GPU: its (large) inputs are drawn, and its reference computed, on the GPU itself."""
    home = device if case.get("gpu_only") else "cpu"
    dtype = getattr(torch, case.get("dtype", "float32"))
    dims = case.get("dims") or {}
    values = case.get("values") or {}
    layouts = case.get("layout") or {}
    made = []
    for index, spec in enumerate(LESSON["inputs"]):
        name = spec["name"]
        seed = zlib.crc32(f"{case['id']}/{name}".encode())
        if "scalar" in spec:
            value = float(values.get(name, spec["scalar"]))
            made.append((name, value, value))
            continue
        planted = [float(v) for v in values.get(name, [])]
        if not dims and planted:
            logical = torch.tensor(planted, dtype=torch.float64, device=home)
        else:
            shape = tuple(int(dims[d]) if isinstance(d, str) else int(d) for d in spec["shape"])
            logical = _draw(torch, spec, shape, seed, home)
            if planted:
                _plant(logical, planted)
        storage, view = _layout(torch, logical.to(dtype), layouts.get(name, "contiguous"), seed)
        made.append((name, view(storage.to(device, copy=True)), view(storage)))   # the kernel's own copy
    return made


class PoisonedOutputs:
    """While the student's function runs, torch.empty_like and torch.empty return memory filled with
    the lesson's poison value inside guard bands, so unwritten elements and stray writes show."""

    def __init__(self, torch, poison):
        self.torch, self.poison, self.buffers = torch, poison, []
        self.originals = {}

    def _poisoned(self, plain):
        torch = self.torch
        if not plain.is_floating_point() or not plain.numel():
            return plain
        span = 1 + sum((size - 1) * stride for size, stride in zip(plain.shape, plain.stride()))
        buffer = torch.full((span + 2 * GUARD,), self.poison, dtype=plain.dtype, device=plain.device)
        self.buffers.append((buffer, span))
        return buffer.as_strided(plain.shape, plain.stride(), GUARD)

    def __enter__(self):
        torch = self.torch
        self.originals = {"empty_like": torch.empty_like, "empty": torch.empty}
        empty_like, empty = self.originals["empty_like"], self.originals["empty"]

        def poisoned_empty_like(t, *args, **kwargs):
            plain = empty_like(t, *args, **kwargs)
            return plain if args else self._poisoned(plain)

        def poisoned_empty(*args, **kwargs):
            plain = empty(*args, **kwargs)
            return plain if kwargs.get("out") is not None else self._poisoned(plain)

        torch.empty_like, torch.empty = poisoned_empty_like, poisoned_empty
        return self

    def __exit__(self, *exc):
        for name, original in self.originals.items():
            setattr(self.torch, name, original)
        return False

    def stray_write(self, out):
        """Offset (in elements, from the output's first element) of a write outside the output."""
        for buffer, span in self.buffers:
            if not out.numel() or out.untyped_storage().data_ptr() != buffer.untyped_storage().data_ptr():
                continue
            before = buffer[:GUARD].detach().double().cpu() != self.poison   # the guards only: the
            after = buffer[GUARD + span:].detach().double().cpu() != self.poison   # output may be large
            if bool(after.any()):
                return span + int(after.nonzero()[0])
            if bool(before.any()):
                return int(before.nonzero()[-1]) - GUARD
        return None


def compare(torch, expected, got, dtype, scale=None):
    """Bool tensor: True where got differs from expected (NaN equals NaN, +0 equals -0). Within a
    dtype's tolerance: |got - expected| <= atol + rtol * scale, scale |expected| unless the lesson's
    reference defines error_scale (for a dot product, the sum of |a_ik * b_kj|)."""
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    tolerance = (LESSON.get("compare") or {}).get(dtype)
    if tolerance:
        finite = torch.isfinite(got) & torch.isfinite(expected)
        scale = expected.abs() if scale is None else scale
        close = (got - expected).abs() <= tolerance.get("atol", 0.0) + tolerance.get("rtol", 0.0) * scale
        same |= finite & close
    return ~same


def run_case(torch, fn, case, device, reference):
    made = make_inputs(torch, case, device)
    expected = reference["reference"](**{name: ref for name, _, ref in made})
    poison = PoisonedOutputs(torch, float(LESSON["poison"]))
    with poison:
        out = fn(*[value for _, value, _ in made])
    if device == "cuda":
        torch.cuda.synchronize()
    if not isinstance(out, torch.Tensor):
        return {"status": "fail", "reason": "not_tensor", "got_type": type(out).__name__}
    if tuple(out.shape) != tuple(expected.shape):
        return {"status": "fail", "reason": "wrong_shape", "expected": list(expected.shape), "got": list(out.shape)}
    if out.dtype != expected.dtype:
        return {"status": "fail", "reason": "wrong_dtype", "expected": str(expected.dtype), "got": str(out.dtype)}
    stray = poison.stray_write(out)
    if stray is not None:
        return {"status": "fail", "reason": "wrote_past_end", "index": stray, "n": out.numel()}
    got = out.detach().double().to(expected.device)
    want = expected.double()
    scale = reference.get("error_scale")
    if scale is not None:
        scale = scale(**{name: ref for name, _, ref in made}).double().to(want.device)
    bad = compare(torch, want, got, case.get("dtype", "float32"), scale)
    count = int(bad.sum())
    if not count:
        return {"status": "pass", "n": out.numel()}
    first = tuple(int(i) for i in bad.nonzero()[0])
    inputs = broadcast_inputs(torch, made, got.shape)
    # classify sees an input that does not broadcast to the output (a matrix factor) as it is
    seen = {name: cpu.double() if inputs[name] is None else inputs[name] for name, _, cpu in made}
    return {"status": "fail", "reason": classify(torch, seen, want, got, bad), "position": list(first),
            "inputs": {name: (fmt(value[first]) if hasattr(value, "shape") else fmt(value)) if value is not None
                       else "×".join(map(str, seen[name].shape)) for name, value in inputs.items()},
            "expected": fmt(want[first]), "got": fmt(got[first]), "count": count, "n": out.numel()}


def broadcast_inputs(torch, made, shape):
    """Each input as float64 of the output's shape where it broadcasts to it (scalars stay floats)."""
    found = {}
    for name, _, cpu in made:
        if not hasattr(cpu, "shape"):
            found[name] = cpu
            continue
        try:
            found[name] = torch.broadcast_to(cpu.double(), shape)
        except RuntimeError:
            found[name] = None
    return found


def classify(torch, inputs, expected, got, bad):
    """The most telling reason among the differing elements: poison left behind first, then the
    lesson's own classifier, then a plain wrong value."""
    poison = float(LESSON["poison"])
    if bool(((got == poison) & (expected != poison) & bad).any()):
        return "unwritten"
    lesson_classify = REFERENCE.get("classify") if REFERENCE else None
    if lesson_classify is not None:
        reason = lesson_classify(inputs, expected, got, bad)
        if reason in LESSON["lesson_reasons"]:
            return reason
    return "wrong_value"


def fmt(value):
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def skip_reason(case, use_gpu):
    if case.get("gpu_only") and not use_gpu:
        return "needs_gpu"
    if case.get("dtype") == "bfloat16" and not use_gpu:
        return "bf16_interpreter"
    return None


def is_gpu_fault(torch, exc, device):
    """True when the process's GPU context is broken: a CUDA error is sticky for its process."""
    text = f"{type(exc).__name__}: {exc}"
    if type(exc).__name__ == "AcceleratorError" or any(word in text for word in GPU_FAULT_WORDS):
        return True
    if device != "cuda":
        return False
    try:
        torch.cuda.synchronize()
    except Exception:
        return True
    return False


# ---------------------------------------------------------------------------------------------
# The worker: a child process that imports one kernel file and runs cases, one message per event
# ---------------------------------------------------------------------------------------------

REFERENCE = None


def import_student(path, name="student_kernel"):
    import importlib.util
    sys.path.insert(0, str(Path(path).parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def student_line(exc, path):
    target = os.path.realpath(path)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if os.path.realpath(frame.filename) == target]
    return lines[-1] if lines else None


def environment(torch, triton, use_gpu):
    env = {"torch": torch.__version__, "triton": triton.__version__,
           "python": sys.version.split()[0], "interpreter": not use_gpu}
    if use_gpu:
        env["device"] = torch.cuda.get_device_name(0)
    return env


def worker(send, path, case_ids, force_interpreter):
    """Run case_ids on the kernel file at path; send(dict) reports each event. Returns when done,
    or right after a GPU fault (the process must not be used again)."""
    global REFERENCE
    started = time.monotonic()
    os.dup2(2, 1)   # the student's prints go to stderr; results travel through send()
    import torch
    if os.environ.get("COURSEPACK_CHILD_THREADS"):   # many children at once: no thread pool per child
        torch.set_num_threads(int(os.environ["COURSEPACK_CHILD_THREADS"]))
    use_gpu = not force_interpreter and torch.cuda.is_available()
    if not use_gpu:
        os.environ["TRITON_INTERPRET"] = "1"   # read when @triton.jit decorates the student's kernel
    import triton
    if use_gpu:
        torch.empty(1, device="cuda")   # the CUDA context: its cost counts as start-up, not as case 1
    else:
        lean_interpreter()
    send({"hello": environment(torch, triton, use_gpu), "startup_s": round(time.monotonic() - started, 3)})
    REFERENCE = reference_namespace()
    loading = time.monotonic()
    try:
        module = import_student(path)
        fn = getattr(module, LESSON["entry"])
    except SyntaxError as exc:
        send({"load_error": {"kind": "syntax", "line": exc.lineno, "column": exc.offset, "text": exc.msg}})
        return
    except BaseException as exc:  # the student's module may raise anything at import
        send({"load_error": {"kind": "import", "line": student_line(exc, path),
                             "text": f"{type(exc).__name__}: {exc}"}})
        return
    send({"loaded_s": round(time.monotonic() - loading, 3)})
    device = "cuda" if use_gpu else "cpu"
    cases = {case["id"]: case for case in LESSON["cases"]}
    for case_id in case_ids:
        case = cases[case_id]
        send({"start": case_id})
        skip = skip_reason(case, use_gpu)
        if skip:
            send({"case": case_id, "status": "skip", "reason": skip})
            continue
        case_started = time.monotonic()
        try:
            result = run_case(torch, fn, case, device, REFERENCE)
        except BaseException as exc:
            text = str(exc).strip().splitlines()
            result = {"status": "error", "line": student_line(exc, path),
                      "text": f"{type(exc).__name__}: {text[0] if text else ''}"}
            if is_gpu_fault(torch, exc, device):
                send({"case": case_id, "status": "fault", "text": result["text"], "line": result["line"]})
                return
        send({"case": case_id, "seconds": round(time.monotonic() - case_started, 3), **result})
    send({"done": True})


def lean_interpreter():
    """The Triton interpreter redoes every integer +, - and * of a kernel in 64 bits to check for
    overflow, then hands the check to device_assert, which drops it unless debug is on, and the
    interpreter's debug is off. That work, about half of a kernel's time in the interpreter,
    changes nothing: skip it. Only where this Triton's device_assert is seen to drop it."""
    try:
        import dataclasses
        import inspect
        from triton.runtime import interpreter
        builder = interpreter.interpreter_builder
        drops = "options.debug" in inspect.getsource(type(interpreter.interpreter_semantic).device_assert)
        if drops and not builder.options.debug and builder.options.sanitize_overflow:
            builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)
    except Exception:   # another Triton: its interpreter as it is
        pass


def preload():
    """Import torch and triton, and what Triton imports on its first kernel call (its code
    generator: some fifty modules), so that no forked child imports them again. Starts no CUDA."""
    import gc
    import importlib
    gc.disable()   # no collection passes over the objects the import makes: a sixth of its time
    try:
        for name in ("torch", "triton", "triton.compiler.code_generator"):
            try:
                importlib.import_module(name)
            except ImportError:
                if name in ("torch", "triton"):
                    raise
        gc.freeze()    # nor later ones, here or in the forked children
    finally:
        gc.enable()


def warm_compile_key():
    """Triton hashes its own source files for its compile-cache keys, once per process (0.4 s on an
    H200 host). Computed in a parent (it starts no CUDA), every forked child inherits it."""
    try:
        from triton.runtime.cache import triton_key
        triton_key()
    except Exception:   # another Triton version: each child computes it, as before
        pass


_TORCH_UNTOUCHED = False   # torch imported by this script, before anything could start CUDA
IMPORT_S = 0.0             # how long this script took to import torch and triton (0: they were there)


def _fork_context(untouched=False):
    """fork where no CUDA was started in this process (children then share its imported torch);
    spawn otherwise, and on platforms without fork. A process that asked the driver anything (even
    torch.cuda.is_available(), unless through NVML) cannot fork children that use the GPU.
    untouched=True: the caller vouches that nothing in this process has asked the driver anything
    (coursepack's verification job, a fresh process or a child of its task server)."""
    global _TORCH_UNTOUCHED, IMPORT_S
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods() or os.environ.get("COURSEPACK_SPAWN"):
        return multiprocessing.get_context("spawn")
    fork = multiprocessing.get_context("fork")
    if ("torch" not in sys.modules or untouched) and not missing_packages():
        started = time.monotonic()
        preload()   # imported once here: every forked child (a restart too) shares them
        IMPORT_S = time.monotonic() - started
        _TORCH_UNTOUCHED = not sys.modules["torch"].cuda.is_initialized()
        return fork if _TORCH_UNTOUCHED else multiprocessing.get_context("spawn")
    torch = sys.modules.get("torch")
    if torch is None:
        return fork
    if torch.cuda.is_initialized():   # a notebook cell may have run a kernel since
        return multiprocessing.get_context("spawn")
    if _TORCH_UNTOUCHED:
        return fork
    if os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1" or not torch.cuda.is_available():
        return fork   # asked through NVML, or no GPU at all: nothing was started
    return multiprocessing.get_context("spawn")


def _child_main(conn, stderr_path, path, case_ids, force_interpreter):
    import faulthandler
    faulthandler.disable()   # a parent's fault handler (pytest, Jupyter) would print the child's crash
    with open(stderr_path, "w", encoding="utf-8", errors="replace") as err:
        os.dup2(err.fileno(), 2)
        os.setpgrp() if hasattr(os, "setpgrp") else None
        try:
            worker(conn.send, path, case_ids, force_interpreter)
        finally:
            conn.close()
            sys.stdout.flush()
            sys.stderr.flush()


class Supervisor:
    """Runs the cases of one kernel file in child processes: a timeout, a crash or a GPU fault fails
    only the case it happened in, and a fresh child takes the remaining cases."""

    def __init__(self, path, timeout, force_interpreter, context=None):
        self.path, self.timeout, self.force_interpreter = str(path), timeout, force_interpreter
        self.context = context or _fork_context()
        self.env, self.load_error, self.results = None, None, {}
        self.timing = {"children": 0, "startup_s": 0.0, "loaded_s": 0.0}

    def run(self, case_ids):
        pending = list(case_ids)
        while pending and self.load_error is None:
            self._one_child(pending)
            pending = [c for c in pending if c not in self.results]
            if pending and self.env is not None and not self.env["interpreter"]:
                warm_compile_key()   # the next child (a fork) inherits it instead of computing it again
        return self.results

    def _one_child(self, case_ids):
        from multiprocessing.connection import wait
        parent, child = self.context.Pipe(duplex=False)
        with tempfile.NamedTemporaryFile(prefix="coursepack-stderr-", suffix=".txt", delete=False) as tmp:
            stderr_path = tmp.name
        process = self.context.Process(target=_child_main, daemon=True,
                                       args=(child, stderr_path, self.path, case_ids, self.force_interpreter))
        process.start()
        child.close()
        current, deadline = None, time.monotonic() + self.timeout + 120   # import + first compile
        try:
            while True:
                ready = wait([parent, process.sentinel], timeout=max(deadline - time.monotonic(), 0.01))
                if not ready:
                    self._record_hang(current)
                    return
                if parent in ready:
                    try:
                        message = parent.recv()
                    except (EOFError, OSError):
                        message = None
                    if message is not None:
                        current, deadline = self._handle(message, current, deadline)
                        if "done" in message or "load_error" in message or message.get("status") == "fault":
                            return
                        continue
                process.join(5)
                self._record_end(current, process.exitcode, _tail_file(stderr_path))
                return
        finally:
            _stop(process)
            parent.close()
            try:
                os.unlink(stderr_path)
            except OSError:
                pass

    def _handle(self, message, current, deadline):
        if "hello" in message:
            self.env = message["hello"]
            self.timing["children"] += 1
            self.timing["startup_s"] += message.get("startup_s", 0.0)
        elif "loaded_s" in message:
            self.timing["loaded_s"] += message["loaded_s"]
        elif "load_error" in message:
            self.load_error = message["load_error"]
        elif "start" in message:
            return message["start"], time.monotonic() + self.timeout
        elif "case" in message:
            case_id = message.pop("case")
            self.results[case_id] = message
            return None, deadline
        return current, deadline

    def _record_end(self, current, code, stderr):
        if current is not None:
            self.results[current] = {"status": "crash", "code": _exit_text(code), "stderr": stderr}
        elif self.load_error is None and (self.env is None or not self.results):
            self.load_error = {"kind": "crash", "code": _exit_text(code), "text": stderr}

    def _record_hang(self, current):
        if current is None:
            self.load_error = {"kind": "timeout", "seconds": self.timeout}
        else:
            self.results[current] = {"status": "timeout", "seconds": self.timeout}


def _stop(process):
    if process.is_alive():
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (AttributeError, ProcessLookupError, PermissionError, OSError):
            process.kill()
    process.join(10)


def _tail_file(path, lines=6):
    try:
        data = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(data.strip().splitlines()[-lines:])


def _exit_text(code):
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


# ---------------------------------------------------------------------------------------------
# Presentation: lines in the pack's language, score, JSON
# ---------------------------------------------------------------------------------------------

def env_line(env):
    if env is None:
        return msg("env_unknown")
    versions = f"torch {env['torch']} · triton {env['triton']}"
    if env["interpreter"]:
        return msg("env_interpreter", versions=versions)
    return msg("env_gpu", device=env["device"], versions=versions)


def version_warning(env):
    verified = read_verified()
    if not verified or env is None:
        return None
    theirs = (verified.get("torch"), verified.get("triton"))
    if theirs != (env["torch"], env["triton"]):
        return msg("version_differs", torch=theirs[0], triton=theirs[1], runner=verified.get("runner_label", ""))
    return None


def read_verified():
    manifest = HERE / "manifest.json"
    try:
        record = json.loads(manifest.read_text(encoding="utf-8")).get("verification")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def position_text(position):
    if len(position) == 2:
        return msg("position_2d", row=position[0], column=position[1])
    return ", ".join(str(p) for p in position) if position else "0"


def inputs_text(inputs):
    if len(inputs) == 1:
        return next(iter(inputs.values()))
    return ", ".join(f"{name} = {value}" for name, value in inputs.items())


def case_detail(result):
    status = result["status"]
    reasons = LESSON["reasons"]
    if status == "fail":
        reason = result["reason"]
        if reason in ("wrong_shape", "wrong_dtype"):
            return [msg(reason, expected=result["expected"], got=result["got"])]
        if reason == "not_tensor":
            return [msg("not_tensor", got=result["got_type"])]
        if reason == "wrote_past_end":
            return [msg("wrote_past_end_detail", index=result["index"], n=result["n"]),
                    msg("why", text=reasons["wrote_past_end"])]
        lines = [msg("mismatch", index=position_text(result["position"]), input=inputs_text(result["inputs"]),
                     expected=result["expected"], got=result["got"], count=result["count"], n=result["n"])]
        if reason in reasons:
            lines.append(msg("why", text=reasons[reason]))
        return lines
    if status == "error":
        return [msg("raised", text=result["text"]) + (msg("at_line", line=result["line"]) if result.get("line") else "")]
    if status == "fault":
        return [msg("gpu_fault"), "  " + msg("raised", text=result["text"])]
    if status == "timeout":
        return [msg("timed_out", seconds=result["seconds"])]
    if status == "crash":
        lines = [msg("crashed", code=result["code"])]
        return lines + ["  " + l for l in result.get("stderr", "").splitlines()[-3:]]
    return []


FAILED = ("fail", "error", "fault", "timeout", "crash")


def score(cases, results):
    rubric = LESSON["rubric"]
    points = {}
    for group in ("normal", "boundary"):
        ran = [c for c in cases if c["group"] == group and results.get(c["id"], {}).get("status") != "skip"]
        passed = [c for c in ran if results.get(c["id"], {}).get("status") == "pass"]
        points[group] = (rubric[group] * len(passed) // len(ran)) if ran else 0
    return points


def header_lines(target, env):
    lines = [msg("title", lesson=LESSON["title"], locale=LESSON["locale"], edition=LESSON["edition_name"]),
             msg("file_line", file=target.display if target.cell is None else target.where(1).rsplit(",", 1)[0])]
    if env is not None:
        lines.append(env_line(env))
        if env["interpreter"]:
            lines.append("  " + msg("interpreter_banner"))
        warning = version_warning(env)
        if warning:
            lines.append("  " + warning)
    return lines + [""]


def load_error_line(target, load_error):
    kind = load_error["kind"]
    if kind == "syntax":
        return msg("syntax_error", where=target.where(load_error["line"] or 1), text=load_error["text"])
    if kind == "import":
        where = target.where(load_error["line"]) if load_error.get("line") else target.display
        return msg("import_error", where=where, text=load_error["text"])
    if kind == "timeout":
        return msg("import_timeout", seconds=load_error["seconds"])
    return msg("worker_crashed", code=load_error.get("code", ""), text=load_error.get("text", ""))


def render_report(target, env, results, edits, load_error, blank):
    """All lines a student sees, and the overall status."""
    lines = header_lines(target, env)
    if blank:
        lines += [msg("fill_blank", where=", ".join(target.where(n) for n in blank)), msg("fill_blank_next")]
        return lines, "blank"
    if load_error is not None:
        return lines + [load_error_line(target, load_error)], "load_error"
    symbols = {"pass": "PASS", "skip": "SKIP"}
    for case in LESSON["cases"]:
        result = results.get(case["id"], {"status": "crash", "code": "?"})
        name = LESSON["case_names"][case["id"]]
        if result["status"] == "skip":
            name += "  (" + LESSON["messages"]["skip_" + result["reason"]] + ")"
        lines.append(f"  {symbols.get(result['status'], 'FAIL'):4}  {name}")
        lines += ["        " + d for d in case_detail(result)]
    if edits:
        lines += ["", msg("edits_outside", lines=", ".join(map(str, edits)))]
    points = score(LESSON["cases"], results)
    rubric = LESSON["rubric"]
    lines += ["", msg("score", got=points["normal"] + points["boundary"], total=rubric["normal"] + rubric["boundary"],
                      normal=points["normal"], normal_total=rubric["normal"],
                      boundary=points["boundary"], boundary_total=rubric["boundary"]),
              "       " + msg("score_graded", explanation=rubric["explanation"],
                              questions=rubric["per_question"] * len(LESSON["questions"]),
                              count=len(LESSON["questions"]))]
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") not in ("pass", "skip")]
    lines.append(msg("next_fix") if failed else msg("next_submit"))
    return lines, "fail" if failed else "pass"


def json_result(target, env, results, edits, fill, load_error, status):
    points = score(LESSON["cases"], results) if status in ("pass", "fail") else {"normal": 0, "boundary": 0}
    return {"lesson": LESSON["lesson"], "locale": LESSON["locale"], "edition": LESSON["edition"],
            "file": target.display, "status": status, "environment": env, "load_error": load_error,
            "edits_outside_blank": edits, "fill": fill,
            "cases": [dict(id=c["id"], group=c["group"], **results.get(c["id"], {"status": "not_run"}))
                      for c in LESSON["cases"]],
            "score": points}


def write_submission(path, target, env, lines, status, results):
    ran = env is not None and status in ("pass", "fail")
    if not ran:
        run_kind = msg("report_static")
    elif env["interpreter"]:
        run_kind = msg("report_interpreter")
    else:
        run_kind = msg("report_gpu", device=env["device"])
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") in FAILED]
    out = [f"# {msg('report_title', lesson=LESSON['title'])}", "",
           f"- {msg('report_run_kind')}: {run_kind}",
           f"- {msg('report_environment')}: {env_line(env).partition(': ')[2] if ran else msg('report_static')}",
           f"- {msg('report_status')}: {status}", "",
           f"## {msg('report_code')}", "", "```python", target.text.rstrip(), "```", "",
           f"## {msg('report_output')}", ""]
    out += (["```text", *lines, "```"] if ran else [msg("report_static"), "", "```text", *lines, "```"])
    out += ["", f"## {msg('report_failures')}", ""]
    if failed:
        for case in failed:
            out += [f"### {LESSON['case_names'][case['id']]}", "", msg("report_explain_here"), ""]
    else:
        out += [msg("report_no_failures"), ""]
    out += [f"## {msg('report_questions')}", ""]
    for q in LESSON["questions"]:
        out += [f"### {q.upper()}", "", msg("report_answer_here"), ""]
    Path(path).write_text("\n".join(out), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Bench helpers: each lesson's bench.py uses these (one implementation for bench.py and --bench)
# ---------------------------------------------------------------------------------------------

SMOKE = False
WARMUP_ONLY = False   # compile everything, time nothing (verification runs this while the GPU is busy)


def time_ms(fn, warmup_ms=25, rep_ms=100):
    """Median milliseconds of fn() after one untimed call (the JIT compile) and a warm-up."""
    fn()
    if WARMUP_ONLY:
        return 1.0
    if SMOKE:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    from triton.testing import do_bench
    return do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")


def row(name, ms, nbytes, copy_ms, role="kernel", param=None):
    """One table row: GB/s counts the bytes the operation must move; vs_copy = copy time / this time."""
    return {"name": name, "ms": ms, "gbps": nbytes / (ms * 1e-3) / 1e9, "vs_copy": copy_ms / ms,
            "role": role, "param": param}


def flops_row(name, ms, flops, base_ms, role="kernel", param=None):
    """One row of a compute-bound table: TFLOP/s counts the operation's floating-point operations
    (2 M N K for a matrix product); vs_base = the table's base row's time / this time. The base
    row (role "base", e.g. cuBLAS) is the one its own vs_base of 1.00 compares against."""
    return {"name": name, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12, "vs_base": base_ms / ms,
            "role": role, "param": param}


def table_columns(rows):
    """(header, key, format) of a table's numeric columns, chosen from its rows' keys."""
    if rows and "tflops" in rows[0]:
        return [("ms", "ms", "9.3f"), ("TFLOP/s", "tflops", "8.1f"), (msg("bench_vs_base"), "vs_base", "10.2f")]
    return [("ms", "ms", "9.3f"), ("GB/s", "gbps", "8.0f"), (msg("bench_vs_copy"), "vs_copy", "10.2f")]


def print_tables(result):
    flops = any("tflops" in r for rows in result["tables"].values() for r in rows)
    print(msg("bench_title_flops" if flops else "bench_title", device=result["device"], n=result["n"],
              versions=f"torch {result['torch']} · triton {result['triton']}"))
    for table_id, rows in result["tables"].items():
        columns = table_columns(rows)
        print(f"\n  {LESSON['bench_tables'].get(table_id, table_id)}")
        print(f"  {'':44}" + "".join(f" {head:>{fmt.split('.')[0]}}" for head, _, fmt in columns))
        for r in rows:
            print(f"  {r['name'][:44]:44}" + "".join(f" {r[key]:{fmt}}" for _, key, fmt in columns))
    for name, ok in sorted((result.get("checks") or {}).items()):
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print(msg("bench_note_flops" if flops else "bench_note"))


def bench_main(measure, default_log2=28, argv=None):
    """The command line of a lesson's bench.py: measure(kernel_module, n, smoke) -> dict of tables."""
    global SMOKE, WARMUP_ONLY
    parser = argparse.ArgumentParser(prog="bench.py")
    parser.add_argument("--kernel", help=msg("help_kernel"))
    parser.add_argument("--json", metavar="FILE", help=msg("help_json"))
    parser.add_argument("--log2", type=int, default=default_log2, help=msg("help_log2"))
    parser.add_argument("--smoke", action="store_true", help=msg("help_smoke"))
    parser.add_argument("--warmup-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    SMOKE, WARMUP_ONLY = args.smoke, args.warmup_only
    if SMOKE:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    if not SMOKE and not torch.cuda.is_available():
        print(msg("bench_needs_gpu"))
        return EXIT_UNRUNNABLE
    import triton
    kernel = import_student(args.kernel or HERE / LESSON["module"], "bench_kernel")
    n = 1 << (10 if SMOKE else args.log2)
    if not SMOKE:
        free, _ = torch.cuda.mem_get_info()
        while n * 4 * 6 > free * 0.7 and n > 1 << 20:
            n //= 2
    started = time.monotonic()
    result = measure(kernel, n, SMOKE)
    if WARMUP_ONLY:
        return EXIT_PASS
    result["seconds"] = round(time.monotonic() - started, 2)
    result.update(device="CPU (Triton interpreter, smoke run)" if SMOKE else torch.cuda.get_device_name(0),
                  torch=torch.__version__, triton=triton.__version__, n=n)
    print_tables(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    return EXIT_PASS if all((result.get("checks") or {}).values()) else EXIT_FAIL


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(prog="check.py", description=LESSON.get("title", "coursepack check"))
    parser.add_argument("path", nargs="?", help=msg("help_path"))
    parser.add_argument("--json", action="store_true", help=msg("help_json"))
    parser.add_argument("--hint", type=int, metavar="N", help=msg("help_hint"))
    parser.add_argument("--report", metavar="FILE", help=msg("help_report"))
    parser.add_argument("--bench", action="store_true", help=msg("help_bench"))
    parser.add_argument("--timeout", type=float, default=LESSON.get("timeout_s", 120), help=msg("help_timeout"))
    parser.add_argument("--interpreter", action="store_true", help=msg("help_interpreter"))
    return parser.parse_args(argv)


def show_hint(level):
    hints = LESSON["hints"]
    if not 1 <= level <= 4:
        print(msg("hint_range"))
        return EXIT_UNRUNNABLE
    if level > len(hints):
        print(msg("hint_answer_only"))
        return EXIT_UNRUNNABLE
    print(msg("hint_heading", level=level, name=LESSON["hint_names"][level - 1]))
    print(hints[level - 1])
    return EXIT_PASS


def evaluate(target, timeout, force_interpreter, context=None, notebook=False):
    """Everything check.py knows about a target: (env, results, edits, fill, load_error, blank, timing)."""
    edits, fill = review_edits(target.text, notebook or target.cell is not None)
    blank = blank_lines(target.text)
    env, results, load_error, timing = None, {}, None, {}
    if not blank:
        supervisor = Supervisor(target.path, timeout, force_interpreter, context)
        results = supervisor.run([c["id"] for c in LESSON["cases"]])
        env, load_error = supervisor.env, supervisor.load_error
        timing = supervisor.timing
    return env, results, edits, fill, load_error, blank, timing


def check(args, out=print, display=None, context=None, notebook=False):
    missing = missing_packages()
    if missing:
        out(platform_message(missing))
        return EXIT_UNRUNNABLE
    with tempfile.TemporaryDirectory(prefix="coursepack-check-") as workdir:
        target = load_target(args.path, workdir, display)
        env, results, edits, fill, load_error, blank, timing = evaluate(target, args.timeout, args.interpreter,
                                                                        context, notebook)
        lines, status = render_report(target, env, results, edits, load_error, blank)
        if args.json:
            data = json_result(target, env, results, edits, fill, load_error, status)
            data["timing"] = dict(timing, parent_import_s=round(IMPORT_S, 3))
            out(json.dumps(data, ensure_ascii=False, indent=1))
        else:
            out("\n".join(lines))
        if args.report:
            write_submission(args.report, target, env, lines, status, results)
            if not args.json:
                out(msg("report_written", file=args.report))
        code = {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(status, EXIT_UNRUNNABLE)
        if args.bench and not args.json:
            no_gpu = env is not None and env.get("interpreter") and not args.interpreter
            code = bench_after_check(target, status, out, no_gpu)
        return code


def bench_after_check(target, status, out, no_gpu=False):
    """--bench: time only a kernel that passed its cases, with the lesson's own bench.py."""
    if status != "pass":
        out(msg("bench_after_failures" if status == "fail" else "bench_not_run"))
        return EXIT_FAIL if status == "fail" else EXIT_UNRUNNABLE
    if not LESSON.get("bench"):
        out(msg("bench_none"))
        return EXIT_UNRUNNABLE
    if no_gpu:   # the cases ran in the interpreter because torch sees no GPU: bench.py would say so
        out(msg("bench_needs_gpu"))
        return EXIT_UNRUNNABLE
    out("")
    return subprocess.call([sys.executable, str(HERE / LESSON["bench"]), "--kernel", str(target.path)])


def check_units(units, jobs, timeout, interpreter):
    """Verification: the cases of many kernel files ({"id", "path"} each), several at once, each
    in child processes of its own; torch imported once in this process and shared by forking.
    Returns each unit's JSON result (as --json gives it, plus the report's text and timing)."""
    _fork_context()   # imports torch once, here, before any thread: forked children share it
    from concurrent.futures import ThreadPoolExecutor

    def one(unit):
        started = time.monotonic()
        target = Target(Path(unit["path"]), unit["path"], Path(unit["path"]).read_text(encoding="utf-8"))
        env, cases, edits, fill, load_error, blank, timing = evaluate(target, timeout, interpreter)
        lines, status = render_report(target, env, cases, edits, load_error, blank)
        data = json_result(target, env, cases, edits, fill, load_error, status)
        data["text"] = "\n".join(lines)
        data["seconds"] = round(time.monotonic() - started, 2)
        data["timing"] = timing
        return unit["id"], data

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(pool.map(one, units))


class CheckFailed(Exception):
    """Raised by check_notebook so that a notebook run stops at a failing check cell."""


def check_notebook(entry_function):
    """The notebook's check cell: check the cell that defined entry_function, same output as check.py."""
    import inspect
    import linecache
    source_file = inspect.getsourcefile(entry_function)
    text = "".join(linecache.getlines(source_file)) if source_file else ""
    if not text:
        raise CheckFailed(msg("no_cell_source"))
    # Fork or spawn is _fork_context's choice: the setup cell asked for a GPU through NVML, which
    # starts nothing; a cell that ran a kernel started CUDA, and then its children are spawned.
    with tempfile.TemporaryDirectory(prefix="coursepack-cell-") as workdir:
        path = Path(workdir) / LESSON["module"]
        path.write_text(text, encoding="utf-8")
        code = check(parse_args([str(path)]), display=msg("notebook_cell"), notebook=True)
    if code != EXIT_PASS:
        raise CheckFailed(msg("notebook_failed"))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.hint is not None:
        return show_hint(args.hint)
    return check(args)


def exit_now(code):
    """Leave without Python's clean-up: with torch and triton loaded it takes most of a second, and
    nothing is left to do (files are closed, children stopped, output flushed here)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1   # a closed or broken stdout (a pipe whose reader left)
    os._exit(code or 0)


if __name__ == "__main__":
    try:
        result = main()
    except SystemExit as stop:   # argparse, and a file that does not exist
        result = stop.code
    exit_now(result)
