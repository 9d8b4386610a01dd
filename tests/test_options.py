"""Options whose defaults do not depend on the working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generator.errors import CoursepackError
from generator.pipeline.options import BuildOptions
from generator.runners.factory import make_runner
from generator.runners.options import RunnerOptions

REPO = Path(__file__).resolve().parent.parent


def test_a_build_writes_beside_its_content_whatever_the_working_directory(tmp_path, monkeypatch):
    course = tmp_path / "course"
    (course / "content").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert BuildOptions(content=Path("../course/content")).out == course / "build"
    assert BuildOptions(content=course / "content", out=tmp_path / "o").out == tmp_path / "o"
    with pytest.raises(TypeError):
        BuildOptions()  # the content folder is always said


def test_clean_empties_the_build_beside_the_content_and_keeps_the_cache(tmp_path):
    build = tmp_path / "course" / "build"
    for name in ("dist", "work", "cache"):
        (build / name).mkdir(parents=True)
    (build / "report.md").write_text("x")
    (tmp_path / "course" / "content").mkdir()
    (tmp_path / "cwd").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "generator", "clean", "--content", "../course/content"],
        cwd=tmp_path / "cwd",
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in build.iterdir()) == ["cache"]


def test_the_auto_runner_probes_in_an_empty_folder(tmp_path, monkeypatch):
    """A torch.py in the working directory (a student's folder, say) is not what the probe of the
    auto runner imports: it runs in a folder of its own."""
    (tmp_path / "torch.py").write_text("raise SystemExit('the working directory was imported')\n")
    monkeypatch.chdir(tmp_path)
    runner = make_runner(RunnerOptions(runner="auto", jobs=1), None)
    assert runner.kind in ("cuda", "interpreter")


def test_grading_without_content_or_kit_is_a_clear_error(tmp_path):
    from generator.grade.run import GradeOptions, grade

    with pytest.raises(CoursepackError, match="content folder"):
        grade(GradeOptions(tmp_path, "lesson03_relu", build=tmp_path / "b"))
