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
import subprocess
import sys
import types
from pathlib import Path

import pytest
import ruamel.yaml
import torch

from generator.checker import join
from generator.cli import main
from tests.conftest import add_fixture_lessons, unzip

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lessons"
LESSONS = sorted(p.name for p in FIXTURES.iterdir() if (p / "lesson.yaml").exists())


def add_lessons(content: Path, lessons: list[str]) -> None:
    add_fixture_lessons(content, FIXTURES, lessons)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("new_kinds")
    assert main(["init", str(root)]) == 0
    add_lessons(root / "content", LESSONS)
    args = [a for lesson in LESSONS for a in ("--lesson", lesson)]
    # one build for all: its exit status is not asserted here, so that each lesson's test below
    # names its own failing steps; a lesson the loader rejects leaves no report (its error is printed)
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
            *args,
        ]
    )
    assert (root / "build" / "report.json").exists(), (
        "the build stopped before verification: see its errors"
    )
    return root


def record(course: Path, lesson: str) -> dict:
    report = json.loads((course / "build" / "report.json").read_text())
    return report["verification"][f"{lesson}/en"]


def steps(course: Path, lesson: str) -> dict:
    return {s["name"]: (s["ok"], s.get("detail", "")) for s in record(course, lesson)["steps"]}


def student(pack: Path, *args: str) -> subprocess.CompletedProcess:
    """`python check.py` in the interpreter, in a fresh process (a laptop: no GPU)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRITON_", "COURSEPACK_", "PYTORCH_"))
    }
    env.update(CUDA_VISIBLE_DEVICES="", TRITON_INTERPRET="1")
    return subprocess.run(
        [sys.executable, "check.py", *args],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def exercise(course: Path, lesson: str, tmp_path: Path) -> Path:
    return unzip(course / "build" / "dist" / f"{lesson}-en-exercise.zip", tmp_path)


def edited(pack: Path, kernel: str, fill: str, *edits: tuple[str, str]) -> Path:
    """The exercise kernel with its blank filled and other edits made (each `old` occurs once)."""
    path = pack / kernel
    code = path.read_text()
    assert code.count("______") == 2  # the blank and its TODO comment's "(replace ______)"
    code = code.replace("______", fill, 1)
    for old, new in edits:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    path.write_text(code)
    return pack


def results(pack: Path, lesson: str) -> tuple[dict, str]:
    """What the student reads (one run of check.py): the failing cases' ids, each with the line
    under it that names the output ("q: index ..."), and the whole printout."""
    text = ruamel.yaml.YAML(typ="safe", pure=True).load(
        (FIXTURES / lesson / "text.en.yaml").read_text()
    )
    ids = {name: case for case, name in text["checker"]["cases"].items()}
    shown = student(pack).stdout
    lines = shown.splitlines()
    failing = {
        ids[line[len("  FAIL  ") :]]: lines[i + 1].strip()
        for i, line in enumerate(lines)
        if line.startswith("  FAIL  ")
    }
    return failing, shown


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_fixture_verifies_with_its_mistakes_caught(course, lesson):
    found = steps(course, lesson)
    assert all(ok for ok, _ in found.values()), {k: v for k, v in found.items() if not v[0]}
    found = record(course, lesson)
    # in the interpreter a float8 lesson's mistakes are not provable (each case they fail is skipped)
    unproven = found["mistakes_declared"] if lesson == "lesson04_to_fp8" else 0
    assert (found["mistakes_caught"], found["mistakes_unproven"]) == (
        found["mistakes_declared"] - unproven,
        unproven,
    )
    assert found["mistakes_declared"] >= 1


def test_the_index_lesson_names_the_id_mistake(course, tmp_path):
    pack = exercise(course, "lesson02_embedding", tmp_path / "right")
    assert student(edited(pack, "embedding.py", "table + i * stride_t + cols")).returncode == 0
    pack = edited(
        exercise(course, "lesson02_embedding", tmp_path / "wrong"),
        "embedding.py",
        "table + i * D + cols",
    )
    failing, shown = results(pack, "lesson02_embedding")
    assert list(failing) == ["strided"] and failing["strided"].startswith("out: index row ")
    assert "why: the rows were read D elements apart: step by `stride_t`" in shown


def test_the_quantization_names_the_failing_output(course, tmp_path):
    pack = edited(exercise(course, "lesson03_quantize", tmp_path / "q"), "quantize.py", "v")
    failing, shown = results(pack, "lesson03_quantize")
    assert set(failing) == {"small", "rows", "strided"} and all(
        line.startswith("q: index row ") for line in failing.values()
    )
    assert shown.count("why: q was truncated toward zero") == 3
    right = "tl.where(v >= 0, tl.floor(v + 0.5), tl.ceil(v - 0.5))"
    assert (
        student(
            edited(exercise(course, "lesson03_quantize", tmp_path / "right"), "quantize.py", right)
        ).returncode
        == 0
    )
    pack = edited(
        exercise(course, "lesson03_quantize", tmp_path / "scale"),
        "quantize.py",
        right,
        ("tl.store(scale + row, s)", "tl.store(scale + row, tl.max(tl.abs(xv), axis=0))"),
    )
    failing, shown = results(pack, "lesson03_quantize")
    assert set(failing) == {"small", "rows", "strided"} and all(
        line.startswith("scale: index ") for line in failing.values()
    )
    assert shown.count("why: scale holds max|x|: divide it by 127.") == 3


def test_float8_cases_are_skipped_in_the_interpreter_with_their_reason(course, tmp_path):
    pack = unzip(course / "build" / "dist" / "lesson04_to_fp8-en-answer.zip", tmp_path)
    data = json.loads(student(pack, "--json").stdout)
    assert {(c["status"], c.get("reason")) for c in data["cases"]} == {("skip", "fp8_interpreter")}
    assert data["status"] == "pass"


def test_the_in_place_entry_is_judged_on_its_input(course, tmp_path):
    pack = edited(exercise(course, "lesson05_sgd", tmp_path / "right"), "sgd.py", "pv - lr * gv")
    assert student(pack).returncode == 0
    launch = "sgd_kernel[(triton.cdiv(n, BLOCK),)](p, g, p, lr, n, BLOCK=BLOCK)"
    pack = edited(
        exercise(course, "lesson05_sgd", tmp_path / "copy"),
        "sgd.py",
        "pv - lr * gv",
        (launch, "p = p.clone()\n        " + launch),
    )
    failing, shown = results(pack, "lesson05_sgd")
    assert set(failing) == {"small", "blocks", "half", "tail"} and failing["small"].startswith(
        "p: index 0: "
    )
    assert shown.count("why: p still holds its old values") == 4
    pack = edited(
        exercise(course, "lesson05_sgd", tmp_path / "unmasked"),
        "sgd.py",
        "pv - lr * gv",
        ("lr * gv, mask=mask)", "lr * gv)"),
    )
    failing, shown = results(pack, "lesson05_sgd")
    assert failing == {
        "small": "p: a write landed at element 3 of an output of 3 elements (outside the tensor)",
        "tail": "p: a write landed at element 1025 of an output of 1025 elements (outside the tensor)",
    }
    assert shown.count("why: a write landed outside the output") == 2


@pytest.mark.parametrize(
    "fill, edit, failing, text",
    [
        ("tl.rand(seed, offsets) >= p", None, set(), ""),
        (
            "tl.rand(0, offsets) >= p",
            None,
            {"seeds"},
            "why: another seed dropped the same elements",
        ),
        (
            "tl.rand(seed, offsets) < p",
            None,
            {"seeds", "tail", "keep_all"},
            "why: the kept fraction is far from 1 - p",
        ),
        (
            "tl.rand(seed, offsets) >= p",
            ("xv * scale, 0.0", "xv, 0.0"),
            {"seeds", "half", "tail"},
            "why: kept elements hold x itself",
        ),
    ],
)
def test_dropout_is_judged_by_its_properties(course, tmp_path, fill, edit, failing, text):
    pack = edited(
        exercise(course, "lesson06_dropout", tmp_path),
        "dropout.py",
        fill,
        *([edit] if edit else []),
    )
    found, shown = results(pack, "lesson06_dropout")
    assert set(found) == failing and (not text or shown.count(text) == len(failing))
    assert all(
        line.startswith("out: a property of the output does not hold (") for line in found.values()
    )


def test_the_histogram_needs_atomic_adds(course, tmp_path):
    pack = edited(
        exercise(course, "lesson07_histogram", tmp_path / "right"), "histogram.py", "counts + xv"
    )
    assert student(pack).returncode == 0
    pack = edited(
        exercise(course, "lesson07_histogram", tmp_path / "store"),
        "histogram.py",
        "counts + xv",
        (
            "tl.atomic_add(counts + xv, 1, mask=mask)",
            "tl.store(counts + xv, tl.load(counts + xv, mask=mask) + 1, mask=mask)",
        ),
    )
    failing, shown = results(pack, "lesson07_histogram")
    assert set(failing) == {"small", "blocks", "tail"} and failing["blocks"].startswith(
        "counts: index 0: "
    )
    assert shown.count("need `tl.atomic_add`, not a load and a store") == 3


def test_the_split_sum_compares_order_free(course, tmp_path):
    pack = edited(
        exercise(course, "lesson08_split_sum", tmp_path / "right"),
        "split_sum.py",
        "tl.sum(xv, axis=0)",
    )
    assert student(pack).returncode == 0
    # the cancelling row judged against |expected| (about 3), as without error_scale, fails by an
    # ulp of 1e4 in float32 (about 1e-3); against K * sum|x| (200 * 2e4) it passes
    module = types.ModuleType("cp_split_sum")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    expected, got = (
        torch.tensor([3.0], dtype=torch.float64),
        torch.tensor([3.0 + 1e-3], dtype=torch.float64),
    )
    tolerance = {"rtol": 6.0e-8, "atol": 0.0}
    assert module.compare(torch, expected, got, "float32", None, tolerance).all()
    assert not module.compare(
        torch, expected, got, "float32", torch.tensor([200 * 2.0e4]), tolerance
    ).any()
    pack = edited(
        exercise(course, "lesson08_split_sum", tmp_path / "store"),
        "split_sum.py",
        "tl.sum(xv, axis=0)",
        ("tl.atomic_add(out + row, partial)", "tl.store(out + row, partial)"),
    )
    failing, shown = results(pack, "lesson08_split_sum")
    assert set(failing) == {"cancel", "rows", "strided"}
    assert shown.count("every chunk must add its partial sum") == 3
