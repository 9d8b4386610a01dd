"""Lesson kinds that lessons 5 and 6 brought, built from YAML in tmp_path as an author would write
them: a blank that is the right-hand side of an assignment (`# @blank value`), a tolerance scaled
by reference.error_scale (a dot product's sum of |a_k b_k|), a classify() that reads an input which
does not broadcast to the output (a matrix factor), a mistake that names its reason, and a
compute-bound bench table (TFLOP/s, "vs base") with the lesson's own measured intro."""

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import ruamel.yaml
import torch

from generator.checker import join

from generator.cli import main
from tests.conftest import unzip

pytestmark = pytest.mark.slow

SOLUTION = """import torch
import triton
import triton.language as tl


# @text:kernel_doc
@triton.jit
def rowdot_kernel(a, b, out, K, stride_am, stride_ak, BLOCK_K: tl.constexpr):
    # @text:offsets
    row = tl.program_id(0)
    k = tl.arange(0, BLOCK_K)
    av = tl.load(a + row * stride_am + k * stride_ak, mask=k < K, other=0.0).to(tl.float32)
    bv = tl.load(b + k, mask=k < K, other=0.0).to(tl.float32)
    # @text:store
    acc = tl.sum(av * bv, axis=0)  # @blank value
    tl.store(out + row, acc)


def rowdot(a, b):
    # @text:contiguous
    assert a.dim() == 2 and b.dim() == 1 and a.shape[1] == b.shape[0] and b.is_contiguous()
    out = torch.empty(a.shape[0], device=a.device, dtype=a.dtype)
    if a.shape[0]:
        rowdot_kernel[(a.shape[0],)](a, b, out, a.shape[1], a.stride(0), a.stride(1),
                                     BLOCK_K=triton.next_power_of_2(max(a.shape[1], 1)))
    return out


if __name__ == "__main__":
    # @text:demo
    print(rowdot(torch.ones(2, 3), torch.ones(3)).tolist())
"""

REFERENCE = '''import torch


def reference(a, b):
    return (a.double() @ b.double()).to(a.dtype)


def error_scale(a, b):
    """The sum of |a_mk b_k|: a dot product's rounding errors are a fraction of it, however much
    its terms cancel."""
    return a.double().abs() @ b.double().abs()


def classify(inputs, expected, got, bad):
    """a does not broadcast to the output (M,): classify sees it as it is, (M, K)."""
    a = inputs["a"]
    # a sum of a's row, rounded to the output's dtype (float16: within 2^-11 of it, relative)
    sums = a.sum(dim=1) if a is not None and a.dim() == 2 else None
    if sums is not None and bool(((got - sums).abs() <= 1e-3 + 2 ** -10 * sums.abs())[bad].all()):
        return "b_ignored"
    return None
'''

BENCH = '''"""A compute-bound table: the kernel against torch, in TFLOP/s: python bench.py"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import bench_main, flops_row, time_ms  # noqa: E402


def measure(kernel, n, smoke):
    device = "cpu" if smoke else "cuda"
    a, b = torch.randn(64, 64, device=device), torch.randn(64, device=device)
    flops = 2.0 * a.numel()
    base = time_ms(lambda: a @ b)
    rows = [flops_row("torch a @ b", base, flops, base, "base"),
            flops_row("rowdot.py", time_ms(lambda: kernel.rowdot(a, b)), flops, base)]
    return {"tables": {"dot": rows}, "values": {"vs_torch": f"{rows[1]['vs_base']:.2f}"}, "checks": {}}


if __name__ == "__main__":
    sys.exit(bench_main(measure, default_log2=12))
'''

LESSON = {
    "id": "lesson02_rowdot",
    "kernel_file": "rowdot.py",
    "solution": "solution.py",
    "entry": "rowdot",
    "kernel": "rowdot_kernel",
    "figures": ["fig1_1"],
    "questions": ["q1"],
    "files": [{"name": "bench.py", "source": "bench.py", "edition": "both"}],
    "bench": "bench.py",
    "checks": {
        "reference": "reference.py",
        "poison": -1024.0,
        "inputs": [{"name": "a", "shape": ["M", "K"]}, {"name": "b", "shape": ["K"]}],
        # relative to error_scale, not to |a @ b|: the first row of `cancel` sums to about 1e-7
        "compare": {"float32": {"rtol": 1.0e-6}, "float16": {"rtol": 2.0e-3}},
        "reasons": ["b_ignored"],
        "cases": [
            {
                "id": "cancel",
                "group": "normal",
                "dims": {"M": 2, "K": 3},
                "values": {
                    "a": ["1.0", "2.0", "3.0", "1.0", "1.0", "1.0"],
                    "b": ["1.0", "-1.0", "0.3333333"],
                },
            },
            {"id": "half", "group": "normal", "dims": {"M": 8, "K": 64}, "dtype": "float16"},
            {
                "id": "strided",
                "group": "boundary",
                "dims": {"M": 5, "K": 9},
                "layout": {"a": "transposed"},
            },
            {"id": "empty", "group": "boundary", "dims": {"M": 0, "K": 4}},
        ],
        "mistakes": [
            {
                "id": "b_ignored",
                "fill": "tl.sum(av, axis=0)",
                "fails": {"all_except": ["empty"]},
                "reason": "b_ignored",
            }
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


def _write_lesson(content: Path) -> None:
    yaml = ruamel.yaml.YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    skeleton = content / "lessons" / "lesson01_scale"
    folder = content / "lessons" / "lesson02_rowdot"
    folder.mkdir()
    (folder / "solution.py").write_text(SOLUTION)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "bench.py").write_text(BENCH)
    with open(folder / "lesson.yaml", "w") as f:
        yaml.dump(LESSON, f)
    text = yaml.load((skeleton / "text.en.yaml").read_text())
    text["code_comments"].update(
        kernel_doc="One program per row: out[m] = sum over k of a[m, k] * b[k].",
        store="The row's dot product, reduced in float32.",
    )
    text["exercise"]["task"] = "In `rowdot.py`, replace `______` with the row's dot product."
    text["exercise"]["todo_comment"] = "TODO: the dot product (replace ______)"
    text["model"]["performance"] = "Measured: [[measured:vs_torch]] of torch's speed."
    text["checker"]["title"] = "Lesson 2 · Row dot products"
    text["checker"]["cases"] = {
        "cancel": "terms that cancel",
        "half": "float16",
        "strided": "a transposed",
        "empty": "no rows",
    }
    text["checker"]["reasons"] = {
        "unwritten": "rows left unwritten",
        "wrote_past_end": "a write past the end",
        "wrong_value": "not a @ b",
        "b_ignored": "the sum of a's row: b was never used",
    }
    text["measured"] = {
        "intro": "Measured on {device}: TFLOP/s and the ratio to torch.",
        "tables": {"dot": "Row dot products, TFLOP/s"},
    }
    with open(folder / "text.en.yaml", "w") as f:
        yaml.dump(text, f)
    course = content / "course.yaml"
    course.write_text(
        course.read_text() + "  - {id: lesson02_rowdot, number: 2, status: published}\n"
    )
    locale = content / "locales" / "en.yaml"
    locale.write_text(
        locale.read_text().replace(
            "lesson_titles:\n", "lesson_titles:\n  lesson02_rowdot: Row dot products\n", 1
        )
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kinds")
    assert main(["init", str(root)]) == 0
    _write_lesson(root / "content")
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
                "lesson02_rowdot",
                "--no-notebook",
            ]
        )
        == 0
    )
    return root


def test_the_lesson_verifies_with_its_value_blank_and_scaled_tolerance(course):
    report = json.loads((course / "build" / "report.json").read_text())
    record = report["verification"]["lesson02_rowdot/en"]
    assert report["passed"] and record["mistakes_caught"] == record["mistakes_declared"] == 1


def test_the_exercise_blanks_the_right_hand_side_and_the_mistake_gets_its_reason(course, tmp_path):
    pack = unzip(course / "build" / "dist" / "lesson02_rowdot-en-exercise.zip", tmp_path)
    kernel = pack / "rowdot.py"
    assert "    acc = ______  # TODO: the dot product (replace ______)\n" in kernel.read_text()
    kernel.write_text(kernel.read_text().replace("acc = ______", "acc = tl.sum(av, axis=0)", 1))
    result = student_check(pack)
    assert result.returncode == 1 and "the sum of a's row: b was never used" in result.stdout
    assert "a = 2×3, b = 3" in result.stdout  # a matrix input is shown by its shape
    kernel.write_text(
        kernel.read_text().replace("tl.sum(av, axis=0)", "tl.sum(av * bv, axis=0)", 1)
    )
    assert student_check(pack).returncode == 0


def student_check(pack: Path) -> subprocess.CompletedProcess:
    """`python check.py` in the interpreter. TRITON_INTERPRET=1 is set first: a kernel calling tl.sum
    needs it before triton is imported (issue 22.1, for which check.py will set it itself)."""
    import os

    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run(
        [sys.executable, "check.py", "--interpreter"],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_the_compute_bound_bench_and_its_measured_section(course, tmp_path):
    pack = unzip(course / "build" / "dist" / "lesson02_rowdot-en-answer.zip", tmp_path)
    result = subprocess.run(
        [sys.executable, "bench.py", "--smoke", "--json", "out.json"],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "throughput on CPU" in result.stdout
        and "TFLOP/s" in result.stdout
        and "vs base" in result.stdout
    )
    bench = json.loads((pack / "out.json").read_text())
    assert [r["role"] for r in bench["tables"]["dot"]] == ["base", "kernel"]

    from generator.render import charts
    from generator.content.loader import load_content
    from generator.render.render import LessonContext, measured_section

    svg = charts.charts(bench, {**charts.ENGLISH_LABELS, "table:dot": "Row dot products"})[0][2]
    assert "throughput (TFLOP/s)" in svg and "torch a @ b" in svg and "bandwidth" not in svg
    content = load_content(course / "content")
    ctx = LessonContext(content, content.lessons["lesson02_rowdot"], "en", "answer")
    section = measured_section(ctx, {"bench": bench})
    assert (
        "Measured on CPU (Triton interpreter, smoke run): TFLOP/s and the ratio to torch."
        in section
    )
    assert "| | ms | TFLOP/s | vs base |" in section and "| torch a @ b |" in section


@pytest.fixture()
def rt():
    module = types.ModuleType("cp_checker_kinds")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    module.LESSON.update(
        {
            "inputs": LESSON["checks"]["inputs"],
            "poison": -1024.0,
            "lesson_reasons": ["b_ignored"],
            "compare": {"float32": {"rtol": 1.0e-6, "atol": 0.0}},
            "reference": REFERENCE,
        }
    )
    return module


def test_error_scale_replaces_the_expected_value_as_the_scale(rt):
    expected = torch.tensor([1e-7, 6.0], dtype=torch.float64)
    got = torch.tensor([1.5e-7, 6.000001], dtype=torch.float64)
    assert rt.compare(torch, expected, got, "float32").tolist() == [
        True,
        False,
    ]  # 50% of a tiny value
    scale = torch.tensor([4.0, 6.0], dtype=torch.float64)  # sum of |terms|
    assert not rt.compare(torch, expected, got, "float32", scale).any()


def test_the_verdict_scales_by_error_scale_and_classifies_with_the_matrix(rt):
    case = LESSON["checks"]["cases"][0]
    made = rt.make_inputs(torch, case, "cpu")
    expected, scale = rt.expected_output(torch, made)[0], rt.error_scale(torch, made)[0]

    def verdict(out):  # as the trusted side judges a worker's data
        report = {
            "output": {"dtype": str(out.dtype).replace("torch.", ""), "shape": list(out.shape)}
        }
        return rt.judge(
            torch, case, made, expected, scale, report, bytearray(rt.tensor_bytes(torch, out))
        )

    a, b = made[0][2], made[1][2]
    assert verdict(a.float() @ b.float())["status"] == "pass"
    result = verdict(a.sum(dim=1))
    assert result["status"] == "fail" and result["reason"] == "b_ignored"
    assert result["inputs"] == {"a": "2×3", "b": "3"}


def test_print_tables_chooses_columns_from_the_rows(rt, capsys):
    rt.LESSON.update(
        bench_tables={"dot": "Dots", "copy": "Copies"},
        messages={
            "bench_title": "bandwidth on {device}",
            "bench_title_flops": "throughput on {device}",
            "bench_vs_copy": "vs copy",
            "bench_vs_base": "vs base",
            "bench_note": "GB/s note",
            "bench_note_flops": "TFLOP/s note",
        },
    )
    rt.print_tables(
        {
            "device": "d",
            "n": 1,
            "torch": "t",
            "triton": "x",
            "tables": {
                "dot": [
                    rt.flops_row("base", 2.0, 2e12, 2.0, "base"),
                    rt.flops_row("k", 1.0, 2e12, 2.0),
                ]
            },
        }
    )
    out = capsys.readouterr().out
    assert (
        out.startswith("throughput on d") and "TFLOP/s    vs base" in out and "TFLOP/s note" in out
    )
    assert "  k" in out and "2000.0       2.00" in out
    rt.print_tables(
        {
            "device": "d",
            "n": 1,
            "torch": "t",
            "triton": "x",
            "tables": {"copy": [rt.row("copy", 1.0, 1e9, 1.0, "copy")]},
        }
    )
    out = capsys.readouterr().out
    assert out.startswith("bandwidth on d") and "GB/s    vs copy" in out and "GB/s note" in out
