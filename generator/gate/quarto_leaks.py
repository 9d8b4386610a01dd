"""The leak scan of a Quarto project (instructor material: it holds the answers), as its exercise
profile shows it: no answer material outside the answer profile, with the packs' own fingerprints,
and no page but the answer profile's names an answer-only file."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from generator.content.loader import CourseContent, Lesson
from generator.gate.leaks import fingerprints, scan_files
from generator.render.quarto import ANSWER_DIR, PATH_CHARS, PROFILES, as_written, exercise_view


def project_leaks(
    content: CourseContent,
    locale: str,
    source: bytes | Path,
    label: str,
    prints: dict[str, list] | None = None,
    scanned: frozenset[str] = frozenset(),
) -> list[str]:
    """The leak scan of a Quarto project zip (its bytes, or its path: read a folder at a time), as
    its exercise profile shows it: every file but the lessons' answer/ folders, each page without
    its answer-profile blocks. Each lesson's folder against that lesson's answer fingerprints, the
    project's top files and its entry names against every lesson's (as a course bundle is
    scanned); and no page or configuration but the answer profile's names an answer-only file.
    prints: each lesson's fingerprints, where the caller has them; scanned: the lesson folders
    that quarto_lesson scanned as it made them (a build's), not read back. Linear in the course."""
    lessons = {lesson.spec.id: lesson for lesson in content.published}
    prints = prints if prints is not None else {}
    by_lesson = {
        lesson_id: prints.get(lesson_id) or fingerprints(lesson, locale)
        for lesson_id, lesson in lessons.items()
    }
    every = list(dict.fromkeys(fp for lesson_prints in by_lesson.values() for fp in lesson_prints))
    with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as archive:
        infos = {info.filename.split("/", 1)[1]: info for info in archive.infolist()}
        answer_only = sorted(name for name in infos if ANSWER_DIR in name.split("/")[:-1])
        mentions = AnswerMentions(answer_only, label)
        folders: dict[str, list[str]] = {}
        for name in infos:
            if name not in answer_only:
                folders.setdefault(name.split("/", 1)[0] if "/" in name else "", []).append(name)
        found = []
        for folder in sorted(set(folders) - set(scanned)):
            files = {name: archive.read(infos[name]) for name in folders[folder]}
            if not folder:
                found += folder_leaks(files, None, locale, every, mentions, label)
                found += [
                    f"{leak} (outside the answer profile)"
                    for leak in scan_files(
                        {"(zip entry names)": "\n".join(infos).encode()}, every, label
                    )
                ]
            else:
                found += folder_leaks(
                    files,
                    lessons.get(folder),
                    locale,
                    by_lesson.get(folder, every),
                    mentions,
                    label,
                )
    return found


def folder_leaks(
    files: dict[str, bytes],
    lesson: Lesson | None,
    locale: str,
    prints: list,
    mentions: "AnswerMentions",
    label: str,
) -> list[str]:
    """One folder of a project as its exercise profile shows it (files: by project path, the
    answer/ folder left out): the answer-only files its pages name, the answer material it holds."""
    shown = {name: _exercise_reading(name, body, lesson, locale) for name, body in files.items()}
    found = [line for name, body in sorted(shown.items()) for line in mentions.of(name, body)]
    return found + [
        f"{leak} (outside the answer profile)" for leak in scan_files(shown, prints, label)
    ]


def _exercise_reading(name: str, body: bytes, lesson: Lesson | None, locale: str) -> bytes:
    """A file as the exercise profile shows it: a page without its answer-profile blocks, its figure
    references read as the lesson text wrote them."""
    if not name.endswith(".qmd"):
        return body
    text = exercise_view(body.decode("utf-8"))
    return (as_written(text, lesson, locale) if lesson is not None else text).encode()


class AnswerMentions:
    """Pages and configuration (the answer profile's own excepted) that name an answer-only file,
    as `answer/<file>`: each page's mentions of the answer folder read once, not each file name
    looked for in each page."""

    def __init__(self, answer_only: list[str], label: str):
        self.label = label
        self.wanted: dict[str, list[str]] = {}
        for path in answer_only:
            self.wanted.setdefault(path.split("/", 1)[1], []).append(path)
        self.simple = {suffix for suffix in self.wanted if PATH_CHARS.fullmatch(suffix)}

    def of(self, name: str, body: bytes) -> list[str]:
        if not name.endswith((".qmd", ".yml")) or name == f"_quarto-{PROFILES[1]}.yml":
            return []
        text = body.decode("utf-8")
        named = {suffix for suffix in self.wanted if suffix not in self.simple and suffix in text}
        for mention in re.finditer(re.escape(ANSWER_DIR + "/"), text):
            token = PATH_CHARS.match(text, mention.end()).group(0)
            named |= {
                suffix
                for k in range(1, len(token) + 1)
                if (suffix := f"{ANSWER_DIR}/{token[:k]}") in self.simple
            }
        return [
            f"{self.label}/{name}: names the answer-only {path} outside an answer-profile block"
            for suffix in sorted(named)
            for path in self.wanted[suffix]
        ]
