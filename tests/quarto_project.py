"""A course's Quarto projects in memory, for tests and the golden trees: QuartoWriter's zip,
written to a temporary folder and read back (a build writes them with the same writer)."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import jinja2

from generator.content.loader import CourseContent
from generator.files.pack import Pack
from generator.release.quarto import QuartoWriter, quarto_lesson
from generator.render.quarto import EDITION


def quarto_project(
    content: CourseContent,
    locale: str,
    packs: dict[str, dict[str, Pack]],
    records: dict[str, dict | None],
    env: jinja2.Environment,
) -> Pack:
    """The whole project in memory (QuartoWriter's zip, read back): for tests and the golden
    trees. packs and records by lesson id, as quarto_lesson takes them."""
    with tempfile.TemporaryDirectory(prefix="coursepack-quarto-") as folder:
        writer = QuartoWriter(content, locale, env, Path(folder))
        try:
            for lesson in content.published:
                writer.add(
                    quarto_lesson(
                        content,
                        lesson,
                        locale,
                        packs[lesson.spec.id],
                        records.get(lesson.spec.id),
                        env,
                    )
                )
            writer.finish()
        finally:
            writer.close()
        with zipfile.ZipFile(writer.path) as archive:
            files = {
                info.filename.split("/", 1)[1]: archive.read(info) for info in archive.infolist()
            }
    return Pack(content.course.id, locale, EDITION, files)


def quarto_projects(
    content: CourseContent, groups: dict, records: dict, env: jinja2.Environment
) -> list[Pack]:
    """Per locale of a full build, the Quarto project (groups and records as build.py keeps them:
    by (lesson, locale))."""
    locales = [
        locale for locale in content.course.locales if any(key[1] == locale for key in groups)
    ]
    return [
        quarto_project(
            content,
            locale,
            {
                lesson.spec.id: {
                    edition: pack for edition, (_, pack) in groups[(lesson.spec.id, locale)].items()
                }
                for lesson in content.published
            },
            {lesson.spec.id: records.get((lesson.spec.id, locale)) for lesson in content.published},
            env,
        )
        for locale in locales
    ]
