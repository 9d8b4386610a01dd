"""Each student's feedback, in their language: what `python check.py` would have shown them for
the code that was graded (re-rendered from the result by that language's check.py: nothing runs
again), plus what grading adds (status, points, where it ran, the notes and flags)."""

from __future__ import annotations

from pathlib import Path

from generator.checker.trusted.present import question_names
from generator.grade.lesson import GradeLesson, Language
from generator.grade.pages import code, fenced, html_page, plain
from generator.grade.rows import Row, device_of, sandbox_of

STATUS_KEYS = {
    "graded": "status_graded",
    "no submission": "status_no_submission",
    "unreadable": "status_unreadable",
    "crashed": "status_crashed",
    "timed out": "status_timed_out",
    "sandbox violation": "status_sandbox_violation",
}


def check_lines(lesson: GradeLesson, row: Row, modules: Path) -> list[str]:
    """check.py's lines for the row's code and result, in the row's language."""
    if row.data is None or row.submission is None:
        return []
    module = lesson.languages[row.locale].module(modules)
    submission, data = row.submission, row.data
    target = module.Target(
        Path(submission.source), submission.source, submission.code, cell=submission.cell
    )
    results = {
        c["id"]: {k: v for k, v in c.items() if k not in ("id", "group")}
        for c in data["cases"]
        if c["status"] != "not_run" or "lost" in c
    }  # given up, not missing
    blank = module.blank_lines(submission.code) if data["status"] == "blank" else []
    ev = module.Evaluation(
        target,
        data["edits_outside_blank"],
        data["fill"],
        blank,
        data["environment"],
        results,
        data["load_error"],
        data.get("timing"),
        data["flags"],
        data["sandbox"],
    )
    return module.render_report(ev)[0]


def reason_text(language: Language, reason: tuple[str, dict]) -> str:
    key, values = reason
    return language.text(key, **values)


def environment_text(language: Language, data: dict | None) -> str | None:
    env = (data or {}).get("environment")
    if not env:
        return None
    return language.text(
        "graded_env",
        device=device_of(data),
        torch=env["torch"],
        triton=env["triton"],
        date=(data or {}).get("date", ""),
    )


def sandbox_text(language: Language, sandbox: str) -> str:
    if sandbox in (
        "off",
        "container",
    ):  # container: rows.CONTAINER (a Gradescope container refused it)
        return language.text("sandbox_off" if sandbox == "off" else "sandbox_container")
    return language.text("sandbox_on", how=sandbox)


def summary_lines(lesson: GradeLesson, row: Row, sandbox: str, markdown: bool = True) -> list[str]:
    """The facts at the top of a feedback page (Markdown items) or of a Gradescope result (text)."""
    language = lesson.languages[row.locale]
    rubric = lesson.spec.rubric
    who = code(row.student) + (f" ({plain(row.name)})" if row.name else "")
    items = [
        (language.text("student"), who),
        (language.text("status"), language.text(STATUS_KEYS[row.status])),
    ]
    if row.data is not None and row.data["status"] in ("pass", "fail"):
        items.append(
            (
                language.text("points"),
                language.text(
                    "points_value",
                    got=row.automatic,
                    total=rubric.normal + rubric.boundary,
                    normal=row.points["normal"],
                    normal_total=rubric.normal,
                    boundary=row.points["boundary"],
                    boundary_total=rubric.boundary,
                    explanation=rubric.explanation,
                    questions=rubric.question_points,
                    question_names=question_names(len(lesson.spec.questions), language.text),
                    count=len(lesson.spec.questions),
                ),
            )
        )
    if row.submission is not None and row.submission.source:
        items.append((language.text("graded_file"), code(row.submission.source)))
    env = environment_text(language, row.data)
    if env:
        items.append((language.text("graded_on"), env))
        if row.data["environment"].get("interpreter"):
            items.append(("", language.text("interpreter_note")))
    how = sandbox_of(row.data, sandbox)
    if how:
        items.append((language.text("sandbox"), sandbox_text(language, how)))
    colon = lesson.colon(row.locale)
    if not markdown:
        return [
            f"{label}{colon} {value}".replace("`", "") if label else value for label, value in items
        ]
    return [f"- **{label}{colon}** {value}" if label else f"- {value}" for label, value in items]


def note_lines(lesson: GradeLesson, row: Row, markdown: bool = True) -> list[str]:
    language = lesson.languages[row.locale]
    notes = ([row.reason] if row.reason else []) + row.notes
    if not markdown:
        return [reason_text(language, note).replace("`", "") for note in notes]
    return [f"- {reason_text(language, note)}" for note in notes]


def feedback_markdown(lesson: GradeLesson, row: Row, output: list[str], sandbox: str) -> str:
    """output: what check.py shows for the row (check_lines)."""
    language = lesson.languages[row.locale]
    lines = [f"# {language.text('feedback_title', lesson=lesson.heading(row.locale))}", ""]
    lines += summary_lines(lesson, row, sandbox) + [""]
    notes = note_lines(lesson, row)
    if notes:
        lines += [f"## {language.text('notes_heading')}", "", *notes, ""]
    if output:
        lines += [f"## {language.text('output_heading')}", "", *fenced(output), ""]
    return "\n".join(lines)


def write_feedback(
    lesson: GradeLesson, row: Row, folder: Path, output: list[str], templates: Path, sandbox: str
) -> None:
    """feedback/<student>.md and .html."""
    markdown = feedback_markdown(lesson, row, output, sandbox)
    language = lesson.languages[row.locale]
    title = language.text("feedback_title", lesson=lesson.heading(row.locale)) + f" · {row.student}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{row.slug}.md").write_text(markdown, encoding="utf-8")
    (folder / f"{row.slug}.html").write_text(
        html_page(markdown, title, row.locale, templates), encoding="utf-8"
    )
