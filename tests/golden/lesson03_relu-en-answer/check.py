#!/usr/bin/env python3
"""Self-check for one coursepack lesson. Needs only Python, torch and triton.

    python check.py                 check the kernel file beside this script
    python check.py PATH            check another .py file, or the exercise cell of an .ipynb
    python check.py --json          per-case results as JSON
    python check.py --hint N        hint level N
    python check.py --report F.md   write a submission report
    python check.py --bench         bandwidth on this GPU (needs a CUDA GPU)

Each run of the student's code happens in a child process, so a kernel that hangs or crashes
fails its case with a reason and this script always ends.
"""
import argparse
import difflib
import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import zlib
from pathlib import Path

# The data block below is written by coursepack when it builds the pack.
LESSON = json.loads(r"""{
 "blank_line": 16,
 "case_names": {
  "block_1": "size 256 (one full block)",
  "block_4": "size 1024 (four full blocks)",
  "empty": "empty input (size 0)",
  "large": "size 16,777,259 (large input, GPU only)",
  "random_bf16": "bfloat16, size 4096",
  "random_f16": "float16, size 4096",
  "seed": "seed example [-2, 0, 3, -4, 5]",
  "special_bf16": "special values NaN, ±inf, ±0 (bfloat16)",
  "special_f16": "special values NaN, ±inf, ±0 (float16)",
  "special_f32": "special values NaN, ±inf, ±0 (float32)",
  "tail_1": "size 1 (a tail of 1 element)",
  "tail_100003": "size 100,003 (many blocks and a tail)",
  "tail_255": "size 255 (one short of a block)",
  "tail_257": "size 257 (a tail of 1 element)",
  "tail_5": "size 5"
 },
 "cases": [
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "seed",
   "values": [
    "-2.0",
    "0.0",
    "3.0",
    "-4.0",
    "5.0"
   ]
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "block_1",
   "size": 256
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "block_4",
   "size": 1024
  },
  {
   "dtype": "float16",
   "gpu_only": false,
   "group": "normal",
   "id": "random_f16",
   "size": 4096
  },
  {
   "dtype": "bfloat16",
   "gpu_only": false,
   "group": "normal",
   "id": "random_bf16",
   "size": 4096
  },
  {
   "dtype": "float32",
   "gpu_only": true,
   "group": "normal",
   "id": "large",
   "size": 16777259
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_1",
   "size": 1
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_5",
   "size": 5
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_255",
   "size": 255
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_257",
   "size": 257
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_100003",
   "size": 100003
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "empty",
   "size": 0
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_f32",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  },
  {
   "dtype": "float16",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_f16",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  },
  {
   "dtype": "bfloat16",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_bf16",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  }
 ],
 "edition": "answer",
 "edition_name": "answer edition",
 "entry": "relu",
 "hint_names": [
  "concept area",
  "direction",
  "key spot",
  "full answer"
 ],
 "hints": [
  "ReLU is the element-wise $\\max(x, 0)$; inside the kernel `xv` is a whole block of data, not a number. Which functions of `triton.language` act element by element on a block?",
  "no Python `if`; use one block-level primitive that handles every lane at once. Remember that the result must match `torch.relu` on NaN too.",
  "`tl.maximum(xv, 0.0)` is right for ordinary numbers, but with default arguments it turns NaN into 0.0. Look at the `propagate_nan` argument of `tl.maximum`.",
  "`tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)`. Like `torch.relu`, it keeps NaN; `tl.where(xv > 0.0, xv, 0.0)` and the default `tl.maximum` both turn NaN into 0.0."
 ],
 "lesson": "lesson03_relu",
 "locale": "en",
 "messages": {
  "at_line": " (at line {line})",
  "bench_block": "your relu, BLOCK={block}",
  "bench_copy": "device copy (out.copy_(x))",
  "bench_needs_gpu": "--bench needs a CUDA GPU; the interpreter's speed says nothing about a GPU",
  "bench_note": "GB/s counts bytes read plus bytes written; the first call (JIT compilation) is not timed.",
  "bench_title": "bandwidth on {device}, {n} float32 elements ({mib} MiB in, as much out), median of many runs after warm-up · {versions}",
  "bench_vs_copy": "vs copy",
  "bench_vs_torch": "vs torch.relu",
  "bench_yours": "your relu (default BLOCK)",
  "crashed": "crashed ({code}): the process running your kernel died",
  "edits_outside": "note: lines changed outside the blank: {lines}. The rules allow changes only at the blank; your instructor will see this.",
  "env_gpu": "environment: {device} · {versions}",
  "env_interpreter": "environment: Triton interpreter on CPU (no CUDA GPU in use) · {versions}",
  "env_unknown": "environment: unknown (the code could not be started)",
  "file_line": "file: {file}",
  "fill_blank": "fill in the blank at {where}: replace ______ with your expression",
  "fill_blank_next": "then run the check again; `python check.py --hint 1` gives a first hint",
  "help_bench": "measure bandwidth on a CUDA GPU",
  "help_hint": "print hint level N (1-4)",
  "help_interpreter": "use the Triton interpreter even when a GPU is present",
  "help_json": "print per-case results as JSON",
  "help_path": "a .py file or an .ipynb notebook to check (default: the kernel file beside check.py)",
  "help_report": "write a submission report to FILE",
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
 "module": "relu.py",
 "questions": [
  "q1",
  "q2",
  "q3"
 ],
 "reasons": {
  "inf_wrong": "infinities are wrong: +inf must stay +inf and -inf must become 0.",
  "nan_dropped": "NaN became 0.0. `NaN > 0.0` is False, and `tl.maximum` with default arguments returns the non-NaN operand; `torch.relu` keeps NaN. Try `python check.py --hint 3`.",
  "negatives_flipped": "negatives became their absolute value: ReLU turns negatives into 0, it does not negate them.",
  "not_clamped": "negatives were not clamped to 0: the output equals the input. The blank must take max(x, 0) of every element.",
  "positives_zeroed": "positive values became 0: this looks like a minimum where a maximum belongs.",
  "unwritten": "some elements were never written (they still hold the poison value): check that the grid and the mask cover all n elements.",
  "wrong_value": "the result differs from torch.relu.",
  "wrote_past_end": "a write landed outside the output tensor: `tl.store` needs `mask=mask`, or the last block writes past the end."
 },
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
  "# ReLU kernel: each program handles BLOCK consecutive elements.",
  "# n is an ordinary argument, not a tl.constexpr, so inputs of new lengths do not recompile.",
  "@triton.jit",
  "def relu_kernel(x, out, n, BLOCK: tl.constexpr):",
  "    # The indices this program owns: one block of BLOCK elements.",
  "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
  "    # The last block may run past n: masked lanes neither read nor write.",
  "    mask = offsets < n",
  "    xv = tl.load(x + offsets, mask=mask)",
  "    # Compute ReLU element by element and store it; it must equal torch.relu exactly, NaN included.",
  "    tl.store(out + offsets, ______, mask=mask)  # TODO: ReLU (replace ______)",
  "",
  "",
  "def relu(x, BLOCK=256):",
  "    # The kernel addresses flat, contiguous memory, so the input must be contiguous.",
  "    assert x.is_contiguous()",
  "    out = torch.empty_like(x)",
  "    n = x.numel()",
  "    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)",
  "    return out",
  "",
  "",
  "if __name__ == \"__main__\":",
  "    # The seed example: python relu.py (without a GPU: TRITON_INTERPRET=1 python relu.py)",
  "    device = \"cuda\" if torch.cuda.is_available() else \"cpu\"",
  "    x = torch.tensor([-2.0, 0.0, 3.0, -4.0, 5.0], device=device)",
  "    torch.testing.assert_close(relu(x), torch.relu(x))",
  "    print(relu(x).tolist())"
 ],
 "timeout_s": 120,
 "title": "Lesson 3 · ReLU"
}""")

BLANK = "______"
POISON = -1024.0          # exact in float32, float16 and bfloat16; ReLU never outputs it
GUARD = 4096              # poisoned elements on each side of the output, to catch stray writes
HERE = Path(__file__).resolve().parent
EXIT_PASS, EXIT_FAIL, EXIT_UNRUNNABLE = 0, 1, 2


def msg(key, **kw):
    return LESSON["messages"][key].format(**kw)


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


def code_lines(text):
    """The lines of text with comments and trailing blanks removed (None if it won't tokenize)."""
    lines = text.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    for tok in reversed(tokens):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [line.rstrip() for line in lines]


def blank_lines(text):
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [i for i, line in enumerate(text.splitlines(), 1) if BLANK in line.split("#")[0]]
    return sorted({tok.start[0] for tok in tokens if tok.type == tokenize.NAME and tok.string == BLANK})


def review_edits(text):
    """Line numbers changed outside the blank, and the student's fill if the blank line matches."""
    template = code_lines("\n".join(LESSON["template"]) + "\n")
    mine = code_lines(text)
    if mine is None or template is None:
        return [], None
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
# The worker: runs in a child process, imports the student's module, runs the cases
# ---------------------------------------------------------------------------------------------

def worker_main(path, case_ids, force_interpreter):
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)   # the student's prints go to stderr; stdout carries only our messages

    def send(**message):
        proto.write(json.dumps(message) + "\n")

    import torch
    use_gpu = torch.cuda.is_available() and not force_interpreter
    if not use_gpu:
        os.environ["TRITON_INTERPRET"] = "1"   # must be set before @triton.jit runs
    import triton
    send(hello=environment(torch, triton, use_gpu))
    try:
        module = import_student(path)
        fn = getattr(module, LESSON["entry"])
    except SyntaxError as exc:
        send(load_error={"kind": "syntax", "line": exc.lineno, "column": exc.offset, "text": exc.msg})
        return 0
    except BaseException as exc:  # the student's module may raise anything at import
        send(load_error={"kind": "import", "line": student_line(exc, path), "text": f"{type(exc).__name__}: {exc}"})
        return 0
    device = "cuda" if use_gpu else "cpu"
    cases = {case["id"]: case for case in LESSON["cases"]}
    for case_id in case_ids:
        case = cases[case_id]
        send(start=case_id)
        skip = skip_reason(case, use_gpu)
        if skip:
            send(case=case_id, status="skip", reason=skip)
            continue
        try:
            send(case=case_id, **run_case(torch, fn, case, device))
        except BaseException as exc:
            send(case=case_id, status="error", line=student_line(exc, path),
                 text=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    send(done=True)
    return 0


def environment(torch, triton, use_gpu):
    env = {"torch": torch.__version__, "triton": triton.__version__,
           "python": sys.version.split()[0], "interpreter": not use_gpu}
    if use_gpu:
        env["device"] = torch.cuda.get_device_name(0)
    return env


def import_student(path):
    import importlib.util
    sys.path.insert(0, str(Path(path).parent))
    spec = importlib.util.spec_from_file_location("student_" + Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def student_line(exc, path):
    import traceback
    target = os.path.realpath(path)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if os.path.realpath(frame.filename) == target]
    return lines[-1] if lines else None


def skip_reason(case, use_gpu):
    if case.get("gpu_only") and not use_gpu:
        return "needs_gpu"
    if case["dtype"] == "bfloat16" and not use_gpu:
        return "bf16_interpreter"
    return None


def make_input(torch, case):
    dtype = getattr(torch, case["dtype"])
    size = case.get("size")
    values = [float(v) for v in case.get("values") or []]
    if size is None:
        return torch.tensor(values, dtype=torch.float64).to(dtype)
    generator = torch.Generator().manual_seed(zlib.crc32(case["id"].encode()))
    x = torch.rand(size, generator=generator, dtype=torch.float64) * 8 + 0.125
    x[::2] *= -1   # alternating signs: a kernel that does not clamp fails every case
    if values and size:
        step = max(size // len(values), 1)
        for i, value in enumerate(values):
            x[min(i * step, size - 1) if i < len(values) - 1 else size - 1] = value
    return x.to(dtype)


class PoisonedOutputs:
    """Makes torch.empty_like return poisoned memory with guard bands while the kernel runs."""

    def __init__(self, torch):
        self.torch, self.buffers = torch, []

    def __enter__(self):
        torch, original = self.torch, self.torch.empty_like
        self.original = original

        def poisoned(t, *args, **kwargs):
            plain = original(t, *args, **kwargs)
            if args or set(kwargs) - {"dtype", "device"} or not plain.is_floating_point():
                return plain
            n = plain.numel()
            buffer = torch.full((n + 2 * GUARD,), POISON, dtype=plain.dtype, device=plain.device)
            self.buffers.append((buffer, n))
            return buffer[GUARD:GUARD + n].view(plain.shape)

        torch.empty_like = poisoned
        return self

    def __exit__(self, *exc):
        self.torch.empty_like = self.original
        return False

    def stray_write(self, out):
        """Index (relative to the output's start) of the first write outside the output."""
        for buffer, n in self.buffers:
            if out.numel() and out.data_ptr() != buffer[GUARD:].data_ptr():
                continue
            if not out.numel() and n != 0:
                continue
            host = buffer.detach().double().cpu()
            before = (host[:GUARD] != POISON).nonzero()
            after = (host[GUARD + n:] != POISON).nonzero()
            if len(after):
                return n + int(after[0])
            if len(before):
                return int(before[-1]) - GUARD
        return None


def run_case(torch, fn, case, device):
    x_host = make_input(torch, case)
    x = x_host.to(device)
    expected = torch.relu(x_host).double()
    poison = PoisonedOutputs(torch)
    with poison:
        out = fn(x)
    if device == "cuda":
        torch.cuda.synchronize()
    if not isinstance(out, torch.Tensor):
        return {"status": "fail", "reason": "not_tensor", "got_type": type(out).__name__}
    if tuple(out.shape) != tuple(x.shape):
        return {"status": "fail", "reason": "wrong_shape", "expected": list(x.shape), "got": list(out.shape)}
    if out.dtype != x.dtype:
        return {"status": "fail", "reason": "wrong_dtype", "expected": str(x.dtype), "got": str(out.dtype)}
    stray = poison.stray_write(out)
    if stray is not None:
        return {"status": "fail", "reason": "wrote_past_end", "index": stray, "n": x.numel()}
    got = out.detach().double().cpu()
    inputs = x_host.double()
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    bad = (~same).nonzero().flatten()
    if not len(bad):
        return {"status": "pass", "n": x.numel()}
    first = int(bad[0])
    return {"status": "fail", "reason": classify(torch, inputs, expected, got, bad),
            "index": first, "input": fmt(inputs[first]), "expected": fmt(expected[first]),
            "got": fmt(got[first]), "count": len(bad), "n": x.numel()}


def classify(torch, inputs, expected, got, bad):
    """The most telling known mistake among the differing elements."""
    x, g = inputs[bad], got[bad]
    if bool((g == POISON).any()):
        return "unwritten"
    if bool((torch.isnan(x) & (g == 0)).any()):
        return "nan_dropped"
    negative = x < 0
    if bool((negative & (g == x)).any()):
        return "not_clamped"
    if bool((negative & (g == -x)).any()):
        return "negatives_flipped"
    if bool(((x > 0) & (g == 0)).any()):
        return "positives_zeroed"
    if bool((torch.isinf(x)).any()):
        return "inf_wrong"
    return "wrong_value"


def fmt(value):
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


# ---------------------------------------------------------------------------------------------
# The supervisor: runs workers, enforces timeouts, survives crashes
# ---------------------------------------------------------------------------------------------

class Supervisor:
    def __init__(self, target, timeout, force_interpreter):
        self.target, self.timeout, self.force_interpreter = target, timeout, force_interpreter
        self.env, self.load_error, self.results, self.stderr_tail = None, None, {}, ""

    def run(self, case_ids):
        pending = list(case_ids)
        while pending and self.load_error is None:
            done = self._one_worker(pending)
            pending = [c for c in pending if c not in self.results]
            if not done and not pending:
                break
        return self.results

    def _spawn(self, case_ids):
        command = [sys.executable, "-u", str(Path(__file__).resolve()), "--worker", str(self.target.path),
                   "--cases", ",".join(case_ids)]
        if self.force_interpreter:
            command.append("--interpreter")
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)

    def _one_worker(self, case_ids):
        process = self._spawn(case_ids)
        messages = queue.Queue()
        stderr_chunks = []
        threading.Thread(target=_pump_lines, args=(process.stdout, messages), daemon=True).start()
        threading.Thread(target=_pump_bytes, args=(process.stderr, stderr_chunks), daemon=True).start()
        current, deadline = None, time.monotonic() + self.timeout + 120   # import + first compile
        try:
            while True:
                try:
                    line = messages.get(timeout=max(deadline - time.monotonic(), 0.01))
                except queue.Empty:
                    self._record_hang(current)
                    return False
                if line is None:   # the worker ended
                    process.wait()
                    self.stderr_tail = _tail(b"".join(stderr_chunks))
                    if current is not None and current not in self.results:
                        self.results[current] = {"status": "crash", "code": _exit_text(process.returncode),
                                                 "stderr": self.stderr_tail}
                    elif self.env is None or (current is None and self.load_error is None):
                        self.load_error = {"kind": "crash", "code": _exit_text(process.returncode),
                                           "text": self.stderr_tail}
                    return True
                message = json.loads(line)
                if "hello" in message:
                    self.env = message["hello"]
                elif "load_error" in message:
                    self.load_error = message["load_error"]
                elif "start" in message:
                    current, deadline = message["start"], time.monotonic() + self.timeout
                elif "case" in message:
                    self.results[message.pop("case")] = message
                    current = None
                elif "done" in message:
                    process.wait()
                    return True
        finally:
            _kill(process)

    def _record_hang(self, current):
        if current is None:
            self.load_error = {"kind": "timeout", "seconds": self.timeout}
        else:
            self.results[current] = {"status": "timeout", "seconds": self.timeout}


def _pump_lines(stream, messages):
    for raw in stream:
        text = raw.decode("utf-8", "replace").strip()
        if text.startswith("{"):
            messages.put(text)
    messages.put(None)


def _pump_bytes(stream, chunks):
    for raw in stream:
        chunks.append(raw)


def _tail(data, lines=6):
    return "\n".join(data.decode("utf-8", "replace").strip().splitlines()[-lines:])


def _exit_text(code):
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _kill(process):
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait()


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


def case_detail(result):
    status = result["status"]
    if status == "fail":
        reason = result["reason"]
        if reason in ("wrong_shape", "wrong_dtype"):
            return [msg(reason, expected=result["expected"], got=result["got"])]
        if reason == "not_tensor":
            return [msg("not_tensor", got=result["got_type"])]
        if reason == "wrote_past_end":
            return [msg("wrote_past_end_detail", index=result["index"], n=result["n"]),
                    msg("why", text=LESSON["reasons"]["wrote_past_end"])]
        lines = [msg("mismatch", **{k: result[k] for k in ("index", "input", "expected", "got", "count", "n")})]
        if reason in LESSON["reasons"]:
            lines.append(msg("why", text=LESSON["reasons"][reason]))
        return lines
    if status == "error":
        return [msg("raised", text=result["text"]) + (msg("at_line", line=result["line"]) if result.get("line") else "")]
    if status == "timeout":
        return [msg("timed_out", seconds=result["seconds"])]
    if status == "crash":
        lines = [msg("crashed", code=result["code"])]
        return lines + ["  " + l for l in result.get("stderr", "").splitlines()[-3:]]
    if status == "skip":
        return []
    return []


def score(cases, results):
    rubric = LESSON["rubric"]
    points = {}
    for group in ("normal", "boundary"):
        ran = [c for c in cases if c["group"] == group and results.get(c["id"], {}).get("status") != "skip"]
        passed = [c for c in ran if results.get(c["id"], {}).get("status") == "pass"]
        points[group] = (rubric[group] * len(passed) // len(ran)) if ran else 0
    return points


def render_report(target, env, results, edits, load_error, blank):
    """All lines a student sees, and the overall status."""
    lines = [msg("title", lesson=LESSON["title"], locale=LESSON["locale"], edition=LESSON["edition_name"]),
             msg("file_line", file=target.display if target.cell is None else target.where(1).rsplit(",", 1)[0])]
    if env is not None:
        lines.append(env_line(env))
        if env["interpreter"]:
            lines.append("  " + msg("interpreter_banner"))
        warning = version_warning(env)
        if warning:
            lines.append("  " + warning)
    lines.append("")
    if blank:
        lines += [msg("fill_blank", where=", ".join(target.where(n) for n in blank)), msg("fill_blank_next")]
        return lines, "blank"
    if load_error is not None:
        kind = load_error["kind"]
        if kind == "syntax":
            lines.append(msg("syntax_error", where=target.where(load_error["line"] or 1), text=load_error["text"]))
        elif kind == "import":
            where = target.where(load_error["line"]) if load_error.get("line") else target.display
            lines.append(msg("import_error", where=where, text=load_error["text"]))
        elif kind == "timeout":
            lines.append(msg("import_timeout", seconds=load_error["seconds"]))
        else:
            lines.append(msg("worker_crashed", code=load_error.get("code", ""), text=load_error.get("text", "")))
        return lines, "load_error"
    symbols = {"pass": "PASS", "fail": "FAIL", "error": "FAIL", "timeout": "FAIL", "crash": "FAIL", "skip": "SKIP"}
    for case in LESSON["cases"]:
        result = results.get(case["id"], {"status": "crash", "code": "?"})
        name = LESSON["case_names"][case["id"]]
        if result["status"] == "skip":
            name += "  (" + LESSON["messages"]["skip_" + result["reason"]] + ")"
        lines.append(f"  {symbols[result['status']]:4}  {name}")
        lines += ["        " + d for d in case_detail(result)]
    if edits:
        lines += ["", msg("edits_outside", lines=", ".join(map(str, edits)))]
    points = score(LESSON["cases"], results)
    rubric = LESSON["rubric"]
    auto_total = rubric["normal"] + rubric["boundary"]
    lines += ["", msg("score", got=points["normal"] + points["boundary"], total=auto_total,
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
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") in ("fail", "error", "timeout", "crash")]
    out = [f"# {msg('report_title', lesson=LESSON['title'])}", "",
           f"- {msg('report_run_kind')}: {run_kind}",
           f"- {msg('report_environment')}: {env_line(env) if ran else msg('report_static')}",
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
# Bandwidth bench (GPU only)
# ---------------------------------------------------------------------------------------------

def bench(target, sizes_log2=28):
    import torch
    if not torch.cuda.is_available():
        print(msg("bench_needs_gpu"))
        return EXIT_UNRUNNABLE
    import triton
    from triton.testing import do_bench
    module = import_student(target.path)
    fn = getattr(module, LESSON["entry"])
    free, _ = torch.cuda.mem_get_info()
    n = 1 << sizes_log2
    while n * 4 * 3 > free * 0.8 and n > 1 << 20:
        n //= 2
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()

    def gbps(ms):
        return nbytes / (ms * 1e-3) / 1e9

    fn(x)   # the first call compiles; it is not timed
    copy_ms = do_bench(lambda: out.copy_(x), warmup=50, rep=300, return_mode="median")
    torch_ms = do_bench(lambda: torch.relu(x), warmup=50, rep=300, return_mode="median")
    rows = [(msg("bench_copy"), copy_ms), ("torch.relu", torch_ms)]
    mine_ms = do_bench(lambda: fn(x), warmup=50, rep=300, return_mode="median")
    rows.append((msg("bench_yours"), mine_ms))
    for block in (128, 256, 512, 1024, 2048, 4096):
        try:
            fn(x, BLOCK=block)
        except TypeError:
            break
        ms = do_bench(lambda: fn(x, BLOCK=block), warmup=50, rep=300, return_mode="median")
        rows.append((msg("bench_block", block=block), ms))
    device = torch.cuda.get_device_name(0)
    print(msg("bench_title", device=device, n=n, mib=x.numel() * 4 >> 20,
              versions=f"torch {torch.__version__} · triton {triton.__version__}"))
    print(f"  {'':32} {'ms':>8} {'GB/s':>8} {msg('bench_vs_copy'):>10} {msg('bench_vs_torch'):>12}")
    for name, ms in rows:
        print(f"  {name:32} {ms:8.3f} {gbps(ms):8.0f} {copy_ms / ms:10.2f} {torch_ms / ms:12.2f}")
    print(msg("bench_note"))
    return EXIT_PASS


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
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cases", help=argparse.SUPPRESS)
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


def check(args, out=print, display=None):
    with tempfile.TemporaryDirectory(prefix="coursepack-check-") as workdir:
        target = load_target(args.path, workdir, display)
        if args.bench:
            return bench(target)
        edits, fill = review_edits(target.text)
        blank = blank_lines(target.text)
        env, results, load_error = None, {}, None
        if not blank:
            supervisor = Supervisor(target, args.timeout, args.interpreter)
            results = supervisor.run([c["id"] for c in LESSON["cases"]])
            env, load_error = supervisor.env, supervisor.load_error
        lines, status = render_report(target, env, results, edits, load_error, blank)
        if args.json:
            out(json.dumps(json_result(target, env, results, edits, fill, load_error, status),
                           ensure_ascii=False, indent=1))
        else:
            out("\n".join(lines))
        if args.report:
            write_submission(args.report, target, env, lines, status, results)
            if not args.json:
                out(msg("report_written", file=args.report))
        return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(status, EXIT_UNRUNNABLE)


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
    with tempfile.TemporaryDirectory(prefix="coursepack-cell-") as workdir:
        path = Path(workdir) / LESSON["module"]
        path.write_text(text, encoding="utf-8")
        args = parse_args([str(path)])
        code = check(args, display=msg("notebook_cell"))
    if code != EXIT_PASS:
        raise CheckFailed(msg("notebook_failed"))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        return worker_main(args.worker, args.cases.split(",") if args.cases else [], args.interpreter)
    if args.hint is not None:
        return show_hint(args.hint)
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
