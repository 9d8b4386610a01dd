"""How the build scales: N synthetic lessons (copies of lesson 3 under other ids) x 2 locales x
2 editions, for N = 1, 10, 100. Prints total time, median render+zip time per pack, peak memory
and the no-op rebuild time. Run: make bench (a benchmark, not a test: nothing here can fail on time).

Verification is not part of these numbers: a GPU verification of lesson 3 is measured separately
(see BENCHMARKS.md); here packs are built with --no-verify so that only the generator is timed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def make_course(root: Path, n: int) -> None:
    shutil.copytree(REPO / "generator" / "templates", root / "templates")
    content = root / "content"
    shutil.copytree(REPO / "content", content)
    source = content / "lessons" / "lesson03_relu"
    ids = [f"lesson{100 + i:03d}_relu" for i in range(n)]
    for lesson_id in ids:
        target = content / "lessons" / lesson_id
        shutil.copytree(source, target)
        spec = target / "lesson.yaml"
        spec.write_text(spec.read_text().replace("id: lesson03_relu", f"id: {lesson_id}", 1))
    shutil.rmtree(source)
    entries = "".join(f"  - {{id: {lesson_id}, number: {100 + i}, status: published}}\n" for i, lesson_id in enumerate(ids))
    course = (content / "course.yaml").read_text()
    course = re.sub(r"lessons:\n(  - .*\n)+", "lessons:\n" + entries, course)
    (content / "course.yaml").write_text(course)
    for locale in ("en", "zh-CN"):
        path = content / "locales" / f"{locale}.yaml"
        text = path.read_text()
        titles = "".join(f"  {lesson_id}: ReLU copy {i}\n" for i, lesson_id in enumerate(ids))
        text = re.sub(r"lesson_titles:\n(  \w+: .*\n)+", "lesson_titles:\n" + titles, text)
        path.write_text(text)


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


def run(n: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"coursepack-bench-{n}-"))
    try:
        make_course(root, n)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        first = subprocess.run([sys.executable, "-c", PER_PACK, str(root)], env=env, capture_output=True,
                               text=True, check=True)
        data = json.loads(first.stdout.strip().splitlines()[-1])
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "generator", "build", "--content", str(root / "content"),
                        "--templates", str(root / "templates"), "--out", str(root / "build"), "--no-verify"],
                       env=env, capture_output=True, check=True)
        noop = time.perf_counter() - start
        packs = len(data["per_pack"])
        return {"n": n, "packs": packs, "total_s": data["total"], "median_ms": statistics.median(data["per_pack"]) * 1000,
                "peak_mib": data["peak_mib"], "noop_s": noop}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    print(f"build scaling on {os.cpu_count()} CPUs, Python {sys.version.split()[0]} (packs built with --no-verify)")
    print(f"{'lessons':>8} {'packs':>6} {'total s':>9} {'ms/pack (median)':>17} {'peak MiB':>9} {'no-op rebuild s':>16}")
    for n in (1, 10, 100):
        r = run(n)
        print(f"{r['n']:>8} {r['packs']:>6} {r['total_s']:>9.2f} {r['median_ms']:>17.1f} {r['peak_mib']:>9.0f} {r['noop_s']:>16.2f}")


if __name__ == "__main__":
    main()
