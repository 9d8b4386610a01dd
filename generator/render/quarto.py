"""The course's Quarto pages, in memory: a lesson's folder (lesson.qmd and its downloads), the
project's index, configuration and README, figure cross-references, what the exercise profile
shows of a page, and the checks every page passes (balanced blocks, links that reach a file of the
project). Pure: release/quarto.py writes the project's zip; gate/quarto_leaks.py scans it.

`quarto render --profile exercise` and `--profile answer` render the two editions of the same
`.qmd` files; everything answer-only sits in `::: {.content-visible when-profile="answer"}` blocks
or in a lesson's `answer/` folder, which only those blocks link to and only the answer profile
publishes. Everything comes from the content and the rendered packs (the kernel files and check.py
that verification ran), through the same helpers as the other formats; translators add nothing.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Iterator

import jinja2

from generator.content.loader import CourseContent, Lesson
from generator.content.markdown import check_markdown
from generator.files import memo
from generator.files.pack import Pack
from generator.render.render import (
    LessonContext,
    fill_measured,
    measured_section,
    navigation,
    readme_verification,
    without_main_block,
)


EDITION = "quarto"  # the pack's edition word: triton_course-<locale>-quarto.zip


ANSWER_DIR = "answer"  # a lesson's answer-only files, linked from answer blocks only


PATH_CHARS = re.compile(r"[\w.\-/]*")  # what a file's path in a page is made of


PROFILES = ("exercise", "answer")


OUTPUT_DIRS = {"exercise": "_site-exercise", "answer": "_site-answer"}


ANSWER_BLOCK = re.compile(
    r"""^\s*:{3,}\s*\{[^}]*\.content-visible\b[^}]*\bwhen-profile\s*=\s*"answer"[^}]*\}\s*$"""
)


DIV_FENCE = re.compile(r"^\s*:{3,}")


CODE_FENCE = re.compile(r"^\s*(`{3,}(?!.*`)|~{3,})")


CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


CITE_PUNCT = ":.#$%&-+?<>~/"  # pandoc's internal punctuation of a citation key


@dataclass(frozen=True)
class Figure:
    label: str  # fig-3-1: Quarto's cross-reference label
    name: str  # "Figure 3-1": what the lesson text calls it ("" when the caption names none)
    caption: str  # the caption without its name (Quarto numbers the figure itself)
    mermaid: str


def project_name(content: CourseContent, locale: str) -> str:
    return Pack(content.course.id, locale, EDITION).name


def project_names(content: CourseContent) -> tuple[set[str], list[str]]:
    """(every file the project holds, the answer-only ones sorted), kept for the build (with the
    content they were made for, so that its id stays its own): each lesson's page is checked
    against them."""
    kept = memo.table("quarto.names")
    found = kept.get(id(content))
    if found is None or found[0] is not content:
        names = {
            f"{lesson.spec.id}/{name}"
            for lesson in content.published
            for name in _lesson_names(lesson)
        }
        names |= set(TOP_FILES)
        found = kept[id(content)] = (
            content,
            (names, sorted(name for name in names if ANSWER_DIR in name.split("/")[:-1])),
        )
    return found[1]


TOP_FILES = (
    "index.qmd",
    "_quarto.yml",
    *(f"_quarto-{profile}.yml" for profile in PROFILES),
    "README.md",
)


def top_files(
    content: CourseContent, locale: str, env: jinja2.Environment, resources: dict[str, list[str]]
) -> dict[str, bytes]:
    ui = content.locales[locale]
    files: dict[str, bytes] = {}
    entries = _index_entries(content, locale)
    pages = [entry for entry in entries if entry["href"]]
    files["index.qmd"] = cross_reference(
        env.get_template("quarto/index.qmd.j2").render(ui=ui, lessons=entries), []
    ).encode()
    files["_quarto.yml"] = (
        env.get_template("quarto/_quarto.yml.j2")
        .render(ui=ui, locale=locale, pages=pages, default_profile=PROFILES[0], profiles=PROFILES)
        .encode()
    )
    for profile in PROFILES:
        files[f"_quarto-{profile}.yml"] = (
            env.get_template("quarto/_quarto-profile.yml.j2")
            .render(
                profile=profile,
                output_dir=OUTPUT_DIRS[profile],
                resources=resources[profile],
                title=f"{ui.course_title} · {ui.pack.edition_answer if profile == 'answer' else ui.pack.edition_exercise}",
            )
            .encode()
        )
    files["README.md"] = (
        env.get_template("quarto/README.md.j2")
        .render(
            course_title=ui.course_title,
            locale=locale,
            output_dirs=OUTPUT_DIRS,
            answer_dir=ANSWER_DIR,
            lessons=[posixpath.dirname(page["href"]) for page in pages],
        )
        .encode()
    )
    return files


def _index_entries(content: CourseContent, locale: str) -> list[dict]:
    """The course's lessons in order: published ones link to their page, planned ones do not."""
    ui, entries = content.locales[locale], []
    for entry in content.course.lessons:
        lesson = content.lessons.get(entry.id) if entry.status == "published" else None
        entries.append(
            {
                "heading": ui.heading(entry.id, entry.number),
                "goal": " ".join(lesson.texts[locale].goal.split()) if lesson else "",
                "href": f"{entry.id}/lesson.qmd" if lesson else None,
            }
        )
    return entries


def lesson_files(
    content: CourseContent,
    lesson: Lesson,
    locale: str,
    packs: dict[str, Pack],
    record: dict | None,
    env: jinja2.Environment,
) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """One lesson's folder: lesson.qmd, the exercise edition's downloads beside it and the answer
    edition's in answer/; and the downloads each profile publishes."""
    spec = lesson.spec
    exercise, answer = (
        LessonContext(content, lesson, locale, edition, bundle=True) for edition in PROFILES
    )
    ui = exercise.ui
    descriptions = dict(ui.pack.file_descriptions) | dict(exercise.text.files)
    own, shared = _downloads(lesson)
    files = {name: packs["exercise"].files[name] for name in own["exercise"] + shared}
    files |= {f"{ANSWER_DIR}/{name}": packs["answer"].files[name] for name in own["answer"]}
    downloads = {
        "exercise": own["exercise"] + shared,
        "answer": [f"{ANSWER_DIR}/{name}" for name in own["answer"]] + shared,
    }

    def listed(names: list[str], folder: str, answer_edition: bool) -> list[dict]:
        kernel = descriptions["kernel_answer" if answer_edition else "kernel"]
        return [
            {"name": name, "href": folder + name, "about": descriptions.get(name, kernel)}
            for name in names
        ]

    verification = readme_verification(record)
    document = env.get_template("quarto/lesson.qmd.j2").render(
        ui=ui,
        text=answer.text,
        heading=exercise.heading,
        figures=figures(lesson, locale),
        questions=[(q, answer.text.questions[q]) for q in spec.questions],
        hints=answer.hints,
        exercise_hints=len(exercise.hints),
        exercise_code=without_main_block(exercise.code()),
        answer_code=without_main_block(answer.code()),
        downloads={
            "exercise": listed(own["exercise"], "", False),
            "answer": listed(own["answer"], f"{ANSWER_DIR}/", True),
            "both": listed(shared, "", False),
        },
        verified=ui.pack.verified_on.format(**verification)
        if verification
        else ui.pack.not_verified,
        measured=measured_section(answer, record),
        nav=[
            link | {"href": link["href"] and link["href"].removesuffix(".md") + ".qmd"}
            for link in navigation(answer)
        ],
    )
    where = f"{content.course.id}-{locale}-{EDITION}/{spec.id}/lesson.qmd"
    values = ((record or {}).get("bench") or {}).get("values")
    document = fill_measured(document, values, ui.pack.measured_placeholder, where)
    files["lesson.qmd"] = cross_reference(document, figures(lesson, locale)).encode()
    return files, downloads


def _downloads(lesson: Lesson) -> tuple[dict[str, list[str]], list[str]]:
    """(each edition's own files, the files both share) of a lesson's folder: the exercise's beside
    lesson.qmd, the answer's in answer/."""
    spec = lesson.spec
    shared = [f.name for f in spec.files if f.edition == "both"] + ["requirements.txt"]
    own = {
        "exercise": [spec.kernel_file, "check.py"],
        "answer": [
            spec.kernel_file,
            "check.py",
            *[f.name for f in spec.files if f.edition == "answer"],
        ],
    }
    return own, shared


def _lesson_names(lesson: Lesson) -> list[str]:
    """Every file of a lesson's folder, known before it is rendered."""
    own, shared = _downloads(lesson)
    return [
        "lesson.qmd",
        *own["exercise"],
        *shared,
        *(f"{ANSWER_DIR}/{name}" for name in own["answer"]),
    ]


FIGURE_NAME = re.compile(r"^\s*([^:：`$\n]{1,24}?\d[^:：`$\n]{0,8}?)\s*[:：]\s*(\S.*)$", re.S)


def figures(lesson: Lesson, locale: str) -> list[Figure]:
    """The lesson's figures with a Quarto label each. A caption that starts with the figure's name
    ("Figure 3-1: ...", "图 3-1：...") loses it: Quarto numbers figures and writes the prefix."""
    found = []
    for figure_id in lesson.spec.figures:
        figure = lesson.texts[locale].figures[figure_id]
        label = "fig-" + re.sub(r"^fig(?=\d)", "", figure_id).replace("_", "-")
        match = FIGURE_NAME.match(figure.caption)
        name, caption = (
            (match.group(1).strip(), match.group(2).strip())
            if match
            else ("", figure.caption.strip())
        )
        found.append(Figure(label, name, caption, figure.mermaid))
    names = [f.name for f in found]  # a name two figures share refers to neither
    return [
        f if names.count(f.name) == 1 else Figure(f.label, "", f.caption, f.mermaid) for f in found
    ]


def cross_reference(document: str, figures: list[Figure]) -> str:
    """Prose that names a figure ("figure 3-2") refers to it as Quarto does (@fig-3-2); a stray `@`
    that pandoc would read as a citation is escaped. Code, fences and front matter stay as they are."""
    mentions = [
        (
            re.compile(
                r"(?<![A-Za-z0-9_@\\])"
                + r"\s*".join(map(re.escape, f.name.split()))
                + r"(?![A-Za-z0-9_]|-\d)",
                re.I,
            ),
            f.label,
        )
        for f in figures
        if f.name
    ]
    out = []
    for kind, line in _lines(document):
        if kind != "text":
            out.append(line)
            continue
        pieces, last = [], 0
        for span in CODE_SPAN.finditer(line):
            pieces += [_prose(line[last : span.start()], mentions), span.group(0)]
            last = span.end()
        out.append("".join(pieces) + _prose(line[last:], mentions))
    return "".join(out)


def _prose(text: str, mentions: list[tuple[re.Pattern, str]]) -> str:
    text = re.sub(r"(?<![\w\\/])@(?=\w)", r"\\@", text)
    for pattern, label in mentions:

        def ref(match: re.Match, label: str = label) -> str:
            before, after = match.string[: match.start()], match.string[match.end() :]
            lead = " " if before and (before[-1].isalnum() or before[-1] == "_") else ""
            tail = (
                " "
                if after
                and (
                    after[0].isalnum()
                    or after[0] == "_"
                    or (
                        after[0] in CITE_PUNCT
                        and len(after) > 1
                        and (after[1].isalnum() or after[1] == "_")
                    )
                )
                else ""
            )
            return f"{lead}@{label}{tail}"

        text = pattern.sub(ref, text)
    return text


def _lines(document: str) -> Iterator[tuple[str, str]]:
    """Each line (with its end) as front matter, code (inside a fence, fences included), a fenced
    div's opening or closing line, or text, read as pandoc reads them."""
    fence, front = None, document.startswith("---\n")
    for index, line in enumerate(document.splitlines(keepends=True)):
        if front:
            front = not (index > 0 and line.rstrip() == "---")
            yield "front", line
            continue
        match = CODE_FENCE.match(line)
        if fence is not None:
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not line.strip().lstrip(fence[0])
            ):
                fence = None
            yield "code", line
        elif match:
            fence = match.group(1)
            yield "code", line
        elif DIV_FENCE.match(line):
            yield ("close" if not line.strip().lstrip(":") else "open"), line
        else:
            yield "text", line


def exercise_view(document: str) -> str:
    """What a `.qmd` shows outside answer-profile blocks (nested blocks counted as pandoc does)."""
    out, stack = [], []
    for kind, line in _lines(document):
        hidden = any(stack)
        if kind == "open":
            stack.append(bool(ANSWER_BLOCK.match(line)))
        elif kind == "close" and stack:
            stack.pop()
        if not hidden and not (kind == "open" and stack[-1]):
            out.append(line)
    return "".join(out)


def page_problems(root: str, name: str, document: str, names: set[str]) -> list[str]:
    """A generated page's fenced divs balance, its code fences close, its math balances and every
    link reaches a file of the project (names: every file it holds; from the page's own folder)."""
    where = f"{root}/{name}"
    problems, depth, number = [], 0, 0
    for number, (kind, _) in enumerate(_lines(document), 1):
        depth += {"open": 1, "close": -1}.get(kind, 0)
        if depth < 0:
            problems.append(f"{where}:{number}: a ':::' line closes a block that was never opened")
            depth = 0
    if depth:
        problems.append(f"{where}:{number}: {depth} ':::' block(s) never closed")
    return problems + check_markdown(document, _Reachable(names, posixpath.dirname(name)), where)


class _Reachable:
    """The project's files as a page in `folder` links to them (paths relative to the page), looked
    up one link at a time: listing every file relative to every page grows with the course squared."""

    def __init__(self, files, folder: str):
        self.files, self.folder = files, folder

    def __contains__(self, target: object) -> bool:
        if target == "manifest.json":
            return True
        path = posixpath.normpath(posixpath.join(self.folder, str(target)))
        return not path.startswith("../") and path in self.files


def as_written(document: str, lesson: Lesson, locale: str) -> str:
    """A page with its figure references back in the lesson's words (@fig-3-2 -> figure 3-2), as
    the answer fingerprints were taken from them."""
    names = {f.label: f.name for f in figures(lesson, locale) if f.name}
    return re.sub(
        r"\\?@(fig-[A-Za-z0-9_-]+)", lambda m: names.get(m.group(1), m.group(0)), document
    )


def holds_answers(zip_name: str) -> bool:
    """Whether a zip of build/dist is a Quarto project (instructor material: it holds the answers)."""
    return zip_name.endswith(f"-{EDITION}.zip")
