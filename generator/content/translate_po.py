"""The PO route for translators: `coursepack i18n export LOCALE --format po` and `i18n import`.

One PO file per content file (`course.po` for the course's UI strings, `<lesson id>.po` for each
lesson's text), one entry per unit: msgctxt the unit's key, msgid the source text, msgstr the
translation. A stale unit is `#, fuzzy` with `#| msgid` its previous source, as msgmerge marks a
changed source. Import sets each unit's state from its entry: non-fuzzy with the current source is
stamped current, fuzzy keeps its stamp (stale stays stale; a current unit marked fuzzy turns stale),
empty stays missing, and CJK source text copied into msgstr unchanged is saved but never stamped (a
tool's "copy source" is not a translation). Every PO is checked before anything is written; an
import that changes nothing writes nothing.
"""

from __future__ import annotations

import io
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import (DoubleQuotedScalarString, FoldedScalarString, LiteralScalarString,
                                      SingleQuotedScalarString)

from generator.errors import CoursepackError, ProblemCollector
from generator.content.i18n import (HASHES, PROTECTED, is_critical, load_snapshot, protected_problems, save_snapshot,
                            unit_hash, unit_keypath, units)
from generator.content.loader import CourseContent, load_content
from generator.content.markdown import unit_problems
from generator.content.po import Entry, PoSyntaxError, dump, parse
from generator.content.translate import round_trip_yaml
from generator.files.yamlio import CONTROL, load_yaml

COURSE = "course"   # the PO file of the course's UI strings (content/locales/)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")
ROLES = (("questions.", ".answer", "reference answer: only in the answer pack"),
         ("solution_note", "", "note on the solution: only in the answer pack"),
         ("hints.", "", "hint (the last level is only in the answer pack)"),
         ("checker.", "", "a message of check.py"),
         ("code_comments.", "", "a comment in the kernel code"),
         ("figures.", ".mermaid", "a mermaid figure: translate only the labels in quotes; keep the node ids"),
         ("figures.", ".caption", "a figure's caption"),
         ("pack.i18n_", "", "the marker shown on units in another language or out of date: translate it first"))


@dataclass
class Pair:
    """A content file in the source language and its translation."""

    name: str
    source: Path
    target: Path


def pairs(content: CourseContent, locale: str, lessons: list[str] | None = None) -> list[Pair]:
    source = content.course.source_locale
    found = [] if lessons else [Pair(COURSE, content.root / "locales" / f"{source}.yaml",
                                     content.root / "locales" / f"{locale}.yaml")]
    for lesson in content.published:
        if not lessons or lesson.spec.id in lessons:
            found.append(Pair(lesson.spec.id, lesson.folder / f"text.{source}.yaml",
                              lesson.folder / f"text.{locale}.yaml"))
    unknown = sorted(set(lessons or ()) - {p.name for p in found})
    if unknown:
        raise CoursepackError(f"not a published lesson of the course: {', '.join(unknown)}")
    return found


def gettext_language(locale: str) -> str:
    return locale.replace("-", "_")


def _date() -> str:
    """Dates in the header: SOURCE_DATE_EPOCH's, else 1980-01-01 as in the zips, so that an export
    of the same content is the same file."""
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return time.strftime("%Y-%m-%d %H:%M+0000", time.gmtime(epoch))


# ---- export -----------------------------------------------------------------------------------

def notes(unit: str, source: str) -> list[str]:
    """The `#.` lines: the unit's role and what a translation must keep as it is."""
    found = [role for start, end, role in ROLES if unit.startswith(start) and unit.endswith(end)][:1]
    if is_critical(unit):
        found.append("a release needs this unit translated and current")
    for name, pattern in PROTECTED.items():
        spans = sorted(set(pattern.findall(source)))
        if spans:
            shown = ", ".join(f"`{s}`" if name == "inline code" else s for s in spans)
            found.append(f"keep as in the source ({name}): {shown}")
    if "```" in source:
        found.append("keep the code blocks as they are (only their comments may be translated)")
    return [" ".join(line.split()) for line in found]


def _flags(source: str, fuzzy: bool) -> list[str]:
    flags = ["fuzzy"] if fuzzy else []
    placeholders = PROTECTED["placeholders"].findall(source)
    if placeholders and source.count("{") == len(placeholders):   # gettext checks them as Python's format
        flags.append("python-brace-format")
    return flags


def _entries(content: CourseContent, pair: Pair, template: bool) -> list[Entry]:
    rel = ProblemCollector(content.root.parent).rel
    source_doc = load_yaml(pair.source, ProblemCollector(content.root.parent))
    target_doc = None if template else load_yaml(pair.target, ProblemCollector(content.root.parent))
    own = units(target_doc.data) if target_doc is not None else {}
    stamps = (target_doc.data.get(HASHES) or {}) if target_doc is not None else {}
    entries = []
    for unit, text in units(source_doc.data).items():
        translation = (own.get(unit) or "").rstrip("\n") if (own.get(unit) or "").strip() else ""
        stale = bool(translation) and stamps.get(unit) != unit_hash(text)
        previous = load_snapshot(content.root, stamps[unit]) if stale and stamps.get(unit) else None
        line = source_doc.value_pos.get(unit_keypath(unit), (1, 1))[0]
        entries.append(Entry(text.rstrip("\n"), translation, unit, notes(unit, text), [f"{rel(pair.source)}:{line}"],
                             _flags(text, stale), previous.rstrip("\n") if previous is not None else None))
    return entries


def export(content_root: Path, locale: str | None, out: Path, lessons: list[str] | None = None) -> list[Path]:
    """PO files of a locale of the course (or, for locale None, POT templates) written into out."""
    content = load_content(content_root)
    source = content.course.source_locale
    if locale == source:
        raise CoursepackError(f"{locale} is the source language: export a translation, or --pot for templates")
    if locale is not None and locale not in content.course.locales:
        raise CoursepackError(f"{locale} is not a language of the course: start it with `coursepack i18n new "
                              f"{locale}`, or export templates with --pot")
    rel = ProblemCollector(content.root.parent).rel
    written = {}
    for pair in pairs(content, locale or source, lessons):
        header = {"Project-Id-Version": content.course.id, "Report-Msgid-Bugs-To": "", "POT-Creation-Date": _date(),
                  "PO-Revision-Date": _date(), "Last-Translator": "", "Language-Team": "",
                  "Language": gettext_language(locale) if locale else "", "MIME-Version": "1.0",
                  "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
                  "X-Generator": "coursepack", "X-Coursepack-Source": rel(pair.source)}
        what = f"{locale} translation" if locale else "template for translations"
        comment = [f"{what} of {rel(pair.source)}: one entry per unit (msgctxt: its key).",
                   "Import it with: coursepack i18n import LOCALE DIR. Clear the fuzzy flag of a unit "
                   "once your translation matches the new source."]
        text = dump(header, _entries(content, pair, template=locale is None), comment)
        written[out / f"{pair.name}.{'po' if locale else 'pot'}"] = text
    out.mkdir(parents=True, exist_ok=True)
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return list(written)


# ---- import -----------------------------------------------------------------------------------

@dataclass
class Changes:
    """What one PO file asks of its translation file."""

    pair: Pair
    texts: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, str] = field(default_factory=dict)   # unit -> its current source text
    unstamp: list[str] = field(default_factory=list)        # current units marked fuzzy: now stale


@dataclass
class ImportResult:
    written: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)       # units whose source changed since the export
    counts: dict[str, int] = field(default_factory=dict)   # current, fuzzy, empty


def _po_files(paths: list[Path]) -> list[Path]:
    found = []
    for path in paths:
        found += sorted(path.glob("*.po")) if path.is_dir() else [path]
    if not found:
        raise CoursepackError(f"no .po files in {', '.join(map(str, paths))}")
    return found


def _pair_of(path: Path, fields: dict[str, str], by_name: dict[str, Pair], by_source: dict[str, Pair]) -> Pair | None:
    source = fields.get("X-Coursepack-Source")
    if source in by_source:
        return by_source[source]
    stem = path.name.split(".")[0]
    return by_name.get(stem)


def _check_entry(entry: Entry, source: dict[str, str], path: Path, problems: ProblemCollector) -> bool:
    """Whether entry is a unit the file has, with a translation that keeps what it must."""
    unit = entry.msgctxt
    if unit is None or unit not in source:
        what = "an entry without msgctxt" if unit is None else f"no unit '{unit}' in the course's source text"
        problems.add(path, f"{what}; expected the key of one of its units (export again)", line=entry.line)
        return False
    if not entry.msgstr.strip():
        return True
    for message in protected_problems(unit, entry.msgid, entry.msgstr):
        problems.add(path, message, unit, entry.msgstr_line)
    first = entry.msgstr_line + (1 if "\n" in entry.msgstr else 0)   # a text of several lines starts below msgstr ""
    for offset, message in unit_problems(entry.msgstr):
        problems.add(path, message, unit, first + offset)
    bad = CONTROL.search(entry.msgstr)
    if bad:
        problems.add(path, f"control character U+{ord(bad.group()):04X} in the translation; remove it", unit,
                     entry.msgstr_line)
    return True


def _read_po(path: Path, locale: str, content: CourseContent, maps: tuple, problems: ProblemCollector,
             result: ImportResult) -> Changes | None:
    """What one PO file asks of its translation file, or None after recording why it cannot say."""
    header = _header(path, locale, maps, problems)
    if header is None:
        return None
    pair, entries = header
    rel = ProblemCollector(content.root.parent)
    source = units(load_yaml(pair.source, rel).data)
    target_doc = load_yaml(pair.target, rel) if pair.target.exists() else None
    own = units(target_doc.data) if target_doc is not None else {}
    stamps = (target_doc.data.get(HASHES) or {}) if target_doc is not None else {}
    changes, seen = Changes(pair), {}
    for entry in entries:
        if not _check_entry(entry, source, path, problems):
            continue
        if entry.msgctxt in seen:
            problems.add(path, f"a second entry for unit '{entry.msgctxt}' (the first at line {seen[entry.msgctxt]})",
                         line=entry.line)
            continue
        seen[entry.msgctxt] = entry.line
        kind = _apply(entry, source[entry.msgctxt], own.get(entry.msgctxt) or "", stamps.get(entry.msgctxt), changes)
        if kind == "refused":
            result.refused.append(f"{problems.rel(path)}:{entry.line}: {entry.msgctxt}: the source text changed since "
                                  "this PO was exported; not imported (export again and translate the new text)")
        else:
            result.counts[kind] = result.counts.get(kind, 0) + 1
    return changes


def _header(path: Path, locale: str, maps: tuple, problems: ProblemCollector) -> tuple[Pair, list[Entry]] | None:
    """The content file a PO file translates, and its entries; None after recording why not."""
    try:
        fields, header_line, entries = parse(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        problems.add(path, "not valid UTF-8; save the PO file as UTF-8")
        return None
    except PoSyntaxError as exc:
        problems.add(path, f"PO syntax: {exc.message}", line=exc.line)
        return None
    language = fields.get("Language", "")
    if gettext_language(language).lower() != gettext_language(locale).lower():
        problems.add(path, f"Language is '{language}' in the header; expected {gettext_language(locale)}",
                     line=header_line or 1)
        return None
    pair = _pair_of(path, fields, *maps)
    if pair is None:
        problems.add(path, "which content file is this? expected an X-Coursepack-Source header or a file named "
                     f"{COURSE}.po or <lesson id>.po", line=header_line or 1)
        return None
    return pair, entries


def _apply(entry: Entry, source: str, old: str, stamp: str | None, changes: Changes) -> str:
    """Record what one valid entry asks for; the kind of entry it was (or "refused")."""
    unit = entry.msgctxt
    if not entry.msgstr.strip():
        return "empty"
    if entry.msgid != source.rstrip("\n"):
        return "refused"
    if entry.msgstr != old.rstrip("\n"):
        changes.texts[unit] = entry.msgstr + _trailing(old if old.strip() else source)
    if entry.msgstr == entry.msgid and CJK.search(entry.msgid):   # a tool's "copy source": review it, then bless it
        return "same as the source (not stamped)"
    current = stamp == unit_hash(source)
    if not entry.fuzzy and not current:
        changes.stamps[unit] = source
    elif entry.fuzzy and current:   # the translator says it needs work: no longer counted as translated
        changes.unstamp.append(unit)
    return "fuzzy" if entry.fuzzy else "current"


def _trailing(text: str) -> str:
    return text[len(text.rstrip("\n")):]


def import_po(content_root: Path, locale: str, paths: list[Path]) -> ImportResult:
    """Translations from PO files into the locale's YAML files; every PO checked first, nothing
    written if any is invalid."""
    content = load_content(content_root)
    if locale == content.course.source_locale or locale not in content.course.locales:
        raise CoursepackError(f"{locale} is not a translation of the course (start one with `coursepack i18n new "
                              f"{locale}`)")
    every = pairs(content, locale)
    maps = ({p.name: p for p in every}, {ProblemCollector(content.root.parent).rel(p.source): p for p in every})
    problems, result = ProblemCollector(Path.cwd()), ImportResult()
    changes = [_read_po(path, locale, content, maps, problems, result) for path in _po_files(paths)]
    problems.raise_if_any()
    texts = {}
    for change in changes:
        if change is not None and (change.texts or change.stamps or change.unstamp):
            texts[change.pair.target] = _patched(change, content)
    for path, text in texts.items():   # all checked and rendered: now write
        _write_atomic(path, text)
    result.written = list(texts)
    return result


def _patched(change: Changes, content: CourseContent) -> str:
    yaml = round_trip_yaml()
    path = change.pair.target
    data = yaml.load(path.read_text(encoding="utf-8")) if path.exists() else None
    if not isinstance(data, CommentedMap):
        data = CommentedMap()
    for unit, text in change.texts.items():
        _set(data, unit_keypath(unit), text)
    if change.unstamp and isinstance(data.get(HASHES), CommentedMap):
        for unit in change.unstamp:
            data[HASHES].pop(unit, None)
    if change.stamps:
        table = data.get(HASHES)
        if not isinstance(table, CommentedMap):
            table = data[HASHES] = CommentedMap()
        for unit, source_text in change.stamps.items():
            table[unit] = save_snapshot(content.root, source_text)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _set(node, keypath: tuple, text: str) -> None:
    """Set a unit in a round-trip YAML tree, making the mappings and list items it lacks."""
    for part, below in zip(keypath, keypath[1:]):
        fresh = CommentedSeq() if isinstance(below, int) else CommentedMap()
        if isinstance(node, CommentedSeq):
            while len(node) <= part:
                node.append(CommentedMap())
            if not isinstance(node[part], (CommentedMap, CommentedSeq)):
                node[part] = fresh
        elif not isinstance(node.get(part), (CommentedMap, CommentedSeq)):
            node[part] = fresh
        node = node[part]
    last = keypath[-1]
    if isinstance(node, CommentedSeq):
        while len(node) <= last:
            node.append("")
        node[last] = _styled(node[last], text)
    else:
        node[last] = _styled(node.get(last), text)


def _styled(old, text: str):
    """The new text in the old value's style where that style can hold it."""
    if "\n" in text.rstrip("\n"):
        return LiteralScalarString(text)
    for style in (DoubleQuotedScalarString, SingleQuotedScalarString, FoldedScalarString):
        if isinstance(old, style):
            return style(text)
    return text


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.import")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def render_import(result: ImportResult) -> str:
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items())) or "no entries"
    lines = [f"wrote {path}" for path in result.written] or ["nothing changed"]
    lines += [f"refused {line}" for line in result.refused]
    return "\n".join(lines + [f"entries: {counts}"])

