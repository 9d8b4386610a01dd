"""export-sheet / import-sheet: a round trip, and every kind of bad sheet refused whole with
file:line:column (nothing written)."""

from __future__ import annotations

import csv
import io

import pytest

from generator.cli import main
from generator.review.sheet import export_sheet, import_sheet
from generator.review.store import Gradebook, ReviewError
from generator.review.sync import sync
from tests.review_fixture import answer_set, make_folder, student


@pytest.fixture
def folder(tmp_path):
    answers = {"s001": answer_set(), "s002": answer_set("two\nlines"), "s003": answer_set()}
    answers["s001"]["parts"]["q1"]["text"] = "=cmd|' /C calc'!A0"  # a spreadsheet would run it
    folder = make_folder(tmp_path, students=[student(1), student(2), student(3)], answers=answers)
    sync(folder)
    return folder


def _rows(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_round_trip(folder, tmp_path):
    sheet = tmp_path / "sheet.csv"
    assert export_sheet(folder, sheet) == 12
    rows = _rows(sheet)
    assert list(rows[0]) == [
        "student_id",
        "part",
        "answer",
        "answer_status",
        "points",
        "max_points",
        "comment",
        "version",
    ]
    assert rows[1]["answer"] == "'=cmd|' /C calc'!A0"
    assert rows[4]["answer"] == "explanation: two\nlines" and rows[1]["max_points"] == "2"
    rows[1].update(points="1.5", comment="=looks like a formula")
    rows[5].update(points="2")
    _write(sheet, rows)
    assert import_sheet(folder, sheet, "ann") == 2
    scores = Gradebook(folder).scores()
    assert (
        scores[("s001", "q1")].points == 1.5
        and scores[("s001", "q1")].comment == "=looks like a formula"
    )
    assert scores[("s002", "q1")].points == 2
    grades = {r["student_id"]: r for r in _rows(folder / "grades.csv")}
    assert grades["s001"]["manual_q1"] == "1.5"
    assert import_sheet(folder, sheet, "ann") == 0  # the same sheet again: nothing changed
    assert "=looks like a formula" in (folder / "feedback" / "s001.md").read_text(encoding="utf-8")
    semicolons = tmp_path / "semicolons.csv"  # as a spreadsheet with a decimal comma saves it
    semicolons.write_text("student_id;part;points;comment\ns003;q3;1,5;ok\n", encoding="utf-8")
    assert import_sheet(folder, semicolons, "ann") == 1
    assert Gradebook(folder).scores()[("s003", "q3")].points == 1.5


def _write(path, rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_bad_sheet_is_refused_whole_with_locations(folder, tmp_path):
    sheet = tmp_path / "sheet.csv"
    export_sheet(folder, sheet)
    rows = _rows(sheet)
    rows[0].update(points="1")  # fine on its own, but nothing may be written
    rows[1].update(points="3")  # above max 2
    rows[2].update(points="-1")  # below 0
    rows[3].update(points="two")  # not a number
    rows[5].update(student_id="s999")  # unknown student
    rows[6].update(part="q7")  # unknown part
    _write(sheet, rows)
    with pytest.raises(ReviewError) as refused:
        import_sheet(folder, sheet, "ann")
    text = str(refused.value)
    # s002's answer spans two lines: the rows after it start one line later
    for expected in (
        f"{sheet}:3:5: points: 3 is above the part's 2",
        f"{sheet}:4:5: points: -1 is below 0",
        f"{sheet}:5:5: points: 'two' is not a number",
        f"{sheet}:8:1: student_id: unknown student 's999'",
        f"{sheet}:10:2: part: unknown part 'q7'",
    ):
        assert expected in text, text
    assert Gradebook(folder).scores() == {}


def test_stale_sheet_is_a_conflict(folder, tmp_path):
    sheet = tmp_path / "sheet.csv"
    export_sheet(folder, sheet)
    Gradebook(folder).set_score("s001", "q1", 2, "from the page", 0, "bob")
    rows = _rows(sheet)
    rows[1].update(points="1")
    _write(sheet, rows)
    with pytest.raises(ReviewError, match=r"sheet.csv:3:8: version: the score was saved since"):
        import_sheet(folder, sheet, "ann")
    assert Gradebook(folder).scores()[("s001", "q1")].comment == "from the page"


def test_cli_sheet_errors_without_traceback(folder, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    assert main(["review", "export-sheet", str(folder), "-o", str(sheet)]) == 0
    sheet.write_text("student_id,part\ns001,q1\n", encoding="utf-8")
    assert main(["review", "import-sheet", str(folder), str(sheet)]) == 1
    err = capsys.readouterr().err
    assert f"{sheet}:1:1: the header lacks points" in err and "Traceback" not in err


def test_cli_refuses_a_folder_that_is_not_a_grading(tmp_path, capsys):
    assert main(["review", str(tmp_path)]) == 1
    assert (
        main(
            ["review", "export", str(tmp_path), "--format", "otter", "-o", str(tmp_path / "x.csv")]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.count("not a grading folder (no grades.csv") == 2 and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists()
