"""What `coursepack grade` leaves for the review, at the end of its run (generator/grade/run.py):
auto.json from its rows, the gradebook of the folder it replaces carried over, the gradebook
filled, regrade.md on a regrade, grades.csv and the feedback pages with the manual part."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

from generator.files.cache import write_text_atomically
from generator.review.sync import AUTO, REGRADE, carry_over, sync, write_regrade


def auto_entry(lesson, row, lines: list[str], modules: Path) -> dict:
    """One student's automatic result as the review shows it. lines: check.py's output for the
    row in the instructor's language; modules: where grading keeps the checkers as modules."""
    data = row.data or {}
    submission = row.submission
    names = lesson.languages[row.locale].data.get("case_names", {})
    notebook = submission is not None and submission.cell is not None
    language = (
        _pack_language(lesson, submission.code if submission else None)
        or lesson.languages[row.locale]
    )
    template = language.data["template"]
    if (
        notebook
    ):  # a notebook's cell is compared without the file's `if __name__` block, as grading does
        template = language.module(modules).without_main_block(template)
    return {
        "id": row.student,
        "name": row.name,
        "email": row.email,
        "locale": row.locale,
        "slug": row.slug,
        "status": row.status,
        "points": dict(row.points),
        "flags": list(row.flags),
        "cases": [
            {
                "id": c["id"],
                "group": c.get("group", ""),
                "status": c["status"],
                "name": names.get(c["id"], c["id"]),
                "reason": c.get("reason", ""),
            }
            for c in data.get("cases") or []
        ],
        "output": lines,
        "graded_file": submission.source if submission else "",
        "code": submission.code if submission else None,
        "fill": data.get("fill"),
        "edits": list(data.get("edits_outside_blank") or []),
        "exercise": "\n".join(template),
        "claim": submission.claim if submission else None,
        "date": data.get("date", ""),
    }


def _pack_language(lesson, code: str | None):
    """The language whose exercise file the code shares the most lines with (its pack's comments
    differ by language; the row's language is the feedback's, which a roster may set)."""
    if not code:
        return None
    mine = {line.strip() for line in code.splitlines()}
    return max(
        lesson.languages.values(),
        key=lambda lang: len(mine & {t.strip() for t in lang.data["template"]}),
    )


def auto_json(lesson, rows, lines_of: Callable, modules: Path) -> str:
    return json.dumps(
        {
            "lesson": lesson.id,
            "students": [auto_entry(lesson, r, lines_of(r), modules) for r in rows],
        },
        ensure_ascii=False,
    )


def after_grading(
    lesson,
    rows,
    old: Path,
    new: Path,
    instructor: str,
    lines_of: Callable,
    modules: Path,
    progress: Callable[[str], None],
) -> None:
    """Called with the new folder complete but not yet swapped in for old."""
    from generator.review.exports import write_grades_csv
    from generator.review.feedback import write_all_feedback

    in_instructor = lambda row: lines_of(dataclasses.replace(row, locale=instructor))  # noqa: E731
    write_text_atomically(new / AUTO, auto_json(lesson, rows, in_instructor, modules))
    if not (new / "rubric.json").exists():
        progress("no rubric.json in the grading folder: the review's gradebook is not filled")
        return
    carried = carry_over(old, new)
    changed = sync(new)
    if carried:
        write_regrade(new, lesson.id, changed)
        progress(
            f"regrade: manual scores kept; {len(changed)} student(s) whose automatic result changed "
            f"(listed in {REGRADE})"
        )
        write_grades_csv(new)
        write_all_feedback(new)
