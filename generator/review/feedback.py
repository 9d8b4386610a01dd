"""A student's feedback page (feedback/<slug>.md and .html, as grading wrote them) with the manual
grading appended, in the student's language: each manual part's points and comment, the vetoes
with their reasons, the total and the result. Rewritten from grading's own page each time, so a
changed score replaces the old one."""

from __future__ import annotations

from pathlib import Path

from generator.files.cache import write_text_atomically
from generator.grade.pages import html_page, plain
from generator.files.resources import TEMPLATES
from generator.review.exports import number_text
from generator.review.store import Gradebook
from generator.review.texts import localized, progress, words
from generator.review.totals import Standing, standing


def manual_markdown(rubric: dict, s: Standing) -> list[str]:
    locale = s.student["locale"] or rubric["source_locale"]
    w = words(locale)
    source = rubric["source_locale"]
    lines = [f"## {w['feedback_heading']}", ""]
    for part in rubric["parts"]:
        if part.get("kind") != "manual":
            continue
        got = s.manual.get(part["id"])
        shown = (
            f"{number_text(got)} / {number_text(part['points'])}"
            if got is not None
            else w["feedback_not_yet"]
        )
        lines.append(f"- **{plain(localized(part['title'], locale, source))}**: {shown}")
        if s.comments.get(part["id"]):
            lines.append(f"  {plain(s.comments[part['id']])}")
    titles = {v["id"]: localized(v["title"], locale, source) for v in rubric.get("vetoes", [])}
    lines += [
        f"- {plain(w['feedback_veto'].format(title=titles[v], reason=reason))}"
        for v, reason in s.vetoes.items()
    ]
    result = s.result
    if result["total"] is not None:
        verdict = w["pass"] if result["passed"] else w["fail"]
        lines.append(
            f"- **{w['total']}**: {number_text(result['total'])} / {number_text(result['max'])} · {verdict}"
        )
    else:
        lines.append(f"- **{w['result']}**: {progress(w, result['graded'])}")
    return lines + [""]


def write_feedback(folder: Path, rubric: dict, s: Standing) -> None:
    base = s.student["auto"].get("feedback") or {}
    if not base.get("md"):
        return  # grading wrote no page for this student
    markdown = base["md"].rstrip("\n") + "\n\n" + "\n".join(manual_markdown(rubric, s))
    slug, locale = s.student["slug"], s.student["locale"] or rubric["source_locale"]
    pages = Path(folder) / "feedback"
    write_text_atomically(pages / f"{slug}.md", markdown)
    write_text_atomically(
        pages / f"{slug}.html", html_page(markdown, base.get("title") or slug, locale, TEMPLATES)
    )


def write_student_feedback(book: Gradebook, sid: str) -> None:
    rubric = book.rubric()
    student = book.student(sid)
    if student is not None:
        write_feedback(
            book.folder,
            rubric,
            standing(rubric, student, book.scores(student=sid), book.vetoes(student=sid)),
        )


def write_all_feedback(folder: Path) -> None:
    book = Gradebook(folder)
    rubric = book.rubric()
    scores, vetoes = book.scores(), book.vetoes()
    for student in book.students(detail=True):
        write_feedback(folder, rubric, standing(rubric, student, scores, vetoes))
