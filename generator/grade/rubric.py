"""The lesson's rubric as grading writes it (rubric.json: every part with its points, its title,
question and reference answer in every language; the vetoes), and the totals and pass rule that
turn a student's points into a result. Part and veto ids are the lesson's (lesson.yaml's rubric).

`totals` never makes up a total: a part without a score leaves the total and the pass open, and a
veto fails whatever the points."""

from __future__ import annotations

import json

from generator.grade.lesson import GradeLesson


def rubric_document(lesson: GradeLesson) -> dict:
    """rubric.json's content. The texts come from the lesson's content (lesson.texts); a grading
    kit has none (no answer travels in one), so there the titles and questions are check.py's and
    the references are left out."""
    locales = [lesson.source_locale] + [
        loc for loc in lesson.languages if loc != lesson.source_locale
    ]
    rubric = lesson.spec.rubric
    parts = []
    for part in rubric.parts:
        entry = {"id": part.id, "kind": part.kind, "points": part.points}
        texts = {loc: _part_texts(lesson, loc, part) for loc in locales}
        entry["title"] = {loc: texts[loc]["title"] for loc in locales}
        if part.kind == "manual":
            entry["place"] = part.where()
            entry["prompt"] = {loc: texts[loc]["prompt"] for loc in locales if texts[loc]["prompt"]}
            entry["reference"] = {
                loc: texts[loc]["reference"] for loc in locales if texts[loc]["reference"]
            }
        parts.append(entry)
    vetoes = [
        {"id": veto, "title": {loc: _veto_text(lesson, loc, veto) for loc in locales}}
        for veto in rubric.vetoes
    ]
    return {
        "lesson": lesson.id,
        "source_locale": lesson.source_locale,
        "locales": locales,
        "pass_total": rubric.pass_total,
        "max_total": rubric.max_total,
        "parts": parts,
        "vetoes": vetoes,
    }


def _part_texts(lesson: GradeLesson, locale: str, part) -> dict:
    language = lesson.languages[locale]
    if part.kind == "auto":
        return {
            "title": language.texts.get(f"group_{part.id}", part.id),
            "prompt": None,
            "reference": None,
        }
    text = lesson.texts.get(locale)
    if text is not None and part.id in text.questions:
        question = text.questions[part.id]
        return {"title": part.id.upper(), "prompt": question.prompt, "reference": question.answer}
    if text is not None and part.id in text.rubric.parts:
        found = text.rubric.parts[part.id]
        return {"title": found.title, "prompt": found.prompt, "reference": found.reference}
    place = next((p for p in language.data.get("answer_places", []) if p["id"] == part.id), {})
    return {"title": place.get("title", part.id), "prompt": place.get("prompt"), "reference": None}


def _veto_text(lesson: GradeLesson, locale: str, veto: str) -> str:
    text = lesson.texts.get(locale)
    return text.rubric.vetoes.get(veto, veto) if text is not None else veto


def rubric_json(lesson: GradeLesson) -> str:
    return json.dumps(rubric_document(lesson), ensure_ascii=False, indent=1) + "\n"


def totals(
    rubric: dict, auto: dict[str, float | None], manual: dict[str, float | None], vetoes: list[str]
) -> dict:
    """A student's result under rubric (rubric.json's content): auto and manual map part ids to
    points (None: not scored yet; a part left out counts as not scored), vetoes the ids set.
    {"total": float | None, "max": int, "passed": bool | None, "graded": "k of n"} where graded counts
    the manual parts scored. total is None until every part has points; passed is False with any
    veto, else None until the total is known, else total >= pass_total. A part or veto the rubric
    does not have, or points outside 0..the part's points, is a ValueError: never a made-up total."""
    by_id = {part["id"]: part for part in rubric["parts"]}
    scores: dict[str, float | None] = {}
    for kind, given in (("auto", auto), ("manual", manual)):
        for pid, points in given.items():
            part = by_id.get(pid)
            if part is None or part["kind"] != kind:
                raise ValueError(
                    f"{pid!r} is not a{'n automatic' if kind == 'auto' else ' manual'} part of the rubric"
                )
            if points is not None and not 0 <= points <= part["points"]:
                raise ValueError(f"{pid}: {points} points is outside 0..{part['points']}")
            scores[pid] = points
    unknown = sorted(set(vetoes) - {veto["id"] for veto in rubric["vetoes"]})
    if unknown:
        raise ValueError(f"not vetoes of the rubric: {', '.join(unknown)}")
    manual_ids = [part["id"] for part in rubric["parts"] if part["kind"] == "manual"]
    graded = sum(1 for pid in manual_ids if scores.get(pid) is not None)
    complete = all(scores.get(pid) is not None for pid in by_id)
    total = float(sum(scores[pid] for pid in by_id)) if complete else None
    passed = False if vetoes else (None if total is None else total >= rubric["pass_total"])
    return {
        "total": total,
        "max": rubric["max_total"],
        "passed": passed,
        "graded": f"{graded} of {len(manual_ids)}",
    }
