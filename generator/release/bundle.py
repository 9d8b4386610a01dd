"""The course bundle: one zip per locale and edition with an index and every published lesson,
each in its own folder, rendered so that previous/next links between the folders work.

A bundle is written to its zip lesson by lesson as the build finishes each one (CourseBundle):
what stays in memory is each file's name and sha256, never the lessons. Its pages share one
mermaid, MERMAID_FILE at its root, instead of inlining it once per lesson."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import jinja2

from generator.files.archive import Entry, ZipWriter, checked_entries
from generator.render.html import (
    MERMAID_FILE,
    lesson_html,
    loads_shared_mermaid,
    mermaid_file,
    page_labels,
)
from generator.content.loader import CourseContent
from generator.content.markdown import check_markdown
from generator.files.pack import Edition, Pack, file_digest, manifest
from generator.render.render import RenderError


def index_markdown(
    content: CourseContent, locale: str, edition: Edition, env: jinja2.Environment
) -> str:
    ui = content.locales[locale]
    lessons = []
    for entry in content.course.lessons:
        published = entry.status == "published"
        goal = content.lessons[entry.id].texts[locale].goal.strip() if published else ""
        lessons.append(
            {
                "heading": ui.heading(entry.id, entry.number),
                "goal": " ".join(goal.split()),
                "href": f"{entry.id}/lesson.md" if published else None,
            }
        )
    return env.get_template("pack/course_index.md.j2").render(
        ui=ui,
        lessons=lessons,
        edition_name=ui.pack.edition_answer if edition == "answer" else ui.pack.edition_exercise,
    )


@dataclass(frozen=True)
class LessonFolder:
    """One lesson's final pack, rendered for the bundle, deflated for its zip: what a build's worker
    hands to the process that writes the bundle."""

    lesson_id: str
    entries: list[tuple[Entry, str]]  # each file deflated, with its sha256
    verified: bool
    shared: bool  # its page loads the bundle's mermaid


def lesson_folder(pack: Pack, verified: bool) -> LessonFolder:
    return LessonFolder(
        pack.lesson_id,
        [
            (Entry.of(f"{pack.lesson_id}/{name}", pack.files[name]), file_digest(pack.files[name]))
            for name in sorted(pack.files)
        ],
        verified,
        loads_shared_mermaid(pack.files.get("lesson.html", b"")),
    )


class CourseBundle:
    """One locale and edition of the course, written to folder/<name>.zip: add() each published
    lesson's folder (lesson_folder) in course order, then finish()."""

    def __init__(
        self,
        content: CourseContent,
        locale: str,
        edition: Edition,
        env: jinja2.Environment,
        folder: Path,
    ):
        self.content, self.env = content, env
        self.header = Pack(content.course.id, locale, edition)  # name, locale and edition; no files
        self.path = folder / f"{self.header.name}.zip"
        self.file = self.path.open("wb")
        self.zip = ZipWriter(self.file, self.header.name)
        self.digests: dict[str, str] = {}
        self.verified: dict[
            str, str
        ] = {}  # a word per lesson for the bundle's manifest (each lesson
        self.shared = False  # folder's own manifest has its full record)

    @property
    def name(self) -> str:
        return self.header.name

    def add(self, folder: LessonFolder) -> None:
        for entry, digest in folder.entries:
            self.zip.write(entry)
            self.digests[entry.name] = digest
        self.shared |= folder.shared
        self.verified[folder.lesson_id] = "verified" if folder.verified else "NOT VERIFIED"

    def _add(self, name: str, data: bytes) -> None:
        self.zip.add(name, data)
        self.digests[name] = hashlib.sha256(data).hexdigest()

    def finish(self) -> Iterator[tuple[str, bytes]]:
        """The index (README.md, and index.html whose links lead to the lessons' pages), the shared
        mermaid where a page draws figures, the manifest; then the zip, read back entry by entry and
        checked against its manifest (the caller scans what it reads)."""
        locale, edition = self.header.locale, self.header.edition
        index = index_markdown(self.content, locale, edition, self.env)
        problems = check_markdown(index, set(self.digests), f"{self.name}/README.md")
        if problems:
            raise RenderError("\n".join(problems))
        self._add("README.md", index.encode())
        ui = self.content.locales[locale]
        self._add(
            "index.html",
            lesson_html(
                index,
                lang=locale,
                title=ui.course_title,
                env=self.env,
                bench=None,
                labels=page_labels(ui, None),
            ),
        )
        if self.shared:
            self._add(MERMAID_FILE, mermaid_file())
        self.zip.add(
            "manifest.json", manifest(self.header, {"lessons": self.verified}, self.digests)
        )
        self.zip.close()
        self.file.close()
        return checked_entries(self.path, self.name, [*self.digests, "manifest.json"])

    def close(self) -> None:
        """Let go of the file (a build that stops early)."""
        self.file.close()
