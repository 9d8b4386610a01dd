"""Lessons whose entry is not one floating tensor in, one out (issue 43), built from the fixture
folders in tests/fixtures/output_kinds/ into a course made by `coursepack init`, verified in the
interpreter, then checked as a student would:
- lesson02_pick: an int64 index input drawn in [0, V) with planted extremes, and two outputs;
- lesson03_scale_inplace: an entry that writes into its input (`inplace: [x]`);
- lesson04_dropout: tl.rand with a seed, further calls of a case and a property check;
- lesson05_fp8: a float8 output, skipped in the interpreter (and checked on a GPU)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main
from tests.conftest import add_fixture_lessons, has_cuda, unzip

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures" / "output_kinds"
LESSONS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("output_kinds")
    assert main(["init", str(root)]) == 0
    add_fixture_lessons(root / "content", FIXTURES, LESSONS)
    lessons = [arg for name in LESSONS for arg in ("--lesson", name)]
    assert (
        main(
            [
                "build",
                "--content",
                str(root / "content"),
                "--runner",
                "interpreter",
                "-j",
                "2",
                "--no-notebook",
                *lessons,
            ]
        )
        == 0
    )
    return root


def student(
    course: Path,
    lesson: str,
    tmp_path: Path,
    old: str | None = None,
    new: str | None = None,
    gpu: bool = False,
) -> subprocess.CompletedProcess:
    """`python check.py` in the lesson's exercise pack, its blank filled (old -> new in the kernel file)."""
    pack = unzip(course / "build" / "dist" / f"{lesson}-en-exercise.zip", tmp_path)
    kernel = next(p for p in pack.glob("*.py") if p.name not in ("check.py",))
    if old is not None:
        text = kernel.read_text()
        assert old in text
        kernel.write_text(text.replace(old, new, 1))
    env = dict(os.environ)
    args = [sys.executable, "check.py"]
    if not gpu:
        env["TRITON_INTERPRET"] = "1"
        args.append("--interpreter")
    return subprocess.run(args, cwd=pack, capture_output=True, text=True, timeout=300, env=env)


def test_every_kind_verifies_and_its_mistakes_fail_where_declared(course):
    report = json.loads((course / "build" / "report.json").read_text())
    assert report["passed"]
    for lesson in LESSONS:
        record = report["verification"][f"{lesson}/en"]
        unproven = (
            record["mistakes_declared"] if lesson == "lesson05_fp8" else 0
        )  # each case skipped here
        assert (record["mistakes_caught"], record["mistakes_unproven"]) == (
            record["mistakes_declared"] - unproven,
            unproven,
        ), lesson


def test_two_outputs_with_an_index_input_name_the_output_that_failed(course, tmp_path):
    wrong = student(
        course,
        "lesson02_pick",
        tmp_path / "w",
        "v = ______",
        "v = tl.load(x + target, mask=ok, other=0.0)",
    )
    assert wrong.returncode == 1
    assert (
        "val: index 1: input x = 4×5, t = " in wrong.stdout and "why: row 0's value" in wrong.stdout
    )
    unmasked = student(
        course,
        "lesson02_pick",
        tmp_path / "u",
        "v = ______",
        "v = tl.load(x + row * stride_xm + target)",
    )
    assert (
        unmasked.returncode == 1 and "t = -100 -> expected 0.0, got nan" in unmasked.stdout
    )  # ints shown as ints
    right = student(
        course,
        "lesson02_pick",
        tmp_path / "r",
        "v = ______",
        "v = tl.load(x + row * stride_xm + target, mask=ok, other=0.0)",
    )
    assert right.returncode == 0, right.stdout


def test_an_in_place_entry_is_judged_on_its_input_after_the_call(course, tmp_path):
    wrong = student(
        course, "lesson03_scale_inplace", tmp_path / "w", "yv = ______", "yv = xv * 0.5"
    )
    assert wrong.returncode == 1 and "x: index 0: input x = " in wrong.stdout
    right = student(
        course, "lesson03_scale_inplace", tmp_path / "r", "yv = ______", "yv = xv * alpha"
    )
    assert right.returncode == 0, right.stdout


def test_a_random_kernel_is_judged_by_its_properties_across_calls(course, tmp_path):
    fixed = student(
        course, "lesson04_dropout", tmp_path / "f", "keep = ______", "keep = tl.rand(1, offs) > p"
    )
    assert fixed.returncode == 1
    assert (
        "out: a property of the output does not hold (same mask for another seed)" in fixed.stdout
    )
    assert "why: the seed is ignored" in fixed.stdout
    right = student(
        course,
        "lesson04_dropout",
        tmp_path / "r",
        "keep = ______",
        "keep = tl.rand(seed, offs) > p",
    )
    assert right.returncode == 0, right.stdout


def test_float8_cases_are_skipped_in_the_interpreter_with_the_reason(course, tmp_path):
    result = student(course, "lesson05_fp8", tmp_path, "q = ______", "q = xv.to(tl.float8e4nv)")
    assert "SKIP  small  (skipped: float8 needs a GPU" in result.stdout
    assert "next:  no case ran here" in result.stdout


@pytest.mark.cuda
def test_float8_output_on_a_gpu(course, tmp_path):
    assert has_cuda()
    right = student(
        course, "lesson05_fp8", tmp_path / "r", "q = ______", "q = xv.to(tl.float8e4nv)", gpu=True
    )
    assert right.returncode == 0, right.stdout
    doubled = student(
        course,
        "lesson05_fp8",
        tmp_path / "d",
        "q = ______",
        "q = (xv * 2).to(tl.float8e4nv)",
        gpu=True,
    )
    assert doubled.returncode == 1 and "FAIL  small" in doubled.stdout
