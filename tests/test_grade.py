"""`coursepack grade`'s parts without running any kernel: the layouts submissions come in (folders,
files, zips, LMS exports, notebooks, reports), the roster, rows and their statuses, grades.csv,
Gradescope's results.json, the results cache and resuming a killed run, and outputs written whole."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from generator.grade.collect import collect
from generator.grade.gradebook import POSSIBLE, gradebook_csv
from generator.grade.feedback import check_lines
from generator.grade.gradescope import results_json, submitter
from generator.grade.lesson import GradeError, load_lesson
from generator.grade.roster import Student, read_roster
from generator.grade.rows import assign_slugs, make_row, people, status_of
from generator.grade.tasks import ResultStore, Unit, harvest, plan, unit_key
from tests.conftest import REPO

ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"


@pytest.fixture(scope="module")
def lesson():
    return load_lesson(REPO / "content", "lesson03_relu")


def kernel(lesson, fill: str, locale: str = "en") -> str:
    return "\n".join(lesson.languages[locale].data["template"]).replace("______", fill, 1) + "\n"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def zipped(files: dict[str, str | bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def by_id(found) -> dict:
    return {s.student: s for s in found}


# ---- layouts ---------------------------------------------------------------------------------


def test_folder_and_file_per_student(lesson, tmp_path):
    write(
        tmp_path,
        {
            "alice/relu.py": kernel(lesson, ANSWER),
            "bob.py": kernel(lesson, "xv"),
            "carol/notes.txt": "hello",
            "dave.zip": zipped({"dave/relu.py": kernel(lesson, "xv", "zh-CN")}),
            ".DS_Store": b"\0",
            "__MACOSX/alice/._relu.py": b"\0",
        },
    )
    found = by_id(collect(tmp_path, lesson))
    assert set(found) == {"alice", "bob", "carol", "dave"}
    assert (found["alice"].layout, found["alice"].kind, found["alice"].source) == (
        "folder",
        "kernel",
        "alice/relu.py",
    )
    assert (found["bob"].layout, found["bob"].locale) == ("file", "en")
    assert found["dave"].source == "dave.zip/dave/relu.py" and found["dave"].locale == "zh-CN"
    assert (
        found["carol"].problem[0] == "no_code"
        and "carol/notes.txt" in found["carol"].problem[1]["files"]
    )


def test_canvas_export(lesson, tmp_path):
    """Canvas's "Download Submissions": name_[LATE_]userid_submissionid_file, resubmissions -1."""
    write(
        tmp_path,
        {
            "wangfang_4711_90001_relu.py": kernel(lesson, ANSWER),
            "doealex_LATE_5020_90002_relu-1.py": kernel(lesson, "xv"),
            "leebo_6000_90003_submission.md": "not a report",
        },
    )
    found = by_id(collect(tmp_path, lesson))
    assert (found["4711"].name, found["4711"].layout, found["4711"].late) == (
        "wangfang",
        "canvas",
        False,
    )
    assert found["5020"].late and found["5020"].kind == "kernel"
    assert found["6000"].problem[0] == "no_code"


def test_moodle_export_folders_and_flat(lesson, tmp_path):
    """Moodle's "Download all submissions": a folder per participant and plugin (3.1 and later),
    or the same prefix on each file; other plugins' folders (online text) hold no code."""
    write(
        tmp_path,
        {
            "Wang Fang_123456_assignsubmission_file_/relu.py": kernel(lesson, ANSWER),
            "Wang Fang_123456_assignsubmission_onlinetext_/onlinetext.html": "<p>hi</p>",
            "Alex Doe_123457_assignsubmission_file_relu.py": kernel(lesson, "xv"),
        },
    )
    found = by_id(collect(tmp_path, lesson))
    assert set(found) == {"123456", "123457"}
    assert (found["123456"].name, found["123456"].layout) == ("Wang Fang", "moodle")
    assert found["123457"].kind == "kernel"


def test_gradescope_export_in_its_zip(lesson, tmp_path):
    """Gradescope's export: submission_metadata.yml maps submission_<n> folders to submitters."""
    metadata = (
        "submission_1:\n  :submitters:\n  - :name: Wang Fang\n    :sid: s001\n    :email: w@x.edu\n"
        "  :score: 3.0\nsubmission_2:\n  :submitters:\n  - :name: A\n    :sid: s002\n  - :name: B\n"
        "    :email: b@x.edu\n"
    )
    export = zipped(
        {
            "assignment_7_export/submission_metadata.yml": metadata,
            "assignment_7_export/submission_1/relu.py": kernel(lesson, ANSWER),
            "assignment_7_export/submission_2/lesson03/relu.py": kernel(lesson, "xv"),
        }
    )
    (tmp_path / "export.zip").write_bytes(export)
    found = by_id(collect(tmp_path / "export.zip", lesson))
    assert set(found) == {"s001", "s002", "b@x.edu"}  # a group's submitters each get a row
    assert (found["s001"].name, found["s001"].email, found["s001"].layout) == (
        "Wang Fang",
        "w@x.edu",
        "gradescope",
    )
    assert found["b@x.edu"].code == found["s002"].code


def test_report_notebook_and_what_is_preferred(lesson, tmp_path):
    en = lesson.languages["en"]
    report = (
        f"# {en.msg('report_title', lesson=en.data['title'])}\n\n- {en.msg('report_status')}: pass\n\n"
        f"## {en.msg('report_code')}\n\n```python\n{kernel(lesson, 'xv')}```\n"
    )
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {"tags": ["exercise"]},
                "source": kernel(lesson, ANSWER),
            }
        ],
        "metadata": {"language": "zh-CN"},
    }
    write(
        tmp_path,
        {
            "a/submission.md": report,
            "a/relu.py": kernel(lesson, "xv"),
            "b/submission.md": report,
            "b/relu.py": kernel(lesson, ANSWER),
            "c/lesson.ipynb": json.dumps(notebook),
            "c/relu.py": kernel(lesson, "______"),
            "d/submission.md": f"# {en.msg('report_title', lesson=en.data['title'])}\n\nno code here\n",
            "e/lesson.ipynb": "{not json",
            "f/relu.py": kernel(lesson, "xv"),
            "f/old/relu.py": kernel(lesson, "xv * 2"),
            "g/relu.py": kernel(lesson, "______"),
        },
    )
    found = by_id(collect(tmp_path, lesson))
    assert (found["a"].kind, found["a"].claim, found["a"].locale, found["a"].notes) == (
        "report",
        "pass",
        "en",
        [],
    )
    assert (
        found["b"].kind == "report" and found["b"].notes[0][0] == "flag_other_code"
    )  # relu.py differs
    assert (found["c"].kind, found["c"].cell, found["c"].locale) == (
        "notebook",
        1,
        "zh-CN",
    )  # not the blank copy
    assert found["d"].problem[0] == "unreadable_report"
    assert found["e"].problem[0] == "unreadable_notebook"
    assert found["f"].problem[0] == "ambiguous"
    assert (
        found["g"].kind == "kernel" and "______" in found["g"].code
    )  # only the blank: graded as it is


def test_unreadable_inputs_are_reasons_not_crashes(lesson, tmp_path):
    write(
        tmp_path,
        {
            "a.zip": b"PK\x03\x04garbage",
            "b.py": b"\xff\xfe\x00",
            "c/": b"",
            "d/empty.zip": zipped({}),
        },
    )
    (tmp_path / "c").unlink()
    (tmp_path / "c").mkdir()
    found = by_id(collect(tmp_path, lesson))
    assert found["a"].problem[0] == "unreadable_zip"
    assert found["b"].problem[0] == "unreadable_text"
    assert found["d"].problem[0] == "no_code"


def test_one_file(lesson, tmp_path):
    path = write(tmp_path, {"s007.py": kernel(lesson, ANSWER)}) / "s007.py"
    [found] = collect(path, lesson)
    assert (found.student, found.source, found.kind) == ("s007", "s007.py", "kernel")


# ---- roster and rows ---------------------------------------------------------------------------


def test_roster_and_its_mistakes(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(
        "ID,Name,Email,Locale,Aliases\ns1,Wang,w@x,zh-CN,4711;wf\ns2,Alex,,en,\n", encoding="utf-8"
    )
    roster = read_roster(path, ["zh-CN", "en"])
    assert roster[0] == Student("s1", "Wang", "w@x", "zh-CN", ["4711", "wf"])
    path.write_text("id,locale\ns1,fr\ns1,en\n,en\n", encoding="utf-8")
    with pytest.raises(GradeError) as error:
        read_roster(path, ["zh-CN", "en"])
    assert "roster.csv:2: locale 'fr'" in str(error.value) and ":3: id 's1' is listed twice" in str(
        error.value
    )
    assert ":4: no id" in str(error.value)
    path.write_text("name\nx\n", encoding="utf-8")
    with pytest.raises(GradeError, match="no id column"):
        read_roster(path, ["en"])


def data_of(lesson, statuses: dict[str, str], **extra) -> dict:
    """A result as check.py's --json gives it (every case passing unless statuses say otherwise)."""
    cases = [
        {"id": c.id, "group": c.group, "status": statuses.get(c.id, "pass")}
        for c in lesson.spec.checks.cases
    ]
    for case in cases:
        if case["status"] == "fail":
            case.update(
                reason="nan_dropped",
                position=[0],
                inputs={"x": "nan"},
                expected="nan",
                got="0.0",
                count=1,
                n=8,
            )
    score = {
        "normal": 2
        if all(c["status"] in ("pass", "skip") for c in cases if c["group"] == "normal")
        else 1,
        "boundary": 1
        if all(c["status"] in ("pass", "skip") for c in cases if c["group"] == "boundary")
        else 0,
    }
    data = {
        "lesson": lesson.id,
        "locale": "zh-CN",
        "edition": "exercise",
        "file": "relu.py",
        "status": "fail"
        if any(c["status"] != "pass" and c["status"] != "skip" for c in cases)
        else "pass",
        "environment": {
            "interpreter": False,
            "device": "NVIDIA H200",
            "torch": "2.11.0",
            "triton": "3.6.0",
            "python": "3.12.3",
        },
        "load_error": None,
        "edits_outside_blank": [],
        "fill": ANSWER,
        "sandbox": "bubblewrap",
        "flags": {
            "kernels_defined": ["relu_kernel"],
            "kernels_launched": ["relu_kernel"],
            "no_triton": False,
            "patched": [],
            "events": [],
            "inputs_modified": [],
            "protocol": [],
        },
        "cases": cases,
        "score": score,
        "seconds": 1.5,
        "date": "2026-12-01",
    }
    data.update(extra)
    return data


def test_statuses_and_flags(lesson, tmp_path):
    write(tmp_path, {"a/relu.py": kernel(lesson, ANSWER)})
    [sub] = collect(tmp_path, lesson)
    sub.claim = "pass"
    student = Student("a")
    failing = data_of(lesson, {"special_f32": "fail"})
    row = make_row(lesson, student, sub, True, failing, None, None, "on")
    assert (row.status, row.points, row.flags) == (
        "graded",
        {"normal": 2, "boundary": 0},
        ["claim_differs"],
    )
    assert row.locale == "en"  # the pack the file came from
    assert (
        make_row(lesson, student, sub, True, failing, None, "zh-CN", "on").locale == "zh-CN"
    )  # --locale wins
    assert status_of(data_of(lesson, {"seed": "timeout"})) == "timed out"
    assert status_of(data_of(lesson, {"seed": "crash"})) == "crashed"
    events = data_of(
        lesson,
        {},
        flags={
            "events": [{"kind": "network", "event": "socket.connect", "line": "3", "detail": ""}]
        },
    )
    assert status_of(events) == "sandbox violation"
    import_hang = data_of(
        lesson, {}, load_error={"kind": "timeout", "seconds": 4}, status="load_error"
    )
    assert status_of(import_hang) == "timed out"
    missing = make_row(lesson, student, sub, False, None, "FAILED: node died", None, "off")
    assert missing.status == "crashed" and missing.flags == ["not_in_roster", "sandbox_off"]
    # the interpreter skipped cases (bfloat16, GPU-only sizes): a fill may differ on them, so it is said
    skipped = make_row(
        lesson, student, sub, True, data_of(lesson, {"special_f32": "skip"}), None, None, "on"
    )
    assert "cases_not_run" in skipped.flags and skipped.status == "graded"


def test_people_with_a_roster_matches_aliases_and_lists_who_handed_in_nothing(lesson, tmp_path):
    write(
        tmp_path,
        {"wangfang_4711_90001_relu.py": kernel(lesson, ANSWER), "x9/relu.py": kernel(lesson, "xv")},
    )
    roster = [Student("s1", "Wang", aliases=["4711"]), Student("s2", "Alex")]
    pairs = people(collect(tmp_path, lesson), roster)
    assert [(s.id, sub.student if sub else None, known) for s, sub, known in pairs] == [
        ("s1", "4711", True),
        ("s2", None, True),
        ("x9", "x9", False),
    ]


def test_slugs_are_safe_and_unique():
    from generator.grade.rows import Row

    rows = [Row("a/b"), Row("a_b"), Row("..")]
    assign_slugs(rows)
    assert [r.slug for r in rows] == ["a_b", "a_b-2", "student"]


# ---- grades.csv and Gradescope ------------------------------------------------------------------


def graded_rows(lesson, tmp_path):
    write(
        tmp_path,
        {"a/relu.py": kernel(lesson, ANSWER), "b/relu.py": kernel(lesson, "xv"), "c.zip": b"junk"},
    )
    subs = by_id(collect(tmp_path, lesson))
    rows = [
        make_row(
            lesson,
            Student("a", "Wang, Fang"),
            subs["a"],
            True,
            data_of(lesson, {}),
            None,
            None,
            "on",
        ),
        make_row(
            lesson,
            Student("b"),
            subs["b"],
            True,
            data_of(lesson, {"special_f32": "fail"}),
            None,
            "en",
            "on",
        ),
        make_row(lesson, Student("c"), subs["c"], True, None, None, None, "on"),
        make_row(lesson, Student("d"), None, True, None, None, None, "on"),
    ]
    assign_slugs(rows)
    return rows


def test_grades_csv(lesson, tmp_path):
    text = gradebook_csv(lesson, graded_rows(lesson, tmp_path), "en", "on")
    table = list(csv.DictReader(io.StringIO(text)))
    assert [r["student_id"] for r in table] == [POSSIBLE, "a", "b", "c", "d"]
    header = text.splitlines()[0].split(",")
    assert header[:9] == [
        "student_id",
        "name",
        "email",
        "lesson",
        "locale",
        "status",
        "points_normal",
        "points_boundary",
        "points_automatic",
    ]
    assert ["manual_explanation", "manual_q1", "manual_q2", "manual_q3"] == header[9:13]
    a, b, c, d = table[1:]
    assert (
        a["name"],
        a["status"],
        a["points_automatic"],
        a["cases_passed"],
        a["cases_failed"],
    ) == ("Wang, Fang", "graded", "3", str(len(lesson.spec.checks.cases)), "0")
    assert (b["points_automatic"], b["failed_cases"], b["device"], b["torch"]) == (
        "2",
        "special_f32",
        "NVIDIA H200",
        "2.11.0",
    )
    assert (c["status"], d["status"]) == ("unreadable", "no submission")
    assert (
        "c.zip" in c["detail"]
        and a["manual_q1"] == ""
        and a["checker_sha256"] == lesson.checker_hash
    )
    assert table[0]["points_automatic"] == "3" and table[0]["manual_q3"] == "2"


def test_gradescope_results(lesson, tmp_path):
    rows = graded_rows(lesson, tmp_path)
    data = results_json(lesson, rows[1], check_lines(lesson, rows[1], tmp_path / "modules"), "on")
    assert data["score"] == 2 and data["execution_time"] == 1.5 and data["output_format"] == "text"
    groups = data["tests"][:2]
    assert [(t["name"], t["score"], t["max_score"], t["status"]) for t in groups] == [
        ("normal inputs", 2, 2, "passed"),
        ("boundary inputs", 0, 1, "failed"),
    ]
    special = next(t for t in data["tests"] if "(float32)" in t["name"])
    assert special["status"] == "failed" and "why: NaN became 0.0" in special["output"]
    assert (
        "NVIDIA H200" in data["output"]
        and data["extra_data"]["checker_sha256"] == lesson.checker_hash
    )
    unreadable = results_json(
        lesson, rows[2], check_lines(lesson, rows[2], tmp_path / "modules"), "on"
    )
    assert unreadable["score"] == 0 and "c.zip" in unreadable["output"]
    (tmp_path / "meta.json").write_text(
        json.dumps({"users": [{"email": "a@x", "name": "A"}]}), encoding="utf-8"
    )
    assert submitter(tmp_path / "meta.json") == ("a@x", "A", "a@x")
    assert submitter(tmp_path / "missing.json") == ("submission", "", "")


# ---- cache, resume, outputs ----------------------------------------------------------------------


def test_unit_keys_follow_what_a_result_depends_on():
    base = ("code", None, "checker", "runner", 120, "on")
    assert unit_key(*base) == unit_key("code", None, "checker", "runner", 120.0, "on")
    for index, other in enumerate(("code ", 3, "checker2", "gpu", 60, "off")):
        changed = list(base)
        changed[index] = other
        assert unit_key(*changed) != unit_key(*base), changed


def test_a_killed_run_leaves_results_that_the_next_run_keeps(tmp_path):
    units = [Unit(f"k{i}", f"code {i}", None, "relu.py") for i in range(5)]
    chunks = plan(units, tmp_path / "work", "# check.py\n", 2, 1, 10, "on", True, 3)
    assert [len(c.units) for c in chunks] == [2, 2, 1]
    job = json.loads((chunks[0].task.folder / "job.json").read_text(encoding="utf-8"))
    assert [u["id"] for u in job["units"]] == ["k0", "k1"] and job["sandbox"] == "on"
    assert (chunks[0].task.folder / "units" / "k0" / "relu.py").read_text(
        encoding="utf-8"
    ) == "code 0"
    # the job wrote k0's result and k1's half (a killed process leaves its temporary file), then died
    results = chunks[0].task.folder / "results"
    results.mkdir()
    (results / "k0.json").write_text(
        json.dumps({"id": "k0", "data": {"status": "pass"}}), encoding="utf-8"
    )
    (results / ".k1.json.tmp").write_text('{"id": "k1", "da', encoding="utf-8")
    (chunks[1].task.folder / "results").mkdir()
    (chunks[1].task.folder / "results" / "k2.json").write_text(
        json.dumps({"id": "k2", "data": {"status": "checker_error", "error": "boom"}}),
        encoding="utf-8",
    )
    store = ResultStore(tmp_path / "store")
    assert harvest(tmp_path / "work", store) == 1
    assert (
        store.data("k0") == {"status": "pass"}
        and store.data("k1") is None
        and store.data("k2") is None
    )
    assert harvest(tmp_path / "work", store) == 0  # already kept


def test_jobs_that_share_their_work_run_each_unit_once_and_the_idle_ones_take_the_others_last(
    tmp_path, monkeypatch
):
    """Local jobs at once (share): a job done with its own units takes the other jobs' from their
    ends; a unit claimed by one job is never run by another; results are found wherever they lie."""
    import importlib.util
    from generator.grade.tasks import GRADE_JOB, collect_results
    from generator.runners.base import TaskResult

    spec = importlib.util.spec_from_file_location("grade_job_for_test", GRADE_JOB)
    grade_job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grade_job)
    units = [Unit(f"k{i}", f"code {i}", None, "relu.py") for i in range(7)]
    chunks = plan(units, tmp_path / "work", "# check.py\n", 3, 2, 10, "on", True, 3, share=True)
    assert [len(c.units) for c in chunks] == [3, 3, 1]
    queues = {}
    for chunk in chunks:  # each job reads its job.json from its own folder, as grade_job.py does
        monkeypatch.chdir(chunk.task.folder)
        job = json.loads(Path("job.json").read_text(encoding="utf-8"))
        assert job["share"]["claims"] == "../claims"
        queues[chunk.task.folder.name] = grade_job.Queue(job, Path("results"))
    monkeypatch.chdir(tmp_path / "work" / "task-0002")
    short = queues["task-0002"]
    assert short.left() == 7  # its own and the others', none claimed yet
    taken = [short.next()["id"], short.next()["id"], short.next()["id"]]
    assert taken == ["k6", "k2", "k5"]  # its own, then the ends of the next jobs'
    assert short.left() == 4 and queues["task-0000"].left() == 4  # what may still come to each
    assert (
        Path(short.next()["path"]).read_text(encoding="utf-8") == "code 1"
    )  # another job's file, from here
    monkeypatch.chdir(tmp_path / "work" / "task-0000")
    first = [u["id"] for u in iter(queues["task-0000"].next, None)]
    assert first == ["k0", "k4", "k3"]  # k1 and k2 were claimed by the job that ran them
    assert (
        queues["task-0001"].next() is None and queues["task-0001"].left() == 0
    )  # everything is claimed
    # task-0002 wrote the results of k2 and k6: found for the chunks they were planned in
    for unit_id in ("k2", "k6"):
        folder = tmp_path / "work" / "task-0002" / "results"
        folder.mkdir(exist_ok=True)
        (folder / f"{unit_id}.json").write_text(
            json.dumps({"id": unit_id, "data": {"status": "pass"}}), encoding="utf-8"
        )
    store = ResultStore(tmp_path / "store")
    finished = collect_results(
        chunks, [TaskResult(c.task.name, "COMPLETED", 0, "", "", 0.0) for c in chunks], store
    )
    assert (
        "k2" not in finished.missing and "k6" not in finished.missing and "k0" in finished.missing
    )


def test_outputs_are_replaced_whole_or_not_at_all(lesson, tmp_path, monkeypatch):
    from generator.grade import run

    out = tmp_path / "out"
    rows = graded_rows(lesson, tmp_path / "class")
    options = run.GradeOptions(tmp_path / "class", lesson.id, out=out)
    run._write_outputs(lesson, rows, out, tmp_path / "build", options, "en")
    first = (out / "grades.csv").read_text(encoding="utf-8")
    assert {p.name for p in out.iterdir()} >= {
        "grades.csv",
        "feedback",
        "gradescope",
        "summary.md",
        "summary.html",
        "score_distribution.svg",
        "rubric.json",
        "answers.json",
    }

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(run, "gradebook_csv", broken)
    with pytest.raises(OSError):
        run._write_outputs(lesson, rows[:1], out, tmp_path / "build", options, "en")
    assert (out / "grades.csv").read_text(encoding="utf-8") == first
    assert len(list((out / "feedback").glob("*.md"))) == 4


def test_an_output_folder_of_something_else_is_refused(tmp_path):
    from generator.grade.run import check_out_folder

    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(GradeError, match="holds no earlier grading"):
        check_out_folder(tmp_path)
    check_out_folder(tmp_path / "new")


def test_no_sandbox_is_refused_unless_turned_off(lesson, tmp_path, monkeypatch):
    from generator.grade import run

    monkeypatch.setattr(run, "sandbox_problem", lambda: "bubblewrap is not installed")
    options = run.GradeOptions(tmp_path, lesson.id, content=REPO / "content", runner="interpreter")
    with pytest.raises(GradeError, match="bubblewrap is not installed.*--sandbox off"):
        run._runner(options, tmp_path / "build", lambda line: None)
    options.sandbox = "off"
    assert run._runner(options, tmp_path / "build", lambda line: None).kind == "interpreter"


def test_the_distribution_counts_every_graded_student_a_blank_included(lesson, tmp_path):
    """A blank file is graded (0 points): it counts in the distribution of automatic points, beside
    the students whose kernels ran; a missing or unreadable submission does not."""
    from generator.grade.summary import automatic_points, summary_markdown

    rows = graded_rows(lesson, tmp_path / "class")
    write(tmp_path / "blank", {"e/relu.py": "x = 1\n"})
    [blank_sub] = collect(tmp_path / "blank", lesson)
    blank = make_row(
        lesson,
        Student("e"),
        blank_sub,
        True,
        {
            **data_of(lesson, {}),
            "status": "blank",
            "cases": [],
            "score": {"normal": 0, "boundary": 0},
        },
        None,
        None,
        "on",
    )
    assert blank.status == "graded" and blank.automatic == 0
    rows.append(blank)
    assert automatic_points(rows) == {3: 1, 2: 1, 0: 1}
    summary = summary_markdown(lesson, rows, "en", "on")
    assert "| 0/3 | 1 |" in summary and "| 3/3 | 1 |" in summary and "5 student(s)" in summary


def test_gradescope_tests_take_their_own_case_lines_when_names_share_a_prefix():
    from generator.grade.gradescope import case_lines

    output = ["  PASS  n=10", "  FAIL  n=1", "        why: x", "  SKIP  n=100  (skipped: y)"]
    assert case_lines(output, "n=1") == ["FAIL  n=1", "why: x"]
    assert case_lines(output, "n=10") == ["PASS  n=10"]
    assert case_lines(output, "n=100") == ["SKIP  n=100  (skipped: y)"]


def test_local_grading_splits_the_judging_over_a_process_per_four_jobs_and_one_per_gpu_at_least():
    from generator.grade.run import trusted_processes

    assert trusted_processes(16, 600) == 4 and trusted_processes(16, 3) == 3
    assert trusted_processes(2, 600) == 1 and trusted_processes(1, 1) == 1
    assert trusted_processes(8, 600, gpus=4) == 4 and trusted_processes(64, 600, gpus=4) == 16
    assert trusted_processes(16, 2, gpus=8) == 2  # never more processes than submissions


def test_the_gpus_a_run_spreads_over_are_those_cuda_would_show():
    from generator.grade.gpus import visible_gpus

    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}, count=lambda: 8) == ["2", "3"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-1a2b, GPU-3c4d"}, count=lambda: 8) == [
        "GPU-1a2b",
        "GPU-3c4d",
    ]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1,,2"}, count=lambda: 8) == [
        "1"
    ]  # CUDA stops at an empty one
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, count=lambda: 8) == []
    assert visible_gpus({}, count=lambda: 4) == ["0", "1", "2", "3"]
    assert visible_gpus({}, count=lambda: 0) == []


FAKE_CHECKER = """
import os
class Refused(Exception):
    pass
def sandbox_problem():
    return None
def triton_cache_dir():
    return None
class _Factory:
    def wait_ready(self, seconds):
        pass
    def add_seed(self, folder):
        pass
class Session:
    def __init__(self, interpreter, sandboxed, checker=None, start_margin=0, spares=0):
        self.factory, self.timing = _Factory(), {"device_then": os.environ.get("CUDA_VISIBLE_DEVICES")}
    def hold_spares(self, n):
        pass
    def close(self):
        pass
def check_unit(unit, timeout, session):
    return {"status": "pass", "saw": os.environ.get("CUDA_VISIBLE_DEVICES")}
def close_factories():
    pass
def open_session(job, policy, **options):
    return Session(job["interpreter"], False, **options), "off", ""
def leave(code):
    os._exit(code)
"""


def test_each_job_runs_its_workers_on_the_gpu_it_was_given(tmp_path):
    """plan() deals the machine's GPUs to the jobs in turn; grade_job.py sets the job's one as
    CUDA_VISIBLE_DEVICES before its session (and so its worker factory) starts."""
    import subprocess
    import sys
    from generator.grade.tasks import GRADE_JOB

    units = [Unit(f"k{i}", f"code {i}", None, "relu.py") for i in range(6)]
    chunks = plan(
        units,
        tmp_path / "work",
        FAKE_CHECKER,
        2,
        1,
        10,
        "off",
        True,
        3,
        share=True,
        devices=["4", "7"],
    )
    folders = [c.task.folder for c in chunks]
    assert [
        json.loads((f / "job.json").read_text(encoding="utf-8"))["device"] for f in folders
    ] == ["4", "7", "4"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="4,7")
    for folder in folders:
        done = subprocess.run(
            [sys.executable, str(GRADE_JOB)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    for folder, device in zip(folders, ["4", "7", "4"]):
        summary = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        assert summary["device"] == device and summary["session"]["device_then"] == device
        for path in (folder / "results").glob("*.json"):
            assert json.loads(path.read_text(encoding="utf-8"))["data"]["saw"] == device
    ran = sorted(p.stem for f in folders for p in (f / "results").glob("*.json"))
    assert ran == [u.key for u in units]  # each unit once, whichever job claimed it
    unpinned = plan(units, tmp_path / "work2", FAKE_CHECKER, 3, 1, 10, "off", True, 3)
    assert "device" not in json.loads(
        (unpinned[0].task.folder / "job.json").read_text(encoding="utf-8")
    )


def test_launchers_are_made_once_from_the_answer_while_a_sandboxed_class_starts(lesson, tmp_path):
    """LauncherSeed: in a build folder without Triton's launchers, the lesson's answer (never a
    student's code) is checked once, unsandboxed, in the runner's Triton cache, beside the grading
    jobs, which wait for its `done` file; then not again for that checker and runner."""
    from generator.grade.run import LauncherSeed
    from generator.runners.base import TaskResult

    ran, lines = [], []

    class FakeRunner:
        cache_dir = tmp_path / "triton-cache"

        def run_tasks(self, tasks, progress=None, parallel=1):
            [task] = tasks
            ran.append(
                (
                    task.argv,
                    (task.folder / lesson.spec.kernel_file).read_text(encoding="utf-8"),
                    (task.folder / "check.py").read_text(encoding="utf-8"),
                )
            )
            made = (
                self.cache_dir / f"LAUNCHER{len(ran)}"
            )  # what Triton leaves: a folder holding only a C module
            made.mkdir(parents=True)
            (made / "__triton_launcher.so").write_bytes(b"\x7fELF")
            return [TaskResult(task.name, "COMPLETED", 0, "", "", 2.5)]

    def seed(identity):
        made = LauncherSeed(lesson, FakeRunner(), tmp_path / "build", identity, 10.0)
        if made.needed():
            made.start(lines.append)
            made.finish()
        return made

    assert "tl.maximum" in lesson.answer or "tl.where" in lesson.answer
    first = seed("runner-id")
    assert len(ran) == 1 and ran[0][0][:3] == ["{python}", "check.py", lesson.spec.kernel_file]
    assert (
        ran[0][1] == lesson.answer and ran[0][2] == lesson.checker and "launchers made" in lines[-1]
    )
    assert not first.folder.exists()  # done with: its result is the cache's launchers
    seed("runner-id")
    assert len(ran) == 1  # made already for this checker and runner
    seed("another-runner")
    assert len(ran) == 2


def test_launchers_added_to_a_running_sandboxs_seed_appear_whole(tmp_path):
    """add_launchers: the staged seed (mounted in the sandbox) gets the launchers made after the
    factory started, each one renamed into place complete; a worker's copy skips one being added,
    and takes it before it loads the code it checks (refresh_seed)."""
    from generator.checker.shared import sandbox

    cache = tmp_path / "cache"
    for name, files in (("L1", ["__triton_launcher.so"]), ("K1", ["relu.cubin", "relu.ttir"])):
        (cache / name).mkdir(parents=True)
        for file in files:
            (cache / name / file).write_bytes(b"x")
    empty = sandbox.stage_launcher_seed(str(tmp_path / "none"), always=True)
    assert (
        empty
        and os.listdir(empty) == []
        and sandbox.stage_launcher_seed(str(tmp_path / "none")) is None
    )
    sandbox.add_launchers(str(cache), empty)
    assert os.listdir(empty) == ["L1"]  # never a compiled kernel
    (Path(empty) / ".new-L2").mkdir()  # being added right now
    monkeyed = tmp_path / "scratch"
    old = (sandbox.SANDBOX_SEED, sandbox.SCRATCH_ROOT)
    sandbox.SANDBOX_SEED, sandbox.SCRATCH_ROOT = empty, str(monkeyed)
    try:
        sandbox._seed_triton_cache()
        assert sorted(os.listdir(monkeyed / "triton")) == ["L1"]
        # a spare that waited while the launchers were made takes the new ones before it loads code
        (Path(empty) / ".new-L2").rename(Path(empty) / "L2")
        (Path(empty) / "L2" / "__triton_launcher.so").write_bytes(b"y")
        (monkeyed / "triton" / "L1" / "__triton_launcher.so").write_bytes(b"kept")
        sandbox.refresh_seed()
    finally:
        sandbox.SANDBOX_SEED, sandbox.SCRATCH_ROOT = old
    assert sorted(os.listdir(monkeyed / "triton")) == ["L1", "L2"]
    assert (
        monkeyed / "triton" / "L1" / "__triton_launcher.so"
    ).read_bytes() == b"kept"  # copied once only
    assert (monkeyed / "triton" / "L2" / "__triton_launcher.so").read_bytes() == b"y"
    shutil.rmtree(empty)


def test_a_kit_has_no_answer_to_make_launchers_from(lesson, tmp_path):
    from generator.grade.lesson import kit_json, load_kit

    (tmp_path / "kit.json").write_text(kit_json(lesson), encoding="utf-8")
    assert load_kit(tmp_path / "kit.json").answer is None
    assert lesson.answer not in (tmp_path / "kit.json").read_text(encoding="utf-8")
