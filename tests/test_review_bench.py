"""bench/review_bench.py's smoke run: it builds a small class, asks the review's server over HTTP
and exports every format, printing its numbers (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_review_bench_smoke_prints_every_number():
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "review_bench.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "review bench: 20 students" in out
    for name in (
        "open the review page",
        "next answer",
        "a student's page",
        "save a score",
        "grades.csv",
        "canvas",
        "moodle",
        "otter",
        "nbgrader",
    ):
        assert name in out, out
    assert out.count(" ms ") >= 5
