"""What comes out of the gradebook: grades.csv (rewritten in the grading folder whenever a score
changes) and the files LMSs and other tools import. Each format follows its importer's own rules
(tests/test_review_exports.py ports them):

  canvas    Canvas's gradebook import (app/models/gradebook_importer.rb): header `Student`, `ID`,
            `SIS User ID`, `SIS Login ID`, `Section`, then one column per assignment; a row whose
            first cell holds `Points Possible`; students found by ID (Canvas's user id), else by
            SIS User ID / SIS Login ID. Blank score: not changed.
  moodle    the offline grading worksheet assignfeedback_offline imports: the columns `Identifier`
            (`Participant <n>`, Moodle's own ids, so a worksheet downloaded from Moodle is needed),
            `Grade`, `Last modified (grade)` (a grade changed in Moodle after it is kept), and
            `Feedback comments`. Blank grade: skipped.
  otter     otter grade's final_grades.csv: `file`, the question columns (sorted), then
            `total_points_earned`, `percent_correct` (ratio, 4 digits), `grading_status`; the first
            row is `points-per-question`.
  nbgrader  `nbgrader export`'s columns: assignment, duedate, timestamp, student_id, last_name,
            first_name, email, raw_score, late_submission_penalty, score, max_score.

A student whose manual parts are not all graded gets no total anywhere (blank), and the reason
where the format has a place for it."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

from generator.files.cache import write_text_atomically
from generator.grade.gradebook import FORMULA_START, POSSIBLE, spreadsheet_safe
from generator.review.store import Gradebook, ReviewError
from generator.review.totals import Standing, result_text, standings

FORMATS = ("canvas", "moodle", "otter", "nbgrader")


class Fixed(str):
    """A cell of the format itself (otter's `--`), written as it is."""


def cell(value) -> str:
    """A CSV cell: numbers as numbers, text that a spreadsheet would run as a formula made text
    (grading's spreadsheet_safe: a leading ')."""
    if isinstance(value, Fixed):
        return str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_text(value)
    return str(spreadsheet_safe("" if value is None else str(value)))


def uncell(text: str) -> str:
    """cell()'s quote taken off again (a sheet read back)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def number_text(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if float(value) != int(value) else str(int(value))


def csv_rows(rows: list[list], header: list[str] | None = None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # as grading's grades.csv (RFC 4180)
    if header:
        writer.writerow([cell(h) for h in header])
    writer.writerows([[cell(v) for v in row] for row in rows])
    return out.getvalue()


# --- grades.csv ------------------------------------------------------------------------------

ADDED = ("total", "max_total", "result", "vetoes", "comments")


def grades_csv(book: Gradebook, everyone: list[Standing] | None = None) -> str:
    """grading's grades.csv with every manual part filled in, the total, the maximum, the result
    (pass, fail or `manual: 2 of 4 parts graded`), the vetoes with their reasons, the comments."""
    rubric = book.rubric()
    original = list(csv.DictReader(io.StringIO(book.meta("grades_csv", ""))))
    header = list(original[0].keys()) if original else ["student_id"]
    manual = [p["id"] for p in rubric["parts"] if p.get("kind") == "manual"]
    header += [f"manual_{p}" for p in manual if f"manual_{p}" not in header]
    header += [c for c in ADDED if c not in header]
    by_id = {s.student["id"]: s for s in everyone or standings(book)}
    rows = []
    for row in original:
        row = {
            key: uncell(value or "") for key, value in row.items()
        }  # the stored cells, as grading meant them
        found = by_id.get(row.get("student_id", ""))
        if row.get("student_id") == POSSIBLE:
            row.update(
                {
                    f"manual_{p['id']}": p["points"]
                    for p in rubric["parts"]
                    if p.get("kind") == "manual"
                }
            )
            row["max_total"] = rubric["max_total"]
        elif found is not None:
            row.update({f"manual_{p}": number_text(found.manual[p]) for p in manual})
            row.update(
                total=number_text(found.result["total"]),
                max_total=found.result["max"],
                result=result_text(found.result),
                vetoes="; ".join(f"{v}: {reason}" for v, reason in found.vetoes.items()),
                comments="; ".join(f"{p}: {c}" for p, c in found.comments.items()),
            )
        rows.append([row.get(h, "") for h in header])
    return csv_rows(rows, header)


def write_grades_csv(folder: Path) -> None:
    book = Gradebook(folder)
    write_text_atomically(folder / "grades.csv", grades_csv(book))


# --- Canvas ----------------------------------------------------------------------------------


def canvas_csv(
    book: Gradebook,
    assignment: str,
    per_part: bool = False,
    canvas_export: Path | None = None,
    roster: dict[str, list[str]] | None = None,
) -> str:
    """roster: each student's other ids (roster.csv's aliases); one of digits only is the Canvas
    user id."""
    rubric = book.rubric()
    known = read_canvas_export(canvas_export) if canvas_export else {}
    if per_part:
        columns = [(f"{assignment}: {p['id']}", p["id"]) for p in rubric["parts"]]
    else:
        columns = [(assignment, None)]
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [
        name for name, _ in columns
    ]
    possible = {p["id"]: p["points"] for p in rubric["parts"]}
    rows = [
        ["Points Possible", "", "", "", ""]
        + [possible[part] if part else rubric["max_total"] for _, part in columns]
    ]
    for s in standings(book):
        student = s.student
        match = _canvas_match(known, student) or _roster_canvas(roster or {}, student["id"])
        rows.append(
            [
                match.get("Student") or student["name"] or student["id"],
                match.get("ID", ""),
                match.get("SIS User ID", student["id"]),
                match.get("SIS Login ID", ""),
                match.get("Section", ""),
            ]
            + [_canvas_score(s, part) for _, part in columns]
        )
    return csv_rows(rows, header)


def _canvas_score(s: Standing, part: str | None):
    if part is None:
        return s.result["total"] if s.result["total"] is not None else ""
    if part in s.manual:
        return s.manual[part] if s.manual[part] is not None else ""
    return (s.student["auto"].get("points") or {}).get(part, "")


def read_canvas_export(path: Path) -> dict[str, dict]:
    """A gradebook exported from Canvas: its rows by every id a student may have here (SIS User ID,
    SIS Login ID, ID, the name)."""
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReviewError(f"{path}: cannot read the Canvas export ({exc})") from exc
    if rows and not {"Student", "ID"} <= set(rows[0]):
        raise ReviewError(
            f"{path}:1: not a Canvas gradebook export (expected the columns Student, ID, ...)"
        )
    found = {}
    for row in rows:
        if "Points Possible" in (row.get("Student") or "") or not (row.get("ID") or "").strip():
            continue
        for key in ("SIS User ID", "SIS Login ID", "ID", "Student"):
            value = (row.get(key) or "").strip()
            if value:
                found.setdefault(value.casefold(), row)
    return found


def _roster_canvas(roster: dict[str, list[str]], sid: str) -> dict:
    found = next((alias for alias in roster.get(sid, []) if alias.isdigit()), None)
    return {"ID": found} if found else {}


def _canvas_match(known: dict[str, dict], student: dict) -> dict:
    for key in (student["id"], student.get("email", ""), student.get("name", "")):
        if key and key.casefold() in known:
            return known[key.casefold()]
    return {}


# --- Moodle ----------------------------------------------------------------------------------

MOODLE = [
    "Identifier",
    "Full name",
    "Email address",
    "Grade",
    "Maximum grade",
    "Last modified (grade)",
    "Feedback comments",
]


def moodle_csv(
    book: Gradebook, worksheet: Path | None, roster: dict[str, list[str]] | None = None
) -> str:
    """Moodle's worksheet with the grades and feedback filled in, for the students found in it (by
    participant number: a Moodle export's student id is one, then email address, then a full
    name that only one participant has), or by a roster alias `Participant <n>`. Two students
    matched to one participant are refused, never exported twice under one identifier."""
    participants = read_moodle_worksheet(worksheet) if worksheet else {}
    for sid, aliases in (roster or {}).items():
        alias = next((a for a in aliases if a.startswith("Participant ")), None)
        if alias:
            participants.setdefault(f"id:{sid.casefold()}", {"Identifier": alias})
    rubric = book.rubric()
    everyone = standings(book)
    rows, missing, taken = [], [], {}
    for s in everyone:
        student = s.student
        keys = (
            f"participant:{student['id']}",
            f"id:{student['id'].casefold()}",
            f"email:{student.get('email', '').casefold()}",
            f"name:{student.get('name', '').casefold()}",
        )
        row = next(
            (participants[k] for k in keys if k in participants and participants[k] is not None),
            None,
        )
        if row is None:
            missing.append(student["id"])
            continue
        if row["Identifier"] in taken:
            raise ReviewError(
                f"{worksheet or 'the roster'}: {row['Identifier']} matches both {taken[row['Identifier']]} "
                f"and {student['id']} (give each an email address or a roster alias 'Participant <n>')"
            )
        taken[row["Identifier"]] = student["id"]
        rows.append(
            [
                row["Identifier"],
                row.get("Full name", student["name"]),
                row.get("Email address", student.get("email", "")),
                s.result["total"] if s.result["total"] is not None else "",
                rubric["max_total"],
                _moodle_time(s.updated),
                _feedback_text(s),
            ]
        )
    if missing:
        raise ReviewError(
            f"{worksheet or 'the roster'}: no participant for {len(missing)} student(s): "
            f"{', '.join(missing[:10])}"
            + (" ..." if len(missing) > 10 else "")
            + " (matched by email address, full name or id, or a roster alias 'Participant <n>')"
        )
    return csv_rows(rows, MOODLE)


def read_moodle_worksheet(path: Path) -> dict[str, dict]:
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReviewError(f"{path}: cannot read the Moodle worksheet ({exc})") from exc
    if not rows or "Identifier" not in rows[0]:
        raise ReviewError(
            f"{path}:1: not a Moodle grading worksheet (expected an Identifier column)"
        )
    found = {}
    for line, row in enumerate(rows, start=2):
        if not (row.get("Identifier") or "").startswith("Participant "):
            raise ReviewError(
                f"{path}:{line}:1: Identifier {row.get('Identifier')!r}: expected 'Participant <n>'"
            )
        found[f"participant:{row['Identifier'].removeprefix('Participant ').strip()}"] = row
        for kind, key in (("email", "Email address"), ("name", "Full name")):
            value = (row.get(key) or "").strip().casefold()
            if value:  # a name (or email) two participants share identifies neither
                found[f"{kind}:{value}"] = None if f"{kind}:{value}" in found else row
    return found


def _moodle_time(at: float) -> str:
    """A time PHP's strtotime reads; the time of the grade's last change (now if never changed)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at or time.time()))


def _feedback_text(s: Standing) -> str:
    parts = [result_text(s.result)]
    parts += [f"veto {v}: {reason}" for v, reason in s.vetoes.items()]
    parts += [f"{p}: {c}" for p, c in s.comments.items()]
    return "\n".join(parts)


# --- otter and nbgrader ----------------------------------------------------------------------


def otter_csv(book: Gradebook) -> str:
    rubric = book.rubric()
    parts = sorted(p["id"] for p in rubric["parts"])
    possible = {p["id"]: p["points"] for p in rubric["parts"]}
    header = ["file", *parts, "total_points_earned", "percent_correct", "grading_status"]
    rows = [
        ["points-per-question", *[possible[p] for p in parts], rubric["max_total"], 1, Fixed("--")]
    ]
    body = []
    for s in standings(book):
        total = s.result["total"]
        status = "Completed" if total is not None else result_text(s.result)
        body.append(
            [
                s.student["auto"].get("graded_file") or s.student["id"],
                *[_otter_part(s, p) for p in parts],
                "" if total is None else total,
                "" if total is None else round(total / rubric["max_total"], 4),
                status,
            ]
        )
    return csv_rows(rows + sorted(body, key=lambda r: r[0]), header)


def _otter_part(s: Standing, part: str):
    if part in s.manual:
        return "" if s.manual[part] is None else s.manual[part]
    return (s.student["auto"].get("points") or {}).get(part, 0)


NBGRADER = [
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


def nbgrader_csv(book: Gradebook) -> str:
    rubric = book.rubric()
    rows = []
    for s in standings(book):
        student, total = s.student, s.result["total"]
        first, _, last = student["name"].partition(" ")
        rows.append(
            [
                rubric["lesson"],
                "",
                student["auto"].get("date", ""),
                student["id"],
                last,
                first,
                student.get("email", ""),
                "" if total is None else float(total),
                0.0,
                "" if total is None else max(0.0, float(total)),
                float(rubric["max_total"]),
            ]
        )
    return csv_rows(rows, NBGRADER)


def export(
    folder: Path,
    fmt: str,
    out: Path,
    assignment: str | None = None,
    per_part: bool = False,
    canvas_export: Path | None = None,
    moodle_worksheet: Path | None = None,
    roster: Path | None = None,
) -> int:
    """Write one format to out; the number of students in it."""
    book = Gradebook(folder)
    if not book.exists():
        raise ReviewError(
            f"{folder}: no {book.path.name} (grade the class first: coursepack grade)"
        )
    aliases = _aliases(roster, book) if roster else None
    if fmt == "canvas":
        text = canvas_csv(
            book, assignment or book.meta("lesson", "lesson"), per_part, canvas_export, aliases
        )
    elif fmt == "moodle":
        if moodle_worksheet is None and aliases is None:
            raise ReviewError(
                "--format moodle needs --moodle-worksheet FILE (the grading worksheet downloaded from "
                "the assignment) or a --roster whose aliases hold 'Participant <n>': Moodle matches "
                "rows by its own participant ids"
            )
        text = moodle_csv(book, moodle_worksheet, aliases)
    elif fmt == "otter":
        text = otter_csv(book)
    elif fmt == "nbgrader":
        text = nbgrader_csv(book)
    else:
        raise ReviewError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    write_text_atomically(out, text)
    return max(0, len(list(csv.reader(io.StringIO(text)))) - 1)


def _aliases(path: Path, book: Gradebook) -> dict[str, list[str]]:
    """student id -> the roster's other ids for them (roster.py's reading and errors)."""
    from generator.grade.roster import read_roster

    return {s.id: s.aliases for s in read_roster(path, book.rubric().get("locales", []))}
