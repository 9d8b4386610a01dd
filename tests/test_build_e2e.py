"""End to end: build verified packs in tmp_path, unzip them, run their checkers as a student would."""

import json
import zipfile

import pytest

from generator.pipeline.build import build
from generator.pipeline.options import BuildOptions
from generator.cli import main
from tests.conftest import copy_content, options_for, run_check

pytestmark = pytest.mark.slow
LESSONS = (
    "lesson02_vector_add",
    "lesson03_relu",
    "lesson04_add_bias",
    "lesson05_softmax",
    "lesson06_matmul",
    "lesson07_cross_entropy",
    "triton_course",
)
NAMES = {
    f"{lesson}-{loc}-{ed}.zip"
    for lesson in LESSONS
    for loc in ("zh-CN", "en")
    for ed in ("exercise", "answer")
}
NAMES |= {
    f"triton_course-{loc}-quarto.zip" for loc in ("zh-CN", "en")
}  # the Quarto projects (instructors')


def test_build_writes_every_zip_and_a_report(built):
    assert {p.name for p in (built / "dist").iterdir()} == NAMES
    report = json.loads((built / "report.json").read_text())
    assert report["passed"] and report["verified"]
    for record in report["verification"].values():
        assert (
            record["runner"] == "interpreter"
            and record["mistakes_caught"] == record["mistakes_declared"] > 0
        )
    assert "Triton interpreter" in (built / "report.md").read_text()


def test_answer_pack_passes_and_exercise_asks_for_the_blank(packs):
    for locale in ("zh-CN", "en"):
        answer = run_check(packs[f"lesson03_relu-{locale}-answer"])
        assert answer.returncode == 0, answer.stdout + answer.stderr
        exercise = run_check(packs[f"lesson03_relu-{locale}-exercise"])
        assert exercise.returncode == 2
        blank = 1 + next(
            i
            for i, line in enumerate(
                (packs[f"lesson03_relu-{locale}-exercise"] / "relu.py").read_text().splitlines()
            )
            if "______" in line
        )
        assert f"relu.py:{blank}" in exercise.stdout and "______" in exercise.stdout
        assert "Traceback" not in exercise.stdout + exercise.stderr


def test_pack_contents(packs):
    exercise, answer = packs["lesson03_relu-en-exercise"], packs["lesson03_relu-en-answer"]
    assert {p.name for p in exercise.iterdir()} == {
        "README.md",
        "lesson.md",
        "lesson.html",
        "lesson.ipynb",
        "relu.py",
        "check.py",
        "requirements.txt",
        "manifest.json",
        "bench.py",
    }
    assert {p.name for p in answer.iterdir()} == {p.name for p in exercise.iterdir()} | {
        "verification.json",
        "fused.py",
    }
    manifest = json.loads((exercise / "manifest.json").read_text())
    assert manifest["verified"] is True and manifest["verification"]["runner"] == "interpreter"
    assert "Verified on Triton interpreter on the CPU" in (exercise / "README.md").read_text()


def test_second_build_is_byte_identical_and_cached(own_build):
    built = own_build
    first = {p.name: p.read_bytes() for p in (built / "dist").iterdir()}
    root = built.parent
    result = build(options_for(root, runner="interpreter", notebook=False), progress=lambda _: None)
    second = {p.name: p.read_bytes() for p in (built / "dist").iterdir()}
    assert first == second
    assert all(result.cached.values()) and len(result.cached) == 2 * (
        len(LESSONS) - 1
    )  # lesson x locale
    # Without the whole-build shortcut (another set of packs: one lesson, both languages), its
    # packs come from the verification cache, byte for byte the same:
    again = build(
        options_for(root, runner="interpreter", notebook=False, lessons=("lesson03_relu",)),
        progress=lambda _: None,
    )
    assert all(again.cached.values()) and len(again.cached) == 2
    rebuilt = {p.name: p.read_bytes() for p in (built / "dist").iterdir()}
    assert len(rebuilt) == 4 and rebuilt == {name: first[name] for name in rebuilt}


def test_bad_content_changes_nothing_in_dist(own_build, capsys):
    built = own_build
    root = built.parent
    before = {p.name: p.read_bytes() for p in (built / "dist").iterdir()}
    text = root / "content" / "lessons" / "lesson03_relu" / "text.en.yaml"
    good = text.read_text(encoding="utf-8")
    try:
        text.write_text(
            good.replace("  q1:\n    prompt:", "  q1:\n    prompt: [", 1), encoding="utf-8"
        )
        code = main(
            [
                "build",
                "--content",
                str(root / "content"),
                "--templates",
                str(root / "templates"),
                "--out",
                str(built),
                "--runner",
                "interpreter",
            ]
        )
    finally:
        text.write_text(good, encoding="utf-8")
    err = capsys.readouterr().err
    assert code == 1
    assert "content/lessons/lesson03_relu/text.en.yaml:" in err and "YAML syntax" in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in (built / "dist").iterdir()} == before


def test_no_verify_build_says_not_verified(tmp_path):
    copy_content(tmp_path)
    build(
        options_for(tmp_path, verify=False, lessons=("lesson03_relu",), locales=("en",)),
        progress=lambda _: None,
    )
    with zipfile.ZipFile(tmp_path / "build" / "dist" / "lesson03_relu-en-answer.zip") as archive:
        readme = archive.read("lesson03_relu-en-answer/README.md").decode()
        manifest = json.loads(archive.read("lesson03_relu-en-answer/manifest.json"))
    assert "NOT VERIFIED" in readme and manifest["verified"] is False
    assert "NOT VERIFIED" in (tmp_path / "build" / "report.md").read_text()


def test_command_runner_runs_the_gate_through_a_shell_template(tmp_path):
    """A fresh Python through `sh -c` (no warm task process): the small course of `coursepack init`."""
    import sys

    assert main(["init", str(tmp_path)]) == 0
    options = BuildOptions(
        content=tmp_path / "content",
        out=tmp_path / "build",
        runner="command",
        runner_command="sh -c {shell_cmd}",
        python=sys.executable,
        notebook=False,
    )
    result = build(options, progress=lambda _: None)
    record = result.verification["lesson01_scale/en"]
    assert record["runner"] == "command" and record["passed"]
    assert record["mistakes_caught"] == record["mistakes_declared"] == 2


def test_a_change_to_one_locale_re_verifies_only_that_locale(own_build):
    root = own_build.parent
    quick = dict(
        runner="interpreter", notebook=False, lessons=("lesson03_relu",)
    )  # both its locales
    build(options_for(root, **quick), progress=lambda _: None)  # both locales in the cache
    text = root / "content" / "lessons" / "lesson03_relu" / "text.en.yaml"
    good = text.read_text(encoding="utf-8")
    try:
        text.write_text(
            good.replace("It is not a Python syntax error", "It is not a syntax error", 1),
            encoding="utf-8",
        )
        changed = build(options_for(root, **quick), progress=lambda _: None)
    finally:
        text.write_text(good, encoding="utf-8")
    assert {k for k, cached in changed.cached.items() if not cached} == {"lesson03_relu/en"}
    restored = build(options_for(root, **quick), progress=lambda _: None)
    assert all(restored.cached.values()) and len(restored.cached) == 2
