"""Translation units: their state (ok, missing, stale, extra), fallbacks with visible markers,
protected tokens, source snapshots, and the translator's commands (status, bless, new).

A unit is one text leaf of a content file, named by its key path (``questions.q1.answer``,
``hints.3``). A translation file stamps each unit it has translated with the hash of the source
text it was translated from, under ``source_hashes``; a unit whose stamp no longer matches the
source is stale. Snapshots of stamped source texts live in ``content/.i18n/snapshots/`` so that
a stale unit can be shown with the old and the new source, word by word.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

HASHES = "source_hashes"
# a marker would break a link target or a figure, and the markers are shown as they are
UNMARKED = ("url", "mermaid", "i18n_missing", "i18n_stale", "i18n_draft")
CRITICAL = (re.compile(r"^questions\.\w+\.answer$"), re.compile(r"^rubric\.parts\.\w+\.reference$"), re.compile(r"^solution_note$"), re.compile(r"^hints\.3$"),
            re.compile(r"^checker\."))   # answers and checker messages never fall back in a release


def unit_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def units(data: Any, path: tuple = ()) -> dict[str, str]:
    """Every text leaf, by dotted key path (the stamps themselves excluded)."""
    found: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if not path and key == HASHES:
                continue
            found.update(units(value, path + (key,)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.update(units(value, path + (index,)))
    elif isinstance(data, str):
        found[".".join(map(str, path))] = data
    return found


def unit_keypath(unit: str) -> tuple:
    """The YAML key path of a unit id (list positions are numbers)."""
    return tuple(int(part) if part.isdigit() else part for part in unit.split("."))


def is_critical(unit: str) -> bool:
    return any(pattern.match(unit) for pattern in CRITICAL)


@dataclass
class TranslationState:
    """What merging a translation with its source found, unit by unit."""

    path: Path
    locale: str
    source_path: Path
    ok: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    stamps: dict[str, str] = field(default_factory=dict)
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)   # of missing and stale units

    @property
    def clean(self) -> bool:
        return not (self.missing or self.stale or self.extra)


def merge(source: Any, target: Any, stamps: dict[str, str], markers: dict[str, str], state: TranslationState,
          path: tuple = ()) -> Any:
    """The translation with each missing unit filled from the source and each fallback or stale
    unit visibly marked. Values of the wrong kind pass through, for the schema to report."""
    if isinstance(source, dict):
        if target is not None and not isinstance(target, dict):
            return target
        target = target or {}
        result = {key: merge(value, target.get(key), stamps, markers, state, path + (key,))
                  for key, value in source.items() if not (not path and key == HASHES)}
        for key, value in target.items():
            if key not in source and not (not path and key == HASHES):
                result[key] = value           # the schema reports it as an unknown key
        return result
    if isinstance(source, list):
        if target is not None and not isinstance(target, list):
            return target
        target = target or []
        state.extra += [".".join(map(str, path + (i,))) for i in range(len(source), len(target))]
        return [merge(value, target[i] if i < len(target) else None, stamps, markers, state, path + (i,))
                for i, value in enumerate(source)]
    unit = ".".join(map(str, path))
    if not isinstance(source, str) or (target is not None and not isinstance(target, str)):
        return target if target is not None else source
    if target is None or not target.strip():
        state.missing.append(unit)
        return mark(source, markers["missing"], unit)
    if stamps.get(unit) != unit_hash(source):
        state.stale.append(unit)
        return mark(target, markers["stale"], unit)
    state.ok.append(unit)
    return target


def draft_banner(merged: dict, note: str) -> None:
    """A draft lesson says so at the top of each edition (its edition note)."""
    for key in ("edition_note_exercise", "edition_note_answer"):
        if isinstance(merged.get(key), str):
            merged[key] = f"⚠ {note} · {merged[key]}"


def mark(text: str, marker: str, unit: str) -> str:
    if unit.split(".")[-1] in UNMARKED or not any(ch.isalnum() for ch in text):   # punctuation needs no marker
        return text
    if "\n" in text.strip():
        return f"> ⚠ {marker}\n\n{text}"
    return f"⚠ [{marker}] {text}"


# ---- protected tokens -------------------------------------------------------------------------

PROTECTED = {
    "placeholders": re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:[:!][^{}]*)?\}(?!\})"),
    "inline code": re.compile(r"(?<!`)`([^`\n]+)`(?!`)"),
    "math": re.compile(r"(?<![\\$])\$(?!\$)([^$\n]+?)\$"),
    "link targets": re.compile(r"\]\(([^)\s]+)\)"),
}
MERMAID_NODE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*(?=\[|\(|\{|-->|---|-\.|==>)")


def protected_problems(unit: str, source: str, translation: str) -> list[str]:
    """What a translation must keep from its source: placeholders, code, math, links, figure ids."""
    return list(_protected_problems(unit.endswith("mermaid"), source, translation))


@lru_cache(maxsize=8192)
def _protected_problems(mermaid: bool, source: str, translation: str) -> tuple[str, ...]:
    """Kept per text: a process that loads the content again checks only the units that changed."""
    problems = []
    if mermaid:
        unquoted = [re.sub(r'"[^"]*"', '""', text) for text in (source, translation)]   # labels are prose
        want, got = (set(MERMAID_NODE.findall(text)) for text in unquoted)
        if want != got:
            problems.append(f"mermaid node ids differ from the source: expected {sorted(want)}, found {sorted(got)}")
        return tuple(problems)
    for name, pattern in PROTECTED.items():
        want, got = sorted(set(pattern.findall(source))), sorted(set(pattern.findall(translation)))
        if want != got:
            lost, added = sorted(set(want) - set(got)), sorted(set(got) - set(want))
            detail = "; ".join(part for part in (f"missing {lost}" if lost else "", f"not in the source {added}" if added else "") if part)
            problems.append(f"{name} differ from the source: {detail}")
    for index, (want_code, got_code) in enumerate(zip(_fences(source), _fences(translation))):
        if _code_tokens(want_code) != _code_tokens(got_code):
            problems.append(f"code block {index + 1} differs from the source's (only comments may be translated)")
    if len(_fences(source)) != len(_fences(translation)):
        problems.append("the number of code blocks differs from the source")
    return tuple(problems)


def _fences(text: str) -> list[str]:
    return re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, re.S | re.M)


def _code_tokens(code: str) -> list[str] | str:
    try:
        return [tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code.strip()


# ---- snapshots and word diffs -----------------------------------------------------------------

def snapshot_dir(content_root: Path) -> Path:
    return content_root / ".i18n" / "snapshots"


def save_snapshot(content_root: Path, text: str) -> str:
    digest = unit_hash(text)
    path = snapshot_dir(content_root) / f"{digest}.txt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return digest


def load_snapshot(content_root: Path, digest: str) -> str | None:
    """The source text stamped as digest. Snapshots saved before issue 10.1 hold a U+0007 fold
    marker at each fold of a folded scalar; without them they read as that source reads now, so a
    word diff shows only what really changed (a source value can no longer hold a U+0007)."""
    path = snapshot_dir(content_root) / f"{digest}.txt"
    return path.read_text(encoding="utf-8").replace("\a", "") if path.exists() else None


WORD = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]|\w+|\s+|[^\w\s]", re.UNICODE)


def word_diff(old: str, new: str) -> str:
    """git-style word diff: [-removed-]{+added+}; CJK text is compared character by character."""
    a, b = WORD.findall(old), WORD.findall(new)
    out = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            chunk = "".join(a[a0:a1])
            out.append(chunk if len(chunk) <= 60 else chunk[:25] + " … " + chunk[-25:])
            continue
        if a1 > a0:
            out.append("[-" + "".join(a[a0:a1]) + "-]")
        if b1 > b0:
            out.append("{+" + "".join(b[b0:b1]) + "+}")
    return "".join(out)
