"""Grading in a spreadsheet: one row per student and manual part out, the points and comments back.

Columns: student_id, part, answer (the student's text, not read back), answer_status (answered,
empty, untouched or absent: no answer place in what was handed in), points, max_points, comment,
version (the score's version when exported: a row whose score was saved since, in the
review page or another sheet, is a conflict). A bad sheet is refused whole, every problem with
file:line:column; nothing is written unless every row is right."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from generator.files.cache import write_text_atomically
from generator.review.exports import csv_rows, number_text, uncell, write_grades_csv
from generator.review.feedback import write_student_feedback
from generator.review.store import Gradebook, ReviewError, manual_points

COLUMNS = [
    "student_id",
    "part",
    "answer",
    "answer_status",
    "points",
    "max_points",
    "comment",
    "version",
]
REQUIRED = ("student_id", "part", "points")


def export_sheet(folder: Path, out: Path) -> int:
    book = Gradebook(folder)
    rubric = book.rubric()
    limits = manual_points(rubric)
    scores = book.scores()
    rows = []
    for student in book.students():
        for part, limit in limits.items():
            score = scores.get((student["id"], part))
            answer = student["answers"].get("parts", {}).get(part, {})
            status = answer.get("status", "absent")
            rows.append(
                [
                    student["id"],
                    part,
                    answer.get("text", "") if status == "answered" else "",
                    status,
                    number_text(score.points) if score else "",
                    limit,
                    score.comment if score else "",
                    score.version if score else 0,
                ]
            )
    write_text_atomically(out, csv_rows(rows, COLUMNS))
    return len(rows)


def import_sheet(folder: Path, sheet: Path, grader: str) -> int:
    """The changed rows of the sheet saved in one transaction; how many."""
    book = Gradebook(folder)
    rubric = book.rubric()
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReviewError(f"{sheet}: cannot read the sheet ({exc})") from exc
    changes, problems = read_changes(
        text, str(sheet), {s["id"] for s in book.students()}, manual_points(rubric), book.scores()
    )
    if problems:
        raise ReviewError("the sheet was not imported (nothing written):\n" + "\n".join(problems))
    if changes:
        book.set_scores(changes, grader)
        write_grades_csv(Path(folder))
        for sid in sorted({change[0] for change in changes}):
            write_student_feedback(book, sid)
    return len(changes)


def _records(text: str):
    """(first line of the record, its fields) for every record of the CSV text; separated by
    commas, or by semicolons where the header has more of them (a spreadsheet of a locale whose
    decimal mark is the comma saves so)."""
    header = text.split("\n", 1)[0]
    reader = csv.reader(
        io.StringIO(text), delimiter=";" if header.count(";") > header.count(",") else ","
    )
    start = 1
    for fields in reader:
        yield start, fields
        start = reader.line_num + 1


def read_changes(text: str, name: str, students: set[str], limits: dict[str, float], scores: dict):
    """(changes, problems): changes as (student, part, points, comment, version)."""
    problems, changes, seen = [], [], {}
    try:
        records = list(_records(text))
    except csv.Error as exc:
        return [], [f"{name}: not a CSV file ({exc})"]
    if not records:
        return [], [f"{name}:1:1: empty sheet: expected the header {','.join(COLUMNS)}"]
    header = [h.strip() for h in records[0][1]]
    at = {h: i for i, h in enumerate(header)}
    absent = [c for c in REQUIRED if c not in at]
    if absent:
        return [], [
            f"{name}:1:1: the header lacks {', '.join(absent)} (expected {','.join(COLUMNS)})"
        ]
    for line, fields in records[1:]:
        if not any(f.strip() for f in fields):
            continue
        row = _Row(name, line, fields, at)
        change = row.change(students, limits, scores, seen)
        problems += row.problems
        if change is not None:
            changes.append(change)
    return changes, problems


class _Row:
    def __init__(self, name: str, line: int, fields: list[str], at: dict[str, int]):
        self.name, self.line, self.fields, self.at = name, line, fields, at
        self.problems: list[str] = []

    def get(self, column: str) -> str:
        i = self.at.get(column)
        return self.fields[i].strip() if i is not None and i < len(self.fields) else ""

    def wrong(self, column: str, what: str) -> None:
        self.problems.append(f"{self.name}:{self.line}:{self.at[column] + 1}: {column}: {what}")

    def change(self, students, limits, scores, seen):
        sid, part = uncell(self.get("student_id")), self.get("part")
        if sid not in students:
            self.wrong("student_id", f"unknown student {sid!r}")
        if part not in limits:
            self.wrong("part", f"unknown part {part!r} (manual parts: {', '.join(limits)})")
        points = self.points(limits.get(part))
        if self.problems:
            return None
        if (sid, part) in seen:
            self.wrong("part", f"{sid} {part} is also on line {seen[sid, part]}")
            return None
        seen[sid, part] = self.line
        comment = uncell(self.get("comment")) if "comment" in self.at else None
        current = scores.get((sid, part))
        old = (current.points, current.comment) if current else (None, "")
        new = (points, old[1] if comment is None else comment)
        if new == old:
            return None
        version = self.version(current.version if current else 0)
        return None if version is None else (sid, part, new[0], new[1], version)

    def points(self, limit: float | None) -> float | None:
        text = self.get("points")
        if text == "":
            return None
        try:
            value = (
                float(text.replace(",", "."))
                if text.count(",") == 1 and "." not in text
                else float(text)
            )
        except ValueError:
            self.wrong("points", f"{text!r} is not a number")
            return None
        if not math.isfinite(value) or value < 0:
            self.wrong(
                "points",
                f"{text} is below 0" if math.isfinite(value) else f"{text!r} is not a number",
            )
        elif limit is not None and value > limit:
            self.wrong("points", f"{text} is above the part's {number_text(limit)}")
        return value

    def version(self, current: int) -> int | None:
        if "version" not in self.at or self.get("version") == "":
            return current
        text = self.get("version")
        if not text.isdigit():
            self.wrong("version", f"{text!r} is not a version number")
            return None
        if int(text) != current:
            self.wrong(
                "version",
                f"the score was saved since this sheet was exported (version {text}, now "
                f"{current}): export a new sheet",
            )
            return None
        return current
