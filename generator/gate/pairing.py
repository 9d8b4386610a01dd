"""Paired editions agree: the answer edition minus the exercise edition is exactly the declared
answer material. A template that drifts (prints something in one edition only that is not
answer material) is an error, like a leak in the other direction."""

from __future__ import annotations

import difflib
import json
import re

from generator.content.codegen import BLANK, blank_index
from generator.content.loader import Lesson
from generator.content.model import Locale
from generator.files.pack import Pack

WORDS = re.compile(r"\W+", re.UNICODE)
CELL_HEADER = re.compile(r"^\[(markdown|code) ")


def loose(text: str) -> str:
    return WORDS.sub("", text).lower()


def _pieces(texts: list[str]) -> list[str]:
    lines = {loose(line) for text in texts for line in text.splitlines()}
    return sorted((p for p in lines if p), key=len, reverse=True)


def edition_drift(
    exercise: Pack,
    answer: Pack,
    lesson: Lesson,
    ui: Locale,
    locale: str,
    lessons: list[tuple[str, int]],
    checker: tuple[dict, dict],
) -> list[str]:
    """lessons: the course's (id, number) pairs; navigation lines name each edition's own zip."""
    text = lesson.texts[locale]
    nav = [ui.pack.previous, ui.pack.next, *[ui.heading(i, number) for i, number in lessons]]
    zips = {
        edition: [ui.pack.other_pack.format(name=f"{i}-{locale}-{edition}.zip") for i, _ in lessons]
        for edition in ("exercise", "answer")
    }
    markers = [
        ui.pack.i18n_missing,
        ui.pack.i18n_stale,
    ]  # translation fallbacks, the same in both editions
    blank_lines = _blank_lines(
        exercise.files[lesson.spec.kernel_file], answer.files[lesson.spec.kernel_file]
    )
    answer_only = _pieces(
        [q.answer for q in text.questions.values()]
        + [p.reference for p in text.rubric.parts.values() if p.reference]
        + [
            text.hints[3],
            text.solution_note,
            text.edition_note_answer,
            ui.headings.reference_answer,
            ui.headings.solution,
            ui.pack.hint_level.format(level=4),
            ui.pack.hint_level_names[3],
            ui.pack.edition_answer,
            lesson.solution.fill,
            blank_lines[1],
            *nav,
            *zips["answer"],
            "details",
            "summary",
            *markers,
        ]
    )  # the markup of the hint blocks
    exercise_only = _pieces(
        [
            *markers,
            text.edition_note_exercise,
            ui.headings.your_answer,
            ui.checker["report_answer_here"],
            ui.pack.hint_answer_only,
            ui.pack.edition_exercise,
            text.exercise.todo_comment,
            BLANK,
            blank_lines[0],
            *nav,
            *zips["exercise"],
        ]
    )
    problems = []
    answer_files = {f.name for f in lesson.spec.files if f.edition == "answer"}
    if set(exercise.files) != set(answer.files) - answer_files:
        problems.append(
            f"{answer.name}: files differ from the exercise edition: "
            f"{sorted(set(exercise.files) ^ set(answer.files))}"
        )
    for name in sorted(set(exercise.files) & set(answer.files)):
        if name in answer_files or name == "lesson.html":  # the page is lesson.md rendered, with
            continue  # no edition switch of its own
        if name == "check.py":
            problems += _checker_drift(*checker, answer.name)
            continue
        old, new = _lines(name, exercise.files[name]), _lines(name, answer.files[name])
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                continue
            problems += [
                f"{answer.name}/{name}: answer-only line is not declared answer material: {body[:80]!r}"
                for body in new[b0:b1]
                if not line_covered(body, answer_only)
            ]
            problems += [
                f"{exercise.name}/{name}: exercise-only line is not declared: {body[:80]!r}"
                for body in old[a0:a1]
                if not line_covered(body, exercise_only)
            ]
    return problems


def _blank_lines(exercise: bytes, answer: bytes) -> tuple[str, str]:
    """The blank's line in each edition's kernel file (same line number in both)."""
    ex, an = exercise.decode("utf-8").splitlines(), answer.decode("utf-8").splitlines()
    index = blank_index(exercise.decode("utf-8"))
    if index is None or index >= len(an):
        return "", ""
    return ex[index], an[index]


def line_covered(line: str, pieces: list[str]) -> bool:
    if CELL_HEADER.match(line):
        return True
    rest = loose(line)
    for piece in pieces:
        if len(rest) <= 3:  # covered whatever the other pieces take away
            return True
        rest = rest.replace(piece, "")
    return len(re.sub(r"\d", "", rest)) <= 3  # list numbers, lesson numbers and the like


def _lines(name: str, data: bytes) -> list[str]:
    if name.endswith(".ipynb"):
        notebook = json.loads(data)
        return [json.dumps(notebook["metadata"], sort_keys=True)] + [
            line
            for cell in notebook["cells"]
            for line in [
                f"[{cell['cell_type']} {cell.get('metadata', {})}]",
                *"".join(cell["source"]).splitlines(),
            ]
        ]
    return data.decode("utf-8").splitlines()


def _checker_drift(exercise: dict, answer: dict, name: str) -> list[str]:
    """The checker's data (its code is the same runtime for every pack) may differ only in the
    edition and the one added hint level."""
    problems = []
    changed = {k for k in exercise.keys() | answer.keys() if exercise.get(k) != answer.get(k)}
    if changed - {"edition", "edition_name", "hints"}:
        problems.append(f"{name}/check.py: data differs between editions in {sorted(changed)}")
    if (
        answer["hints"][: len(exercise["hints"])] != exercise["hints"]
        or len(answer["hints"]) != len(exercise["hints"]) + 1
    ):
        problems.append(f"{name}/check.py: the answer edition must add exactly the last hint level")
    return problems
