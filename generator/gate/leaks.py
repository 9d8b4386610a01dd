"""Answer-leak scan: nothing answer-only may reach an exercise pack, in any form.

Fingerprints come from the content (the filled blank, reference answers, the last hint, the
solution note), not from the rendered answer pack, so a template that wrongly prints an answer
into the exercise edition is caught. Text is normalised (Unicode NFKC, case, whitespace, quotes,
Markdown emphasis) so that a reformatted copy is still found. Notebooks are scanned by their
decoded strings as well as their raw bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from generator.files import memo
from generator.checker.join import joined
from generator.content.codegen import render_code
from generator.errors import CoursepackError
from generator.render.html import page_text, strip_vendored
from generator.content.loader import Lesson
from generator.files.memo import per_build
from generator.files.pack import Pack, file_digest

MIN_CHUNK = 12
MANY_PRINTS = 2000
SPLIT = re.compile(r"(?:[。；！？\n]|[.;!?](?=\s)|\*\*)")
IGNORED = re.compile(r"[\s`'\"“”‘’*_>#|\\-]+")


class LeakError(CoursepackError):
    pass


@dataclass(frozen=True)
class Fingerprint:
    source: str  # where the secret comes from, e.g. "questions.q1.answer"
    text: str  # normalised


# What IGNORED drops, as ASCII bytes: an ASCII text (which NFKC leaves as it is) is normalised by
# bytes.lower and bytes.translate, several times faster than by the expression.
ASCII_IGNORED = bytes(c for c in range(128) if IGNORED.match(chr(c)))


def normalise(text: str) -> str:
    if text.isascii():
        return text.encode().lower().translate(None, ASCII_IGNORED).decode()
    return IGNORED.sub("", unicodedata.normalize("NFKC", text).lower())


@per_build
def _checker_lines() -> dict[str, str]:
    return {line: normalise(line) for line in joined().split("\n")}


@per_build
def _checker_words() -> str:
    return normalise_lines(joined())


def prepare() -> None:
    """Normalise the checker's own words now: a build does before it forks the workers that scan
    (they inherit them) and scans the course bundles itself."""
    _checker_words()


def normalise_lines(text: str) -> str:
    """normalise(text), a line at a time with each line's form kept: the same text, since no
    normalisation, case mapping or ignored character reaches across a line break. A lesson's
    exercise files are scanned as its zip, its course-bundle folder and its Quarto folder hold
    them, and most of their lines are the same."""
    kept, checker = memo.table("leaks.lines", lesson=True), _checker_lines()
    out = []
    for line in text.split("\n"):
        found = checker.get(line)
        if found is None:
            found = kept.get(line)
            if found is None:
                found = kept[line] = normalise(line)
        out.append(found)
    return "".join(out)


def fingerprints(lesson: Lesson, locale: str) -> list[Fingerprint]:
    text = lesson.texts[locale]
    secrets = {
        "blank fill": [lesson.solution.fill],
        "hints.4": [text.hints[3]],
        "solution_note": [text.solution_note],
    }
    for qid, question in text.questions.items():
        secrets[f"questions.{qid}.answer"] = [question.answer]
    for pid, part in text.rubric.parts.items():
        if part.reference:
            secrets[f"rubric.parts.{pid}.reference"] = [part.reference]
    for extra in lesson.spec.files:
        if extra.edition == "answer":
            secrets[f"answer-only file {extra.name}"] = [lesson.files[extra.name].decode("utf-8")]
    allowed = normalise(_public_text(lesson, locale)) + _checker_words()
    prints = [Fingerprint("blank fill", normalise(lesson.solution.fill))]
    for source, pieces in secrets.items():
        for piece in pieces:
            for chunk in SPLIT.split(piece):
                norm = normalise(chunk)
                if len(norm) >= MIN_CHUNK and norm not in allowed:
                    prints.append(Fingerprint(source, norm))
    return prints


def _public_text(lesson: Lesson, locale: str) -> str:
    """Everything an exercise edition may show: the lesson text minus its answer-only parts."""
    data = lesson.texts[locale].model_dump()
    data["hints"] = data["hints"][:3]
    data.pop("solution_note")
    for question in data["questions"].values():
        question.pop("answer")
    for part in data["rubric"]["parts"].values():
        part.pop("reference")
    exercise = render_code(
        lesson.solution,
        lesson.texts[locale].code_comments,
        lesson.texts[locale].exercise.todo_comment,
        answer=False,
    )
    # the texts themselves, not their JSON: a line break must stay whitespace (JSON's "\n" would
    # leave an "n" in the normalised text, and a public sentence that wraps would not be found)
    # (the checker's own code, the same in every pack, is public too: fingerprints adds its words)
    return "\n".join(_strings(data)) + "\n" + exercise + "\n"


def scan_files(files: dict[str, bytes], prints: list[Fingerprint], label: str) -> list[str]:
    """Every leak found in a set of files, as readable lines."""
    key = _Prints(prints)
    return [
        f"{label}/{where}: contains answer-only material from {source}"
        for name, data in sorted(files.items())
        for where, source in _scan_file(name, data, key)
    ]


class _Prints(tuple):
    """Fingerprints with a digest of them, computed once, for _SCANNED's keys (a tuple of
    dataclasses hashes and compares every fingerprint at every look-up)."""

    def __new__(cls, prints: Iterable[Fingerprint]):
        self = super().__new__(cls, prints)
        self.digest = hashlib.sha256(
            "\0".join(f"{fp.source}\1{fp.text}" for fp in self).encode()
        ).digest()
        return self


def _scan_file(name: str, data: bytes, prints: _Prints) -> list[tuple[str, str]]:
    """(view, source of the first fingerprint found in it) for each view of one file that leaks.
    Kept by content and kind for the lesson x locale (its memo): a build scans the same file in a lesson's zip, in
    its course bundle and, before verification, rendered (its sha256 is the manifest's, kept by
    pack.file_digest)."""
    kind = next((suffix for suffix in (".ipynb", ".html", ".js") if name.endswith(suffix)), "")
    key = (kind, file_digest(data), prints.digest)
    scanned = memo.table("leaks.scanned", lesson=True)
    if key not in scanned:
        if kind in (
            ".html",
            ".js",
        ):  # the vendored mermaid is pinned by its sha256: not lesson material
            data = strip_vendored(data)
        scanned[key] = _first_hits(kind, data, prints)
    return [(name + view, source) for view, source in scanned[key]]


def _first_hits(kind: str, data: bytes, prints: tuple[Fingerprint, ...]) -> list[tuple[str, str]]:
    hits = []
    for view, haystack in _views(kind, data):
        source = _first_found(haystack, prints)
        if source is not None:
            hits.append((view, source))
    return hits


def _first_found(haystack: str, prints: tuple[Fingerprint, ...]) -> str | None:
    """The source of the first fingerprint in haystack. Against thousands of fingerprints (a course
    bundle's index against every lesson's) a fingerprint is looked for only where its first
    MIN_CHUNK characters occur in the text: linear in the text and the fingerprints, not their
    product. (A pass over the text's pieces costs about as much as 1,000 plain searches of it.)"""
    if len(prints) <= MANY_PRINTS or len(haystack) < MIN_CHUNK:
        return next((fp.source for fp in prints if fp.text in haystack), None)
    starts = {fp.text[:MIN_CHUNK] for fp in prints}
    found = {
        piece
        for piece in (haystack[i : i + MIN_CHUNK] for i in range(len(haystack) - MIN_CHUNK + 1))
        if piece in starts
    }
    return next(
        (
            fp.source
            for fp in prints
            if (len(fp.text) < MIN_CHUNK or fp.text[:MIN_CHUNK] in found) and fp.text in haystack
        ),
        None,
    )


def scan_pack_zip(pack: Pack, data: bytes, prints: list[Fingerprint], label: str) -> list[str]:
    """The leak scan of the zip that archive.zip_pack made of pack (entry names, the archive comment and every entry's contents), without inflating it again: zip_pack
    read every entry back and checked it against the manifest, so the entries are the pack's files.
    The names and comments are the zip's own."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # its central directory only
        meta = {"(zip comment)": archive.comment, **zip_meta(archive.infolist())}
    return scan_files(
        {**{f"{pack.name}/{name}": body for name, body in pack.files.items()}, **meta},
        prints,
        label,
    )


def zip_meta(infos: list[zipfile.ZipInfo]) -> dict[str, bytes]:
    return {
        "(zip entry names)": "\n".join(i.filename for i in infos).encode(),
        "(zip entry comments)": b"\n".join(i.comment for i in infos),
    }


def scan_bundle(
    path: Path,
    entries: Iterable[tuple[str, bytes]],
    prints: dict[str, list[Fingerprint]],
    label: str,
) -> list[str]:
    """A course bundle's zip, its entries read back one at a time (name with its root, bytes, as
    archive.checked_entries gives them, checking each against the manifest): the names in a lesson's
    folder against that lesson's answer material (another lesson's answer may share a phrase with
    this one's prose), the rest (the index, the manifest, the names at the root, the archive
    comment) against every lesson's. The files in lesson folders are not scanned here: the build
    scanned each lesson's as it made them (the manifest's sha256 are theirs). prints: by lesson id."""
    every = list(dict.fromkeys(fp for lesson_prints in prints.values() for fp in lesson_prints))
    found = []
    for name, data in entries:
        if name.count("/") == 1:
            found += scan_files({name: data}, every, label)
    with zipfile.ZipFile(path) as archive:
        groups: dict[str, list[zipfile.ZipInfo]] = {}
        for info in archive.infolist():
            groups.setdefault(
                info.filename.split("/")[1] if info.filename.count("/") > 1 else "", []
            ).append(info)
        for folder, infos in groups.items():
            meta = zip_meta(infos) | ({} if folder else {"(zip comment)": archive.comment})
            found += scan_files(meta, prints.get(folder, every) if folder else every, label)
    return found


def _views(kind: str, data: bytes) -> list[tuple[str, str]]:
    """Each way of reading a file of a kind (its name's suffix), as (what to add to the name, text);
    a page's vendored mermaid already left out (see _scan_file)."""
    text = data.decode("utf-8", "replace")
    views = [("", normalise_lines(text))]
    if kind == ".ipynb":
        try:
            strings = "\n".join(_strings(json.loads(text)))
        except ValueError:
            strings = ""
        views.append((" (decoded)", normalise_lines(strings)))
    if kind == ".html":  # entities decoded, code outside its highlighting spans
        views.append((" (text)", normalise_lines(page_text(text))))
    return views


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in [key, *_strings(value)]]
    return []
