"""`check.py --bench`, and the helpers each lesson's bench.py is built on (`from check import
bench_main, row, time_ms`): one implementation for `python bench.py` and `python check.py --bench`.

A lesson's bench.py imports the kernel file it times, so it runs in a process of its own, whose
numbers the kernel file can make up (a memo of outputs by input address, work left running on a
side stream, its own JSON). So `--bench` also times the kernel from this process, which never
imported it (time_in_trusted): a worker calls the entry on inputs that lie in memory this process
owns, written with new numbers before every round and each call on buffers of its own; this
process starts its clock before it sends the round, and stops it once it has read back, itself,
a random sample (positions drawn here from the OS's randomness, never sent) of every call's
output and found it right; then every output is compared whole. The time can only be too long
(it holds a round trip), never too short (but for work skipped where no sampled position lies,
which the whole comparison then finds). And every row, the bench's and ours, that claims more than this GPU can do (faster than
the device copy, or more TFLOP/s than a cuBLAS matrix product, both timed here) is refused."""
import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..shared.common import EXIT_FAIL, EXIT_PASS, EXIT_UNRUNNABLE, HERE, LESSON, msg, outputs
from ..trusted.cases import error_scale, expected_output, make_inputs, returned, skip_reason
from ..shared.environment import prepare
from ..trusted.memory import Region, bit_dtype, dense_strides, image, lay_out
from ..trusted.supervisor import Supervisor
from ..trusted.verdict import compare, tolerance_of
from .worker import clock_functions, import_student

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


def print_tables(result, out=print):
    """A bench's tables (its own JSON, or another process's: every value is read defensively)."""
    try:
        flops = any("tflops" in r for rows in result["tables"].values() for r in rows)
        out(msg("bench_title_flops" if flops else "bench_title", device=result["device"], n=result["n"],
                versions=f"torch {result['torch']} · triton {result['triton']}"))
        for table_id, rows in result["tables"].items():
            columns = table_columns(rows)
            out(f"\n  {LESSON['bench_tables'].get(table_id, table_id)}")
            out(f"  {'':44}" + "".join(f" {head:>{fmt.split('.')[0]}}" for head, _, fmt in columns))
            for r in rows:
                out(f"  {str(r['name'])[:44]:44}" + "".join(f" {float(r[key]):{fmt}}" for _, key, fmt in columns))
        for name, ok in sorted((result.get("checks") or {}).items()):
            out(f"  {'PASS' if ok else 'FAIL'}  {name}")
        out(msg("bench_note_flops" if flops else "bench_note"))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        out(msg("bench_unreadable", text=f"{type(exc).__name__}: {exc}"[:200]))


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
    setup = prepare(force_interpreter=SMOKE)
    if not SMOKE and not setup["use_gpu"]:
        print(msg("bench_needs_gpu"))
        return EXIT_UNRUNNABLE
    import torch
    import triton
    timers = timer_snapshot(torch)
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
    result["timers_replaced"] = [name for name, value in timer_snapshot(torch).items() if timers.get(name) is not value]
    result.update(device="CPU (Triton interpreter, smoke run)" if SMOKE else torch.cuda.get_device_name(0),
                  torch=torch.__version__, triton=triton.__version__, n=n)
    print_tables(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    return EXIT_PASS if all((result.get("checks") or {}).values()) else EXIT_FAIL


def timer_snapshot(torch):
    """The functions a bench's times come from: a kernel file that replaces one forges its times."""
    return clock_functions(torch)


# --- check.py --bench -----------------------------------------------------------------------------

ROUNDS, CALLS, SAMPLE = 5, 8, 4096   # timed rounds (after one untimed), calls in a round, elements read back
GBPS_MARGIN, FLOPS_MARGIN = 1.10, 1.25   # headroom over the device copy and cuBLAS before a row is refused
MEMORY_SHARE = 0.3   # of the GPU's free memory, at most, for a round's buffers


def bench_after_check(target, status, out, no_gpu=False, session=None, timeout=120):
    """--bench: time only a kernel that passed its cases: the lesson's bench.py in a process of its
    own (its tables come back as JSON, printed here), then this process's own timing; every row
    beyond what the GPU can do is refused."""
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
    smoke = session is not None and not session.setup["use_gpu"]
    import torch
    ceiling = None if smoke else device_ceiling(torch)
    code, result = lesson_bench(target, smoke, out)
    if result is not None and ceiling is not None:
        refused = refused_rows(result, ceiling)
        if refused:
            out(msg("bench_refused", rows="; ".join(refused), copy=f"{ceiling['copy_gbps']:.0f}",
                    tflops=f"{ceiling['tflops']:.0f}"))
            code = EXIT_FAIL
    if session is not None:
        timed = time_in_trusted(session, target, timeout, CALLS if not smoke else 2, ROUNDS if not smoke else 2)
        for line in describe_timing(timed, ceiling, smoke):
            out(line)
        if timed.get("problem") or timed.get("refused"):
            code = EXIT_FAIL if code != EXIT_UNRUNNABLE else code
    return code


def lesson_bench(target, smoke, out):
    """(exit code, the JSON result or None) of the lesson's bench.py on the kernel file."""
    with tempfile.TemporaryDirectory(prefix="coursepack-bench-") as folder:
        report = Path(folder) / "bench.json"
        size = ["--log2", os.environ["COURSEPACK_BENCH_LOG2"]] if os.environ.get("COURSEPACK_BENCH_LOG2") else []
        done = subprocess.run([sys.executable, str(HERE / LESSON["bench"]), "--kernel", str(target.path),
                               "--json", str(report), *(["--smoke"] if smoke else size)], capture_output=True, text=True)
        try:
            result = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            out(done.stdout.strip()[-2000:] + done.stderr.strip()[-2000:])
            return EXIT_UNRUNNABLE, None
    if not isinstance(result, dict):
        out(msg("bench_unreadable", text=type(result).__name__))
        return EXIT_UNRUNNABLE, None
    print_tables(result, out)
    if result.get("timers_replaced"):
        out(msg("bench_timers_replaced", names=", ".join(map(str, result["timers_replaced"]))))
        return EXIT_FAIL, result
    checks = result.get("checks") or {}
    return (EXIT_PASS if isinstance(checks, dict) and all(checks.values()) else EXIT_FAIL), result


def refused_rows(result, ceiling):
    """The names of the rows that claim more than the device: GB/s past the device copy's, TFLOP/s
    past cuBLAS's bfloat16 matrix product (both timed in this process), with their numbers."""
    refused = []
    tables = result.get("tables") if isinstance(result.get("tables"), dict) else {}
    for rows in tables.values():
        for r in rows if isinstance(rows, list) else []:
            if not isinstance(r, dict):
                continue
            gbps, tflops = _reading(r.get("gbps")), _reading(r.get("tflops"))
            if gbps is not None and gbps > GBPS_MARGIN * ceiling["copy_gbps"]:
                refused.append(f"{str(r.get('name'))[:60]} ({gbps:.0f} GB/s)")
            elif tflops is not None and tflops > FLOPS_MARGIN * ceiling["tflops"]:
                refused.append(f"{str(r.get('name'))[:60]} ({tflops:.0f} TFLOP/s)")
    return refused


def _reading(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def device_ceiling(torch):
    """What this GPU can do, timed in this process: the device copy's GB/s (bytes read + written,
    up to 2^28 float32 elements) and a bfloat16 cuBLAS product's TFLOP/s (8192^3)."""
    from triton.testing import do_bench
    free, _ = torch.cuda.mem_get_info()
    n = 1 << 28
    while n * 8 > free * MEMORY_SHARE and n > 1 << 20:
        n //= 2
    x = torch.empty(n, device="cuda").normal_()
    y = torch.empty_like(x)
    copy_ms = do_bench(lambda: y.copy_(x), warmup=25, rep=100, return_mode="median")
    del x, y
    side = 8192 if free > 4 * 8192 * 8192 * 2 else 4096
    a = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    product_ms = do_bench(lambda: a @ b, warmup=25, rep=100, return_mode="median")
    del a, b
    torch.cuda.empty_cache()   # bench.py sizes its inputs from the memory left free
    return {"copy_gbps": 2 * n * 4 / (copy_ms * 1e-3) / 1e9, "tflops": 2 * side ** 3 / (product_ms * 1e-3) / 1e12}


def timed_case(use_gpu):
    """The case this process times the kernel on: the lesson bench's TRUSTED_CASE (a literal in
    bench.py, read from its text, never run), else the lesson's case with the most elements that
    runs here."""
    declared = _literal(HERE / LESSON["bench"], "TRUSTED_CASE") if LESSON.get("bench") else None
    if isinstance(declared, dict) and (use_gpu or not declared.get("gpu_only")):
        return dict(declared, id=declared.get("id", "trusted_bench"), group="bench")
    cases = [c for c in LESSON["cases"] if skip_reason(c, use_gpu) is None and c.get("dims")]
    size = lambda c: sum(v for v in c["dims"].values() if isinstance(v, int))
    return max(cases, key=size) if cases else None


def _literal(path, name):
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


class TimedCalls:
    """calls sets of inputs and output areas in one region this process owns; each round writes
    new numbers (drawn as the case's, with another seed) and poisons the areas again. The outputs
    judged by value are checked after each round (a property output only by its shape)."""

    def __init__(self, torch, case, device, calls):
        self.torch, self.case, self.device = torch, case, device
        made = make_inputs(torch, case, device)
        expected = expected_output(torch, made)
        self.layouts, offset = [], 0
        for _ in range(calls):
            self.layouts.append(lay_out(made, [expected], offset))
            offset = self.layouts[-1]["nbytes"]
        self.moved = sum(s.numel() * s.element_size() for _, s, v in made if hasattr(v, "shape")) \
            + sum(t.numel() * t.element_size() for i, t in enumerate(expected) if returned(i))
        self.elements = sum(t.numel() for t in expected)
        self.inputs = [{"kind": "scalar", "value": v} if not hasattr(v, "shape") else {"kind": "tensor"}
                       for _, _, v in made]
        self.region = Region(torch, offset, device)
        self.expected, self.samples = [], []
        self.poisoned = {}   # call -> {property output: its area as poisoned}: each element must be written

    def fill(self, round_number):
        torch = self.torch   # the sample's positions from the OS's randomness: no seed to predict them from
        generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self.expected, self.samples = [], []
        for i, layout in enumerate(self.layouts):
            case = dict(self.case, id=f"{self.case['id']}#bench{round_number}.{i}")
            made = make_inputs(torch, case, self.device)
            expected = expected_output(torch, made)
            image(torch, made, [expected], layout, self.device, whole=self.region.tensor)
            self.poisoned[i] = {index: self.area(i, index).clone() for index in range(len(expected))
                                if outputs()[index].get("check") == "property"}
            scales = error_scale(torch, made)
            self.expected.append(list(zip(expected, scales)))
            samples = []
            for want, scale in zip(expected, scales):
                picked = torch.randint(0, max(want.numel(), 1), (min(SAMPLE, want.numel()),), generator=generator)
                picked = picked.to(self.device)
                samples.append((picked, want.reshape(-1)[picked], None if scale is None else scale.reshape(-1)[picked]))
            self.samples.append(samples)
        if self.device == "cuda":
            torch.cuda.synchronize()

    def area(self, i, index):
        """Call i's output index, where the trusted side reads it: its area, or its input's view."""
        layout = self.layouts[i]
        out = layout["outputs"][0][index]
        if out is None:   # in place: the input's own memory
            name = outputs()[index]["name"]
            out = layout["inputs"][[spec["name"] for spec in LESSON["inputs"]].index(name)]
            dtype = getattr(self.torch, out["dtype"])
            item = self.torch.tensor([], dtype=dtype).element_size()
            return self.region.tensor.view(dtype).as_strided(out["shape"], out["stride"],
                                                              out["offset"] // item + out["view_offset"])
        dtype = getattr(self.torch, out["dtype"])
        item = self.torch.tensor([], dtype=dtype).element_size()
        return self.region.tensor.view(dtype).as_strided(out["shape"], dense_strides(out["shape"]),
                                                          out["offset"] // item)

    def _wrong(self, i, index, want, got, scale, picked=None):
        spec = outputs()[index]
        if spec.get("check") == "property":   # its values are check()'s, but every element must be written
            held = self.poisoned[i][index].reshape(-1)
            held = held[picked] if picked is not None else held
            bits = bit_dtype(self.torch, held.element_size())
            return bool((got.reshape(-1).contiguous().view(bits) == held.contiguous().view(bits)).any())
        if not want.dtype.is_floating_point:
            return bool((got.long() != want.long()).any())
        return bool(compare(self.torch, want.double(), got.double(), self.case.get("dtype", "float32"), scale,
                            tolerance_of(spec, self.case)).any())

    def sample_right(self):
        """Whether the sampled elements of every call's outputs are right now (read here)."""
        for i, samples in enumerate(self.samples):
            for index, (picked, want, scale) in enumerate(samples):
                if self._wrong(i, index, want, self.area(i, index).reshape(-1)[picked], scale, picked):
                    return False
        return True

    def all_right(self):
        return all(not self._wrong(i, index, want, self.area(i, index), scale)
                   for i, pairs in enumerate(self.expected) for index, (want, scale) in enumerate(pairs))

    def request(self, first):
        calls = [dict(layout, nbytes=self.region.nbytes) for layout in self.layouts]
        return {"bench": {"calls": calls, "nbytes": self.region.nbytes, "map": first}, "inputs": self.inputs}


def time_in_trusted(session, target, timeout, calls=CALLS, rounds=ROUNDS):
    """The entry timed from this process: {"ms": median per call, "gbps", "elements", "calls",
    "rounds"}, or {"problem": why}. See the module's docstring for what makes it sound."""
    import torch
    use_gpu = session.setup["use_gpu"]
    case = timed_case(use_gpu)
    if case is None:
        return {"problem": "no case to time"}
    supervisor = Supervisor(session.factory, session.prepared, target, timeout, sandboxed=session.sandbox is not None,
                            start_margin=session.start_margin, take=session.take_worker)
    worker = supervisor.load_worker()
    if worker is None:
        return {"problem": f"the worker did not load the file ({supervisor.load_error})"[:300]}
    timed = None
    try:
        timed = _fitting(torch, case, "cuda" if use_gpu else "cpu", calls)
        if timed is None or worker.descriptors is None:
            return {"problem": "no memory to share with the worker here"}
        return _rounds(torch, timed, worker, timeout, rounds)
    except (OSError, RuntimeError, ValueError) as exc:
        return {"problem": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        worker.kill()
        if timed is not None:
            timed.region.close()


def _fitting(torch, case, device, calls):
    """TimedCalls with as many calls as fit in MEMORY_SHARE of the GPU's free memory (2 at least)."""
    made = make_inputs(torch, case, device)
    per_call = 3 * (sum(s.numel() * s.element_size() for _, s, v in made if hasattr(v, "shape")) + 1)
    del made
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        while calls > 2 and calls * per_call * 2 > free * MEMORY_SHARE:
            calls //= 2
        if calls * per_call * 2 > free * MEMORY_SHARE:
            return None
    return TimedCalls(torch, case, device, calls)


def _rounds(torch, timed, worker, timeout, rounds):
    per_call = []
    for number in range(rounds + 1):   # round 0 compiles and is not timed
        timed.fill(number)
        if number == 0:
            timed.region.send(worker.descriptors)
        started = time.perf_counter()
        if not worker.send(timed.request(number == 0)):
            return {"problem": "the worker is gone"}
        kind, reply, _ = worker.next(timeout)
        if kind != "frame" or not isinstance(reply, dict) or reply.get("bench") != "done":
            text = reply.get("text") if isinstance(reply, dict) else kind
            return {"problem": f"the worker did not finish the calls ({str(text)[:200]})"}
        right = timed.sample_right()
        seconds = time.perf_counter() - started
        if not right or not timed.all_right():
            return {"problem": "wrong", "round": number}
        if number:
            per_call.append(seconds / len(timed.layouts))
    ms = statistics.median(per_call) * 1e3
    return {"ms": ms, "gbps": timed.moved / (ms * 1e-3) / 1e9, "elements": timed.elements,
            "calls": len(timed.layouts), "rounds": rounds, "case": timed.case["id"]}


def describe_timing(timed, ceiling, interpreter):
    """The lines that report this process's own timing (and mark it refused beyond the copy)."""
    if timed.get("problem") == "wrong":
        return [msg("bench_trusted_wrong")]
    if timed.get("problem"):
        return [msg("bench_trusted_failed", text=timed["problem"])]
    vs_copy = timed["gbps"] / ceiling["copy_gbps"] if ceiling else None
    line = msg("bench_trusted", ms=f"{timed['ms']:.3f}", gbps=f"{timed['gbps']:.0f}", n=timed["elements"],
               calls=timed["calls"], rounds=timed["rounds"],
               vs_copy="-" if vs_copy is None else f"{vs_copy:.2f}")
    lines = [line]
    if interpreter:
        lines.append(msg("bench_trusted_interpreter"))
    if vs_copy is not None and vs_copy > GBPS_MARGIN:
        timed["refused"] = True
        lines.append(msg("bench_refused", rows=f"check.py ({timed['gbps']:.0f} GB/s)",
                         copy=f"{ceiling['copy_gbps']:.0f}", tflops=f"{ceiling['tflops']:.0f}"))
    return lines
