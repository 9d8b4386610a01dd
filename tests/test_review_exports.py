"""Each export read by a port of its real importer's rules (not by our own reader):

- Canvas: app/models/gradebook_importer.rb (instructure/canvas-lms): the delimiter guess over the
  first three lines, header? / update_column_count / last_student_info_column, the columns it
  strips, the `Points Possible` row, muted rows, students by ID then SIS ids then name, the
  decimal-comma converter.
- Moodle: mod/assign/feedback/offline/importgradeslib.php and locallib.php: columns found by their
  exact names (Identifier, Grade, Last modified (grade), Feedback comments), the participant id
  after 'Participant ', unformat_float, the skips (blank, below 0, above the maximum, a grade
  changed in Moodle more than 60 s after the sheet's time).
- otter: otter/grade/utils.py (merge_scores_to_df): the column order, the points-per-question row
  first, rows sorted by file, percent_correct = round(total / possible, 4).
- nbgrader: nbgrader/plugins/export.py (CsvExportPlugin): its eleven keys in order."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone

import pytest

from generator.review.exports import cell, export, grades_csv
from generator.review.store import Gradebook, ReviewError
from generator.review.sync import sync
from tests.review_fixture import make_folder, student


@pytest.fixture
def book(tmp_path) -> Gradebook:
    folder = make_folder(
        tmp_path, students=[student(1), student(2), student(3, name='=HYPERLINK("x")')]
    )
    sync(folder)
    book = Gradebook(folder)
    for sid, points in (("s001", (1, 2, 2, 1)), ("s002", (1, 2, 2, 2))):
        for part, p in zip(("explanation", "q1", "q2", "q3"), points):
            book.set_score(sid, part, p, f"{part} ok", 0, "ann")
    book.set_score("s003", "q1", 2, "", 0, "ann")  # 1 of 4 graded: no total
    book.set_veto("s002", "boundary_removed", True, "mask= removed from the store", 0, "ann")
    return book


# --- Canvas ----------------------------------------------------------------------------------

NON_ASSIGNMENT = re.compile(
    "Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
    "Override Score|Override Grade|Override Status"
)


def canvas_delimiter(text: str) -> str:
    counts = {}
    for sep in (";", ","):
        counts[sep] = 0
        sizes = [len(next(csv.reader([line], delimiter=sep))) for line in text.splitlines()[:3]]
        if len(set(sizes)) == 1:
            counts[sep] = sizes[0]
    return ";" if counts[";"] > counts[","] else ","


def canvas_import(text: str, students: dict[str, str], sis: dict[str, str]):
    """(points possible by assignment, {student: {assignment: grade}}) as Canvas's importer reads it."""
    assert canvas_delimiter(text) == ","
    rows = [r for r in csv.reader(io.StringIO(text)) if not re.fullmatch(r"[;, ]+", ",".join(r))]
    header = rows[0]
    if not (len(header) > 3 and "Student" in header[0] and "ID" in header[1]):
        raise ValueError("Invalid header row")
    columns = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        columns += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        columns += 2
    if "Section" not in header[columns - 1]:
        raise ValueError("Invalid header row")
    assignments = [
        (i, h) for i, h in enumerate(header) if i >= columns and not NON_ASSIGNMENT.search(h)
    ]
    possible, grades = {}, {}
    for row in rows[1:]:
        if row[0] and "Points Possible" in row[0]:
            possible = {h: row[i] for i, h in assignments}
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", c, re.I) for c in row):
            continue
        who = students.get(row[1]) or sis.get(row[2]) or sis.get(row[3])
        assert who, f"Canvas would make a new student of {row}"
        grades[who] = {h: _decimal(row[i].strip()) for i, h in assignments}
    return possible, grades


def _decimal(field: str) -> str:
    if re.fullmatch(r"-?[0-9.,]+%?", field):
        parts = re.split(r"[,.]", field)
        last = parts.pop()
        return last if not parts else "".join(parts) + "." + last
    return field


def test_canvas_import_reads_totals_possible_and_students(book, tmp_path):
    out = tmp_path / "canvas.csv"
    export(book.folder, "canvas", out, assignment="Lesson 3: ReLU (4711)")
    text = out.read_text(encoding="utf-8")
    possible, grades = canvas_import(text, {}, {"s001": "s001", "s002": "s002", "s003": "s003"})
    assert possible == {"Lesson 3: ReLU (4711)": "10"}
    assert grades["s001"]["Lesson 3: ReLU (4711)"] == "9"  # 3 automatic + 6 manual
    assert grades["s002"]["Lesson 3: ReLU (4711)"] == "10"  # the veto fails it; the points stay
    assert grades["s003"]["Lesson 3: ReLU (4711)"] == ""  # not fully graded: no made-up total
    assert "'=HYPERLINK" in text  # a name that would run as a formula


def test_canvas_matches_an_export_and_per_part_columns(book, tmp_path):
    exported = tmp_path / "export.csv"
    exported.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Lesson 3 (4711)\n"
        "    Points Possible,,,,,10\n"
        '"Name1, Student",101,s001,s001@uni.edu,Sec A,\n'
        '"Name2, Student",102,S002,s002@uni.edu,Sec B,\n',
        encoding="utf-8",
    )
    out = tmp_path / "canvas.csv"
    export(book.folder, "canvas", out, assignment="Lesson 3", per_part=True, canvas_export=exported)
    possible, grades = canvas_import(
        out.read_text(encoding="utf-8"), {"101": "s001", "102": "s002"}, {"s003": "s003"}
    )
    assert possible["Lesson 3: q1"] == "2" and possible["Lesson 3: normal"] == "2"
    assert grades["s001"]["Lesson 3: q1"] == "2" and grades["s001"]["Lesson 3: normal"] == "2"
    assert grades["s003"]["Lesson 3: q2"] == ""
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert rows[2][:5] == ["Name1, Student", "101", "s001", "s001@uni.edu", "Sec A"]


# --- Moodle ----------------------------------------------------------------------------------


def moodle_import(
    text: str, participants: dict[str, str], maximum: float, moodle_times: dict[str, float]
):
    """{user: (grade, feedback)} of the rows Moodle's offline import would apply."""
    rows = list(csv.reader(io.StringIO(text)))
    columns = rows[0]
    at = {
        name: columns.index(name)
        for name in ("Grade", "Identifier", "Last modified (grade)")
        if name in columns
    }
    if len(at) < 3:
        raise ValueError("invalidgradeimport")
    feedback = columns.index("Feedback comments") if "Feedback comments" in columns else None
    applied = {}
    for record in rows[1:]:
        user = participants.get(record[at["Identifier"]][len("Participant ") :])
        if user is None:
            continue
        grade_text = record[at["Grade"]]
        modified = datetime.strptime(record[at["Last modified (grade)"]], "%Y-%m-%d %H:%M:%S UTC")
        modified = modified.replace(tzinfo=timezone.utc).timestamp()
        stale = moodle_times.get(user, 0) > modified + 60
        grade = float(grade_text.replace(",", ".")) if grade_text != "" else None
        skip = grade is None or grade < 0 or stale or grade > maximum
        applied[user] = (
            None if skip else grade,
            record[feedback] if feedback is not None and not stale else None,
        )
    return applied


WORKSHEET = (
    "Identifier,Full name,Email address,Status,Grade,Maximum grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
    "Participant 5001,Student Name1,s001@uni.edu,Submitted,,10.00,Yes,-,-,\n"
    "Participant 5002,Student Name2,s002@uni.edu,Submitted,,10.00,Yes,-,-,\n"
    "Participant 5003,x,s003@uni.edu,Submitted,,10.00,Yes,-,-,\n"
)


def test_moodle_worksheet_imports_grades_and_feedback(book, tmp_path):
    sheet = tmp_path / "worksheet.csv"
    sheet.write_text(WORKSHEET, encoding="utf-8")
    out = tmp_path / "moodle.csv"
    export(book.folder, "moodle", out, moodle_worksheet=sheet)
    applied = moodle_import(
        out.read_text(encoding="utf-8"), {"5001": "s001", "5002": "s002", "5003": "s003"}, 10, {}
    )
    assert applied["s001"][0] == 9 and applied["s001"][1].startswith("pass")
    assert (
        applied["s002"][0] == 10
        and "fail" in applied["s002"][1]
        and "mask= removed" in applied["s002"][1]
    )
    assert applied["s003"][0] is None and "manual: 1 of 4 parts graded" in applied["s003"][1]
    later = moodle_import(out.read_text(encoding="utf-8"), {"5001": "s001"}, 10, {"s001": 4e9})
    assert later["s001"] == (None, None)  # changed in Moodle since: Moodle keeps its own


def test_moodle_needs_the_worksheet_and_every_student_in_it(book, tmp_path):
    with pytest.raises(ReviewError, match="--moodle-worksheet"):
        export(book.folder, "moodle", tmp_path / "m.csv")
    sheet = tmp_path / "worksheet.csv"
    sheet.write_text(WORKSHEET.rsplit("Participant 5003", 1)[0], encoding="utf-8")
    with pytest.raises(ReviewError, match="no participant for 1 student"):
        export(book.folder, "moodle", tmp_path / "m.csv", moodle_worksheet=sheet)
    assert not (tmp_path / "m.csv").exists()


# --- otter, nbgrader, grades.csv -------------------------------------------------------------


def test_otter_final_grades_columns_and_rows(book, tmp_path):
    out = tmp_path / "final_grades.csv"
    export(book.folder, "otter", out)
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    header = list(rows[0])
    questions = header[1:-3]
    assert header[0] == "file" and header[-3:] == [
        "total_points_earned",
        "percent_correct",
        "grading_status",
    ]
    assert questions == sorted(questions) == ["boundary", "explanation", "normal", "q1", "q2", "q3"]
    assert rows[0]["file"] == "points-per-question" and rows[0]["percent_correct"] == "1"
    assert rows[0]["grading_status"] == "--" and rows[0]["total_points_earned"] == "10"
    files = [r["file"] for r in rows[1:]]
    assert files == sorted(files)
    first = rows[1]
    assert (first["total_points_earned"], first["percent_correct"], first["grading_status"]) == (
        "9",
        "0.9",
        "Completed",
    )
    assert (
        rows[3]["total_points_earned"] == ""
        and rows[3]["grading_status"] == "manual: 1 of 4 parts graded"
    )


def test_nbgrader_export_keys(book, tmp_path):
    out = tmp_path / "nbgrader.csv"
    export(book.folder, "nbgrader", out)
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert rows[0] == [
        "assignment",
        "duedate",
        "timestamp",
        "student_id",
        "last_name",
        "first_name",
        "email",
        "raw_score",
        "late_submission_penalty",
        "score",
        "max_score",
    ]
    first = dict(zip(rows[0], rows[1]))
    assert (first["student_id"], first["raw_score"], first["score"], first["max_score"]) == (
        "s001",
        "9",
        "9",
        "10",
    )
    assert dict(zip(rows[0], rows[3]))["raw_score"] == ""


def test_grades_csv_has_totals_results_vetoes(book):
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO(grades_csv(book)))}
    assert rows["POINTS POSSIBLE"]["max_total"] == "10"
    assert (rows["s001"]["total"], rows["s001"]["result"], rows["s001"]["manual_q1"]) == (
        "9",
        "pass",
        "2",
    )
    assert (
        rows["s002"]["result"] == "fail"
        and rows["s002"]["vetoes"] == "boundary_removed: mask= removed from the store"
    )
    assert rows["s003"]["total"] == "" and rows["s003"]["result"] == "manual: 1 of 4 parts graded"


def test_cell_quotes_formulas_keeps_numbers():
    assert [cell(v) for v in ("=1+1", "+x", "@SUM", "-2", "plain", 3, 2.5, None)] == [
        "'=1+1",
        "'+x",
        "'@SUM",
        "'-2",
        "plain",
        "3",
        "2.5",
        "",
    ]


def test_roster_aliases_give_canvas_ids_and_moodle_participants(book, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,locale,aliases\ns001,A,s001@uni.edu,en,4711;a_one\n"
        "s002,B,s002@uni.edu,en,Participant 9;5020\ns003,C,,en,Participant 10\n",
        encoding="utf-8",
    )
    out = tmp_path / "canvas.csv"
    export(book.folder, "canvas", out, assignment="L3", roster=roster)
    _, grades = canvas_import(
        out.read_text(encoding="utf-8"), {"4711": "s001", "5020": "s002"}, {"s003": "s003"}
    )
    assert grades["s001"]["L3"] == "9" and grades["s002"]["L3"] == "10"
    with pytest.raises(ReviewError, match="no participant for 1 student"):
        export(book.folder, "moodle", tmp_path / "m.csv", roster=roster)
    roster.write_text(
        roster.read_text(encoding="utf-8").replace("4711;a_one", "Participant 8"), encoding="utf-8"
    )
    export(book.folder, "moodle", tmp_path / "m.csv", roster=roster)
    applied = moodle_import(
        (tmp_path / "m.csv").read_text(encoding="utf-8"),
        {"8": "s001", "9": "s002", "10": "s003"},
        10,
        {},
    )
    assert applied["s001"][0] == 9 and applied["s003"][0] is None


def test_a_file_that_is_not_a_canvas_export_is_refused(book, tmp_path):
    wrong = tmp_path / "not-canvas.csv"
    wrong.write_text("name,score\nx,1\n", encoding="utf-8")
    with pytest.raises(ReviewError, match=r"not-canvas.csv:1: not a Canvas gradebook export"):
        export(book.folder, "canvas", tmp_path / "c.csv", canvas_export=wrong)
    assert not (tmp_path / "c.csv").exists()


def test_moodle_participant_numbers_decide_and_a_shared_name_identifies_no_one(tmp_path):
    """A Moodle export's student id is the participant number: two students of the same full name
    get their own rows; a name two participants share matches neither of them."""
    folder = make_folder(
        tmp_path,
        students=[
            student(101, name="Wei Zhang", id="101", email=""),
            student(202, name="Wei Zhang", id="202", email=""),
        ],
    )
    sync(folder)
    sheet = tmp_path / "worksheet.csv"
    sheet.write_text(
        WORKSHEET.split("\n", 1)[0] + "\nParticipant 202,Wei Zhang,,Submitted,,10.00,Yes,-,-,\n"
        "Participant 101,Wei Zhang,,Submitted,,10.00,Yes,-,-,\n",
        encoding="utf-8",
    )
    out = tmp_path / "moodle.csv"
    export(folder, "moodle", out, moodle_worksheet=sheet)
    identifiers = [
        row["Identifier"] for row in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))
    ]
    assert sorted(identifiers) == ["Participant 101", "Participant 202"]
    other = make_folder(tmp_path / "b", students=[student(1, name="Wei Zhang", email="")])
    sync(other)
    with pytest.raises(ReviewError, match="no participant for 1 student"):
        export(other, "moodle", tmp_path / "m.csv", moodle_worksheet=sheet)


def test_a_formula_like_id_keeps_its_own_scores_in_grades_csv(tmp_path):
    """grading writes the id as text ('=...); the review reads it back as the id it is."""
    folder = make_folder(tmp_path, students=[student(1, id='=HYPERLINK("x")'), student(2)])
    sync(folder)
    book = Gradebook(folder)
    book.set_score('=HYPERLINK("x")', "q1", 1, "", 0, "ann")
    rows = list(csv.DictReader(io.StringIO(grades_csv(book))))
    row = next(r for r in rows if r["student_id"] == '\'=HYPERLINK("x")')
    assert (
        row["manual_q1"] == "1"
        and row["manual_q2"] == ""
        and row["result"].startswith("manual: 1 of")
    )
