"""Derive the exercise and answer kernel files from the one reference solution.

The reference solution is a valid, runnable Python file. Two kinds of marker comments:

* ``# @text:KEY`` stands for a comment the student reads; it becomes ``# <KEY's text>`` in the
  pack's language (``code_comments.KEY`` in the lesson's text file).
* ``# @blank arg=N`` (or ``kw=NAME``) after a statement that is a call marks the blank: the
  N-th positional argument (or keyword NAME) of that call. ``# @blank value`` after a one-line
  assignment (``=``, ``+=``, ...) marks its whole right-hand side instead. The exercise replaces
  the marked expression with ``______`` and the marker with the locale's TODO comment; the answer
  keeps it and drops the marker.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from functools import lru_cache

BLANK = "______"  # the blank of an exercise file, generator/ side: check.py's is shared/common.py's
TEXT_MARKER = re.compile(r"#\s*@text:([A-Za-z0-9_]+)\s*$")
BLANK_MARKER = re.compile(r"#\s*@blank\s+(?:arg=(\d+)|kw=([A-Za-z_][A-Za-z0-9_]*)|(value))\s*$")
ANY_MARKER = re.compile(r"#\s*@(\w+)")


class CodeMarkerError(ValueError):
    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line, self.column = line, column


@dataclass(frozen=True)
class BlankSpot:
    line: int          # 1-based line in the solution
    start: int         # character columns of the answer on that line
    end: int
    marker_start: int  # column where the marker comment begins

    def answer_text(self, source_lines: list[str]) -> str:
        return source_lines[self.line - 1][self.start:self.end]


@dataclass(frozen=True)
class SolutionSource:
    text: str
    blank: BlankSpot
    text_keys: tuple[str, ...]

    @property
    def fill(self) -> str:
        return self.blank.answer_text(self.text.splitlines())


@lru_cache(maxsize=64)
def parse_solution(text: str) -> SolutionSource:
    """Find and check the markers; raises CodeMarkerError with a line and column. Kept per text
    (the result is frozen): a process that loads the content again parses only what changed."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise CodeMarkerError(f"not valid Python: {exc.msg}", exc.lineno or 0, exc.offset or 0) from exc
    blanks: list[tuple[int, int, re.Match[str]]] = []
    keys: list[str] = []
    for line, column, comment in _comments(text):
        if match := BLANK_MARKER.fullmatch(comment):
            blanks.append((line, column, match))
        elif match := TEXT_MARKER.fullmatch(comment):
            keys.append(match.group(1))
        elif match := ANY_MARKER.match(comment):
            raise CodeMarkerError(f"unknown marker '@{match.group(1)}' (expected '@text:KEY' or "
                                  "'@blank arg=N' / '@blank kw=NAME' / '@blank value')", line, column + 1)
    if len(blanks) != 1:
        where = ", ".join(f"line {b[0]}" for b in blanks) or "none found"
        raise CodeMarkerError(f"expected exactly one '# @blank' marker ({where})",
                              blanks[1][0] if len(blanks) > 1 else 1, 1)
    line, column, match = blanks[0]
    start, end = _argument_span(tree, text.splitlines()[line - 1], line, match)
    return SolutionSource(text, BlankSpot(line, start, end, column), tuple(keys))


def _comments(text: str) -> list[tuple[int, int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(tok.start[0], tok.start[1], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]


def _argument_span(tree: ast.Module, line_text: str, line: int, match: re.Match[str]) -> tuple[int, int]:
    if match.group(3) is not None:   # @blank value: the right-hand side of an assignment
        values = [node.value for node in ast.walk(tree)
                  if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None
                  and node.lineno == line]
        if not values:
            raise CodeMarkerError("'# @blank value' must follow an assignment on one line", line, 1)
        return _span(values[0], line_text, line)
    calls = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and node.lineno == line]
    if not calls:
        raise CodeMarkerError("'# @blank' must follow a statement that is a call on one line", line, 1)
    call = calls[0]
    if match.group(1) is not None:
        index = int(match.group(1))
        if index >= len(call.args):
            raise CodeMarkerError(f"the call has {len(call.args)} positional arguments; arg={index} is out of range", line, 1)
        node = call.args[index]
    else:
        found = [kw.value for kw in call.keywords if kw.arg == match.group(2)]
        if not found:
            raise CodeMarkerError(f"the call has no keyword argument '{match.group(2)}'", line, 1)
        node = found[0]
    return _span(node, line_text, line)


def _span(node: ast.expr, line_text: str, line: int) -> tuple[int, int]:
    """Character columns of node on line_text (ast gives UTF-8 byte offsets)."""
    if node.lineno != line or node.end_lineno != line:
        raise CodeMarkerError("the blank's argument must sit on the marker's line", line, 1)
    encoded = line_text.encode("utf-8")
    start = len(encoded[: node.col_offset].decode("utf-8"))
    end = len(encoded[: node.end_col_offset].decode("utf-8"))
    return start, end


def without_markers(text: str) -> str:
    """The solution's code as the answer edition shows it, minus the comments students read."""
    lines = [line for line in text.splitlines() if not TEXT_MARKER.fullmatch(line.strip())]
    return "\n".join(BLANK_MARKER.sub("", line).rstrip() for line in lines) + "\n"


def blank_index(code: str) -> int | None:
    """0-based index of the line that holds the blank (outside comments), if any."""
    return next((i for i, line in enumerate(code.splitlines()) if BLANK in line.split("#")[0]), None)


def render_code(source: SolutionSource, comments: dict[str, str], todo: str, answer: bool,
                fill: str | None = None) -> str:
    """The kernel file for one edition and language (or with a given fill, for mistakes)."""
    out: list[str] = []
    for number, line in enumerate(source.text.splitlines(), start=1):
        if number == source.blank.line:
            out.append(_blank_line(line, source.blank, todo, answer, fill))
            continue
        match = TEXT_MARKER.search(line)
        if match:
            indent = line[: match.start()]
            text_lines = comments[match.group(1)].strip().splitlines()
            prefix = indent if not indent.strip() else indent.rstrip() + "  "
            out.append(prefix + f"# {text_lines[0]}".rstrip())
            pad = indent if not indent.strip() else " " * len(prefix)
            out.extend(pad + f"# {rest}".rstrip() for rest in text_lines[1:])
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _blank_line(line: str, spot: BlankSpot, todo: str, answer: bool, fill: str | None) -> str:
    code = line[: spot.marker_start].rstrip()
    head, tail = code[: spot.start], code[spot.end:]
    if answer and fill is None:
        return code
    return f"{head}{fill if fill is not None else BLANK}{tail}  # {todo}"
