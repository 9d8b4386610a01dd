"""The course as a whole: a lesson of a kind the course does not have, built from content in
tmp_path alone; course bundles whose links work; benches that cannot rot; no lesson in generator/."""

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from generator.cli import main
from generator.render.html import MERMAID_FILE, loads_shared_mermaid, mermaid_file, mermaid_script
from generator.runners.base import Task
from generator.runners.local import Runner
from tests.conftest import REPO, run_check, unzip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def new_course(tmp_path_factory) -> Path:
    """`coursepack init` + a verified build (interpreter), as a new instructor would do it."""
    root = tmp_path_factory.mktemp("course")
    assert main(["init", str(root)]) == 0
    assert (
        main(["build", "--content", str(root / "content"), "--runner", "interpreter", "-j", "2"])
        == 0
    )
    return root


def test_init_refuses_to_overwrite(new_course, capsys):
    assert main(["init", str(new_course)]) == 1
    assert "already exists" in capsys.readouterr().err


def test_a_new_kind_of_lesson_builds_and_verifies_without_code(new_course):
    """lesson01_scale has a scalar argument and per-dtype tolerances, which no real lesson has."""
    report = json.loads((new_course / "build" / "report.json").read_text())
    record = report["verification"]["lesson01_scale/en"]
    assert report["passed"] and record["mistakes_caught"] == record["mistakes_declared"] == 2
    names = sorted(p.name for p in (new_course / "build" / "dist").glob("*.zip"))
    assert names == [
        "lesson01_scale-en-answer.zip",
        "lesson01_scale-en-exercise.zip",
        "my_course-en-answer.zip",
        "my_course-en-exercise.zip",
        "my_course-en-quarto.zip",
    ]


def test_the_new_lesson_checks_a_student_fill(new_course, tmp_path):
    pack = unzip(new_course / "build" / "dist" / "lesson01_scale-en-exercise.zip", tmp_path)
    kernel = pack / "scale_add.py"
    kernel.write_text(kernel.read_text().replace("______", "xv + yv", 1))
    result = run_check(pack)
    assert result.returncode == 1 and "the kernel ignores alpha" in result.stdout
    assert "x = 1.0, y = 10.0, alpha = 2.0" in result.stdout  # every input at the first difference
    kernel.write_text(kernel.read_text().replace("xv + yv, mask", "alpha * xv + yv, mask", 1))
    assert run_check(pack).returncode == 0


def test_bundle_links_resolve_inside_the_bundle(new_course, tmp_path):
    bundle = unzip(new_course / "build" / "dist" / "my_course-en-exercise.zip", tmp_path)
    index = (bundle / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", index)
    assert links == ["lesson01_scale/lesson.md"] and all(
        (bundle / link).is_file() for link in links
    )


def test_real_course_bundle_navigation(built):
    """Lesson pages in the real course bundle link only to lessons that are in it."""
    for path in (built / "dist").glob("triton_course-*.zip"):
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            for name in names:
                if name.endswith("/lesson.md"):
                    text = archive.read(name).decode()
                    for link in re.findall(r"\]\((\.\./[^)#]+)\)", text):
                        target = str(Path(name).parent / link)
                        target = re.sub(r"[^/]+/\.\./", "", target)
                        assert target in names, (name, link)


def test_a_bundle_carries_mermaid_once(built):
    """One mermaid per course bundle, at its root (the bytes a single-lesson page inlines): each
    lesson page loads it and inlines none. A lesson folder holds what that lesson's own zip holds;
    only the files with links to other lessons, the page and the manifest differ."""
    for path in sorted(
        p for p in (built / "dist").glob("triton_course-*.zip") if not p.stem.endswith("-quarto")
    ):
        locale_edition = path.stem.split("-", 1)[1]
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            assert [n for n in names if n.endswith(MERMAID_FILE)] == [f"{path.stem}/{MERMAID_FILE}"]
            assert archive.read(f"{path.stem}/{MERMAID_FILE}") == mermaid_file()
            pages = [n for n in names if n.endswith("/lesson.html")]
            assert (
                len(pages) == len(list((built / "dist").glob(f"lesson*-{locale_edition}.zip"))) >= 3
            )
            for name in pages:
                page = archive.read(name)
                assert loads_shared_mermaid(page) and mermaid_script()[-300:].encode() not in page
                lesson = name.split("/")[1]
                with zipfile.ZipFile(built / "dist" / f"{lesson}-{locale_edition}.zip") as single:
                    alone = {n.split("/", 1)[1]: single.read(n) for n in single.namelist()}
                inside = {
                    n.split("/", 2)[2]: archive.read(n) for n in names if n.split("/")[1] == lesson
                }
                assert sorted(inside) == sorted(alone)
                assert {n for n in alone if alone[n] != inside[n]} == {
                    "lesson.md",
                    "lesson.ipynb",
                    "lesson.html",
                    "manifest.json",
                }


def test_every_lesson_bench_runs_as_a_smoke_test(packs):
    """Benchmarks print numbers and never fail on time; a smoke run (tiny sizes, interpreter) of each
    lesson's bench keeps it from rotting. The answer edition's kernel is filled in."""
    answers = [
        pack
        for name, pack in sorted(packs.items())
        if name.startswith("lesson") and name.endswith("-en-answer")
    ]
    assert answers
    # through the interpreter runner, as verification runs a bench: children of its warm task process
    runner = Runner("interpreter")
    tasks = [
        Task(pack.name, pack, ["{python}", "bench.py", "--smoke", "--json", "b.json"], 600)
        for pack in answers
    ]
    for pack, result in zip(answers, runner.run_tasks(tasks, parallel=len(tasks))):
        assert result.state == "COMPLETED", result.stdout + result.stderr
        data = json.loads((pack / "b.json").read_text())
        assert data["tables"] and all(r["ms"] > 0 for rows in data["tables"].values() for r in rows)


def test_the_generator_holds_no_lesson():
    """A lesson is content: no lesson's names or semantics in the generator's code."""
    hits = subprocess.run(
        [
            "grep",
            "-rniEl",
            "relu|vector_add|add_bias",
            str(REPO / "generator"),
            "--include=*.py",
            "--include=*.j2",
        ],
        capture_output=True,
        text=True,
    ).stdout
    assert hits == "", hits
