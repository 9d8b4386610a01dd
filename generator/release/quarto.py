"""The course as a Quarto website project, one zip per locale: both editions from one source.

`quarto render --profile exercise` and `--profile answer` render the two editions of the same
`.qmd` files; everything answer-only sits in `::: {.content-visible when-profile="answer"}` blocks
or in a lesson's `answer/` folder, which only those blocks link to and only the answer profile
publishes. The project is instructor material (it holds the answers): `project_leaks` proves that
what the exercise profile can show holds no answer material, with the packs' own fingerprints.

Everything comes from the content and the rendered packs (the kernel files and check.py that
verification ran), through the same helpers as the other formats; translators add nothing.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import jinja2

from generator.files import memo
from generator.files.archive import Entry, ZipWriter
from generator.gate.leaks import fingerprints, scan_files
from generator.content.loader import CourseContent, Lesson
from generator.content.markdown import check_markdown
from generator.files.pack import Pack, file_digest, manifest
from generator.render.render import (LessonContext, RenderError, _measured_section, _navigation, _readme_verification,
                              fill_measured, located_template_error, without_main_block)

EDITION = "quarto"              # the pack's edition word: triton_course-<locale>-quarto.zip
ANSWER_DIR = "answer"           # a lesson's answer-only files, linked from answer blocks only
PATH_CHARS = re.compile(r"[\w.\-/]*")   # what a file's path in a page is made of
PROFILES = ("exercise", "answer")
OUTPUT_DIRS = {"exercise": "_site-exercise", "answer": "_site-answer"}
ANSWER_BLOCK = re.compile(r"""^\s*:{3,}\s*\{[^}]*\.content-visible\b[^}]*\bwhen-profile\s*=\s*"answer"[^}]*\}\s*$""")
DIV_FENCE = re.compile(r"^\s*:{3,}")
CODE_FENCE = re.compile(r"^\s*(`{3,}(?!.*`)|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
CITE_PUNCT = ":.#$%&-+?<>~/"    # pandoc's internal punctuation of a citation key


@dataclass(frozen=True)
class Figure:
    label: str        # fig-3-1: Quarto's cross-reference label
    name: str         # "Figure 3-1": what the lesson text calls it ("" when the caption names none)
    caption: str      # the caption without its name (Quarto numbers the figure itself)
    mermaid: str


@dataclass(frozen=True)
class QuartoLesson:
    """One lesson's folder of a Quarto project, made, checked and deflated where the lesson was
    rendered (a build's worker process): what the process writing the project's zip needs."""

    lesson_id: str
    entries: list[tuple[Entry, str]]     # each file deflated, with its sha256
    downloads: dict[str, list[str]]      # by profile: the files it publishes (project paths)
    verified: bool
    problems: list[str]                  # its page's problems
    leaks: list[str]                     # the answer material its exercise profile shows


def quarto_lesson(content: CourseContent, lesson: Lesson, locale: str, packs: dict[str, Pack], record: dict | None,
                  env: jinja2.Environment, prints: list | None = None) -> QuartoLesson:
    """A lesson's folder (packs: its rendered packs by edition, whose kernel file, check.py and
    shipped files are the verified ones; record: its verification record, or None), its page
    checked against every file the project will hold and its exercise profile scanned for the
    lesson's answer material (prints: its fingerprints, where the caller has them)."""
    lesson_id = lesson.spec.id
    try:
        files, downloads = _lesson_files(content, lesson, locale, packs, record, env)
    except jinja2.TemplateError as exc:
        raise located_template_error(exc, Path(env.loader.searchpath[0])) from exc
    root = project_name(content, locale)
    names, answer_only = _project_names(content)
    problems = [problem for name in sorted(files) if name.endswith(".qmd")
                for problem in _page_problems(root, f"{lesson_id}/{name}", files[name].decode("utf-8"), names)]
    shown = {f"{lesson_id}/{name}": data for name, data in files.items() if ANSWER_DIR not in name.split("/")[:-1]}
    leaks = _folder_leaks(shown, lesson, locale, prints if prints is not None else fingerprints(lesson, locale),
                          _AnswerMentions(answer_only, f"{root}.zip"), f"{root}.zip")
    entries = [(Entry.of(f"{lesson_id}/{name}", files[name]), file_digest(files[name]))
               for name in sorted(files)]
    return QuartoLesson(lesson_id, entries, {profile: [f"{lesson_id}/{name}" for name in downloads[profile]]
                                             for profile in PROFILES}, record is not None, problems, leaks)


def project_name(content: CourseContent, locale: str) -> str:
    return Pack(content.course.id, locale, EDITION).name


def _project_names(content: CourseContent) -> tuple[set[str], list[str]]:
    """(every file the project holds, the answer-only ones sorted), kept for the build (with the
    content they were made for, so that its id stays its own): each lesson's page is checked
    against them."""
    kept = memo.table("quarto.names")
    found = kept.get(id(content))
    if found is None or found[0] is not content:
        names = {f"{lesson.spec.id}/{name}" for lesson in content.published for name in _lesson_names(lesson)}
        names |= set(TOP_FILES)
        found = kept[id(content)] = (content, (names, sorted(name for name in names if ANSWER_DIR in name.split("/")[:-1])))
    return found[1]


class QuartoWriter:
    """One locale's Quarto project written to folder/<name>.zip lesson by lesson, in course order
    (as a course bundle is): add() each published lesson's folder (quarto_lesson) as the build
    finishes it, then finish(). What stays in memory is each file's name and sha256 and the
    downloads' names, never the lessons."""

    def __init__(self, content: CourseContent, locale: str, env: jinja2.Environment, folder: Path):
        self.content, self.locale, self.env = content, locale, env
        self.header = Pack(content.course.id, locale, EDITION)   # name, locale and edition; no files
        self.path = folder / f"{self.header.name}.zip"
        self.file = self.path.open("wb")
        self.zip = ZipWriter(self.file, self.header.name)
        self.names = _project_names(content)[0]
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
            top = _top_files(self.content, self.locale, self.env, self.resources)
        except jinja2.TemplateError as exc:
            raise located_template_error(exc, Path(self.env.loader.searchpath[0])) from exc
        for name in sorted(top):
            self.zip.add(name, top[name])
            self.digests[name] = hashlib.sha256(top[name]).hexdigest()
            if name.endswith(".qmd"):
                self.problems += _page_problems(self.name, name, top[name].decode("utf-8"), self.names)
        missing = sorted(self.names - set(self.digests))
        if missing:   # the list the links were checked against names a file never written
            self.problems.append(f"{self.name}: files expected but not written: {', '.join(missing[:5])}")
        if self.problems:
            raise RenderError("\n".join(self.problems))
        self.zip.add("manifest.json", manifest(self.header, {"lessons": self.verified, "holds_answers": True},
                                               self.digests))
        self.zip.close()
        self.file.close()

    def close(self) -> None:
        """Let go of the file (a build that stops early)."""
        self.file.close()


TOP_FILES = ("index.qmd", "_quarto.yml", *(f"_quarto-{profile}.yml" for profile in PROFILES), "README.md")


def quarto_project(content: CourseContent, locale: str, packs: dict[str, dict[str, Pack]],
                   records: dict[str, dict | None], env: jinja2.Environment) -> Pack:
    """The whole project in memory (QuartoWriter's zip, read back): for tests and the golden
    trees. packs and records by lesson id, as quarto_lesson takes them."""
    with tempfile.TemporaryDirectory(prefix="coursepack-quarto-") as folder:
        writer = QuartoWriter(content, locale, env, Path(folder))
        try:
            for lesson in content.published:
                writer.add(quarto_lesson(content, lesson, locale, packs[lesson.spec.id], records.get(lesson.spec.id), env))
            writer.finish()
        finally:
            writer.close()
        with zipfile.ZipFile(writer.path) as archive:
            files = {info.filename.split("/", 1)[1]: archive.read(info) for info in archive.infolist()}
    return Pack(content.course.id, locale, EDITION, files)


def _top_files(content: CourseContent, locale: str, env: jinja2.Environment,
               resources: dict[str, list[str]]) -> dict[str, bytes]:
    ui = content.locales[locale]
    files: dict[str, bytes] = {}
    entries = _index_entries(content, locale)
    pages = [entry for entry in entries if entry["href"]]
    files["index.qmd"] = cross_reference(env.get_template("quarto/index.qmd.j2").render(ui=ui, lessons=entries), []).encode()
    files["_quarto.yml"] = env.get_template("quarto/_quarto.yml.j2").render(
        ui=ui, locale=locale, pages=pages, default_profile=PROFILES[0], profiles=PROFILES).encode()
    for profile in PROFILES:
        files[f"_quarto-{profile}.yml"] = env.get_template("quarto/_quarto-profile.yml.j2").render(
            profile=profile, output_dir=OUTPUT_DIRS[profile], resources=resources[profile],
            title=f"{ui.course_title} · {ui.pack.edition_answer if profile == 'answer' else ui.pack.edition_exercise}",
        ).encode()
    files["README.md"] = env.get_template("quarto/README.md.j2").render(
        course_title=ui.course_title, locale=locale, output_dirs=OUTPUT_DIRS, answer_dir=ANSWER_DIR,
        lessons=[posixpath.dirname(page["href"]) for page in pages]).encode()
    return files


def _index_entries(content: CourseContent, locale: str) -> list[dict]:
    """The course's lessons in order: published ones link to their page, planned ones do not."""
    ui, entries = content.locales[locale], []
    for entry in content.course.lessons:
        lesson = content.lessons.get(entry.id) if entry.status == "published" else None
        entries.append({"heading": ui.heading(entry.id, entry.number),
                        "goal": " ".join(lesson.texts[locale].goal.split()) if lesson else "",
                        "href": f"{entry.id}/lesson.qmd" if lesson else None})
    return entries


def _lesson_files(content: CourseContent, lesson: Lesson, locale: str, packs: dict[str, Pack],
                  record: dict | None, env: jinja2.Environment) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """One lesson's folder: lesson.qmd, the exercise edition's downloads beside it and the answer
    edition's in answer/; and the downloads each profile publishes."""
    spec = lesson.spec
    exercise, answer = (LessonContext(content, lesson, locale, edition, bundle=True) for edition in PROFILES)
    ui = exercise.ui
    descriptions = dict(ui.pack.file_descriptions) | dict(exercise.text.files)
    own, shared = _downloads(lesson)
    files = {name: packs["exercise"].files[name] for name in own["exercise"] + shared}
    files |= {f"{ANSWER_DIR}/{name}": packs["answer"].files[name] for name in own["answer"]}
    downloads = {"exercise": own["exercise"] + shared,
                 "answer": [f"{ANSWER_DIR}/{name}" for name in own["answer"]] + shared}

    def listed(names: list[str], folder: str, answer_edition: bool) -> list[dict]:
        kernel = descriptions["kernel_answer" if answer_edition else "kernel"]
        return [{"name": name, "href": folder + name, "about": descriptions.get(name, kernel)} for name in names]

    verification = _readme_verification(record)
    document = env.get_template("quarto/lesson.qmd.j2").render(
        ui=ui, text=answer.text, heading=exercise.heading, figures=figures(lesson, locale),
        questions=[(q, answer.text.questions[q]) for q in spec.questions],
        hints=answer.hints, exercise_hints=len(exercise.hints),
        exercise_code=without_main_block(exercise.code()), answer_code=without_main_block(answer.code()),
        downloads={"exercise": listed(own["exercise"], "", False),
                   "answer": listed(own["answer"], f"{ANSWER_DIR}/", True), "both": listed(shared, "", False)},
        verified=ui.pack.verified_on.format(**verification) if verification else ui.pack.not_verified,
        measured=_measured_section(answer, record),
        nav=[link | {"href": link["href"] and link["href"].removesuffix(".md") + ".qmd"} for link in _navigation(answer)])
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
    own = {"exercise": [spec.kernel_file, "check.py"],
           "answer": [spec.kernel_file, "check.py", *[f.name for f in spec.files if f.edition == "answer"]]}
    return own, shared


def _lesson_names(lesson: Lesson) -> list[str]:
    """Every file of a lesson's folder, known before it is rendered."""
    own, shared = _downloads(lesson)
    return ["lesson.qmd", *own["exercise"], *shared, *(f"{ANSWER_DIR}/{name}" for name in own["answer"])]


FIGURE_NAME = re.compile(r"^\s*([^:：`$\n]{1,24}?\d[^:：`$\n]{0,8}?)\s*[:：]\s*(\S.*)$", re.S)


def figures(lesson: Lesson, locale: str) -> list[Figure]:
    """The lesson's figures with a Quarto label each. A caption that starts with the figure's name
    ("Figure 3-1: ...", "图 3-1：...") loses it: Quarto numbers figures and writes the prefix."""
    found = []
    for figure_id in lesson.spec.figures:
        figure = lesson.texts[locale].figures[figure_id]
        label = "fig-" + re.sub(r"^fig(?=\d)", "", figure_id).replace("_", "-")
        match = FIGURE_NAME.match(figure.caption)
        name, caption = (match.group(1).strip(), match.group(2).strip()) if match else ("", figure.caption.strip())
        found.append(Figure(label, name, caption, figure.mermaid))
    names = [f.name for f in found]   # a name two figures share refers to neither
    return [f if names.count(f.name) == 1 else Figure(f.label, "", f.caption, f.mermaid) for f in found]


def cross_reference(document: str, figures: list[Figure]) -> str:
    """Prose that names a figure ("figure 3-2") refers to it as Quarto does (@fig-3-2); a stray `@`
    that pandoc would read as a citation is escaped. Code, fences and front matter stay as they are."""
    mentions = [(re.compile(r"(?<![A-Za-z0-9_@\\])" + r"\s*".join(map(re.escape, f.name.split()))
                            + r"(?![A-Za-z0-9_]|-\d)", re.I), f.label) for f in figures if f.name]
    out = []
    for kind, line in _lines(document):
        if kind != "text":
            out.append(line)
            continue
        pieces, last = [], 0
        for span in CODE_SPAN.finditer(line):
            pieces += [_prose(line[last:span.start()], mentions), span.group(0)]
            last = span.end()
        out.append("".join(pieces) + _prose(line[last:], mentions))
    return "".join(out)


def _prose(text: str, mentions: list[tuple[re.Pattern, str]]) -> str:
    text = re.sub(r"(?<![\w\\/])@(?=\w)", r"\\@", text)
    for pattern, label in mentions:
        def ref(match: re.Match, label: str = label) -> str:
            before, after = match.string[:match.start()], match.string[match.end():]
            lead = " " if before and (before[-1].isalnum() or before[-1] == "_") else ""
            tail = " " if after and (after[0].isalnum() or after[0] == "_" or (
                after[0] in CITE_PUNCT and len(after) > 1 and (after[1].isalnum() or after[1] == "_"))) else ""
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
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and \
                    not line.strip().lstrip(fence[0]):
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


def _page_problems(root: str, name: str, document: str, names: set[str]) -> list[str]:
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
    return re.sub(r"\\?@(fig-[A-Za-z0-9_-]+)", lambda m: names.get(m.group(1), m.group(0)), document)


def project_leaks(content: CourseContent, locale: str, source: bytes | Path, label: str,
                  prints: dict[str, list] | None = None, scanned: frozenset[str] = frozenset()) -> list[str]:
    """The leak scan of a Quarto project zip (its bytes, or its path: read a folder at a time), as
    its exercise profile shows it: every file but the lessons' answer/ folders, each page without
    its answer-profile blocks. Each lesson's folder against that lesson's answer fingerprints, the
    project's top files and its entry names against every lesson's (as a course bundle is
    scanned); and no page or configuration but the answer profile's names an answer-only file.
    prints: each lesson's fingerprints, where the caller has them; scanned: the lesson folders
    that quarto_lesson scanned as it made them (a build's), not read back. Linear in the course."""
    lessons = {lesson.spec.id: lesson for lesson in content.published}
    prints = prints if prints is not None else {}
    by_lesson = {lesson_id: prints.get(lesson_id) or fingerprints(lesson, locale) for lesson_id, lesson in lessons.items()}
    every = list(dict.fromkeys(fp for lesson_prints in by_lesson.values() for fp in lesson_prints))
    with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as archive:
        infos = {info.filename.split("/", 1)[1]: info for info in archive.infolist()}
        answer_only = sorted(name for name in infos if ANSWER_DIR in name.split("/")[:-1])
        mentions = _AnswerMentions(answer_only, label)
        folders: dict[str, list[str]] = {}
        for name in infos:
            if name not in answer_only:
                folders.setdefault(name.split("/", 1)[0] if "/" in name else "", []).append(name)
        found = []
        for folder in sorted(set(folders) - set(scanned)):
            files = {name: archive.read(infos[name]) for name in folders[folder]}
            if not folder:
                found += _folder_leaks(files, None, locale, every, mentions, label)
                found += [f"{leak} (outside the answer profile)" for leak in
                          scan_files({"(zip entry names)": "\n".join(infos).encode()}, every, label)]
            else:
                found += _folder_leaks(files, lessons.get(folder), locale, by_lesson.get(folder, every), mentions, label)
    return found


def _folder_leaks(files: dict[str, bytes], lesson: Lesson | None, locale: str, prints: list, mentions: "_AnswerMentions",
                  label: str) -> list[str]:
    """One folder of a project as its exercise profile shows it (files: by project path, the
    answer/ folder left out): the answer-only files its pages name, the answer material it holds."""
    shown = {name: _exercise_reading(name, body, lesson, locale) for name, body in files.items()}
    found = [line for name, body in sorted(shown.items()) for line in mentions.of(name, body)]
    return found + [f"{leak} (outside the answer profile)" for leak in scan_files(shown, prints, label)]


def _exercise_reading(name: str, body: bytes, lesson: Lesson | None, locale: str) -> bytes:
    """A file as the exercise profile shows it: a page without its answer-profile blocks, its figure
    references read as the lesson text wrote them."""
    if not name.endswith(".qmd"):
        return body
    text = exercise_view(body.decode("utf-8"))
    return (as_written(text, lesson, locale) if lesson is not None else text).encode()


class _AnswerMentions:
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
            named |= {suffix for k in range(1, len(token) + 1) if (suffix := f"{ANSWER_DIR}/{token[:k]}") in self.simple}
        return [f"{self.label}/{name}: names the answer-only {path} outside an answer-profile block"
                for suffix in sorted(named) for path in self.wanted[suffix]]


def quarto_projects(content: CourseContent, groups: dict, records: dict, env: jinja2.Environment) -> list[Pack]:
    """Per locale of a full build, the Quarto project (groups and records as build.py keeps them:
    by (lesson, locale))."""
    locales = [locale for locale in content.course.locales if any(key[1] == locale for key in groups)]
    return [quarto_project(content, locale,
                           {lesson.spec.id: {edition: pack for edition, (_, pack) in groups[(lesson.spec.id, locale)].items()}
                            for lesson in content.published},
                           {lesson.spec.id: records.get((lesson.spec.id, locale)) for lesson in content.published}, env)
            for locale in locales]


def holds_answers(zip_name: str) -> bool:
    """Whether a zip of build/dist is a Quarto project (instructor material: it holds the answers)."""
    return zip_name.endswith(f"-{EDITION}.zip")
