"""grades.csv: one row per student, after a header and a row of the maximum points (id POINTS
POSSIBLE). Written whole or not at all.

Columns: student_id, name, email, lesson, locale, status; the automatic points per rubric group
(points_normal, points_boundary) and their sum (points_automatic); the manual parts, empty for the
instructor (manual_<part id>: manual_explanation, manual_q1, ...), answers (how many of them have
an answer in what the student handed in: "3 of 4"; "absent" where no answer place was handed in,
a kernel file alone); cases_passed, cases_failed, cases_skipped,
failed_cases (ids); flags (; separated, see generator/grade/rows.py); similar_to (copy detection's
matches: `part: other score`, see generator/grade/similarity.py); detail (why a row has no
result); graded_file, submission_sha256; device, torch, triton, python, sandbox, date;
checker_sha256.

Every CSV this package writes goes through csv_text: a text cell that a spreadsheet would read as
a formula (it starts with =, +, -, @, a tab or a carriage return: OWASP's rule against CSV
injection) is written with a leading ' (ids, names and emails come from students and rosters).
Numbers we computed are written as numbers."""

from __future__ import annotations

import csv
import io

from generator.grade.answers import answered_cell
from generator.grade.feedback import reason_text
from generator.grade.lesson import GradeLesson
from generator.grade.rows import Row, device_of, failed_cases, sandbox_of

POSSIBLE = "POINTS POSSIBLE"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A text cell a spreadsheet would run as a formula, made text with a leading '."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(columns: list[str], records: list[dict[str, object]]) -> str:
    """A header and the records, every text cell spreadsheet_safe; lines end in CRLF (RFC 4180),
    which also makes the csv module quote a cell holding a lone CR."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\r\n")
    writer.writerow({c: spreadsheet_safe(c) for c in columns})
    for record in records:
        writer.writerow({key: spreadsheet_safe(value) for key, value in record.items()})
    return out.getvalue()


def columns(lesson: GradeLesson) -> list[str]:
    manual = [f"manual_{part.id}" for part in lesson.spec.rubric.manual] + ["answers"]
    return (
        [
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
        + manual
        + [
            "cases_passed",
            "cases_failed",
            "cases_skipped",
            "failed_cases",
            "flags",
            "similar_to",
            "detail",
            "graded_file",
            "submission_sha256",
            "device",
            "torch",
            "triton",
            "python",
            "sandbox",
            "date",
            "checker_sha256",
        ]
    )


def possible(lesson: GradeLesson) -> dict[str, object]:
    rubric = lesson.spec.rubric
    row = {
        "student_id": POSSIBLE,
        "lesson": lesson.id,
        "points_normal": rubric.normal,
        "points_boundary": rubric.boundary,
        "points_automatic": rubric.normal + rubric.boundary,
        "answers": len(rubric.manual),
        "cases_passed": len(lesson.spec.checks.cases),
        "checker_sha256": lesson.checker_hash,
    }
    row.update({f"manual_{part.id}": part.points for part in rubric.manual})
    return row


def record(lesson: GradeLesson, row: Row, instructor: str, sandbox: str) -> dict[str, object]:
    data = row.data or {}
    env = data.get("environment") or {}
    cases = data.get("cases") or []
    failed = failed_cases(data)
    detail = (
        reason_text(lesson.languages[instructor], row.reason).replace("`", "") if row.reason else ""
    )
    if not detail and data.get("load_error"):
        load_error = data["load_error"]
        detail = f"{load_error.get('kind', '')}: {str(load_error.get('text', '')).strip()}".strip(
            ": "
        )[:300]
    submission = row.submission
    return {
        "student_id": row.student,
        "name": row.name,
        "email": row.email,
        "lesson": lesson.id,
        "locale": row.locale,
        "status": row.status,
        "points_normal": row.points["normal"],
        "points_boundary": row.points["boundary"],
        "points_automatic": row.automatic,
        "answers": answered_cell(row.answers),
        "cases_passed": sum(1 for c in cases if c["status"] == "pass") if data else "",
        "cases_failed": len(failed) if data else "",
        "cases_skipped": sum(1 for c in cases if c["status"] == "skip") if data else "",
        "failed_cases": " ".join(c["id"] for c in failed),
        "flags": ";".join(row.flags),
        "similar_to": row.similar_to,
        "detail": detail,
        "graded_file": submission.source if submission else "",
        "submission_sha256": submission.digest if submission else "",
        "device": device_of(data),
        "torch": env.get("torch", ""),
        "triton": env.get("triton", ""),
        "python": env.get("python", ""),
        "sandbox": sandbox_of(data, sandbox),
        "date": data.get("date", ""),
        "checker_sha256": lesson.checker_hash,
    }


def gradebook_csv(lesson: GradeLesson, rows: list[Row], instructor: str, sandbox: str) -> str:
    return csv_text(
        columns(lesson),
        [possible(lesson)] + [record(lesson, row, instructor, sandbox) for row in rows],
    )
