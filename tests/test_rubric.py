"""The rubric as content declares it (parts and vetoes with ids, located errors), rubric.json as
grading writes it, and the totals and pass rule: never a made-up total, a veto fails."""

from __future__ import annotations

import json

import pytest

from generator.errors import ContentError
from generator.grade.lesson import load_lesson
from generator.grade.rubric import rubric_document, totals
from generator.content.loader import load_content
from tests.conftest import REPO

LESSON3 = "content/lessons/lesson03_relu"


@pytest.fixture(scope="module")
def lesson():
    return load_lesson(REPO / "content", "lesson03_relu")


@pytest.fixture(scope="module")
def rubric(lesson):
    return rubric_document(lesson)


def test_rubric_json_holds_every_part_and_veto_in_every_language(lesson, rubric):
    assert json.loads(json.dumps(rubric)) == rubric
    assert (rubric["lesson"], rubric["source_locale"], rubric["locales"]) == (
        "lesson03_relu",
        "zh-CN",
        ["zh-CN", "en"],
    )
    assert (rubric["pass_total"], rubric["max_total"]) == (8, 10)
    assert [(p["id"], p["kind"], p["points"]) for p in rubric["parts"]] == [
        ("normal", "auto", 2),
        ("boundary", "auto", 1),
        ("explanation", "manual", 1),
        ("q1", "manual", 2),
        ("q2", "manual", 2),
        ("q3", "manual", 2),
    ]
    parts = {p["id"]: p for p in rubric["parts"]}
    assert parts["normal"]["title"] == {"zh-CN": "正常输入", "en": "normal inputs"}
    assert (
        parts["q1"]["title"] == {"zh-CN": "Q1", "en": "Q1"} and parts["q1"]["place"] == "question"
    )
    text = lesson.texts["en"]
    assert parts["q1"]["prompt"]["en"] == text.questions["q1"].prompt
    assert parts["q1"]["reference"]["en"] == text.questions["q1"].answer
    assert (
        parts["explanation"]["reference"]["zh-CN"]
        == lesson.texts["zh-CN"].rubric.parts["explanation"].reference
    )
    assert parts["explanation"]["place"] == "implementation"
    assert [v["id"] for v in rubric["vetoes"]] == [
        "lucky_result",
        "boundary_removed",
        "unrun_claimed",
    ]
    assert rubric["vetoes"][1]["title"]["en"] == text.rubric.vetoes["boundary_removed"]


def test_every_lesson_declares_its_rubric_with_ids():
    content = load_content(REPO / "content")
    for lesson in content.published:
        rubric = lesson.spec.rubric
        assert {p.id for p in rubric.manual} >= set(lesson.spec.questions)
        assert rubric.vetoes and 0 < rubric.pass_total <= rubric.max_total
        for text in lesson.texts.values():
            assert set(text.rubric.vetoes) == set(rubric.vetoes)


AUTO = {"normal": 2, "boundary": 1}
FULL = {"explanation": 1, "q1": 2, "q2": 2, "q3": 2}


def test_a_total_only_when_every_part_is_scored(rubric):
    assert totals(rubric, AUTO, {"q1": 2, "q2": 1}, []) == {
        "total": None,
        "max": 10,
        "passed": None,
        "graded": "2 of 4",
    }
    assert totals(rubric, AUTO, dict(FULL, q3=None), [])["total"] is None
    assert (
        totals(rubric, {"normal": None, "boundary": 1}, FULL, [])["passed"] is None
    )  # no automatic result
    assert totals(rubric, AUTO, FULL, []) == {
        "total": 10.0,
        "max": 10,
        "passed": True,
        "graded": "4 of 4",
    }


def test_the_pass_is_at_pass_total_and_a_veto_fails(rubric):
    assert totals(rubric, AUTO, dict(FULL, q1=0), [])["passed"] is True  # 8 of 10
    assert totals(rubric, AUTO, dict(FULL, q1=0, q2=1.5), [])["passed"] is False  # 7.5
    assert totals(rubric, AUTO, dict(FULL, q1=0.5, explanation=0.5), [])["total"] == 8.0
    vetoed = totals(rubric, AUTO, FULL, ["boundary_removed"])
    assert (vetoed["total"], vetoed["passed"]) == (10.0, False)
    assert (
        totals(rubric, AUTO, {}, ["unrun_claimed"])["passed"] is False
    )  # a veto decides before the scores


@pytest.mark.parametrize(
    "auto, manual, vetoes, why",
    [
        (AUTO, dict(FULL, q1=3), [], "outside 0..2"),
        (AUTO, dict(FULL, q1=-1), [], "outside 0..2"),
        (AUTO, {"q9": 1}, [], "not a manual part"),
        ({"q1": 1}, {}, [], "not an automatic part"),
        (AUTO, FULL, ["copied"], "not vetoes of the rubric: copied"),
    ],
)
def test_what_the_rubric_does_not_allow_is_refused(rubric, auto, manual, vetoes, why):
    with pytest.raises(ValueError, match=why):
        totals(rubric, auto, manual, vetoes)


def edit(root, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize(
    "rel, old, new, expected",
    [
        (
            f"{LESSON3}/lesson.yaml",
            "{id: q3, kind: manual, points: 2}",
            "{id: q4, kind: manual, points: 2}",
            [
                "lesson.yaml:",
                "rubric.parts.5.id: 'q4' is not one of the questions (q1, q2, q3)",
                "rubric.parts: question 'q3' has no manual part",
            ],
        ),
        (
            f"{LESSON3}/lesson.yaml",
            "  pass_total: 8\n",
            "  pass_total: 11\n",
            ["rubric.pass_total: pass_total 11 is more than the rubric's 10 points"],
        ),
        (
            f"{LESSON3}/lesson.yaml",
            "{id: boundary, kind: auto, points: 1}",
            "{id: boundary, kind: manual, points: 1}",
            [
                "the case group 'boundary' has no automatic part",
                "'boundary' is not one of the questions",
            ],
        ),
        (
            f"{LESSON3}/lesson.yaml",
            "{id: normal, kind: auto, points: 2}",
            "{id: normal, kind: auto, points: 2}\n"
            "    - {id: failures, kind: manual, points: 1, place: failures}",
            [
                "text.zh-CN.yaml:",
                "rubric.parts.failures: missing (required by lesson.yaml's rubric",
            ],
        ),
        (
            f"{LESSON3}/text.en.yaml",
            "    unrun_claimed: presenting",
            "    unrun_claim: presenting",
            ["text.en.yaml:", "rubric.vetoes.unrun_claim: unknown key"],
        ),  # the missing one falls back to the source
    ],
)
def test_rubric_mistakes_are_located(content_copy, rel, old, new, expected):
    edit(content_copy, rel, old, new)
    with pytest.raises(ContentError) as error:
        load_content(content_copy / "content")
    message = str(error.value)
    for piece in expected:
        assert piece in message, message
    line = next(l for l in message.splitlines() if expected[-1] in l)
    assert line.split(":")[1].isdigit() and line.split(":")[2].isdigit()  # file:line:col


def test_a_rubric_of_the_old_shape_says_how_to_write_it_now(content_copy):
    edit(
        content_copy,
        f"{LESSON3}/lesson.yaml",
        "rubric:\n  parts:\n",
        "rubric:\n  normal: 2\n  boundary: 1\n  explanation: 1\n  per_question: 2\n  parts_old:\n",
    )
    with pytest.raises(
        ContentError, match=r"lesson.yaml:\d+:\d+: rubric: .*a list of parts with ids now"
    ):
        load_content(content_copy / "content")
