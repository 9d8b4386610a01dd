"""A student's result in Gradescope's autograder format (results.json), and what the in-container
mode reads and writes.

Gradescope's specification (gradescope-autograders.readthedocs.io, "Autograder Specifications"):
top level `score`, `execution_time` (s), `output`, `output_format`, `visibility`,
`stdout_visibility`, `extra_data`, `tests`; each test `score`, `max_score`, `status`
(passed/failed), `name`, `number`, `output`, `visibility` (hidden, after_due_date, after_published,
visible). The container runs /autograder/run_autograder with the student's files in
/autograder/submission and uploads /autograder/results/results.json.

Here: `score` is the automatic points; one test per rubric group carries that group's points,
and one test per case that ran (max_score 0) shows its status and check.py's lines for it."""

from __future__ import annotations

import json
from pathlib import Path

from generator.cache import write_text_atomically
from generator.grade.feedback import note_lines, summary_lines
from generator.grade.lesson import GradeLesson
from generator.grade.rows import Row, sandbox_of

SUBMISSION = Path("/autograder/submission")
RESULTS = Path("/autograder/results/results.json")
METADATA = Path("/autograder/submission_metadata.json")


def results_json(lesson: GradeLesson, row: Row, output: list[str], sandbox: str, visibility: str = "visible") -> dict:
    """output: what check.py shows for the row (feedback.check_lines)."""
    language = lesson.languages[row.locale]
    rubric = lesson.spec.rubric
    head = summary_lines(lesson, row, sandbox, markdown=False) + note_lines(lesson, row, markdown=False)
    data = row.data or {}
    names = language.data["case_names"]
    cases = {c["id"]: c for c in data.get("cases") or []}
    tests = []
    for number, group in enumerate(("normal", "boundary"), start=1):
        ran = [c for c in lesson.spec.checks.cases if c.group == group
               and cases.get(c.id, {}).get("status") not in (None, "skip", "not_run")]
        passed = [c for c in ran if cases[c.id]["status"] == "pass"]
        max_score = getattr(rubric, group)
        tests.append({"name": language.text(f"group_{group}"), "number": str(number),
                      "score": row.points[group], "max_score": max_score,
                      "status": "passed" if ran and len(passed) == len(ran) else "failed",
                      "output": language.text("case_count", passed=len(passed), ran=len(ran)),
                      "visibility": visibility})
    for index, case in enumerate(lesson.spec.checks.cases, start=1):
        result = cases.get(case.id)
        if result is None or result["status"] in ("skip", "not_run"):
            continue
        tests.append({"name": names[case.id], "number": f"{1 if case.group == 'normal' else 2}.{index}",
                      "score": 0, "max_score": 0, "status": "passed" if result["status"] == "pass" else "failed",
                      "output": "\n".join(_case_lines(output, names[case.id])), "visibility": visibility})
    return {"score": row.automatic, "execution_time": round(float(data.get("seconds") or 0.0), 2),
            "output": "\n".join(head + ([""] + output if output else [])),
            "output_format": "text", "visibility": visibility, "stdout_visibility": "hidden",
            "extra_data": {"student": row.student, "status": row.status, "flags": row.flags, "locale": row.locale,
                           "lesson": lesson.id, "checker_sha256": lesson.checker_hash,
                           "environment": data.get("environment"), "sandbox": sandbox_of(data, sandbox)},
            "tests": tests}


def _case_lines(output: list[str], name: str) -> list[str]:
    """A case's line in check.py's output and the detail lines under it."""
    for start, line in enumerate(output):
        shown = line[2:].split("  ", 1)[-1].rstrip()   # after the status; a note follows two spaces on
        if line.startswith("  ") and (shown == name or shown.startswith(name + "  ")):
            end = start + 1
            while end < len(output) and output[end].startswith("        "):
                end += 1
            return [text.strip() for text in output[start:end]]
    return []


def write_results(path: Path, value: dict) -> None:
    write_text_atomically(path, json.dumps(value, ensure_ascii=False, indent=1) + "\n")


def submitter(metadata: Path) -> tuple[str, str, str]:
    """(id, name, email) of the first submitter in Gradescope's submission_metadata.json."""
    try:
        users = json.loads(metadata.read_text(encoding="utf-8")).get("users") or []
        user = users[0]
        return (str(user.get("sid") or user.get("email") or user.get("id") or "submission"),
                str(user.get("name") or ""), str(user.get("email") or ""))
    except (OSError, ValueError, IndexError, AttributeError, TypeError):
        return "submission", "", ""
