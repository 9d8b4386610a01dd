"""How the build scales: N synthetic lessons (copies of lesson 3 under other ids) x 2 locales x
2 editions, for N = 1, 10, 100 and 1,000 (or the N given: `python bench/build_bench.py 1 10`,
`make bench N="1 10"`). Each build is the command an instructor runs (`python -m generator build
--no-verify`), in a fresh process. Per row:

- build s: the build's own time (report.json: from the command's start of work to its report);
  ms/pack is that over the lesson packs (the course bundles' work is counted in it too);
- CPU s: user and system time of the whole command and of the processes it forks to release
  lessons in parallel (-j, by default one per CPU; less sensitive than the wall time to other work
  on the machine);
- peak MiB: the build process's own peak resident memory (its rusage); all MiB: the peak of the
  proportional memory (PSS) of it and its workers together, sampled every 0.1 s (the pages they
  share counted once);
- bundle MB: the largest course bundle (the answer edition of the first locale);
- no-op s: the same command again with nothing changed, as a whole process;
- slowest s (with --repeat): the slowest of the builds whose median is shown.

--repeat R builds each size R times (a fresh output folder each time) and prints medians;
--compare DIR builds the same courses with another checkout's generator and templates as well
(before and after a change), the two taking turns.
A benchmark, not a test: nothing here can fail on time (tests/test_bench.py only checks that it runs).

Verification is not part of these numbers: a GPU verification of lesson 3 is measured separately
(see BENCHMARKS.md); here packs are built with --no-verify so that only the generator is timed.

The synthetic course is a valid course, checked before it is timed: the copies are published
lessons with titles in every language, the translated titles stamped with the translators' own
tool (`i18n bless`), and lesson 3 itself stays listed, as planned, with its title and stamps.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from generator.errors import CoursepackError  # noqa: E402
from generator.content.translate import bless, status  # noqa: E402

TEMPLATE_LESSON = "lesson03_relu"
SIZES = [1, 10, 100, 1000]


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.preserve_quotes = True
    return yaml


def _edit(path: Path, change) -> None:
    yaml = _yaml()
    data = yaml.load(path.read_text(encoding="utf-8"))
    change(data)
    out = io.StringIO()
    yaml.dump(data, out)
    path.write_text(out.getvalue(), encoding="utf-8")


def make_course(root: Path, n: int) -> list[str]:
    """The real course plus n published copies of lesson 3 (lesson 3 itself planned); its ids."""
    shutil.copytree(REPO / "templates", root / "templates")
    content = root / "content"
    shutil.copytree(REPO / "content", content)
    source = content / "lessons" / TEMPLATE_LESSON
    ids = [f"lesson{100 + i:04d}_relu" for i in range(n)]
    spec = (source / "lesson.yaml").read_text(encoding="utf-8")
    old_id = f"id: {TEMPLATE_LESSON}\n"
    if spec.count(old_id) != 1:
        raise CoursepackError(f"{source / 'lesson.yaml'}: expected one line {old_id.strip()!r}")
    for lesson_id in ids:
        target = content / "lessons" / lesson_id
        shutil.copytree(source, target)
        (target / "lesson.yaml").write_text(
            spec.replace(old_id, f"id: {lesson_id}\n"), encoding="utf-8"
        )
    shutil.rmtree(source)

    def lessons(course):
        for entry in course["lessons"]:
            if entry["status"] == "published":
                entry["status"] = "planned"
        for i, lesson_id in enumerate(
            ids
        ):  # numbers go up to 999; past 900 copies they repeat (titles differ)
            course["lessons"].append(
                {"id": lesson_id, "number": 100 + i % 900, "status": "published"}
            )

    _edit(content / "course.yaml", lessons)
    source_locale = _yaml().load((content / "course.yaml").read_text(encoding="utf-8"))[
        "source_locale"
    ]
    locales = sorted((content / "locales").glob("*.yaml"))
    for path in locales:
        _edit(
            path,
            lambda data: data["lesson_titles"].update(
                {lesson_id: f"ReLU copy {i}" for i, lesson_id in enumerate(ids)}
            ),
        )
    for path in locales:
        if path.stem != source_locale:
            bless(
                content,
                path.stem,
                [f"lesson_titles.{lesson_id}" for lesson_id in ids],
                all_stale=False,
            )
    report = status(content)
    if not report["clean"]:
        raise CoursepackError(f"the synthetic course's translations are not up to date: {report}")
    return ids


def _command(root: Path, templates: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "generator",
        "build",
        "--content",
        str(root / "content"),
        "--templates",
        str(templates),
        "--out",
        str(root / "build"),
        "--no-verify",
    ]


def _tree_pss(pid: int) -> int:
    """Proportional set size of a process and its descendants, in KiB (pages they share, such as
    those of forked workers, are counted once in all)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            total += int(
                next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:"))
            )
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):  # gone meanwhile
            continue
    return total


def _run(args: list[str], env: dict, cwd: Path) -> tuple[float, float, float, float]:
    """(wall seconds, CPU seconds, peak resident MiB of the process, peak MiB of it and its workers)
    of one command, run in a fresh process. The CPU time includes the workers' (the build waits for
    them); the last figure is sampled every 0.1 s where /proc has smaps_rollup (Linux), else 0."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(args, env=env, cwd=cwd, stdout=output, stderr=output)
        tree, done = [0], threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                tree[0] = max(tree[0], _tree_pss(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status_, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status_)
        if process.returncode != 0:
            output.seek(0)
            raise CoursepackError(
                f"{' '.join(args[:4])} ... exited with {process.returncode}:\n"
                f"{output.read().decode(errors='replace').strip()[-3000:]}"
            )
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, tree[0] / 1024


def run(n: int, repeat: int = 1, codes: tuple[Path, ...] = (REPO,)) -> list[dict]:
    """One row per checkout in codes (its generator and templates building this checkout's synthetic
    course), medians of `repeat` builds, the checkouts taking turns."""
    root = Path(tempfile.mkdtemp(prefix=f"coursepack-bench-{n}-"))
    try:
        make_course(root, n)
        rows: dict[Path, list[dict]] = {code: [] for code in codes}
        for _ in range(repeat):
            for code in codes:
                rows[code].append(_build_once(root, code))
        found = []
        for code, runs in rows.items():
            median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
            found.append(
                median
                | {
                    "n": n,
                    "packs": runs[0]["packs"],
                    "code": code,
                    "ms_per_pack": median["build_s"] / runs[0]["packs"] * 1000,
                    "runs": repeat,
                    "slowest_s": max(r["build_s"] for r in runs),
                }
            )
        return found
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _build_once(root: Path, code: Path) -> dict:
    shutil.rmtree(root / "build", ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(code))
    command = _command(root, code / "templates")
    wall, cpu, peak, tree = _run(command, env, code)  # in code: `-m generator` is found there first
    report = json.loads((root / "build" / "report.json").read_text(encoding="utf-8"))
    noop, _, _, _ = _run(command, env, code)
    packs = sum(1 for name in report["zips"] if name.startswith("lesson"))
    bundles = [
        p.stat().st_size
        for p in (root / "build" / "dist").glob("*.zip")
        if not p.name.startswith("lesson")
    ]
    return {
        "wall_s": wall,
        "build_s": report["seconds"],
        "cpu_s": cpu,
        "peak_mib": peak,
        "tree_mib": tree,
        "noop_s": noop,
        "packs": packs,
        "bundle_mb": max(bundles, default=0) / 1e6,
    }


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"N must be a whole number of lessons, at least 1 (got {text!r})"
        )
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build scaling: N synthetic lessons x 2 locales x 2 editions."
    )
    parser.add_argument(
        "n",
        nargs="*",
        type=_positive,
        default=SIZES,
        metavar="N",
        help=f"numbers of lessons to time (default: {' '.join(map(str, SIZES))})",
    )
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="R",
        help="builds per size; medians are printed",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="another checkout (its generator and templates) to build the same courses, taking turns",
    )
    args = parser.parse_args(argv)
    codes = (args.compare.resolve(), REPO) if args.compare else (REPO,)
    print(
        f"build scaling on {os.cpu_count()} CPUs, Python {sys.version.split()[0]} (packs built with --no-verify"
        f"{f'; medians of {args.repeat} builds' if args.repeat > 1 else ''})"
    )
    many = args.repeat > 1
    print(
        f"{'lessons':>8} {'packs':>6} {'build s':>9} {'ms/pack':>8} {'CPU s':>8} {'peak MiB':>9} {'all MiB':>8} "
        f"{'bundle MB':>10} {'no-op s':>8}{' slowest s' if many else ''}{'  code' if args.compare else ''}"
    )
    for n in args.n:
        try:
            rows = run(n, args.repeat, codes)
        except CoursepackError as exc:
            print(f"build_bench: error: N = {n}: {exc}", file=sys.stderr)
            return 1
        for r in rows:
            slowest = f" {r['slowest_s']:>9.2f}" if many else ""
            print(
                f"{r['n']:>8} {r['packs']:>6} {r['build_s']:>9.2f} {r['ms_per_pack']:>8.1f} {r['cpu_s']:>8.2f} "
                f"{r['peak_mib']:>9.0f} {r['tree_mib']:>8.0f} {r['bundle_mb']:>10.2f} {r['noop_s']:>8.2f}{slowest}"
                f"{'  ' + str(r['code']) if args.compare else ''}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
