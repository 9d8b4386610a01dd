"""A lesson of the reduction kind, written here as a course author would (not one of the course's
lessons): a row softmax, 2-D input, one program per row, tl.max / tl.exp / tl.sum, a tolerance per
dtype, and a declared mistake (the row maximum not subtracted) that overflows on large values. It
is built and verified in the interpreter, and its packs are checked the way a student checks them,
`python check.py` in a fresh process with nothing of ours in the environment: Triton's own jit
helpers (tl.max, tl.sum) fail in the interpreter unless TRITON_INTERPRET was set before triton was
imported, which only the student's path used to get wrong."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import ruamel.yaml

from generator.cli import main
from tests.conftest import unzip

pytestmark = pytest.mark.slow

SOLUTION = """import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def softmax_kernel(x, out, N, stride_x, stride_o, BLOCK: tl.constexpr):
    # @text:offsets
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    xv = tl.load(x + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(xv, axis=0)
    # @text:store
    num = tl.exp(xv - row_max)  # @blank value
    den = tl.sum(num, axis=0)
    tl.store(out + row * stride_o + cols, (num / den).to(out.dtype.element_ty), mask=mask)


def softmax(x):
    # @text:contiguous
    assert x.dim() == 2 and x.stride(1) == 1
    out = torch.empty_like(x)
    if x.shape[0] and x.shape[1]:
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


if __name__ == "__main__":
    # @text:demo
    print(softmax(torch.randn(2, 3)).tolist())
"""

REFERENCE = '''import torch


def reference(x):
    return torch.softmax(x.double(), dim=1).to(x.dtype)


def classify(inputs, expected, got, bad):
    """NaN where a finite probability belongs, in most differing elements: e^x overflowed."""
    nan = torch.isnan(got) & torch.isfinite(expected) & bad
    return "overflow" if int(nan.sum()) * 2 > int(bad.sum()) else None
'''

LESSON = {
    "id": "lesson02_softmax",
    "kernel_file": "softmax.py",
    "solution": "solution.py",
    "entry": "softmax",
    "kernel": "softmax_kernel",
    "figures": ["fig1_1"],
    "questions": ["q1"],
    "checks": {
        "reference": "reference.py",
        "poison": -1024.0,
        "timeout_s": 60,
        "inputs": [{"name": "x", "shape": ["M", "N"], "draw": {"low": -4.0, "high": 4.0}}],
        # probabilities <= 1: float32 sums of N terms carry about N * 2^-24 relative error; float16
        # rounds each output once (2^-11 relative) after a float32 reduction
        "compare": {
            "float32": {"rtol": 1.0e-5, "atol": 1.0e-7},
            "float16": {"rtol": 2.0e-3, "atol": 1.0e-4},
        },
        "reasons": ["overflow"],
        "cases": [
            {"id": "rows", "group": "normal", "dims": {"M": 4, "N": 37}},
            {"id": "half", "group": "normal", "dims": {"M": 3, "N": 64}, "dtype": "float16"},
            {
                "id": "large",
                "group": "boundary",
                "dims": {"M": 2, "N": 8},
                "values": {"x": ["95.0", "96.0", "97.0", "98.0"]},
            },
            {"id": "empty", "group": "boundary", "dims": {"M": 0, "N": 4}},
        ],
        "mistakes": [
            {"id": "no_max_shift", "fill": "tl.exp(xv)", "fails": ["large"], "reason": "overflow"}
        ],
    },
    "rubric": {
        "parts": [
            {"id": "normal", "kind": "auto", "points": 2},
            {"id": "boundary", "kind": "auto", "points": 1},
            {"id": "explanation", "kind": "manual", "points": 1, "place": "implementation"},
            {"id": "q1", "kind": "manual", "points": 2},
        ],
        "pass_total": 4,
        "vetoes": ["unrun_claimed"],
    },
}


def write_lesson(content: Path) -> None:
    yaml = ruamel.yaml.YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    folder = content / "lessons" / "lesson02_softmax"
    folder.mkdir()
    (folder / "solution.py").write_text(SOLUTION)
    (folder / "reference.py").write_text(REFERENCE)
    with open(folder / "lesson.yaml", "w") as f:
        yaml.dump(LESSON, f)
    text = yaml.load((content / "lessons" / "lesson01_scale" / "text.en.yaml").read_text())
    text["code_comments"].update(
        kernel_doc="One program per row: the row's softmax.",
        store="Subtract the row's maximum before exp, then normalise.",
    )
    text["exercise"]["task"] = (
        "In `softmax.py`, replace `______` with the numerators of the row's softmax."
    )
    text["exercise"]["todo_comment"] = "TODO: the numerators (replace ______)"
    text["checker"]["title"] = "Lesson 2 · Row softmax"
    text["checker"]["cases"] = {
        "rows": "rows of 37",
        "half": "float16",
        "large": "large values",
        "empty": "no rows",
    }
    text["checker"]["reasons"] = {
        "unwritten": "rows left unwritten",
        "wrote_past_end": "a write past the end",
        "wrong_value": "not the softmax",
        "overflow": "NaN appeared: e^x overflowed; subtract the row's maximum first",
    }
    text["files"] = {}
    with open(folder / "text.en.yaml", "w") as f:
        yaml.dump(text, f)
    course = content / "course.yaml"
    course.write_text(
        course.read_text() + "  - {id: lesson02_softmax, number: 2, status: published}\n"
    )
    locale = content / "locales" / "en.yaml"
    locale.write_text(
        locale.read_text().replace(
            "lesson_titles:\n", "lesson_titles:\n  lesson02_softmax: Row softmax\n", 1
        )
    )


def student(pack: Path, *args: str) -> subprocess.CompletedProcess:
    """`python check.py` as the pack's README says, in a fresh process: nothing of ours set."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRITON_", "COURSEPACK_", "PYTORCH_"))
    }
    env["CUDA_VISIBLE_DEVICES"] = ""  # a laptop: no GPU
    return subprocess.run(
        [sys.executable, "check.py", *args],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_a_reduction_lesson_verifies_and_checks_on_the_students_path(tmp_path):
    root = tmp_path / "course"
    assert main(["init", str(root)]) == 0
    write_lesson(root / "content")
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
                "--lesson",
                "lesson02_softmax",
                "--no-notebook",
            ]
        )
        == 0
    )
    report = json.loads((root / "build" / "report.json").read_text())
    steps = {s["name"]: s["ok"] for s in report["verification"]["lesson02_softmax/en"]["steps"]}
    assert steps == {
        "answer": True,
        "mistake:no_max_shift": True,
        "student:answer": True,
        "student:exercise": True,
        "student:spawn": True,
    }
    dist = root / "build" / "dist"
    answer = unzip(dist / "lesson02_softmax-en-answer.zip", tmp_path / "packs")
    exercise = unzip(dist / "lesson02_softmax-en-exercise.zip", tmp_path / "packs")
    passed = student(answer)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Triton interpreter" in passed.stdout and "Cannot call @triton.jit" not in passed.stdout
    blank = student(exercise)
    assert blank.returncode == 2 and "______" in blank.stdout
    wrong = exercise / "wrong.py"
    wrong.write_text((exercise / "softmax.py").read_text().replace("______", "tl.exp(xv)"))
    failed = student(exercise, str(wrong), "--json")
    cases = {c["id"]: c for c in json.loads(failed.stdout)["cases"]}
    assert failed.returncode == 1 and cases["large"]["reason"] == "overflow"
    assert all(cases[c]["status"] == "pass" for c in ("rows", "half", "empty"))
