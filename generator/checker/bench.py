"""The helpers each lesson's bench.py is built on (`from check import bench_main, row, time_ms`):
one implementation for `python bench.py` and `python check.py --bench`. A bench imports the kernel
file it times, so it runs in a process of its own; what it measures comes back as JSON that the
checker prints itself, with a note when the kernel file replaced the timers it is measured with."""
import argparse
import json
import time
from pathlib import Path

from .common import EXIT_FAIL, EXIT_PASS, EXIT_UNRUNNABLE, HERE, LESSON, msg
from .environment import prepare
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
