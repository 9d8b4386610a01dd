"""Copied work: written answers compared across the class, against the reference answers (in every
language the course has) and against the question's and the lesson's text; code beyond the exercise
compared across the class. Pure: texts in, matches out (similarity_pages writes them).

The method is MOSS's (Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003): a text becomes a
sequence of tokens, each run of tokens long enough to mean something is hashed (a k-gram), and of
every window of WINDOW consecutive hashes the smallest is kept: the text's fingerprints. Two texts
match by the share of the smaller one's fingerprints that the other holds, counted only where
they share at least `min_shared` of them, so a short answer ("tl.maximum") matches nothing alone.

Tokens: prose is NFKC-normalized and case-folded; Markdown punctuation, math delimiters and
spacing disappear; a Chinese, Japanese or Korean character is a token of its own (three units),
any other word one token (four units); a k-gram is the shortest run of tokens from its start worth
GRAM_UNITS units (three words, or four characters of Chinese). Code is read with Python's
tokenizer: the student's own names become N (a library's names stay: `tl`, what follows a dot),
numbers and strings L, comments and layout vanish, keywords and operators stay; a k-gram is
CODE_GRAM tokens.

Discounted: fingerprints of the exercise file (its code) and of the question (a student may quote
it) when students are compared with each other, and fingerprints that more than `common` of the
class hold (the ways a whole class writes one expression)."""

from __future__ import annotations

import bisect
import difflib
import hashlib
import io
import keyword
import re
import tokenize
import unicodedata
from dataclasses import dataclass, field

from generator.content.codegen import BLANK

WINDOW = 4
GRAM_UNITS = 12
CODE_GRAM = 10
LIBRARY_NAMES = frozenset(
    {"tl", "triton", "torch", "math", "range", "len", "min", "max", "abs", "int", "float"}
)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+(?:_[^\W_]+)*"
)


@dataclass(frozen=True)
class Settings:
    """The thresholds a course sets (`coursepack grade --similarity`, --similarity-min-shared)."""

    threshold: float = 0.3  # share of the smaller text's fingerprints held by the other
    min_shared: int = 4  # fewer shared fingerprints are never a match
    common: float = 0.05  # fingerprints held by more than this share of the class are ignored
    common_floor: int = 4  # ... and by more than this many students


@dataclass
class Document:
    """One text's fingerprints: hash -> the character spans of its k-grams in the original text."""

    text: str
    spans: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def hashes(self) -> set[int]:
        return set(self.spans)


def _stable_hash(parts) -> int:
    return int.from_bytes(
        hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest(), "big"
    )


def _normalized(text: str) -> tuple[str, list[int]]:
    """NFKC, case-folded, with each character's index in the original (for the highlights)."""
    out, where = [], []
    for index, char in enumerate(text):
        for norm in unicodedata.normalize("NFKC", char).casefold():
            out.append(norm)
            where.append(index)
    return "".join(out), where


def prose_tokens(text: str) -> list[tuple[str, int, int, int]]:
    """(token, units, start, end) with start/end in the original text."""
    norm, where = _normalized(text)
    tokens = []
    for match in TOKEN.finditer(norm):
        word = match.group(0)
        units = 3 if CJK.fullmatch(word) else 4
        tokens.append((word, units, where[match.start()], where[match.end() - 1] + 1))
    return tokens


def code_tokens(text: str) -> list[tuple[str, int, int, int]]:
    """Python tokens with names and literals made anonymous; (token, 1, start, end) in the text."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    tokens, previous = [], ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = tok.type
            if kind in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
                tokenize.ENCODING,
            ):
                continue
            if kind == tokenize.NAME:  # the student's own names become N; the libraries' stay
                kept = (
                    keyword.iskeyword(tok.string) or tok.string in LIBRARY_NAMES or previous == "."
                )
                word = tok.string if kept else "N"
            elif kind in (tokenize.NUMBER, tokenize.STRING):
                word = "L"
            else:
                word = tok.string
            start = starts[tok.start[0] - 1] + tok.start[1]
            end = starts[tok.end[0] - 1] + tok.end[1]
            tokens.append((word, 1, start, end))
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # code that does not tokenize is still compared, as words and symbols
        tokens = [(m.group(0), 1, m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    return tokens


def fingerprints(text: str, code: bool = False) -> Document:
    """Winnowed k-gram hashes of a text, each with the spans of the original it covers. A k-gram
    never crosses a blank line (in code: from one changed hunk into the next)."""
    tokens = code_tokens(text) if code else prose_tokens(text)
    breaks = [m.start() for m in re.finditer(r"\n[ \t]*\n", text)]
    block = [bisect.bisect(breaks, t[2]) for t in tokens]
    grams = []  # (hash, start, end)
    for i in range(len(tokens)):
        j, units = i, 0
        while (
            j < len(tokens)
            and block[j] == block[i]
            and (j - i < CODE_GRAM if code else units < GRAM_UNITS)
        ):
            units += tokens[j][1]
            j += 1
        if (j - i < CODE_GRAM) if code else (units < GRAM_UNITS):
            continue
        grams.append((_stable_hash([t[0] for t in tokens[i:j]]), tokens[i][2], tokens[j - 1][3]))
    doc = Document(text)
    chosen = set()
    for start in range(max(0, len(grams) - WINDOW) + 1 if grams else 0):
        window = grams[start : start + WINDOW]
        low = min(g[0] for g in window)
        chosen.add(
            start + max(i for i, g in enumerate(window) if g[0] == low)
        )  # the rightmost smallest
    for index in sorted(chosen):
        value, begin, end = grams[index]
        doc.spans.setdefault(value, []).append((begin, end))
    return doc


def own_code(code: str, exercise_files: list[str]) -> str:
    """The hunks of a submission that no exercise file has, against the closest exercise: the fill
    of the blank (the expression alone, not the exercise's line around it) and every edit outside
    it (for a whole-file lesson, what the student wrote), separated by blank lines (a k-gram never
    joins two of them). A one-expression fill is too short to match by itself."""

    def lines(text):
        return [line.strip() for line in text.splitlines()]

    mine = code.splitlines()
    best = None
    for exercise in exercise_files or [""]:
        fill = [_fill_pattern(line) for line in exercise.splitlines() if BLANK in line]
        matcher = difflib.SequenceMatcher(None, lines(code), lines(exercise), autojunk=False)
        hunks = [
            "\n".join(_without_exercise(line, fill) for line in mine[i1:i2] if line.strip())
            for tag, i1, i2, _, _ in matcher.get_opcodes()
            if tag in ("replace", "delete")
        ]
        hunks = [h for h in hunks if h]
        if best is None or sum(map(len, hunks)) < sum(map(len, best)):
            best = hunks
    return "\n\n".join(best or [])


def _without_exercise(line: str, fill: list[re.Pattern]) -> str:
    """A line as the student wrote it, or only the fill where it is the exercise's blank line."""
    for pattern in fill:
        found = pattern.match(line)
        if found:
            return " ".join(g for g in found.groups()[:-1] if g)
    return line


def _fill_pattern(line: str) -> re.Pattern:
    """The exercise's blank line with any fill in the blank and any comment (or none) after it."""
    code = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else line.strip()
    parts = [re.escape(part) for part in code.split(BLANK)]
    return re.compile(r"^\s*" + "(.+?)".join(parts) + r"\s*(#.*)?$")


@dataclass(frozen=True)
class Match:
    part: str
    student: str
    kind: str  # student, reference, question, earlier (a student of an earlier term)
    other: str  # a student id, "reference:<locale>", "question:<locale>" or "<term>:<student>"
    score: float
    shared: int
    spans: tuple = ()  # the student's shared spans
    other_spans: tuple = ()
    other_text: str = ""


def _merge(spans) -> tuple:
    merged = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return tuple(merged)


def _match(
    part, student, kind, other, mine: Document, theirs: Document, ignore: set, settings: Settings
) -> Match | None:
    a, b = mine.hashes - ignore, theirs.hashes - ignore
    shared = a & b
    if len(shared) < settings.min_shared:
        return None
    base = min(len(a), len(b))
    score = len(shared) / base if base else 0.0
    if score < settings.threshold:
        return None
    return Match(
        part,
        student,
        kind,
        other,
        round(score, 3),
        len(shared),
        _merge(s for h in shared for s in mine.spans[h]),
        _merge(s for h in shared for s in theirs.spans[h]),
        theirs.text,
    )


def compare_class(
    documents: dict[str, dict[str, str]],
    sources: dict[str, dict[str, dict[str, str]]],
    exercise_files: list[str],
    settings: Settings = Settings(),
    earlier: dict[str, dict[str, dict[str, str]]] | None = None,
) -> list[Match]:
    """Every match, best first. documents: student -> part -> text (the part "code" is the graded
    code, compared as code beyond the exercise). sources: part -> {"reference": {locale: text},
    "question": {locale: text}} (the reference answers and the question/lesson text, each language).
    earlier: term -> student -> part -> text, an earlier term's class, matched as other students."""
    prints = {
        s: {
            p: (
                fingerprints(own_code(t, exercise_files), code=True)
                if p == "code"
                else fingerprints(t)
            )
            for p, t in parts.items()
            if t and t.strip()
        }
        for s, parts in documents.items()
    }
    past = {
        f"{term}:{s}": {
            p: (
                fingerprints(own_code(t, exercise_files), code=True)
                if p == "code"
                else fingerprints(t)
            )
            for p, t in parts.items()
            if t and t.strip()
        }
        for term, cls in (earlier or {}).items()
        for s, parts in cls.items()
    }
    starter = set()
    for exercise in exercise_files:
        starter |= fingerprints(exercise, code=True).hashes
    matches = []
    for part in sorted({p for parts in prints.values() for p in parts}):
        holders = {}
        for student, parts in prints.items():
            for value in parts.get(part, Document("")).hashes:
                holders.setdefault(value, []).append(student)
        limit = max(settings.common_floor, settings.common * len(prints))
        ignore = {h for h, who in holders.items() if len(who) > limit} | (
            starter if part == "code" else set()
        )
        for kind in ("question", "reference"):
            for locale, text in (sources.get(part, {}).get(kind) or {}).items():
                source = fingerprints(text)
                if kind == "question":
                    ignore |= source.hashes  # quoting the question is no sign between two students
                for student, parts in prints.items():
                    if part in parts:
                        found = _match(
                            part,
                            student,
                            kind,
                            f"{kind}:{locale}",
                            parts[part],
                            source,
                            set(),
                            settings,
                        )
                        matches += [found] if found else []
        pairs = {}
        for value, who in holders.items():
            if value in ignore or len(who) > limit:
                continue
            for i, a in enumerate(who):
                for b in who[i + 1 :]:
                    pairs[(a, b)] = pairs.get((a, b), 0) + 1
        for (a, b), count in pairs.items():
            if count >= settings.min_shared:
                found = _match(
                    part, a, "student", b, prints[a][part], prints[b][part], ignore, settings
                )
                matches += [found] if found else []
        for other, parts in past.items():
            if part not in parts:
                continue
            for student, mine in prints.items():
                if part in mine:
                    found = _match(
                        part, student, "earlier", other, mine[part], parts[part], ignore, settings
                    )
                    matches += [found] if found else []
    return sorted(matches, key=lambda m: (-m.score, -m.shared, m.part, m.student, m.other))


def similar_to(matches: list[Match]) -> dict[str, str]:
    """student -> the grades.csv cell: `q1: bob 0.92; q2: reference:en 0.81` (both students of a pair)."""
    cells = {}
    for m in matches:
        cells.setdefault(m.student, []).append(f"{m.part}: {m.other} {m.score:.2f}")
        if m.kind == "student":
            cells.setdefault(m.other, []).append(f"{m.part}: {m.student} {m.score:.2f}")
    return {s: "; ".join(sorted(set(c))) for s, c in cells.items()}
