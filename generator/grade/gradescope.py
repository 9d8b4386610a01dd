"""A student's result in Gradescope's autograder format (results.json), and what the in-container
mode reads and writes.

Gradescope's specification (gradescope-autograders.readthedocs.io, "Autograder Specifications"):
top level `score`, `execution_time` (s), `output`, `output_format`, `visibility`,
`stdout_visibility`, `extra_data`, `tests`; each test `score`, `max_score`, `status`
(passed/failed), `name`, `number`, `output`, `visibility` (hidden, after_due_date, after_published,
visible). The container runs /autograder/run_autograder with the student's files in
/autograder/submission and uploads /autograder/results/results.json.

Here: `score` is the automatic points; one test per rubric group carries that group's points
(always visible), and one test per case that ran (max_score 0) shows its status and check.py's
lines for it, with the visibility the autograder was built with; while the cases are not
visible, the top-level output holds no case line either.

Inside a container (sandbox_in_container): `auto`, an autograder's default, grades in
coursepack's sandbox where the container allows the user namespaces bubblewrap needs, else
without it (Docker's default seccomp profile refuses them), and every result says so; `on`
refuses to grade there, with a results.json that says why; `off` never uses the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from generator.files.cache import write_text_atomically
from generator.grade.feedback import note_lines, reason_text, summary_lines
from generator.grade.lesson import GradeLesson, Language
from generator.grade.rows import CONTAINER, Row, sandbox_of

SUBMISSION = Path("/autograder/submission")
RESULTS = Path("/autograder/results/results.json")
METADATA = Path("/autograder/submission_metadata.json")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
SANDBOXES = ("auto", "on", "off")


def results_json(
    lesson: GradeLesson, row: Row, output: list[str], sandbox: str, visibility: str = "visible"
) -> dict:
    """output: what check.py shows for the row (feedback.check_lines); visibility: the case tests'."""
    language = lesson.languages[row.locale]
    head = summary_lines(lesson, row, sandbox, markdown=False) + note_lines(
        lesson, row, markdown=False
    )
    data = row.data or {}
    shown = output if visibility == "visible" else []
    return {
        "score": row.automatic,
        "execution_time": round(float(data.get("seconds") or 0.0), 2),
        "output": "\n".join(head + ([""] + shown if shown else [])),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "student": row.student,
            "status": row.status,
            "flags": row.flags,
            "locale": row.locale,
            "lesson": lesson.id,
            "checker_sha256": lesson.checker_hash,
            "environment": data.get("environment"),
            "sandbox": sandbox_of(data, sandbox),
        },
        "tests": _group_tests(lesson, row, language)
        + _case_tests(lesson, row, output, language, visibility),
    }


def _group_tests(lesson: GradeLesson, row: Row, language: Language) -> list[dict]:
    """One test per rubric group, visible: its points, and how many of its cases passed (or why
    none ran)."""
    cases = {c["id"]: c for c in (row.data or {}).get("cases") or []}
    tests = []
    for number, group in enumerate(("normal", "boundary"), start=1):
        ran = [
            c
            for c in lesson.spec.checks.cases
            if c.group == group
            and cases.get(c.id, {}).get("status") not in (None, "skip", "not_run")
        ]
        passed = [c for c in ran if cases[c.id]["status"] == "pass"]
        said = (
            language.text("case_count", passed=len(passed), ran=len(ran))
            if ran
            else language.text("group_not_run", why=_why_none_ran(row, language))
        )
        tests.append(
            {
                "name": language.text(f"group_{group}"),
                "number": str(number),
                "score": row.points[group],
                "max_score": getattr(lesson.spec.rubric, group),
                "status": "passed" if ran and len(passed) == len(ran) else "failed",
                "output": said.replace("`", ""),
                "visibility": "visible",
            }
        )
    return tests


def _why_none_ran(row: Row, language: Language) -> str:
    data = row.data
    if data is None:
        return reason_text(language, row.reason) if row.reason else language.text("kind_load_error")
    if data.get("status") == "blank":
        return language.text("kind_blank")
    kind = (data.get("load_error") or {}).get("kind")
    return language.text(
        {"timeout": "kind_timeout", "crash": "kind_crash"}.get(kind, "kind_load_error")
    )


def _case_tests(
    lesson: GradeLesson, row: Row, output: list[str], language: Language, visibility: str
) -> list[dict]:
    names = language.data["case_names"]
    cases = {c["id"]: c for c in (row.data or {}).get("cases") or []}
    tests = []
    for index, case in enumerate(lesson.spec.checks.cases, start=1):
        result = cases.get(case.id)
        if result is None or result["status"] in ("skip", "not_run"):
            continue
        tests.append(
            {
                "name": names[case.id],
                "number": f"{1 if case.group == 'normal' else 2}.{index}",
                "score": 0,
                "max_score": 0,
                "status": "passed" if result["status"] == "pass" else "failed",
                "output": "\n".join(case_lines(output, names[case.id])),
                "visibility": visibility,
            }
        )
    return tests


def not_graded_json(
    lesson: GradeLesson, locale: str, student: str, key: str, why: str, sandbox: str
) -> dict:
    """A results.json for a submission that could not be graded at all (none of its code ran):
    key is sandbox_required or not_graded, why the tool's own words."""
    text = lesson.languages[locale].text(key, why=why)
    return {
        "score": 0,
        "output": text,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "student": student,
            "status": "not graded",
            "locale": locale,
            "lesson": lesson.id,
            "checker_sha256": lesson.checker_hash,
            "sandbox": sandbox,
            "problem": why,
        },
        "tests": [],
    }


def sandbox_in_container(requested: str, problem: str | None) -> tuple[str, str | None]:
    """(how the container grades: on, off or CONTAINER, why it cannot grade or None). requested: the
    autograder's --sandbox; problem: why bubblewrap cannot run here (sandbox.sandbox_problem)."""
    if requested not in SANDBOXES:
        return "off", f"--sandbox {requested}: expected one of {', '.join(SANDBOXES)}"
    if requested == "off":
        return "off", None
    if problem is None:
        return "on", None
    return ("on", problem) if requested == "on" else (CONTAINER, None)


def case_lines(output: list[str], name: str) -> list[str]:
    """A case's line in check.py's output and the detail lines under it."""
    for start, line in enumerate(output):
        shown = (
            line[2:].split("  ", 1)[-1].rstrip()
        )  # after the status; a note follows two spaces on
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
        return (
            str(user.get("sid") or user.get("email") or user.get("id") or "submission"),
            str(user.get("name") or ""),
            str(user.get("email") or ""),
        )
    except (OSError, ValueError, IndexError, AttributeError, TypeError):
        return "submission", "", ""
