"""The gradebook filled from what `coursepack grade` wrote into its folder:

  rubric.json    the lesson's parts, points, vetoes and pass rule (grading writes it)
  answers.json   each student's extracted answers per manual part (grading writes it)
  auto.json      each student's automatic result as the review shows it (written by `record` below
                 from grading's rows): points per group, status, flags, check.py's lines, the
                 submitted code with its fill and the lines edited outside the blank, the exercise
  grades.csv     grading's gradebook, kept as grading wrote it (exports.grades_csv adds the totals)
  feedback/      each student's page, kept as grading wrote it (feedback.py appends the manual part)

Scores, comments, vetoes and the log are the grader's and are never touched here. A student whose
automatic result differs from the one stored is marked (students.regraded) and listed in regrade.md."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from generator.files.cache import write_text_atomically
from generator.review.store import FILE, Gradebook, ReviewError

AUTO = "auto.json"
DETAIL = (
    "code",
    "fill",
    "edits",
    "exercise",
    "output",
)  # kept apart: only the code view reads them
REGRADE = "regrade.md"


def read_json(folder: Path, name: str, required: bool = True):
    path = folder / name
    if not path.exists():
        if required:
            raise ReviewError(f"{path}: missing (is {folder} a folder `coursepack grade` wrote?)")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReviewError(f"{path}: not readable JSON ({exc})") from exc


def carry_over(old: Path, new: Path) -> bool:
    """The gradebook of the folder being replaced, copied into the new one (sqlite's backup: one
    consistent copy with its WAL folded in). False if there was none."""
    source = old / FILE
    if not source.is_file():
        return False
    src, dst = sqlite3.connect(source), sqlite3.connect(new / FILE)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return True


def sync(folder: Path) -> list[dict]:
    """Fill the folder's gradebook from its files; the students whose automatic result changed
    (each {student, before, after, cases}); [] on the first sync."""
    folder = Path(folder)
    rubric = read_json(folder, "rubric.json")
    answers = read_json(folder, "answers.json", required=False) or {}
    auto = read_json(folder, AUTO)
    book = Gradebook(folder)
    book.create()
    feedback = folder / "feedback"
    changed = []
    with book.connect(write=True) as db:
        first = db.execute("SELECT COUNT(*) FROM students").fetchone()[0] == 0
        old = {sid: json.loads(a) for sid, a in db.execute("SELECT id, auto FROM students")}
        for key, value in (
            ("rubric", rubric),
            ("lesson", auto.get("lesson", rubric.get("lesson"))),
            ("grades_csv", _text(folder / "grades.csv")),
        ):
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                (key, json.dumps(value, ensure_ascii=False)),
            )
        db.execute("DELETE FROM students")
        for position, student in enumerate(auto["students"]):
            sid = student["id"]
            change = None if first or sid not in old else difference(old[sid], student)
            if change:
                changed.append({"student": sid, **change})
            base = {
                "md": _text(feedback / f"{student['slug']}.md"),
                "title": _title(feedback / f"{student['slug']}.html"),
            }
            detail = {key: student.get(key) for key in DETAIL}
            detail["feedback"] = base
            small = {key: value for key, value in student.items() if key not in DETAIL}
            db.execute(
                "INSERT INTO students VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    position,
                    student.get("name", ""),
                    student.get("email", ""),
                    student.get("locale", ""),
                    student["slug"],
                    _dumps(small),
                    _dumps(detail),
                    _dumps(answers.get(sid, {})),
                    _dumps(change) if change else None,
                ),
            )
    return changed


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def summary(auto: dict) -> dict:
    """What a regrade compares: status, points per group, each case's status."""
    return {
        "status": auto.get("status"),
        "points": auto.get("points"),
        "cases": {c["id"]: c["status"] for c in auto.get("cases") or []},
    }


def difference(old: dict, new: dict) -> dict | None:
    before, after = summary(old), summary(new)
    if before == after:
        return None
    cases = sorted(set(before["cases"]) | set(after["cases"]))
    moved = [
        f"{c}: {before['cases'].get(c, '-')} -> {after['cases'].get(c, '-')}"
        for c in cases
        if before["cases"].get(c) != after["cases"].get(c)
    ]
    return {"before": _shown(before), "after": _shown(after), "cases": moved}


def _shown(summary: dict) -> str:
    points = summary["points"] or {}
    return f"{sum(points.values()):g} ({summary['status']})"


def regrade_markdown(lesson: str, changed: list[dict]) -> str:
    lines = [
        f"# Regrade: {lesson}",
        "",
        f"{len(changed)} student(s) whose automatic result changed; their manual scores are kept.",
        "",
    ]
    if changed:
        lines += ["| student | before | after | cases |", "|---|---|---|---|"]
        lines += [
            f"| {_cell(c['student'])} | {c['before']} | {c['after']} | {_cell('; '.join(c['cases']))} |"
            for c in changed
        ]
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _title(path: Path) -> str:
    import html
    import re

    found = re.search(r"<title>(.*?)</title>", _text(path), re.S)
    return html.unescape(found.group(1)) if found else ""


def write_regrade(folder: Path, lesson: str, changed: list[dict]) -> None:
    write_text_atomically(folder / REGRADE, regrade_markdown(lesson, changed))
