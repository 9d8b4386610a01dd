"""Verification benchmark: how long the gate takes, cold and warm, per lesson x locale and per step.

    python bench/verify_bench.py [--runner interpreter|cuda] [--lesson ID ...] [--locale L ...]

Each figure is one build of a private copy of the content, in a temporary folder:
  cold      nothing cached: no verification records, no bench results, an empty Triton cache
  warm      Triton's compile cache kept, every verification record and bench result removed
  no-op     the same inputs again (nothing runs)
  edit      one lesson's English text changed: only that lesson's English packs are verified again
Prints numbers; never fails on time. `--smoke` runs the smallest case (the one-lesson course of
`coursepack init`, no notebook, cold only) so that a test can keep this script from rotting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.pipeline.build import build  # noqa: E402
from generator.pipeline.options import BuildOptions  # noqa: E402
from generator.runners.local import close_servers  # noqa: E402
from generator.skeleton import init_course  # noqa: E402


def timed_build(options: BuildOptions) -> tuple[float, dict]:
    """One build as `make packs` runs it: in a fresh process but for the generator's import, so the
    runner's warm task process from an earlier build in this one is stopped first."""
    close_servers()
    start = time.monotonic()
    build(options, progress=lambda _: None)
    seconds = time.monotonic() - start
    return seconds, json.loads((options.out / "report.json").read_text(encoding="utf-8"))


def edit_english(content: Path, lesson: str) -> None:
    path = content / "lessons" / lesson / "text.en.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\nrecap: ", "\nrecap: Take a minute here. ", 1), encoding="utf-8")


def step_table(report: dict) -> list[str]:
    lines = [
        f"  {'lesson/locale':26} {'step':30} {'s':>7} {'children':>8} {'start':>6} {'import':>6} "
        f"{'case 1':>6} {'others':>6}  cached"
    ]
    for label, record in sorted(report["verification"].items()):
        cached = "yes" if report["cached"].get(label, False) else "no"
        for step in record["steps"]:
            t = record.get("timing", {}).get(step["name"])
            split = (
                (
                    f"{t['children']:8d} {t['startup_s']:6.2f} {t['import_s']:6.2f} {t['first_case_s']:6.2f} "
                    f"{t['other_cases_s']:6.2f}"
                )
                if t
                else " " * 38
            )
            lines.append(f"  {label:26} {step['name']:30} {step['seconds']:7.2f} {split}  {cached}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", default="interpreter", choices=["interpreter", "cuda"])
    parser.add_argument("--lesson", action="append", default=[])
    parser.add_argument("--locale", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 2))
    parser.add_argument("--no-notebook", action="store_true")
    parser.add_argument("--cold-only", action="store_true", help="only the cold build")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the course of `coursepack init`, no notebook, cold only",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.no_notebook, args.cold_only = True, True
    root = Path(tempfile.mkdtemp(prefix="coursepack-verify-bench-"))
    try:
        if args.smoke:
            init_course(root)
        else:
            shutil.copytree(REPO / "content", root / "content")
        options = BuildOptions(
            content=root / "content",
            out=root / "build",
            runner=args.runner,
            jobs=args.jobs,
            notebook=not args.no_notebook,
            lessons=tuple(args.lesson),
            locales=tuple(args.locale),
        )
        figures = []
        cold, report = timed_build(options)
        figures.append(("cold", cold, report))
        if not args.cold_only:
            shutil.rmtree(options.out / "cache")
            warm, report = timed_build(options)
            figures.append(("warm (Triton cache kept)", warm, report))
            noop, report = timed_build(options)
            figures.append(("no-op rebuild", noop, report))
            lesson = (args.lesson or [sorted(report["verification"])[0].split("/")[0]])[0]
            edit_english(options.content, lesson)
            edited, report = timed_build(options)
            again = sorted(k for k, cached in report["cached"].items() if not cached)
            figures.append(
                (
                    f"edit {lesson} English text (re-verified: {', '.join(again) or 'none'})",
                    edited,
                    report,
                )
            )
        print(
            f"coursepack verification benchmark · runner {args.runner} · "
            f"{figures[0][2]['verification'] and next(iter(figures[0][2]['verification'].values()))['device']}"
        )
        print(
            f"  lessons {', '.join(args.lesson) or 'all'} · locales {', '.join(args.locale) or 'all'} · "
            f"notebook {'no' if args.no_notebook else 'yes'} · jobs {args.jobs} · cpus {os.cpu_count()}"
        )
        for name, seconds, _ in figures:
            print(f"  {name:70} {seconds:7.2f} s")
        print("\nper step, cold build:")
        print("\n".join(step_table(figures[0][2])))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
