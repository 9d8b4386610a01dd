"""How the build scales: N synthetic lessons (copies of lesson 3 under other ids) x 2 locales x
2 editions, for N = 1, 10, 100 (or the N given: `python bench/build_bench.py 1 10`, `make bench N="1 10"`).
Prints total time, median render+zip time per pack, peak memory and the no-op rebuild time.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from generator.errors import CoursepackError  # noqa: E402
from generator.translate import bless, status  # noqa: E402

TEMPLATE_LESSON = "lesson03_relu"


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
    ids = [f"lesson{100 + i:03d}_relu" for i in range(n)]
    for lesson_id in ids:
        target = content / "lessons" / lesson_id
        shutil.copytree(source, target)
        _edit(target / "lesson.yaml", lambda spec, lesson_id=lesson_id: spec.__setitem__("id", lesson_id))
    shutil.rmtree(source)

    def lessons(course):
        for entry in course["lessons"]:
            if entry["status"] == "published":
                entry["status"] = "planned"
        for i, lesson_id in enumerate(ids):
            course["lessons"].append({"id": lesson_id, "number": 100 + i, "status": "published"})

    _edit(content / "course.yaml", lessons)
    source_locale = _yaml().load((content / "course.yaml").read_text(encoding="utf-8"))["source_locale"]
    locales = sorted((content / "locales").glob("*.yaml"))
    for path in locales:
        _edit(path, lambda data: data["lesson_titles"].update(
            {lesson_id: f"ReLU copy {i}" for i, lesson_id in enumerate(ids)}))
    for path in locales:
        if path.stem != source_locale:
            bless(content, path.stem, [f"lesson_titles.{lesson_id}" for lesson_id in ids], all_stale=False)
    report = status(content)
    if not report["clean"]:
        raise CoursepackError(f"the synthetic course's translations are not up to date: {report}")
    return ids


PER_PACK = r"""
import json, resource, sys, time
from pathlib import Path
from generator.build import BuildOptions, build, render_all
from generator.archive import zip_pack
from generator.loader import load_content
from generator.render import finalize_pack, jinja_env
root = Path(sys.argv[1])
options = BuildOptions(content=root / "content", templates=root / "templates", out=root / "build", verify=False)
start = time.perf_counter()
build(options, progress=lambda _: None)
total = time.perf_counter() - start
content = load_content(options.content)
env = jinja_env(options.templates)
timings = []
for lesson in content.published:
    for locale in content.course.locales:
        for edition in ("exercise", "answer"):
            from generator.render import LessonContext, render_pack
            t = time.perf_counter()
            ctx = LessonContext(content, lesson, locale, edition)
            zip_pack(finalize_pack(ctx, env, render_pack(ctx, env), None))
            timings.append(time.perf_counter() - t)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"total": total, "per_pack": sorted(timings), "peak_mib": peak}))
"""


def _run(args: list[str], env: dict) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise CoursepackError(f"{' '.join(args[:3])} ... exited with {done.returncode}:\n{done.stderr.strip()}")
    return done.stdout


def run(n: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"coursepack-bench-{n}-"))
    try:
        make_course(root, n)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        data = json.loads(_run([sys.executable, "-c", PER_PACK, str(root)], env).strip().splitlines()[-1])
        start = time.perf_counter()
        _run([sys.executable, "-m", "generator", "build", "--content", str(root / "content"),
              "--templates", str(root / "templates"), "--out", str(root / "build"), "--no-verify"], env)
        noop = time.perf_counter() - start
        packs = len(data["per_pack"])
        return {"n": n, "packs": packs, "total_s": data["total"], "median_ms": statistics.median(data["per_pack"]) * 1000,
                "peak_mib": data["peak_mib"], "noop_s": noop}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"N must be a whole number of lessons, at least 1 (got {text!r})")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build scaling: N synthetic lessons x 2 locales x 2 editions.")
    parser.add_argument("n", nargs="*", type=_positive, default=[1, 10, 100], metavar="N",
                        help="numbers of lessons to time (default: 1 10 100)")
    args = parser.parse_args(argv)
    print(f"build scaling on {os.cpu_count()} CPUs, Python {sys.version.split()[0]} (packs built with --no-verify)")
    print(f"{'lessons':>8} {'packs':>6} {'total s':>9} {'ms/pack (median)':>17} {'peak MiB':>9} {'no-op rebuild s':>16}")
    for n in args.n:
        try:
            r = run(n)
        except CoursepackError as exc:
            print(f"build_bench: error: N = {n}: {exc}", file=sys.stderr)
            return 1
        print(f"{r['n']:>8} {r['packs']:>6} {r['total_s']:>9.2f} {r['median_ms']:>17.1f} {r['peak_mib']:>9.0f} {r['noop_s']:>16.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
