"""Each student's answers to the rubric's manual parts, read from what they handed in: a
notebook's answer cells (by the part in the cell's metadata, else by the part's heading in any of
the course's languages), a `submission.md` (by its `<!-- coursepack:part=ID -->` marker, else by
the heading), in zips too (collect.py opens them). Answers are untrusted text: they are read and
kept as written, never run, never rendered here.

Each part's status: answered; untouched (only the pack's placeholder is there); empty (the place
is there, with nothing in it); absent (no place for it in any file: a kernel file alone, say).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from generator.grade.lesson import GradeLesson
from generator.render.notebook import PART_KEY

STATUSES = ("answered", "untouched", "empty", "absent")  # the better first, when files disagree
MAX_CHARS = 20_000  # of one answer kept (the rest is cut, and says so)
MARKER = re.compile(r"<!--\s*coursepack:part\s*=\s*([a-z][a-z0-9_]*)\s*-->", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATTRIBUTES = re.compile(r"\{#[^}]*\}\s*$")


@dataclass(frozen=True)
class Part:
    """What grading knows of one manual part: its headings and prompts in every language."""

    id: str
    titles: frozenset[str]
    prompts: frozenset[str]


@dataclass(frozen=True)
class Labels:
    parts: tuple[Part, ...]
    placeholders: frozenset[str]  # the packs' answer placeholders, in every language (normalised)


@dataclass
class Answer:
    status: str
    text: str = ""
    where: str = ""  # "lesson.ipynb cell 14", "submission.md line 40"
    file: str = ""

    def json(self) -> dict:
        return {"status": self.status, "text": self.text, "where": self.where}


@dataclass
class StudentAnswers:
    source: str = ""
    parts: dict[str, Answer] = field(default_factory=dict)

    def json(self) -> dict:
        return {
            "source": self.source,
            "parts": {pid: answer.json() for pid, answer in self.parts.items()},
        }

    def count(self, status: str = "answered") -> int:
        return sum(1 for answer in self.parts.values() if answer.status == status)


def labels(lesson: GradeLesson) -> Labels:
    """The manual parts' headings, prompts and placeholders, from every language's check.py."""
    manual = [part.id for part in lesson.spec.rubric.manual]
    titles: dict[str, set[str]] = {pid: set() for pid in manual}
    prompts: dict[str, set[str]] = {pid: set() for pid in manual}
    placeholders = set()
    for language in lesson.languages.values():
        for place in language.data.get("answer_places", []):
            if place["id"] in titles:
                titles[place["id"]].add(_norm(place["title"]))
                if place.get("prompt"):
                    prompts[place["id"]].add(_norm(place["prompt"]))
        for key in ("report_answer_here", "report_explain_here", "report_no_failures"):
            placeholders.add(_norm(language.data["messages"][key]))
    parts = tuple(Part(pid, frozenset(titles[pid]), frozenset(prompts[pid])) for pid in manual)
    return Labels(parts, frozenset(placeholders))


def _norm(text: str) -> str:
    """Text compared loosely: no emphasis marks, quote marks or spaces, case folded."""
    return re.sub(r"[\s*_>`]+", "", text).casefold()


# ---- one student ---------------------------------------------------------------------------------


def answers_of(documents: list[tuple[str, bytes]], known: Labels) -> StudentAnswers:
    """Every manual part from the student's notebooks and reports: for each part the best place
    found (answered before untouched before empty), the source the file that gave most answers."""
    found: dict[str, Answer] = {part.id: Answer("absent") for part in known.parts}
    for path, data in documents:
        for pid, answer in read_document(path, data, known).items():
            if STATUSES.index(answer.status) < STATUSES.index(found[pid].status):
                found[pid] = answer
    given: dict[str, int] = {}
    for answer in found.values():
        if answer.status != "absent":
            given[answer.file] = given.get(answer.file, 0) + (answer.status == "answered")
    source = max(sorted(given), key=lambda p: given[p]) if given else ""
    return StudentAnswers(source, found)


def read_document(path: str, data: bytes, known: Labels) -> dict[str, Answer]:
    """The parts found in one file (a notebook or a Markdown report); none in any other."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return {}
    if path.lower().endswith(".ipynb"):
        cells = _cells(text)
        return from_notebook(cells, known, path) if cells is not None else {}
    return from_markdown(text, known, path)


# ---- Markdown: a report --------------------------------------------------------------------------


def _outline(lines: list[str]) -> tuple[list[int | None], dict[int, str]]:
    """Per line its heading level (None: not a heading), and the markers, both outside fenced code."""
    levels: list[int | None] = []
    markers: dict[int, str] = {}
    fence = ""
    for number, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            levels.append(None)
            continue
        if opening:
            fence = opening.group(1)
            levels.append(None)
            continue
        heading = HEADING.match(line)
        levels.append(len(heading.group(1)) if heading else None)
        marker = MARKER.search(line)
        if marker:
            markers[number] = marker.group(1).lower()
    return levels, markers


def from_markdown(text: str, known: Labels, path: str) -> dict[str, Answer]:
    lines = text.splitlines()
    levels, markers = _outline(lines)
    stops = _stops(lines, levels, markers, known)
    found = {}
    for part in known.parts:
        start = next((n for n, pid in markers.items() if pid == part.id), None)
        if start is not None:
            level = next((levels[n] for n in range(start, -1, -1) if levels[n] is not None), 6)
            body = [MARKER.sub("", lines[start], count=1)] + lines[
                start + 1 : _end(levels, stops, start, level)
            ]
        else:
            start = next(
                (n for n, level in enumerate(levels) if level and _titled(lines[n], part)), None
            )
            if start is None:
                continue
            body = _without_prompt(
                lines[start + 1 : _end(levels, stops, start, levels[start])], part
            )
        found[part.id] = judged(body, known, path, f"line {start + 1}")
    return found


def _stops(
    lines: list[str], levels: list[int | None], markers: dict[int, str], known: Labels
) -> set[int]:
    """The lines that end any part's text: the markers, and the headings that name a part (a
    deleted heading leaves the section above it open to the next part's heading)."""
    return set(markers) | {
        n
        for n, level in enumerate(levels)
        if level and any(_titled(lines[n], p) for p in known.parts)
    }


def _end(levels: list[int | None], stops: set[int], start: int, level: int) -> int:
    """Where a part's text ends: the next stop, or the next heading as high as its own."""
    for number in range(start + 1, len(levels)):
        if number in stops or (levels[number] is not None and levels[number] <= level):
            return number
    return len(levels)


def _titled(line: str, part: Part) -> bool:
    """A heading that names the part in one of the course's languages ("Q1", "Q1: ...")."""
    heading = HEADING.match(line)
    words = _norm(ATTRIBUTES.sub("", heading.group(2) or "")) if heading else ""
    return any(
        words == title or (words.startswith(title) and not words[len(title)].isalnum())
        for title in part.titles
        if title
    )


def _without_prompt(lines: list[str], part: Part) -> list[str]:
    """A section found by its heading, without the question as the pack wrote it above the answer."""
    quoted = 0
    while quoted < len(lines) and (
        lines[quoted].lstrip().startswith(">") or not lines[quoted].strip()
    ):
        quoted += 1
    if quoted and _norm("".join(lines[:quoted])) in part.prompts:
        return lines[quoted:]
    joined = _norm("".join(lines))
    for prompt in part.prompts:  # the prompt as a plain paragraph (a notebook's question cell)
        if joined.startswith(prompt):
            taken = ""
            for index, line in enumerate(lines):
                taken += _norm(line)
                if taken == prompt:
                    return lines[index + 1 :]
    return lines


# ---- notebooks ---------------------------------------------------------------------------------


def _cells(text: str) -> list[tuple[str, dict, str]] | None:
    """(cell type, metadata, source) of each cell of a notebook; None where it is not one."""
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = (
            "".join(s for s in source if isinstance(s, str))
            if isinstance(source, list)
            else str(source)
        )
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        found.append((str(cell.get("cell_type", "")), metadata, source))
    return found


def _cell_part(metadata: dict) -> str | None:
    mine = metadata.get(PART_KEY)
    return (
        str(mine.get("part")) if isinstance(mine, dict) and mine.get("part") is not None else None
    )


def from_notebook(
    cells: list[tuple[str, dict, str]], known: Labels, path: str
) -> dict[str, Answer]:
    found = {}
    for part in known.parts:
        index = next(
            (n for n, (_, metadata, _) in enumerate(cells) if _cell_part(metadata) == part.id), None
        )
        if index is not None:
            found[part.id] = judged(cells[index][2].splitlines(), known, path, f"cell {index + 1}")
            continue
        index = next(
            (
                n
                for n, (kind, _, source) in enumerate(cells)
                if kind == "markdown" and any(_titled(line, part) for line in source.splitlines())
            ),
            None,
        )
        if index is not None:
            found[part.id] = judged(
                _after_heading(cells, index, part), known, path, f"cell {index + 1}"
            )
    return found


def _after_heading(cells: list[tuple[str, dict, str]], index: int, part: Part) -> list[str]:
    """A part found by its heading: the rest of that cell's section (without the question), then
    the Markdown cells that follow, up to a code cell, another answer cell or another heading."""
    lines = cells[index][2].splitlines()
    levels, markers = _outline(lines)
    start = next(n for n, line in enumerate(lines) if levels[n] and _titled(line, part))
    body = _without_prompt(
        lines[start + 1 : _end(levels, set(markers), start, levels[start])], part
    )
    for kind, metadata, source in cells[index + 1 :]:
        if (
            kind != "markdown"
            or _cell_part(metadata) is not None
            or HEADING.match(source.lstrip("\n").split("\n")[0])
        ):
            break
        body += source.splitlines()
    return body


# ---- what a place holds --------------------------------------------------------------------------


def judged(lines: list[str], known: Labels, path: str, where: str) -> Answer:
    """An answer place's text as the student left it, and its status; where: in the file at path."""
    text = "\n".join(line for line in lines if not MARKER.fullmatch(line.strip())).strip()
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"\n\n[... cut at {MAX_CHARS} characters]"
    content = [
        line
        for line in text.splitlines()
        if line.strip() and not HEADING.match(line) and _norm(line) not in known.placeholders
    ]
    status = (
        "answered"
        if content
        else "untouched"
        if any(_norm(line) in known.placeholders for line in text.splitlines() if line.strip())
        else "empty"
    )
    return Answer(status, text, f"{path} {where}", path)


def attach_answers(lesson: GradeLesson, rows: list) -> None:
    """Each grading row's answers (row.answers, as answers.json holds them): none handed in, or
    only a kernel file, is every part absent."""
    known = labels(lesson)
    for row in rows:
        documents = row.submission.documents if row.submission is not None else []
        row.answers = answers_of(documents, known).json()


def answered_cell(answers: dict | None) -> str:
    """grades.csv's answers cell: "3 of 4" parts answered; "absent" where no place was found."""
    if answers is None:
        return ""
    statuses = [part["status"] for part in answers["parts"].values()]
    if statuses and all(status == "absent" for status in statuses):
        return "absent"
    return f"{statuses.count('answered')} of {len(statuses)}"


def answers_json(rows: list) -> str:
    """answers.json: every row's answers, by student id, in the rows' order."""
    return (
        json.dumps({row.student: row.answers for row in rows}, ensure_ascii=False, indent=1) + "\n"
    )
