"""`coursepack grade` end to end: a small class made in tmp_path from lesson 3's exercise files
(right and wrong fills, in English and Chinese packs, a submission.md that claims a pass it did not
get, a notebook, a zip, unreadable and ambiguous hand-ins, a hang, a crash, a network attempt, an
untouched blank, a roster student who handed in nothing), graded in the Triton interpreter in the
sandbox (skipped, with the reason, where bubblewrap cannot run; CI installs it). Lesson 3 is cut to
five cases, and the case time-out is short, to keep it fast."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from generator.cli import main
from generator.grade.lesson import load_lesson
from generator.grade.run import GradeOptions, grade, grade_in_container
from tests.conftest import small_lesson_copy

KEEP = ["seed", "tail_257", "random_f16", "empty", "special_f32"]
ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"
TIMEOUT = 4


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from generator.checker.shared.sandbox import sandbox_problem

    why = sandbox_problem()
    if why:
        pytest.skip(f"no sandbox here: {why}")
    root = tmp_path_factory.mktemp("grade-course")
    content = small_lesson_copy(root, KEEP)
    return content, load_lesson(content, "lesson03_relu")


def notebook(content: Path, fill: str) -> str:
    from generator.content.loader import load_content
    from generator.render.render import LessonContext, jinja_env, render_pack
    from generator.files.resources import TEMPLATES

    course = load_content(content)
    ctx = LessonContext(course, course.lessons["lesson03_relu"], "en", "exercise")
    data = json.loads(render_pack(ctx, jinja_env(TEMPLATES)).files["lesson.ipynb"])
    for cell in data["cells"]:
        if "exercise" in cell["metadata"].get("tags", []):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = source.replace("______", fill, 1)
    return json.dumps(data)


def kernel(lesson, fill: str, locale: str = "en", entry_body: str | None = None) -> str:
    lines = list(lesson.languages[locale].data["template"])
    code = "\n".join(lines).replace("______", fill, 1) + "\n"
    if entry_body is not None:  # something else inside the entry function, before its work
        assert "def relu(x, BLOCK=256):\n" in code
        code = code.replace(
            "def relu(x, BLOCK=256):\n", f"def relu(x, BLOCK=256):\n    {entry_body}\n", 1
        )
    return code


def report(lesson, code: str, claimed: str, tmp: Path) -> str:
    """A real `check.py --report` file (check.py's own writer), claiming `claimed`."""
    module = lesson.languages["en"].module(tmp / "modules")
    target = module.Target(Path("relu.py"), "relu.py", code)
    ev = module.Evaluation(target, [], None, [])
    path = tmp / "report.md"
    module.write_submission(path, ev, ["(output)"], claimed)
    return path.read_text(encoding="utf-8")


def make_class(lesson, content: Path, folder: Path, tmp: Path) -> None:
    def put(rel: str, data: str | bytes) -> None:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    put("right/relu.py", kernel(lesson, ANSWER))
    put("where_gt.py", kernel(lesson, "tl.where(xv > 0.0, xv, 0.0)"))
    put("identity_zh/relu.py", kernel(lesson, "xv", "zh-CN"))
    put("liar/submission.md", report(lesson, kernel(lesson, "tl.minimum(xv, 0.0)"), "pass", tmp))
    put("nb/lesson.ipynb", notebook(content, ANSWER))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("work/relu.py", kernel(lesson, "xv * (xv > 0.0)"))
        zf.writestr("work/README.md", "my notes")
    put("zipped.zip", archive.getvalue())
    put("broken.zip", b"PK\x03\x04 this is not a zip")
    put("ambiguous/a.py", kernel(lesson, "xv"))
    put("ambiguous/b.py", kernel(lesson, "tl.abs(xv)"))
    put("binary.py", b"\xff\xfe\x00 not text")
    put(
        "hang/relu.py", kernel(lesson, ANSWER, entry_body="while x.numel() == 5: pass")
    )  # the seed case hangs
    put("crash/relu.py", kernel(lesson, ANSWER, entry_body="import os; os.abort()"))
    put(
        "net/relu.py",
        kernel(
            lesson,
            ANSWER,
            entry_body=(
                "import socket\n    try: socket.create_connection(('192.0.2.1', 80), timeout=1)\n    except OSError: pass"
            ),
        ),
    )
    put("blank/relu.py", kernel(lesson, "______"))


def rows_of(path: Path) -> dict[str, dict]:
    return {row["student_id"]: row for row in csv.DictReader(path.open(encoding="utf-8"))}


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    content, lesson = course
    tmp = tmp_path_factory.mktemp("grade-class")
    make_class(lesson, content, tmp / "class", tmp)
    (tmp / "roster.csv").write_text(
        "id,name,locale,aliases\nright,Wang Fang,zh-CN,\nghost,Nobody,en,\nwhere_gt,Alex,,\n",
        encoding="utf-8",
    )
    options = GradeOptions(
        tmp / "class",
        "lesson03_relu",
        content=content,
        out=tmp / "out",
        build=tmp / "build",
        roster=tmp / "roster.csv",
        runner="interpreter",
        jobs=2,
        timeout=TIMEOUT,
    )
    outcome = grade(options, progress=lambda line: None)
    return tmp, options, outcome, lesson


def test_every_student_gets_the_status_and_points_their_code_deserves(graded):
    tmp, _, _, lesson = graded
    rows = rows_of(tmp / "out" / "grades.csv")
    possible = rows.pop("POINTS POSSIBLE")
    assert (
        possible["points_normal"],
        possible["points_boundary"],
        possible["points_automatic"],
    ) == ("2", "1", "3")
    assert possible["manual_explanation"] == "1" and possible["manual_q1"] == "2"
    want = {  # student: (status, automatic points, flags that must be there)
        "right": ("graded", "3", set()),
        "nb": ("graded", "3", set()),
        "where_gt": ("graded", "2", set()),
        "identity_zh": ("graded", "0", set()),
        "liar": ("graded", "0", {"claim_differs"}),
        "zipped": ("graded", "2", set()),
        "broken": ("unreadable", "0", set()),
        "ambiguous": ("unreadable", "0", set()),
        # hang and net changed the entry outside the blank: what their cases gave (2 and 3) waits for a review
        "binary": ("unreadable", "0", set()),
        "hang": ("timed out", "0", {"withheld", "edits_outside_blank"}),
        "crash": ("crashed", "0", set()),
        "net": ("sandbox violation", "0", {"sandbox_events", "withheld"}),
        "blank": ("graded", "0", {"blank"}),
        "ghost": ("no submission", "0", set()),
    }
    problems = []
    for student, (status, points, flags) in want.items():
        row = rows[student]
        got = (row["status"], row["points_automatic"])
        if got != (status, points) or not flags <= set(filter(None, row["flags"].split(";"))):
            problems.append(
                f"{student}: {got} flags {row['flags']!r} detail {row['detail']!r}; expected "
                f"{(status, points)} with {flags}"
            )
    assert not problems, "\n".join(problems)
    assert set(rows) == set(want)
    assert (
        rows["right"]["locale"] == "zh-CN" and rows["identity_zh"]["locale"] == "zh-CN"
    )  # roster; own pack
    assert rows["where_gt"]["locale"] == "en" and rows["nb"]["locale"] == "en"  # own pack
    assert (
        rows["nb"]["graded_file"] == "nb/lesson.ipynb"
        and rows["zipped"]["graded_file"] == "zipped.zip/work/relu.py"
    )
    assert "a.py" in rows["ambiguous"]["detail"] and "b.py" in rows["ambiguous"]["detail"]
    # the sandbox, and what it lacks here (sandbox_label)
    assert (
        rows["right"]["sandbox"].startswith("bubblewrap; ")
        and rows["right"]["device"] == "CPU (Triton interpreter)"
    )
    assert rows["right"]["checker_sha256"] == possible["checker_sha256"] == lesson.checker_hash
    assert rows["where_gt"]["failed_cases"] == "special_f32"
    assert (
        "edits_outside_blank" not in rows["identity_zh"]["flags"]
    )  # the Chinese pack's own comments


def test_feedback_is_in_each_students_language(graded):
    tmp, _, _, _ = graded
    feedback = tmp / "out" / "feedback"
    chinese = (feedback / "right.md").read_text(encoding="utf-8")
    assert chinese.startswith("# 反馈：") and "自动评分" in chinese and "3/3" in chinese
    english = (feedback / "where_gt.md").read_text(encoding="utf-8")
    assert (
        english.startswith("# Feedback: ")
        and "FAIL  special values" in english
        and "why: NaN became 0.0" in english
    )
    liar = (feedback / "liar.md").read_text(encoding="utf-8")
    assert 'says the result was "pass"' in liar and 'gives "fail"' in liar
    broken = (feedback / "broken.md").read_text(encoding="utf-8")
    assert (
        "不是可读取的 zip" in broken
    )  # no pack to tell the language: the course's source language
    page = (feedback / "right.html").read_text(encoding="utf-8")
    assert (
        page.startswith("<!DOCTYPE html>")
        and 'lang="zh-CN"' in page
        and "default-src 'none'" in page
    )
    net = (feedback / "net.md").read_text(encoding="utf-8")
    assert "network connection" in net
    crash = (feedback / "crash.md").read_text(
        encoding="utf-8"
    )  # aborts in every case: three tried, then given up
    assert (
        crash.count("crashed (SIGABRT)") == 3
        and crash.count("----  ") == 2
        and "not run: the 3 cases" in crash
    )
    for row in ("hang", "crash", "ghost", "blank", "nb", "zipped"):
        assert (feedback / f"{row}.md").exists() and (feedback / f"{row}.html").exists()


def test_gradescope_results_follow_the_specification(graded):
    tmp, _, _, _ = graded
    for path in sorted((tmp / "out" / "gradescope").glob("*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert set(data) >= {"score", "execution_time", "output", "tests", "visibility"}, path
        for test in data["tests"]:
            assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
            assert test["status"] in ("passed", "failed")
            assert test["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    right = json.loads(
        (tmp / "out" / "gradescope" / "where_gt" / "results.json").read_text(encoding="utf-8")
    )
    assert right["score"] == 2 and sum(t["max_score"] for t in right["tests"]) == 3
    failed = [t["name"] for t in right["tests"] if t["status"] == "failed"]
    assert "boundary inputs" in failed and any("special values" in name for name in failed)


def test_the_summary_counts_what_the_class_got_wrong(graded):
    tmp, _, _, _ = graded
    summary = (tmp / "out" / "summary.md").read_text(
        encoding="utf-8"
    )  # the course's source language
    assert summary.startswith("# 全班概况：")
    assert "NaN 变成了 0.0" in summary and "`where_gt`" in summary and "`identity`" in summary
    assert "score_distribution.svg" in summary
    svg = (tmp / "out" / "score_distribution.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and svg.count("<rect") == 4
    page = (tmp / "out" / "summary.html").read_text(encoding="utf-8")
    assert "<svg" in page and "<img" not in page


def test_grading_again_runs_only_what_is_new(graded, tmp_path):
    tmp, options, first, lesson = graded
    assert first.ran >= 10 and first.cached == 0
    (options.submissions / "late").mkdir()
    (options.submissions / "late" / "relu.py").write_text(
        kernel(lesson, "tl.abs(xv)"), encoding="utf-8"
    )
    before = (tmp / "out" / "grades.csv").read_text(encoding="utf-8")
    second = grade(options, progress=lambda line: None)
    # run again: the late one, and what the first run did not cache (the network attempt, and what ran
    # beside it: grade/tasks.py's uncacheable)
    rerun = second.ran - 1
    assert 1 <= rerun < first.ran and second.cached == first.ran - rerun
    rows = rows_of(tmp / "out" / "grades.csv")
    assert rows["late"]["status"] == "graded" and "not_in_roster" in rows["late"]["flags"]
    assert before != (tmp / "out" / "grades.csv").read_text(encoding="utf-8")


def test_several_trusted_processes_grade_as_one_does(graded, tmp_path):
    """-j 8 deals the class to two trusted processes (a task folder each); the rows are the same
    (a late submission added by the test before, where it ran first, is graded too)."""
    import dataclasses

    tmp, options, first, _ = graded
    progress = []
    again = dataclasses.replace(options, out=tmp_path / "out", build=tmp_path / "build", jobs=8)
    outcome = grade(again, progress=progress.append)
    assert outcome.ran >= first.ran and any(
        "2 task(s), 4 at once in each, 2 at once" in line for line in progress
    )
    keep = ("status", "points_automatic", "failed_cases", "flags", "locale")
    one, two = rows_of(tmp / "out" / "grades.csv"), rows_of(tmp_path / "out" / "grades.csv")
    assert {s: [r[k] for k in keep] for s, r in one.items() if s != "late"} == {
        s: [r[k] for k in keep] for s, r in two.items() if s != "late"
    }


def test_the_command_line_in_english(graded, tmp_path, capsys):
    tmp, options, _, _ = graded
    code = main(
        [
            "grade",
            str(options.submissions / "where_gt.py"),
            "--lesson",
            "lesson03_relu",
            "--content",
            str(options.content),
            "--out",
            str(tmp_path / "one"),
            "--runner",
            "interpreter",
            "--locale",
            "en",
            "--timeout",
            str(TIMEOUT),
        ]
    )
    assert code == 0, capsys.readouterr()
    rows = rows_of(tmp_path / "one" / "grades.csv")
    assert (
        rows["where_gt"]["points_automatic"] == "2"
    )  # from the cache of the class's run beside the content
    assert (
        (tmp_path / "one" / "summary.md")
        .read_text(encoding="utf-8")
        .startswith("# Class summary: ")
    )


def test_gradescope_container_mode_from_a_kit(course, tmp_path):
    """What a Gradescope autograder runs: a kit (no content, so no answer, in the container), the
    student's files in the submission folder, results.json where Gradescope reads it."""
    from generator.grade.lesson import kit_json

    content, lesson = course
    (tmp_path / "kit.json").write_text(kit_json(lesson), encoding="utf-8")
    assert "propagate_nan=tl.PropagateNan.ALL" not in (tmp_path / "kit.json").read_text(
        encoding="utf-8"
    )
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "relu.py").write_text(
        kernel(lesson, "tl.where(xv > 0.0, xv, 0.0)"), encoding="utf-8"
    )
    (tmp_path / "meta.json").write_text(
        json.dumps({"users": [{"sid": "s042", "name": "Ada"}]}), encoding="utf-8"
    )
    options = GradeOptions(
        kit=tmp_path / "kit.json",
        build=tmp_path / "build",
        timeout=TIMEOUT,
        jobs=1,
        gradescope_submission=tmp_path / "submission",
        gradescope_metadata=tmp_path / "meta.json",
        gradescope_results=tmp_path / "results" / "results.json",
    )
    grade_in_container(options, progress=lambda line: None)
    data = json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 2 and data["extra_data"]["student"] == "s042"
    assert (
        "Triton interpreter" in data["output"] and data["extra_data"]["environment"]["interpreter"]
    )


def test_the_gradescope_autograder_zip_runs_as_gradescope_would(course, tmp_path):
    """scripts/gradescope_autograder.py's zip: setup.sh and run_autograder at its root, executable;
    run_autograder (here with AUTOGRADER and COURSEPACK pointing at this checkout) grades the
    submission folder into results/results.json."""
    import os
    import subprocess
    import sys
    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "scripts"))
    from gradescope_autograder import autograder_zip

    content, lesson = course
    data = autograder_zip(content, "lesson03_relu", "on", TIMEOUT, "en")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        archive.extractall(root / "source")
    assert {"setup.sh", "run_autograder", "kit.json", "coursepack/pyproject.toml"} <= set(names)
    assert "coursepack/generator/grade/run.py" in names and not any(
        "lesson03_relu" in n for n in names
    )
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    (root / "submission").mkdir()
    (root / "submission" / "relu.py").write_text(kernel(lesson, "xv"), encoding="utf-8")
    env = dict(
        os.environ,
        AUTOGRADER=str(root),
        COURSEPACK=f"{sys.executable} -m generator",
        PYTHONPATH=str(REPO),
        COURSEPACK_CACHE=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert result["score"] == 0 and result["extra_data"]["student"] == "submission", result
    assert (
        result["extra_data"]["sandbox"].startswith("bubblewrap; ")
        and result["extra_data"]["status"] == "graded"
    ), result


def test_a_killed_run_resumes_where_it_stopped(course, tmp_path):
    """`coursepack grade` killed (SIGKILL) while a submission hangs: no grades.csv is left behind,
    and the next run keeps the results the first one finished and runs only the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from tests.conftest import REPO

    content, lesson = course
    for student, fill in (("a", ANSWER), ("b", "xv"), ("c", "tl.abs(xv)")):
        (tmp_path / "class").mkdir(exist_ok=True)
        (tmp_path / "class" / f"{student}.py").write_text(kernel(lesson, fill), encoding="utf-8")
    (tmp_path / "class" / "z.py").write_text(
        kernel(lesson, ANSWER, entry_body="while True: pass"), encoding="utf-8"
    )
    command = [
        sys.executable,
        "-m",
        "generator",
        "grade",
        str(tmp_path / "class"),
        "--lesson",
        "lesson03_relu",
        "--content",
        str(content),
        "--cache",
        str(tmp_path / "build"),
        "--runner",
        "interpreter",
        "-j",
        "1",
        "--timeout",
        "2",
    ]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = tmp_path / "build" / "work" / "grade-lesson03_relu"
    deadline = time.monotonic() + 120
    while len(list(results.glob("task-*/results/*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    assert len(list(results.glob("task-*/results/*.json"))) == 3
    assert not (tmp_path / "build" / "grades" / "lesson03_relu" / "grades.csv").exists()
    options = GradeOptions(
        tmp_path / "class",
        "lesson03_relu",
        content=content,
        build=tmp_path / "build",
        runner="interpreter",
        jobs=1,
        timeout=2,
    )
    outcome = grade(options, progress=lambda line: None)
    assert (outcome.cached, outcome.ran) == (3, 1)
    assert {row.student: row.status for row in outcome.rows} == {
        "a": "graded",
        "b": "graded",
        "c": "graded",
        "z": "timed out",
    }


def test_a_new_cache_folder_reaches_the_runner_check(graded, tmp_path, capsys, monkeypatch):
    """`--cache` naming a folder that does not exist yet, on a machine whose runner was never probed
    (the probe's own cache empty): the runner starts in that folder (it is made), so what the
    instructor reads is about the runner (here: no GPU for --runner cuda), not a missing folder."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible: --runner cuda would grade here")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    _, options, _, _ = graded
    code = main(
        [
            "grade",
            str(options.submissions / "where_gt.py"),
            "--lesson",
            "lesson03_relu",
            "--content",
            str(options.content),
            "--out",
            str(tmp_path / "one"),
            "--runner",
            "cuda",
            "--cache",
            str(tmp_path / "new" / "cache"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "torch sees no CUDA GPU" in err and "No such file" not in err, err
