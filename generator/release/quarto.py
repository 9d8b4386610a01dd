"""The course as a Quarto website project, one zip per locale: both editions from one source.

`quarto render --profile exercise` and `--profile answer` render the two editions of the same
`.qmd` files; everything answer-only sits in `::: {.content-visible when-profile="answer"}` blocks
or in a lesson's `answer/` folder, which only those blocks link to and only the answer profile
publishes. The project is instructor material (it holds the answers): `project_leaks`
(gate/quarto_leaks.py) proves that what the exercise profile can show holds no answer material,
with the packs' own fingerprints. The pages themselves are made in render/quarto.py.

Everything comes from the content and the rendered packs (the kernel files and check.py that
verification ran), through the same helpers as the other formats; translators add nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import jinja2

from generator.content.loader import CourseContent, Lesson
from generator.files.archive import Entry, ZipWriter
from generator.files.pack import Pack, file_digest, manifest
from generator.gate.leaks import fingerprints
from generator.gate.quarto_leaks import AnswerMentions, folder_leaks
from generator.render.quarto import (
    ANSWER_DIR,
    EDITION,
    PROFILES,
    lesson_files,
    page_problems,
    project_name,
    project_names,
    top_files,
)
from generator.render.render import RenderError, located_template_error


@dataclass(frozen=True)
class QuartoLesson:
    """One lesson's folder of a Quarto project, made, checked and deflated where the lesson was
    rendered (a build's worker process): what the process writing the project's zip needs."""

    lesson_id: str
    entries: list[tuple[Entry, str]]  # each file deflated, with its sha256
    downloads: dict[str, list[str]]  # by profile: the files it publishes (project paths)
    verified: bool
    problems: list[str]  # its page's problems
    leaks: list[str]  # the answer material its exercise profile shows


def quarto_lesson(
    content: CourseContent,
    lesson: Lesson,
    locale: str,
    packs: dict[str, Pack],
    record: dict | None,
    env: jinja2.Environment,
    prints: list | None = None,
) -> QuartoLesson:
    """A lesson's folder (packs: its rendered packs by edition, whose kernel file, check.py and
    shipped files are the verified ones; record: its verification record, or None), its page
    checked against every file the project will hold and its exercise profile scanned for the
    lesson's answer material (prints: its fingerprints, where the caller has them)."""
    lesson_id = lesson.spec.id
    try:
        files, downloads = lesson_files(content, lesson, locale, packs, record, env)
    except jinja2.TemplateError as exc:
        raise located_template_error(exc, Path(env.loader.searchpath[0])) from exc
    root = project_name(content, locale)
    names, answer_only = project_names(content)
    problems = [
        problem
        for name in sorted(files)
        if name.endswith(".qmd")
        for problem in page_problems(
            root, f"{lesson_id}/{name}", files[name].decode("utf-8"), names
        )
    ]
    shown = {
        f"{lesson_id}/{name}": data
        for name, data in files.items()
        if ANSWER_DIR not in name.split("/")[:-1]
    }
    leaks = folder_leaks(
        shown,
        lesson,
        locale,
        prints if prints is not None else fingerprints(lesson, locale),
        AnswerMentions(answer_only, f"{root}.zip"),
        f"{root}.zip",
    )
    entries = [
        (Entry.of(f"{lesson_id}/{name}", files[name]), file_digest(files[name]))
        for name in sorted(files)
    ]
    return QuartoLesson(
        lesson_id,
        entries,
        {profile: [f"{lesson_id}/{name}" for name in downloads[profile]] for profile in PROFILES},
        record is not None,
        problems,
        leaks,
    )


class QuartoWriter:
    """One locale's Quarto project written to folder/<name>.zip lesson by lesson, in course order
    (as a course bundle is): add() each published lesson's folder (quarto_lesson) as the build
    finishes it, then finish(). What stays in memory is each file's name and sha256 and the
    downloads' names, never the lessons."""

    def __init__(self, content: CourseContent, locale: str, env: jinja2.Environment, folder: Path):
        self.content, self.locale, self.env = content, locale, env
        self.header = Pack(content.course.id, locale, EDITION)  # name, locale and edition; no files
        self.path = folder / f"{self.header.name}.zip"
        self.file = self.path.open("wb")
        self.zip = ZipWriter(self.file, self.header.name)
        self.names = project_names(content)[0]
        self.digests: dict[str, str] = {}
        self.resources: dict[str, list[str]] = {profile: [] for profile in PROFILES}
        self.verified: dict[str, str] = {}
        self.problems: list[str] = []

    @property
    def name(self) -> str:
        return self.header.name

    def add(self, part: QuartoLesson) -> None:
        """A lesson's folder; its leaks are the caller's to report (project_leaks does not scan it again)."""
        for entry, digest in part.entries:
            self.zip.write(entry)
            self.digests[entry.name] = digest
        for profile in PROFILES:
            self.resources[profile] += part.downloads[profile]
        self.verified[part.lesson_id] = "verified" if part.verified else "NOT VERIFIED"
        self.problems += part.problems

    def finish(self) -> None:
        """The index, the configuration and the README (which list every lesson), then the manifest."""
        try:
            top = top_files(self.content, self.locale, self.env, self.resources)
        except jinja2.TemplateError as exc:
            raise located_template_error(exc, Path(self.env.loader.searchpath[0])) from exc
        for name in sorted(top):
            self.zip.add(name, top[name])
            self.digests[name] = hashlib.sha256(top[name]).hexdigest()
            if name.endswith(".qmd"):
                self.problems += page_problems(
                    self.name, name, top[name].decode("utf-8"), self.names
                )
        missing = sorted(self.names - set(self.digests))
        if missing:  # the list the links were checked against names a file never written
            self.problems.append(
                f"{self.name}: files expected but not written: {', '.join(missing[:5])}"
            )
        if self.problems:
            raise RenderError("\n".join(self.problems))
        self.zip.add(
            "manifest.json",
            manifest(self.header, {"lessons": self.verified, "holds_answers": True}, self.digests),
        )
        self.zip.close()
        self.file.close()

    def close(self) -> None:
        """Let go of the file (a build that stops early)."""
        self.file.close()
