"""What the sandbox costs per submission: the trusted checker's session (as grading and verification
use it) checking N different submissions of a lesson, one at a time, without and with the sandbox.

    python bench/sandbox_bench.py [DIST] [--lesson ID] [-n N] [-j J[,J...]] [--smoke]

DIST holds built zips (default build/dist); the lesson's first language's answer edition is used.
Its kernel file is copied N + 1 times, each copy with its own comment line inside every
`@triton.jit` function, so that no two copies share a Triton cache entry: every submission compiles
its kernels, as different students' submissions do. The first copy warms the session (the factory,
the launchers); the others are timed. The sandboxed session gets the launchers of the plain one's
Triton cache as its seed (grading's and verification's `seed_cache`). Prints the median seconds per
submission for both and their difference. With -j, the N submissions are also checked J at once
(as `coursepack grade -j J` does), printing submissions per second, the trusted process's own CPU
seconds per submission, and the median unit's worker start (CUDA included), load (compile
included) and cases. Never fails on time. --smoke: N = 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from check_bench import answer_packs  # this folder's: a student's check.py, timed

REPO = Path(__file__).resolve().parent.parent


def variant(text: str, number: int) -> str:
    """The kernel file with a comment line opening the body of every @triton.jit function."""
    lines, out, pending, depth = text.splitlines(), [], False, 0
    for index, line in enumerate(lines):
        out.append(line)
        stripped = line.strip()
        if stripped.startswith("@triton.jit"):
            pending, depth = True, 0
            continue
        if pending and (stripped.startswith("def ") or depth > 0):
            depth += line.count("(") - line.count(")")
            if depth <= 0 and stripped.endswith(":"):
                body = next((l for l in lines[index + 1 :] if l.strip()), "    pass")
                indent = body[: len(body) - len(body.lstrip())]
                out.append(f"{indent}# submission {number}")
                pending = False
    return "\n".join(out) + "\n"


def load_checker(pack: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("coursepack_check", pack / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(checker, pack: Path, units: list[dict], sandbox: bool, seed: str | None) -> dict:
    started = time.monotonic()
    session = checker.Session(False, sandbox, checker=str(pack / "check.py"), seed_cache=seed)
    opened = time.monotonic() - started
    checker.check_units(units[:1], 1, 120, session)  # warms the factory and Triton's launchers
    seconds, statuses = [], []
    for unit in units[1:]:
        started = time.monotonic()
        result = checker.check_units([unit], 1, 120, session)[unit["id"]]
        seconds.append(time.monotonic() - started)
        statuses.append(result["status"])
    return {
        "session_s": opened,
        "use_gpu": session.setup["use_gpu"],
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "statuses": sorted(set(statuses)),
        "label": session.sandbox or "none",
    }


def concurrent(
    checker, pack: Path, units: list[dict], sandbox: bool, seed: str | None, jobs: int
) -> dict:
    """units[1:] checked `jobs` at once in one session (units[0] warms it)."""
    import resource

    session = checker.Session(False, sandbox, checker=str(pack / "check.py"), seed_cache=seed)
    checker.check_units(units[:1], 1, 120, session)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    results = checker.check_units(units[1:], jobs, 120, session)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    timing = [r.get("timing") or {} for r in results.values()]
    ran = [sum(c.get("seconds", 0.0) for c in r["cases"]) for r in results.values()]
    count = len(units) - 1
    return {
        "rate": count / wall,
        "wall": wall,
        "cpu_per": cpu / count,
        "unit_s": statistics.median(r["seconds"] for r in results.values()),
        "start_s": statistics.median(t.get("startup_s", 0.0) for t in timing),
        "load_s": statistics.median(t.get("loaded_s", 0.0) for t in timing),
        "cases_s": statistics.median(ran),
        "statuses": sorted({r["status"] for r in results.values()}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", nargs="?", type=Path, default=REPO / "build" / "dist")
    parser.add_argument("--lesson")
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument(
        "-j", "--jobs", default="", help="also check the submissions J at once (a list: 1,4,16)"
    )
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    jobs = [int(j) for j in args.jobs.split(",") if j.strip()]
    count = 2 if args.smoke else max(2, args.n)
    work = Path(tempfile.mkdtemp(prefix="coursepack-sandbox-bench-", dir="/tmp"))
    os.chmod(work, 0o755)
    try:
        packs = answer_packs(args.dist, work)
        lesson = args.lesson or next(iter(packs), None)
        if lesson not in packs:
            raise SystemExit(
                f"sandbox_bench: no answer zip{' of ' + lesson if lesson else ''} in {args.dist}; "
                "run `make packs`"
            )
        pack = packs[lesson]
        os.environ["TRITON_CACHE_DIR"] = str(
            work / "triton"
        )  # the session's own cache: the seed's source
        checker = load_checker(pack)
        why = checker.sandbox_problem()
        if why:
            raise SystemExit(f"sandbox_bench: the sandbox cannot run here: {why}")
        kernel = pack / checker.LESSON["module"]
        text = kernel.read_text(encoding="utf-8")
        rows = {}
        for mode in ("plain", "sandbox"):
            units = []
            for number in range(count + 1):
                folder = work / mode / f"s{number}"
                folder.mkdir(parents=True)
                (folder / kernel.name).write_text(
                    variant(text, number if mode == "plain" else 1000 + number), encoding="utf-8"
                )
                units.append({"id": f"s{number}", "path": str(folder / kernel.name)})
            rows[mode] = measure(
                checker,
                pack,
                units,
                mode == "sandbox",
                os.environ["TRITON_CACHE_DIR"] if mode == "sandbox" else None,
            )
        where = checker_device() if rows["plain"]["use_gpu"] else "interpreter (CPU)"
        print(
            f"coursepack sandbox benchmark · {lesson} · {count} different submissions, one at a time · {where}"
        )
        print(
            f"  {'mode':8} {'session s':>9} {'median s':>8} {'min s':>6} {'max s':>6}  statuses  sandbox"
        )
        for mode, row in rows.items():
            print(
                f"  {mode:8} {row['session_s']:9.2f} {row['median_s']:8.3f} {row['min_s']:6.3f} {row['max_s']:6.3f}  "
                f"{','.join(row['statuses']):8}  {row['label']}"
            )
        print(
            f"sandbox cost per submission: {rows['sandbox']['median_s'] - rows['plain']['median_s']:+.3f} s (median)"
        )
        if jobs:
            print(
                f"\n  {'mode':8} {'jobs':>4} {'subs/s':>7} {'wall s':>7} {'trusted cpu s/sub':>17} {'unit s':>7} "
                f"{'start s':>7} {'load s':>7} {'cases s':>7}  statuses"
            )
        for count_jobs in jobs:
            for mode in ("plain", "sandbox"):
                units = []
                for number in range(count + 1):
                    folder = work / f"{mode}-j{count_jobs}" / f"s{number}"
                    folder.mkdir(parents=True)
                    (folder / kernel.name).write_text(
                        variant(
                            text,
                            (count_jobs + 2) * 10000 + number + (5000 if mode == "sandbox" else 0),
                        ),
                        encoding="utf-8",
                    )
                    units.append({"id": f"s{number}", "path": str(folder / kernel.name)})
                row = concurrent(
                    checker,
                    pack,
                    units,
                    mode == "sandbox",
                    os.environ["TRITON_CACHE_DIR"] if mode == "sandbox" else None,
                    count_jobs,
                )
                print(
                    f"  {mode:8} {count_jobs:4d} {row['rate']:7.2f} {row['wall']:7.1f} {row['cpu_per']:17.3f} "
                    f"{row['unit_s']:7.2f} {row['start_s']:7.2f} {row['load_s']:7.2f} {row['cases_s']:7.2f}  "
                    f"{','.join(row['statuses'])}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.flush()
    os._exit(0)  # the checker's factories end with this process


def checker_device() -> str:
    import torch

    return torch.cuda.get_device_name(0)


if __name__ == "__main__":
    sys.exit(main())
