"""A student's `python check.py`, timed: each lesson's answer pack, next to a bare `import torch`.

    python bench/check_bench.py [DIST] [--repeat N] [--sandbox] [--smoke]

DIST holds built zips (default build/dist). For every lesson, the first language's answer edition
runs `python check.py --json` once with an empty Triton cache (cold) and N times with that cache
kept (warm); the table gives medians and where the warm time goes, from the checker's own timing:
  import     the trusted process importing torch and triton
  factory    starting the workers' factory (a fork; with --sandbox, bubblewrap and its own import)
  cases      computing every case's inputs and expected output (the trusted side)
  child      start of the worker that runs the kernel (CUDA context included on a GPU)
  case 1     the first case (a kernel compile, or a load from Triton's cache)
  others     every other case together
--sandbox runs each check in the sandbox (`check.py --sandbox`). Prints numbers; never fails on
time. --smoke: one lesson, one run (shown as both cold and warm), so that a test can keep this
script from rotting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(args: list[str], cwd: Path, env: dict) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900
    )
    seconds = time.monotonic() - start
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"check_bench: {' '.join(args)} in {cwd} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    return seconds, done.stdout


def answer_packs(dist: Path, into: Path) -> dict[str, Path]:
    """lesson id -> its first language's unzipped answer pack."""
    packs: dict[str, Path] = {}
    for path in sorted(dist.glob("*-answer.zip")):
        lesson = path.stem.split("-")[0]
        if lesson in packs or not lesson.startswith("lesson"):
            continue
        with zipfile.ZipFile(path) as archive:
            archive.extractall(into)
        packs[lesson] = into / path.stem
    return packs


def split(data: dict) -> dict[str, float]:
    timing = data.get("timing") or {}
    ran = [c["seconds"] for c in data["cases"] if "seconds" in c]
    return {
        "import": timing.get("import_s", 0.0),
        "factory": timing.get("factory_s", 0.0),
        "cases": timing.get("cases_s", 0.0),
        "child": timing.get("startup_s", 0.0),
        "case 1": ran[0] if ran else 0.0,
        "others": sum(ran[1:]),
    }


def slowest(data: dict) -> str:
    ran = [c for c in data["cases"][1:] if "seconds" in c]
    case = max(ran, key=lambda c: c["seconds"], default=None)
    return f"{case['id']} {case['seconds']:.2f}" if case else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", nargs="?", type=Path, default=REPO / "build" / "dist")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sandbox", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    repeat = 1 if args.smoke else max(1, args.repeat)
    work = Path(tempfile.mkdtemp(prefix="coursepack-check-bench-"))
    try:
        packs = answer_packs(args.dist, work)
        if not packs:
            raise SystemExit(
                f"check_bench: no lesson answer zips in {args.dist}; run `make packs` first"
            )
        if args.smoke:
            packs = dict(list(packs.items())[:1])
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("TRITON_INTERPRET", None)
        bare = statistics.median(timed(["-c", "import torch"], work, env)[0] for _ in range(repeat))
        command = ["check.py", "--json"] + (["--sandbox"] if args.sandbox else [])
        print(
            f"coursepack check.py benchmark · python {sys.version.split()[0]} · {repeat} warm run(s) each"
            f"{' · in the sandbox' if args.sandbox else ''}"
        )
        print(f"  import torch alone: median {bare:.2f} s\n")
        print(
            f"  {'lesson':22} {'cases':>5} {'cold s':>7} {'warm s':>7} {'- torch':>7}   "
            f"{'import':>6} {'factry':>6} {'cases':>6} {'child':>6} {'case 1':>6} {'others':>6}   "
            f"{'slowest other case':24} on"
        )
        for lesson, pack in packs.items():
            run_env = dict(env, TRITON_CACHE_DIR=str(work / f"triton-{lesson}"))
            first = timed(command, pack, run_env)
            cold = first[0]
            warm = [first] if args.smoke else [timed(command, pack, run_env) for _ in range(repeat)]
            wall = statistics.median(s for s, _ in warm)
            runs = [json.loads(out) for _, out in warm]
            parts = {
                k: statistics.median(split(r)[k] for r in runs)
                for k in ("import", "factory", "cases", "child", "case 1", "others")
            }
            where = runs[0].get("environment") or {}
            on = (
                "interpreter (CPU)"
                if where.get("interpreter", True)
                else where.get("device", "GPU")
            )
            print(
                f"  {lesson:22} {len(runs[0]['cases']):5d} {cold:7.2f} {wall:7.2f} {wall - bare:7.2f}   "
                f"{parts['import']:6.2f} {parts['factory']:6.2f} {parts['cases']:6.2f} {parts['child']:6.2f} "
                f"{parts['case 1']:6.2f} {parts['others']:6.2f}   "
                f"{slowest(runs[0]):24} {on}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
