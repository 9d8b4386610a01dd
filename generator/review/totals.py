"""Each student's total, pass and progress from the gradebook, through the rubric's own rule
(generator/grade/rubric.py's totals: no total until every part is graded)."""

from __future__ import annotations

from dataclasses import dataclass

from generator.review.store import Gradebook, Score, Veto


@dataclass(frozen=True)
class Standing:
    student: dict
    manual: dict[str, float | None]  # part -> points (None: not graded yet)
    comments: dict[str, str]
    vetoes: dict[str, str]  # the active vetoes: id -> reason
    result: dict  # totals(): total, max, passed, graded
    updated: float  # the last change to this student's scores or vetoes (0: none)


def auto_points(rubric: dict, student: dict) -> dict[str, float | None]:
    """The automatic parts' points: what grading gave each rubric group."""
    points = student["auto"].get("points") or {}
    return {p["id"]: points.get(p["id"]) for p in rubric["parts"] if p.get("kind") == "auto"}


def standing(
    rubric: dict,
    student: dict,
    scores: dict[tuple[str, str], Score],
    vetoes: dict[tuple[str, str], Veto],
) -> Standing:
    from generator.grade.rubric import totals

    sid = student["id"]
    manual_parts = [p["id"] for p in rubric["parts"] if p.get("kind") == "manual"]
    found = {part: scores.get((sid, part)) for part in manual_parts}
    manual = {part: s.points if s else None for part, s in found.items()}
    comments = {part: s.comment for part, s in found.items() if s and s.comment}
    active = {
        v["id"]: vetoes[(sid, v["id"])].reason
        for v in rubric.get("vetoes", [])
        if (sid, v["id"]) in vetoes and vetoes[(sid, v["id"])].active
    }
    times = [s.updated for s in found.values() if s] + [
        v.updated for (who, _), v in vetoes.items() if who == sid
    ]
    result = totals(rubric, auto_points(rubric, student), manual, list(active))
    return Standing(student, manual, comments, active, result, max(times, default=0.0))


def standings(book: Gradebook) -> list[Standing]:
    rubric = book.rubric()
    scores, vetoes = book.scores(), book.vetoes()
    return [standing(rubric, s, scores, vetoes) for s in book.students()]


def result_text(result: dict) -> str:
    """pass, fail, or how far the manual grading is (never a made-up total)."""
    if result.get("passed") is None:
        return f"manual: {result['graded']} parts graded"
    return "pass" if result["passed"] else "fail"
