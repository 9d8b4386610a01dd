"""Issue 43's lesson kinds, one fixture lesson each (tests/fixtures/lessons/<id>/), built into a
course made by `coursepack init` in tmp_path as an author would add them: an int64 index input
(an embedding), an int8 output among several (a quantization), a float8 output (skipped in the
interpreter), an in-place entry (an SGD step), a random kernel judged by properties over further
calls (a dropout), atomics with exact integer counts (a histogram) and a float sum whose atomic
additions are compared order-free (error_scale). Each is verified in the interpreter (its
mistakes fail exactly the declared cases, with their reasons) and checked through the student's
path: the exercise pack's check.py with a right fill passes, with a wrong fill fails, saying why."""

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from generator.checker import join
from generator.cli import main
from tests.conftest import unzip

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lessons"
LESSONS = sorted(p.name for p in FIXTURES.iterdir() if (p / "lesson.yaml").exists())


def add_lessons(content: Path, lessons: list[str]) -> None:
    """The fixture folders into content/lessons/, each with its line in course.yaml and its title."""
    course, locale = content / "course.yaml", content / "locales" / "en.yaml"
    for number, lesson in enumerate(lessons, start=2):
        shutil.copytree(FIXTURES / lesson, content / "lessons" / lesson)
        course.write_text(course.read_text() + f"  - {{id: {lesson}, number: {number}, status: published}}\n")
        title = lesson.split("_", 1)[1].replace("_", " ")
        locale.write_text(locale.read_text().replace("lesson_titles:\n", f"lesson_titles:\n  {lesson}: {title}\n", 1))


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("new_kinds")
    assert main(["init", str(root)]) == 0
    add_lessons(root / "content", LESSONS)
    args = [a for lesson in LESSONS for a in ("--lesson", lesson)]
    main(["build", "--content", str(root / "content"), "--runner", "interpreter", "-j", "2", "--no-notebook", *args])
    return root


def record(course: Path, lesson: str) -> dict:
    report = json.loads((course / "build" / "report.json").read_text())
    return report["verification"][f"{lesson}/en"]


def steps(course: Path, lesson: str) -> dict:
    return {s["name"]: (s["ok"], s.get("detail", "")) for s in record(course, lesson)["steps"]}


def student(pack: Path, *args: str) -> subprocess.CompletedProcess:
    """`python check.py` in the interpreter, in a fresh process (a laptop: no GPU)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "COURSEPACK_", "PYTORCH_"))}
    env.update(CUDA_VISIBLE_DEVICES="", TRITON_INTERPRET="1")
    return subprocess.run([sys.executable, "check.py", *args], cwd=pack, capture_output=True, text=True,
                          timeout=300, env=env)


def exercise(course: Path, lesson: str, tmp_path: Path) -> Path:
    return unzip(course / "build" / "dist" / f"{lesson}-en-exercise.zip", tmp_path)


def edited(pack: Path, kernel: str, fill: str, *edits: tuple[str, str]) -> Path:
    """The exercise kernel with its blank filled and other edits made (each `old` occurs once)."""
    path = pack / kernel
    code = path.read_text()
    assert code.count("______") == 2   # the blank and its TODO comment's "(replace ______)"
    code = code.replace("______", fill, 1)
    for old, new in edits:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    path.write_text(code)
    return pack


def results(pack: Path) -> tuple[dict, str]:
    """check.py's verdicts by case id (from --json) and what the student reads (its printout)."""
    data = json.loads(student(pack, "--json").stdout)
    return {c["id"]: c for c in data["cases"]}, student(pack).stdout


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_fixture_verifies_with_its_mistakes_caught(course, lesson):
    found = steps(course, lesson)
    assert all(ok for ok, _ in found.values()), {k: v for k, v in found.items() if not v[0]}
    assert record(course, lesson)["mistakes_caught"] == record(course, lesson)["mistakes_declared"] >= 1


def test_the_index_lesson_names_the_id_mistake(course, tmp_path):
    pack = exercise(course, "lesson02_embedding", tmp_path / "right")
    assert student(edited(pack, "embedding.py", "table + i * stride_t + cols")).returncode == 0
    pack = edited(exercise(course, "lesson02_embedding", tmp_path / "wrong"), "embedding.py", "table + i * D + cols")
    cases, shown = results(pack)
    assert {k for k, c in cases.items() if c["status"] == "fail"} == {"strided"}
    assert cases["strided"]["reason"] == "row_stride_ignored" and cases["strided"]["output"] == "out"
    assert "the rows were read D elements apart: step by `stride_t`" in shown


def test_the_quantization_names_the_failing_output(course, tmp_path):
    pack = edited(exercise(course, "lesson03_quantize", tmp_path / "q"), "quantize.py", "v")
    cases, shown = results(pack)
    assert {c["reason"] for c in cases.values() if c["status"] == "fail"} == {"truncated"}
    assert cases["rows"]["output"] == "q" and "        q: index row " in shown
    assert "q was truncated toward zero" in shown
    right = "tl.where(v >= 0, tl.floor(v + 0.5), tl.ceil(v - 0.5))"
    assert student(edited(exercise(course, "lesson03_quantize", tmp_path / "right"), "quantize.py", right)).returncode == 0
    pack = edited(exercise(course, "lesson03_quantize", tmp_path / "scale"), "quantize.py", right,
                  ("tl.store(scale + row, s)", "tl.store(scale + row, tl.max(tl.abs(xv), axis=0))"))
    cases, shown = results(pack)
    assert cases["rows"]["output"] == "scale" and cases["rows"]["reason"] == "scale_not_divided"
    assert "        scale: index " in shown and "scale holds max|x|: divide it by 127." in shown


def test_float8_cases_are_skipped_in_the_interpreter_with_their_reason(course, tmp_path):
    pack = unzip(course / "build" / "dist" / "lesson04_to_fp8-en-answer.zip", tmp_path)
    cases, shown = results(pack)
    assert {(c["status"], c.get("reason")) for c in cases.values()} == {("skip", "fp8_interpreter")}
    assert student(pack).returncode == 0 and shown.count("  SKIP  ") == len(cases)


def test_the_in_place_entry_is_judged_on_its_input(course, tmp_path):
    pack = edited(exercise(course, "lesson05_sgd", tmp_path / "right"), "sgd.py", "pv - lr * gv")
    assert student(pack).returncode == 0
    launch = "sgd_kernel[(triton.cdiv(n, BLOCK),)](p, g, p, lr, n, BLOCK=BLOCK)"
    pack = edited(exercise(course, "lesson05_sgd", tmp_path / "copy"), "sgd.py", "pv - lr * gv",
                  (launch, "p = p.clone()\n        " + launch))
    cases, shown = results(pack)
    assert {c["reason"] for c in cases.values() if c["status"] == "fail"} == {"not_in_place"}
    assert cases["empty"]["status"] == "pass" and "p still holds its old values" in shown
    pack = edited(exercise(course, "lesson05_sgd", tmp_path / "unmasked"), "sgd.py", "pv - lr * gv",
                  ("lr * gv, mask=mask)", "lr * gv)"))
    cases, shown = results(pack)
    assert {k: c["reason"] for k, c in cases.items() if c["status"] == "fail"} == \
        {"small": "wrote_past_end", "tail": "wrote_past_end"}
    assert "a write landed outside the output" in shown


@pytest.mark.parametrize("fill, failing, text", [
    ("tl.rand(0, offsets) >= p", {"seeds": "seed_ignored"}, "another seed dropped the same elements"),
    ("tl.rand(seed, offsets) < p", {"seeds": "wrong_fraction", "tail": "wrong_fraction", "keep_all": "wrong_fraction"},
     "the kept fraction is far from 1 - p"),
])
def test_dropout_is_judged_by_its_properties(course, tmp_path, fill, failing, text):
    pack = edited(exercise(course, "lesson06_dropout", tmp_path), "dropout.py", fill)
    cases, shown = results(pack)
    assert {k: c["reason"] for k, c in cases.items() if c["status"] == "fail"} == failing
    assert text in shown


def test_dropout_right_passes_and_unscaled_fails(course, tmp_path):
    pack = edited(exercise(course, "lesson06_dropout", tmp_path / "right"), "dropout.py", "tl.rand(seed, offsets) >= p")
    assert student(pack).returncode == 0
    pack = edited(exercise(course, "lesson06_dropout", tmp_path / "unscaled"), "dropout.py",
                  "tl.rand(seed, offsets) >= p", ("xv * scale, 0.0", "xv, 0.0"))
    cases, shown = results(pack)
    assert {k: c["reason"] for k, c in cases.items() if c["status"] == "fail"} == \
        {"seeds": "not_scaled", "half": "not_scaled", "tail": "not_scaled"}
    assert "kept elements hold x itself" in shown


def test_the_histogram_needs_atomic_adds(course, tmp_path):
    pack = edited(exercise(course, "lesson07_histogram", tmp_path / "right"), "histogram.py", "counts + xv")
    assert student(pack).returncode == 0
    pack = edited(exercise(course, "lesson07_histogram", tmp_path / "store"), "histogram.py", "counts + xv",
                  ("tl.atomic_add(counts + xv, 1, mask=mask)",
                   "tl.store(counts + xv, tl.load(counts + xv, mask=mask) + 1, mask=mask)"))
    cases, shown = results(pack)
    assert {k for k, c in cases.items() if c["status"] == "fail"} == {"small", "blocks", "tail"}
    assert cases["blocks"]["output"] == "counts" and "need `tl.atomic_add`" in shown


def test_the_split_sum_compares_order_free(course, tmp_path):
    pack = edited(exercise(course, "lesson08_split_sum", tmp_path / "right"), "split_sum.py", "tl.sum(xv, axis=0)")
    cases, _ = results(pack)
    assert all(c["status"] == "pass" for c in cases.values())
    # the same output judged against |expected|, as without error_scale, would fail the cancelling row
    module = types.ModuleType("cp_split_sum")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    expected = torch.tensor([3.0], dtype=torch.float64)
    got = torch.tensor([3.0 + 1e-3], dtype=torch.float64)    # an ulp of 1e4 in float32 is 1e-3
    tolerance = {"rtol": 6.0e-8, "atol": 0.0}
    assert module.compare(torch, expected, got, "float32", None, tolerance).all()
    assert not module.compare(torch, expected, got, "float32", torch.tensor([200 * 2.0e4]), tolerance).any()
    pack = edited(exercise(course, "lesson08_split_sum", tmp_path / "store"), "split_sum.py", "tl.sum(xv, axis=0)",
                  ("tl.atomic_add(out + row, partial)", "tl.store(out + row, partial)"))
    cases, shown = results(pack)
    assert {k for k, c in cases.items() if c["status"] == "fail"} == {"cancel", "rows", "strided"}
    assert "every chunk must add its partial sum" in shown
