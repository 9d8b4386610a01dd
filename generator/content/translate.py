"""The translators' commands: `coursepack i18n status | bless | new | migrate-stamps`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from generator.errors import CoursepackError
from generator.content.i18n import (HASHES, is_critical, load_snapshot, save_snapshot, unit_hash, unit_keypath, units,
                            word_diff)
from generator.content.loader import CourseContent, load_content
from generator.files.yamlio import load_yaml
from generator.errors import ProblemCollector


MARKERS = Path(__file__).resolve().parent.parent / "skeleton" / "markers.yaml"


def round_trip_yaml() -> YAML:
    """A YAML writer that keeps a translator's comments, quotes and layout."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _source_units(path: Path, fold_markers: bool = False, latin_folds: bool = False) -> dict[str, str]:
    doc = load_yaml(path, ProblemCollector(path.parent), fold_markers=fold_markers, latin_folds=latin_folds)
    return units(doc.data) if doc is not None else {}


def refold_stamps(source_path: Path, translation_path: Path) -> dict[str, str]:
    """Issues 10.1 and 39: units of a translation whose stamp is the hash of an old reading of their
    *current* source text (a U+0007 fold marker at each fold of a folded `>` scalar; a space at a
    fold between two CJK characters), with their source text as it reads now. The translator
    reviewed exactly that text; only its hash was wrong. A unit stamped on any other text is left
    out: its source really changed."""
    doc = load_yaml(translation_path, ProblemCollector(translation_path.parent))
    stamps = doc.data.get(HASHES) if doc is not None and isinstance(doc.data, dict) else None
    if not isinstance(stamps, dict):
        return {}
    source = _source_units(source_path)
    readings = (_source_units(source_path, fold_markers=True), _source_units(source_path, latin_folds=True))
    return {unit: source[unit] for unit, stamp in stamps.items() if unit in source
            and any(old.get(unit, source[unit]) != source[unit] and stamp == unit_hash(old[unit]) for old in readings)}


def status(content_root: Path, locale: str | None = None) -> dict:
    """Per translation file: units ok, missing, stale (with word diffs of the source) and extra."""
    content = load_content(content_root)
    files = []
    for state in content.translations:
        if locale and state.locale != locale:
            continue
        source = _source_units(state.source_path)
        refold = refold_stamps(state.source_path, state.path) if state.stale else {}
        stale = []
        for unit in state.stale:
            stamp = state.stamps.get(unit)
            old = load_snapshot(content.root, stamp) if stamp else None
            stale.append({"unit": unit, "stamp": stamp, "critical": is_critical(unit),
                          "diff": word_diff(old, source[unit]) if old is not None else None,
                          "why": "no stamp: never marked as translated" if not stamp else
                                 "stamped on the old reading of folded text; run `coursepack i18n migrate-stamps`"
                                 if unit in refold else
                                 ("source changed" if old is not None else "source changed (no snapshot of the old text)")})
        where = unit_positions(state.path, state.missing + state.stale)
        for item in stale:
            item.update(where[item["unit"]])
        files.append({"file": _rel(content, state.path), "locale": state.locale, "ok": len(state.ok),
                      "missing": [{"unit": u, "critical": is_critical(u), **where[u]} for u in state.missing],
                      "stale": stale, "extra": state.extra})
    clean = all(not f["missing"] and not f["stale"] and not f["extra"] for f in files)
    return {"clean": clean, "files": files}


def unit_positions(path: Path, wanted: list[str]) -> dict[str, dict[str, int]]:
    """Line and column of each unit in a translation file: its value (empty for a missing one), or
    for a key the file lacks, the key of the nearest mapping above it that the file has."""
    doc = load_yaml(path, ProblemCollector(path.parent))
    found = {}
    for unit in wanted:
        keypath = unit_keypath(unit)
        if doc is None:
            line, column = 1, 1
        elif keypath in doc.value_pos:   # an empty value: where the translation goes
            line, column = doc.value_pos[keypath]
        else:
            line, column = doc.position(keypath[:-1], of_key=True)
        found[unit] = {"line": line, "column": column}
    return found


def draft_summary(content: CourseContent) -> list[str]:
    """One line per translation file of a draft locale that needs work: how many units fall back,
    how many are stale."""
    return [f"{_rel(content, state.path)}: draft translation, {len(state.missing)} units in the source language, "
            f"{len(state.stale)} stale" for state in content.translations
            if state.locale in content.drafts and (state.missing or state.stale)]


def _rel(content: CourseContent, path: Path) -> str:
    try:
        return str(path.relative_to(content.root.parent))
    except ValueError:
        return str(path)


def render_status(report: dict) -> str:
    lines = []
    for f in report["files"]:
        lines.append(f"{f['file']} ({f['locale']}): {f['ok']} ok, {len(f['stale'])} stale, "
                     f"{len(f['missing'])} missing, {len(f['extra'])} extra")
        for item in f["missing"]:
            lines.append(f"  {f['file']}:{item['line']}:{item['column']}: missing  {item['unit']}"
                         f"{'  (blocks a release)' if item['critical'] else ''}")
        for item in f["stale"]:
            lines.append(f"  {f['file']}:{item['line']}:{item['column']}: stale    {item['unit']}: {item['why']}"
                         f"{'  (blocks a release)' if item['critical'] else ''}")
            if item["diff"]:
                lines.append("           source: " + item["diff"].replace("\n", "\n                   "))
        for unit in f["extra"]:
            lines.append(f"  extra    {unit}")
    lines.append("all translations are up to date" if report["clean"] else
                 "translations need work: translate or update the units above, then "
                 "`coursepack i18n bless LOCALE --unit ID` to stamp them")
    return "\n".join(lines)


def bless(content_root: Path, locale: str, unit_ids: list[str], all_stale: bool, lesson: str | None = None) -> list[str]:
    """Stamp units of a locale with the current source hash (after a review); keep the file's layout."""
    content = load_content(content_root)
    if locale == content.course.source_locale:
        raise CoursepackError(f"{locale} is the source language: its units are never stamped")
    stamped = []
    for state in content.translations:
        if state.locale != locale or (lesson and f"/{lesson}/" not in state.path.as_posix()):
            continue
        source = _source_units(state.source_path)
        own = _source_units(state.path)
        wanted = [u for u in unit_ids if u in source] if unit_ids else []
        if all_stale:
            wanted += [u for u in state.stale if u not in wanted]
        wanted = [u for u in wanted if own.get(u, "").strip()]   # never stamp an untranslated unit
        if wanted:
            _write_stamps(state.path, {u: save_snapshot(content.root, source[u]) for u in wanted})
            stamped += [f"{_rel(content, state.path)}: {u}" for u in wanted]
    unknown = [u for u in unit_ids if not any(s.endswith(f": {u}") for s in stamped)]
    if unit_ids and unknown:
        raise CoursepackError(f"not stamped (unknown unit, or not translated in {locale}): {', '.join(unknown)}")
    return stamped


def migrate_stamps(content_root: Path) -> list[str]:
    """Re-stamp, in every translation file, the units that `refold_stamps` finds, with the hash of
    their source text as it reads now, and save that text's snapshot. Other stale units stay stale;
    comments and layout stay as they are; running it again finds nothing."""
    content = load_content(content_root)
    return [f"{_rel(content, state.path)}: {unit}" for state in content.translations
            for unit in migrate_file(content.root, state.source_path, state.path)]


def migrate_file(content_root: Path, source_path: Path, translation_path: Path) -> list[str]:
    """migrate_stamps for one translation file; the units it re-stamped."""
    wanted = refold_stamps(source_path, translation_path)
    if wanted:
        _write_stamps(translation_path, {u: save_snapshot(content_root, text) for u, text in wanted.items()})
    return sorted(wanted)


def _write_stamps(path: Path, stamps: dict[str, str]) -> None:
    yaml = round_trip_yaml()
    data = yaml.load(path.read_text(encoding="utf-8"))
    table = data.get(HASHES)
    if not isinstance(table, CommentedMap):
        table = CommentedMap()
        data[HASHES] = table
    for unit, digest in sorted(stamps.items()):
        table[unit] = digest
    out = io.StringIO()
    yaml.dump(data, out)
    path.write_text(out.getvalue(), encoding="utf-8")


def new_locale(content_root: Path, locale: str) -> list[Path]:
    """Skeleton files for a new language (every unit empty, so everything starts as missing, but
    the markers where the skeleton knows them) and the language added to course.yaml, as a draft;
    no code changes."""
    content = load_content(content_root)
    if locale in content.course.locales:
        raise CoursepackError(f"{locale} is already a language of the course")
    source = content.course.source_locale
    targets = [(content.root / "locales" / f"{source}.yaml", content.root / "locales" / f"{locale}.yaml")]
    targets += [(lesson.folder / f"text.{source}.yaml", lesson.folder / f"text.{locale}.yaml")
                for lesson in content.published]
    yaml = round_trip_yaml()
    for src, dst in targets:
        if dst.exists():
            raise CoursepackError(f"{dst} already exists")
        data = yaml.load(src.read_text(encoding="utf-8"))
        _empty_leaves(data)
        if dst.parent.name == "locales" and isinstance(data.get("pack"), CommentedMap):
            data["pack"].update(known_markers(locale))
        out = io.StringIO()
        out.write(f"# {locale} translation of {src.name}. Fill in each value; keep the keys.\n"
                  f"# Then stamp what you translated: coursepack i18n bless {locale} --unit ID (or --all-stale).\n")
        yaml.dump(data, out)
        dst.write_text(out.getvalue(), encoding="utf-8")
    course_path = content.root / "course.yaml"
    course = yaml.load(course_path.read_text(encoding="utf-8"))
    course["locales"].append(locale)
    if "drafts" not in course:   # a new language starts as a draft: it builds while it is half done
        drafts = CommentedSeq()
        drafts.fa.set_flow_style()
        course.insert(list(course).index("locales") + 1, "drafts", drafts)
    course["drafts"].append(locale)
    out = io.StringIO()
    yaml.dump(course, out)
    course_path.write_text(out.getvalue(), encoding="utf-8")
    return [dst for _, dst in targets] + [course_path]


def known_markers(locale: str) -> dict[str, str]:
    """The translation markers in the new language's own words, where the skeleton knows them."""
    table = YAML(typ="safe").load(MARKERS.read_text(encoding="utf-8"))
    return dict(table.get(locale) or table.get(locale.split("-")[0]) or {})


def _empty_leaves(node: Any) -> None:
    if isinstance(node, CommentedMap):
        for key in list(node):
            if isinstance(node[key], (CommentedMap, CommentedSeq)):
                _empty_leaves(node[key])
            else:
                node[key] = ""
    elif isinstance(node, CommentedSeq):
        for index, value in enumerate(node):
            if isinstance(value, (CommentedMap, CommentedSeq)):
                _empty_leaves(value)
            else:
                node[index] = ""


def release_gate(content: CourseContent) -> list[dict]:
    """Fallbacks a release may carry (marked prose), after refusing the ones it may not:
    missing or stale reference answers and checker messages, unless the locale is a draft."""
    problems = ProblemCollector(content.root.parent)
    fallbacks = []
    for state in content.translations:
        draft = state.locale in content.drafts
        for kind, found in (("missing", state.missing), ("stale", state.stale)):
            for unit in found:
                fallbacks.append({"file": problems.rel(state.path), "locale": state.locale, "unit": unit, "kind": kind,
                                  "draft": draft})
                if is_critical(unit) and not draft:
                    problems.add(state.path, f"{kind} in {state.locale}: a release never falls back on reference answers "
                                 "or checker messages (see `coursepack i18n status`)", unit, *state.positions[unit])
    problems.raise_if_any()
    return fallbacks
