"""The course roster (optional): who should have handed in, their names and languages, and the
other ids an LMS knows them by.

roster.csv (UTF-8, a header row; column names in any case):

    id,name,email,locale,aliases
    s001,Wang Fang,wang@uni.edu,zh-CN,4711
    s002,Alex Doe,alex@uni.edu,en,"5020;alex_doe"

`id` is required (also accepted: student_id, sid); `locale` (or `language`) picks the language of
that student's feedback; `aliases` lists other ids separated by `;` (a Canvas user id, a Moodle
participant id, a folder name). A submission is matched by its id, or by a roster row's email or
aliases; a roster row without a submission gets the status "no submission"."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from generator.grade.lesson import GradeError

ID_COLUMNS = ("id", "student_id", "sid")
LOCALE_COLUMNS = ("locale", "language")


@dataclass
class Student:
    id: str
    name: str = ""
    email: str = ""
    locale: str = ""
    aliases: list[str] = field(default_factory=list)


def read_roster(path: Path, locales: list[str]) -> list[Student]:
    """Every row of the roster; every mistake in it at once, as file:line: what."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GradeError(f"{path}: cannot read the roster ({exc})") from exc
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise GradeError(
            f"{path}: the roster is empty (expected a header row: id,name,email,locale,aliases)"
        )
    header = [h.strip().lower() for h in rows[0]]
    column = {name: i for i, name in enumerate(header)}
    id_at = next((column[c] for c in ID_COLUMNS if c in column), None)
    if id_at is None:
        raise GradeError(f"{path}:1: the header has no id column (one of: {', '.join(ID_COLUMNS)})")
    locale_at = next((column[c] for c in LOCALE_COLUMNS if c in column), None)
    problems, students, seen = [], [], set()

    def cell(row: list[str], at: int | None) -> str:
        return row[at].strip() if at is not None and at < len(row) else ""

    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        student = Student(
            cell(row, id_at),
            cell(row, column.get("name")),
            cell(row, column.get("email")),
            cell(row, locale_at),
            [a.strip() for a in cell(row, column.get("aliases")).split(";") if a.strip()],
        )
        if not student.id:
            problems.append(f"{path}:{line}: no id")
        elif student.id in seen:
            problems.append(f"{path}:{line}: id '{student.id}' is listed twice")
        if student.locale and student.locale not in locales:
            problems.append(
                f"{path}:{line}: locale '{student.locale}' is not one of the course's "
                f"({', '.join(locales)})"
            )
        seen.add(student.id)
        students.append(student)
    if problems:
        raise GradeError("\n".join(problems))
    return students


def match(roster: list[Student], submission_id: str, email: str = "") -> Student | None:
    """The roster row a submission belongs to: by id, email or alias (case does not matter)."""
    wanted = {submission_id.casefold()} | ({email.casefold()} if email else set())
    for student in roster:
        names = {student.id, student.email, *student.aliases} - {""}
        if wanted & {n.casefold() for n in names}:
            return student
    return None
