"""`coursepack grade` against `xargs -P <cores> python check.py`, on the same synthetic class.

    python bench/grade_bench.py [--lessons L1,L2,...] [--per-lesson N] [--runner auto|cuda|interpreter|slurm]
                                [-j N] [--timeout S] [--baseline N] [--sandbox on|off] [--keep DIR] [--smoke]

For each lesson (default lessons 2-4) it writes N submissions (file per student), from the
lesson's own code, each one different (a comment of its own, so none is served from another's
result): most right, the lesson's declared mistakes, and one in twenty each hanging (on empty
inputs), crashing (os.abort in the entry) and faulting (a load far outside the input). Then, on
that folder and in one run, it times
  grade      `python -m generator grade CLASS --lesson L --runner R -j J --timeout S` (cold cache),
             every submission in the sandbox unless --sandbox off
  baseline   `xargs -P <cores> python check.py FILE --json --timeout S` (the student's checker, one
             process per submission, unsandboxed), on the first --baseline submissions of the
             lesson (default: all)
and prints seconds, submissions per second and the ratio of the per-submission times, the
statuses, and the class summary's top three mistakes; then where grading's time went, per
submission (its check, its workers' starts, its cases as the worker timed them, the rest) and the
machine's CPU while it graded. Never fails on time. --smoke: lesson 3,
one submission of each kind, a 15 s time-out, a baseline of two: keeps this script from rotting
(tests/test_bench.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KINDS = ("right", "wrong", "hang", "crash", "fault")


def kinds(n: int) -> list[str]:
    """n submissions' kinds: one in twenty hangs, crashes, faults; a third of the rest wrong (under
    twenty submissions: each kind in turn)."""
    if n < 20:
        return [KINDS[i % len(KINDS)] for i in range(n)]
    found = []
    for i in range(n):
        if i % 20 == 7:
            found.append("hang")
        elif i % 20 == 13:
            found.append("crash")
        elif i % 20 == 17:
            found.append("fault")
        else:
            found.append("wrong" if i % 3 == 1 else "right")
    return found


def entry_prefixed(code: str, entry: str, line: str) -> str:
    """code with line first in the entry function's body."""
    match = re.search(rf"^def {re.escape(entry)}\(.*\):\n", code, re.M)
    if match is None:
        raise SystemExit(f"grade_bench: no `def {entry}(...):` line in the lesson's code")
    return code[: match.end()] + f"    {line}\n" + code[match.end() :]


def write_class(lesson_id: str, n: int, folder: Path) -> tuple[Path, Counter]:
    """The class folder (sNNN.py files) and check.py of a lesson; how many of each kind."""
    from generator.content.loader import load_content
    from generator.render.render import LessonContext, checker_source, mistake_code

    content = load_content(REPO / "content")
    lesson = content.lessons[lesson_id]
    spec = lesson.spec
    ctx = LessonContext(content, lesson, content.course.source_locale, "exercise")
    answer = ctx.code(answer=True)
    mistakes = [mistake_code(ctx, m) for m in spec.checks.mistakes]
    entry = spec.entry
    made = folder / "class"
    made.mkdir(parents=True)
    (folder / "check.py").write_text(checker_source(ctx), encoding="utf-8")
    counts: Counter = Counter()
    for i, kind in enumerate(kinds(n)):
        if kind == "right":
            code = answer
        elif kind == "wrong":
            code = mistakes[i % len(mistakes)]
        elif kind == "hang":  # a loop that never ends for empty inputs
            code = entry_prefixed(
                answer,
                entry,
                "while any(getattr(v, 'numel', lambda: 1)() == 0 "
                "for v in list(locals().values())): pass",
            )
        elif kind == "crash":
            code = entry_prefixed(answer, entry, "import os; os.abort()")
        else:  # every load 1e9 elements past its pointer
            code = answer.replace("tl.load(", "tl.load(1000003 * 1000 + ", 1)
        (made / f"s{i:04d}.py").write_text(f"# submission {i} ({kind})\n{code}", encoding="utf-8")
        counts[kind] += 1
    return made, counts


def cpu_ticks() -> tuple[int, int, int] | None:
    """The machine's (user, system, all) CPU time so far, in ticks (/proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[0] + fields[1], fields[2] + fields[5] + fields[6], sum(fields[:8])


def phases(cache: Path) -> dict[str, float]:
    """Means over the graded submissions (grade's result cache): the whole check of one file; its
    wait for its workers (with spares ready, less than their starts: fork, sandbox, CUDA); its cases
    as the worker timed them (compiles included); the rest (inputs, outputs and judging); the
    workers' start (of it, the sandbox's set-up) and their CPU (start, cases: compiles included); how
    many workers it took; when the checks ran (epoch seconds: first began, last ended, their total);
    and the slowest cases (mean seconds, mean worker CPU)."""
    rows = []
    for path in cache.glob("cache/grade/*.json"):
        try:
            rows.append(json.loads(path.read_text(encoding="utf-8"))["data"])
        except (OSError, ValueError, KeyError):
            continue
    if not rows:
        return {}

    def mean(values):
        values = list(values)
        return sum(values) / len(values)

    def timed(name, default=0.0):
        return mean((r.get("timing") or {}).get(name, default) for r in rows)

    unit = mean(r.get("seconds") or 0.0 for r in rows)
    start = timed("startup_s")
    waited = mean(
        (r.get("timing") or {}).get("waited_s", (r.get("timing") or {}).get("startup_s", 0.0))
        for r in rows
    )
    cases = mean(sum(c.get("seconds") or 0.0 for c in r.get("cases") or []) for r in rows)
    found = {
        "unit": unit,
        "waited": waited,
        "start": start,
        "cases": cases,
        "rest": unit - waited - cases,
        "workers": timed("children", 0),
        "start_cpu": timed("startup_cpu_s"),
        "cases_cpu": timed("cases_cpu_s"),
    }
    found["isolated"] = timed("isolated_s")
    by_case: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        for c in r.get("cases") or []:
            by_case.setdefault(str(c.get("id")), []).append(
                (c.get("seconds") or 0.0, c.get("worker_cpu_s") or 0.0)
            )
    found["slowest"] = sorted(
        ((mean(s for s, _ in v), k, mean(c for _, c in v)) for k, v in by_case.items()),
        reverse=True,
    )[:4]
    clocks = [r["clock"] for r in rows if isinstance(r.get("clock"), list) and len(r["clock"]) == 2]
    if clocks:
        found.update(
            first=min(c[0] for c in clocks),
            last=max(c[1] for c in clocks),
            busy=sum(c[1] - c[0] for c in clocks),
        )
    return found


def run_grade(lesson_id: str, made: Path, out: Path, args) -> tuple[float, str]:
    command = [
        sys.executable,
        "-m",
        "generator",
        "grade",
        str(made),
        "--lesson",
        lesson_id,
        "--runner",
        args.runner,
        "-j",
        str(args.jobs),
        "--timeout",
        str(args.timeout),
        "--sandbox",
        args.sandbox,
        "--out",
        str(out / "grades"),
        "--cache",
        str(out / "cache"),
    ]
    if args.runner == "slurm":
        command += ["--slurm-gres", "", "--python", sys.executable, "--chunk", str(args.chunk)]
    start, ticks, began = time.monotonic(), cpu_ticks(), time.time()
    path = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
    )  # keeps a wheel site
    done = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=path)
    )
    seconds, after = time.monotonic() - start, cpu_ticks()
    run = {"began": began, "ended": time.time()}
    if ticks and after and after[2] > ticks[2]:
        spent = [b - a for a, b in zip(ticks, after)]
        run.update(
            user=spent[0] / spent[2],
            system=spent[1] / spent[2],
            core_s=(spent[0] + spent[1]) / os.sysconf("SC_CLK_TCK"),
        )
    out.joinpath("run.json").write_text(json.dumps(run))
    if done.returncode not in (0, 1) or not (out / "grades" / "grades.csv").exists():
        raise SystemExit(
            f"grade_bench: coursepack grade exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return seconds, done.stderr


def run_baseline(check: Path, files: list[Path], args) -> float:
    """xargs -P <cores> python check.py FILE --json --timeout S, as a student's checker runs."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TRITON_INTERPRET", "COURSEPACK_"))
    }
    if args.runner in ("interpreter", "slurm"):
        env["CUDA_VISIBLE_DEVICES"] = ""  # check.py then runs in the interpreter, as grade does
    command = [
        "xargs",
        "-0",
        "-n",
        "1",
        "-P",
        str(os.cpu_count() or 1),
        sys.executable,
        str(check),
        "--json",
        "--timeout",
        str(args.timeout),
    ]
    start = time.monotonic()
    subprocess.run(
        command,
        input="\0".join(str(f) for f in files).encode(),
        cwd=check.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def top_mistakes(summary: Path) -> list[str]:
    text = summary.read_text(encoding="utf-8")
    section = re.search(
        r"^## (What the class got wrong|全班错在哪里)\n\n(.*?)(?=^## )", text, re.M | re.S
    )
    lines = [
        line[2:]
        for line in (section.group(2).splitlines() if section else [])
        if line.startswith("- ")
    ]
    return [line[:140] for line in lines[:3]]


def print_phases(root: Path, args) -> None:
    """Where grading's time went, per lesson: means per submission (phases), the machine's CPU while
    grade ran (the whole machine, /proc/stat: other work counts too), and the timeline: grade's
    start-up before its first check, the span of the checks with how many ran at once on average,
    and what came after the last; and the lesson's slowest cases."""
    print(
        f"{'where the time went':22} {'check s':>8} {'wait s':>7} {'cases s':>8} {'rest s':>7} {'workers':>8} "
        f"{'start s':>8} {'isolate s':>9} {'start CPU':>10} {'cases CPU':>10} {'CPU busy':>9} {'core-s/sub':>11}"
    )
    timelines, slowest = [], []
    for lesson_id in args.lessons.split(","):
        found = phases(root / lesson_id / "cache")
        run_file = root / lesson_id / "run.json"
        run = json.loads(run_file.read_text()) if run_file.exists() else {}
        busy = f"{100 * (run['user'] + run['system']):.0f} %" if "user" in run else "-"
        per = f"{run['core_s'] / args.per_lesson:.2f}" if "core_s" in run else "-"
        if not found:
            continue
        print(
            f"{lesson_id:22} {found['unit']:8.2f} {found['waited']:7.2f} {found['cases']:8.2f} {found['rest']:7.2f} "
            f"{found['workers']:8.2f} {found['start']:8.2f} {found['isolated']:9.2f} {found['start_cpu']:10.2f} "
            f"{found['cases_cpu']:10.2f} "
            f"{busy:>9} {per:>11}"
        )
        slowest.append(
            f"{lesson_id:22} "
            + ", ".join(f"{k} {v:.2f} (CPU {c:.2f})" for v, k, c in found["slowest"])
        )
        if "first" in found and "began" in run:
            span = max(found["last"] - found["first"], 1e-9)
            timelines.append(
                f"{lesson_id:22} {run['ended'] - run['began']:8.1f} {found['first'] - run['began']:9.1f} "
                f"{span:8.1f} {found['busy'] / span:9.1f} {run['ended'] - found['last']:7.1f}"
            )
    if timelines:
        print(
            f"{'timeline':22} {'grade s':>8} {'before s':>9} {'checks s':>8} {'at once':>9} {'after s':>7}"
            f"   (of {args.jobs} at once)"
        )
        print("\n".join(timelines))
    print("slowest cases (mean s per submission, time-outs included; the worker's CPU in it)")
    print("\n".join(slowest))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default="lesson02_vector_add,lesson03_relu,lesson04_add_bias")
    parser.add_argument("--per-lesson", type=int, default=40)
    parser.add_argument(
        "--runner",
        default="auto",
        choices=["auto", "cuda", "interpreter", "slurm"],
        help="slurm: one job array per lesson on the cluster SLURM_CONF names (no --gres; its nodes "
        "run this Python), --chunk submissions per element; the baseline runs here",
    )
    parser.add_argument(
        "--chunk", type=int, default=10, help="with --runner slurm: submissions per array element"
    )
    parser.add_argument("-j", "--jobs", type=int, default=min(16, os.cpu_count() or 2))
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per case, for both (default 10)"
    )
    parser.add_argument(
        "--baseline", type=int, default=0, help="baseline submissions per lesson (default: all)"
    )
    parser.add_argument("--sandbox", default="on", choices=["on", "off"])
    parser.add_argument(
        "--keep", type=Path, help="write the classes and outputs here and keep them"
    )
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    if args.smoke:
        args.lessons, args.per_lesson, args.timeout, args.runner = (
            "lesson03_relu",
            5,
            15.0,
            "interpreter",
        )
        args.baseline = 2
    if args.per_lesson < 1:
        parser.error("--per-lesson must be at least 1")
    if args.runner == "auto":
        import torch

        args.runner = "cuda" if torch.cuda.is_available() else "interpreter"
    root = args.keep or Path(tempfile.mkdtemp(prefix="coursepack-grade-bench-"))
    print(
        f"grade_bench: {args.per_lesson} submissions per lesson, runner {args.runner}, -j {args.jobs}, "
        f"time-out {args.timeout:g} s per case, sandbox {args.sandbox}, baseline xargs -P {os.cpu_count()}; "
        f"in {root}"
    )
    header = (
        f"{'lesson':22} {'subs':>5} {'grade s':>8} {'per s':>7} {'base n':>6} {'base s':>8} {'per s':>7} "
        f"{'ratio':>6}  statuses"
    )
    print(header)
    total = {"n": 0, "grade": 0.0, "base_n": 0, "base": 0.0}
    summaries = {}
    try:
        for lesson_id in args.lessons.split(","):
            folder = root / lesson_id
            made, _ = write_class(lesson_id, args.per_lesson, folder)
            grade_s, _ = run_grade(lesson_id, made, folder, args)
            files = sorted(made.glob("*.py"))[: args.baseline or None]
            base_s = run_baseline(folder / "check.py", files, args)
            with open(folder / "grades" / "grades.csv", encoding="utf-8") as handle:
                statuses = Counter(
                    r["status"]
                    for r in csv.DictReader(handle)
                    if r["student_id"] != "POINTS POSSIBLE"
                )
            ratio = (base_s / len(files)) / (grade_s / args.per_lesson)
            print(
                f"{lesson_id:22} {args.per_lesson:5d} {grade_s:8.1f} {args.per_lesson / grade_s:7.2f} "
                f"{len(files):6d} {base_s:8.1f} {len(files) / base_s:7.2f} {ratio:6.1f}  "
                + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
            )
            total["n"] += args.per_lesson
            total["grade"] += grade_s
            total["base_n"] += len(files)
            total["base"] += base_s
            summaries[lesson_id] = top_mistakes(folder / "grades" / "summary.md")
        ratio = (total["base"] / total["base_n"]) / (total["grade"] / total["n"])
        print(
            f"{'all':22} {total['n']:5d} {total['grade']:8.1f} {total['n'] / total['grade']:7.2f} "
            f"{total['base_n']:6d} {total['base']:8.1f} {total['base_n'] / total['base']:7.2f} {ratio:6.1f}"
        )
        print(
            f"ratio: {ratio:.1f} (seconds per submission of xargs -P {os.cpu_count()} python check.py over those "
            "of coursepack grade)"
        )
        print_phases(root, args)
        for lesson_id, lines in summaries.items():
            print(f"top mistakes, {lesson_id}:")
            for line in lines:
                print(f"  {line}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
