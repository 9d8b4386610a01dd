"""The code view of one submission, and the vetoes the review page proposes from evidence.

The lines are the submitted code against the exercise file it was handed out as (the lines
grading found changed outside the blank, and the fill, come from the checker's own comparison:
auto.json's `edits` and `fill`); lines of the exercise that are gone are shown struck through.

Proposals (never set by the page; the grader decides):
  boundary_removed   an exercise line holding `mask=` or an `assert` is gone from the code
  unrun_claimed      the report claims a result (pass or fail) that the re-run contradicts
Each is proposed only where the lesson's rubric declares a veto of that id."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from generator.content.codegen import BLANK

GUARD = re.compile(r"\bmask\s*=|^\s*assert\b")


@dataclass(frozen=True)
class Line:
    kind: str  # same, fill, edit, removed
    number: int | None  # the line's number in the submitted code (None for a removed line)
    text: str


def code_lines(auto: dict) -> list[Line]:
    code = auto.get("code")
    if code is None:
        return []
    mine = code.splitlines()
    edits = set(auto.get("edits") or [])
    fill = auto.get("fill")
    template = (auto.get("exercise") or "").splitlines()
    shown: list[Line] = []
    matcher = difflib.SequenceMatcher(
        a=[t.strip() for t in template], b=[m.strip() for m in mine], autojunk=False
    )
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op in ("delete", "replace"):
            shown += [
                Line("removed", None, template[i])
                for i in range(a0, a1)
                if template[i].strip()
                and not (op == "replace" and _is_blank_line(template[i], fill, mine[b0:b1]))
            ]
        for b in range(b0, b1):
            number = b + 1
            if number in edits:
                kind = "edit"
            elif op != "equal" and fill is not None and fill and fill in mine[b]:
                kind = "fill"
            else:
                kind = "same" if op == "equal" else "edit"
            shown.append(Line(kind, number, mine[b]))
    return shown


def _is_blank_line(template_line: str, fill: str | None, replaced: list[str]) -> bool:
    """The exercise's blank line, replaced by the line that holds the fill (not a removal)."""
    return BLANK in template_line and fill is not None and any(fill in line for line in replaced)


def removed_guards(auto: dict) -> list[str]:
    """Exercise lines with a mask or an assert whose code the submission no longer has (comments
    aside; the blank's line is there when a line keeps its code around the blank)."""
    code = auto.get("code")
    if code is None:
        return []
    mine = [_code(line) for line in code.splitlines()]
    kept = set(mine)
    gone = []
    for line in (auto.get("exercise") or "").splitlines():
        body = _code(line)
        if not GUARD.search(body):
            continue
        if BLANK in body:
            head, _, tail = body.partition(BLANK)
            present = any(m.startswith(head.strip()) and m.endswith(tail.strip()) for m in mine)
        else:
            present = body in kept
        if not present:
            gone.append(line.strip())
    return gone


def _code(line: str) -> str:
    """A line without its comment, stripped (a kernel's strings hold no #)."""
    return line.split("#", 1)[0].strip()


def proposals(rubric: dict, auto: dict, words: dict[str, str]) -> dict[str, str]:
    """veto id -> why the page proposes it."""
    declared = {v["id"] for v in rubric.get("vetoes", [])}
    found = {}
    gone = removed_guards(auto)
    if gone and "boundary_removed" in declared:
        found["boundary_removed"] = words["propose_boundary"].format(lines="; ".join(gone))
    claim = auto.get("claim")
    if "claim_differs" in (auto.get("flags") or []) and "unrun_claimed" in declared:
        actual = "fail" if _failed(auto) else "pass"
        found["unrun_claimed"] = words["propose_claim"].format(claimed=claim or "?", actual=actual)
    return found


def _failed(auto: dict) -> bool:
    return any(c.get("status") not in ("pass", "skip", "not_run") for c in auto.get("cases") or [])
