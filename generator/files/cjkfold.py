"""Line folds of YAML text joined the way the language needs (issue 39).

YAML folds each line break of a folded (`>`) or plain multi-line scalar into one space, which is
right between Latin words and wrong between two Chinese or Japanese characters ("是 “无分支…”").
Here a fold between two wide characters joins them without a space, as CSS Text 3's segment-break
rules do. Hangul keeps the space: Korean writes spaces between words. Ambiguous-width quotes,
dashes and ellipses count as wide next to a wide character ("是“"), but an arrow does not: "下标 →
掩码" has its spaces on purpose.

The scalar's lines are folded again from the file's text; the result is used only where folding the
same lines with a space at every fold gives back exactly the parser's value, so anything this does
not model (an indentation indicator, escapes, tabs) keeps YAML's own reading.
"""

from __future__ import annotations

import re
import unicodedata

HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff]")
WIDE_NEAR_WIDE = set("‘’“”…—‖")


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in "WFH" and not HANGUL.match(char)


def joiner(before: str, after: str) -> str:
    """What a fold between two lines becomes: nothing between two wide characters, else a space."""
    a, b = before[-1], after[0]
    if (_wide(a) and (_wide(b) or b in WIDE_NEAR_WIDE)) or (a in WIDE_NEAR_WIDE and _wide(b)):
        return ""
    return " "


def _fold(lines: list[str], join, block: bool) -> str:
    """YAML 1.2 line folding of content lines (indentation removed; blank lines empty)."""
    parts: list[str] = []
    prev: str | None = None
    blanks = 0
    for line in lines:
        if not line:
            blanks += 1
            continue
        if prev is None:
            parts.append("\n" * blanks)
        elif block and (
            line[0] in " \t" or prev[0] in " \t"
        ):  # more-indented lines keep their breaks
            parts.append("\n" * (blanks + 1))
        else:
            parts.append("\n" * blanks if blanks else join(prev, line))
        parts.append(line)
        prev, blanks = line, 0
    return "".join(parts)


def _block_lines(segment: str) -> list[str] | None:
    header, _, body = segment.partition("\n")
    if any(ch.isdigit() for ch in header.split("#")[0]):  # an explicit indentation indicator
        return None
    lines = body.split("\n")
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    if not indents:
        return None
    indent = indents[0]
    return [line[indent:] if line.strip() else "" for line in lines]


def _plain_lines(segment: str) -> list[str]:
    return [line.strip(" \t") for line in segment.split("\n")]


def rejoin(text: str, start: int, end: int, style: str | None, value: str) -> str:
    """value (the parser's reading of text[start:end], a folded or plain scalar) with each fold
    between two wide characters joined without a space."""
    segment = text[start:end]
    if "\n" not in segment:
        return value
    block = style == ">"
    lines = _block_lines(segment) if block else _plain_lines(segment)
    if lines is None:
        return value
    body = value.rstrip("\n")
    if _fold(lines, lambda a, b: " ", block) != body:
        return value
    return _fold(lines, joiner, block) + value[len(body) :]
