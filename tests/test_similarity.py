"""Copy detection (generator/grade/similarity.py): normalization, winnowing, the exercise's code
discounted, the reference answers and questions in every language, the planted-copy class of
bench/similarity_bench.py, and the pages' escaping."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest

from generator.grade.similarity import (
    Settings,
    code_tokens,
    compare_class,
    fingerprints,
    own_code,
    prose_tokens,
    similar_to,
)
from generator.grade.similarity_pages import earlier_terms, write_similarity
from generator.grade.lesson import GradeError
from generator.files.resources import TEMPLATES
from tests.conftest import REPO

spec = importlib.util.spec_from_file_location(
    "similarity_bench", REPO / "bench" / "similarity_bench.py"
)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

ANSWER = (
    "The default tl.maximum returns the operand that is not NaN, so a NaN input becomes zero, while "
    "torch.relu keeps the NaN. Passing propagate_nan=tl.PropagateNan.ALL keeps it, at the same speed."
)
OTHER = (
    "Each program owns one block of consecutive indices; the mask stops the lanes past the end from "
    "reading or writing, so the last block needs no branch at all and the grid rounds up."
)


def test_prose_is_folded_and_stripped_of_markdown():
    words = [t[0] for t in prose_tokens("**Ｎａｎ** `tl.maximum`, $x$ -- Becomes  0!")]
    assert words == ["nan", "tl", "maximum", "x", "becomes", "0"]


def test_each_cjk_character_is_a_token_and_spans_point_into_the_original():
    text = "默认的 **tl.maximum** 丢掉 NaN。"
    tokens = prose_tokens(text)
    assert [t[0] for t in tokens[:3]] == ["默", "认", "的"]
    assert all(
        text[start:end].casefold() in (word, "nan") or word in text[start:end].casefold()
        for word, _, start, end in tokens
    )


def test_code_names_become_one_token_but_the_librarys_stay():
    words = [t[0] for t in code_tokens("out = tl.maximum(xv, 0.0)  # mine\n")]
    assert words == ["N", "=", "tl", ".", "maximum", "(", "N", ",", "L", ")"]


def test_winnowing_is_deterministic_and_keeps_a_window_minimum():
    a, b = fingerprints(ANSWER), fingerprints(ANSWER)
    assert a.hashes == b.hashes and len(a.hashes) >= 4
    assert len(a.hashes) < len(prose_tokens(ANSWER))  # a window keeps one of its k-grams


def test_a_short_answer_matches_nothing_by_itself():
    docs = {"a": {"q1": "tl.maximum(xv, 0.0)"}, "b": {"q1": "tl.maximum(xv, 0.0)"}}
    assert compare_class(docs, {}, []) == []


def test_a_verbatim_copy_matches_and_an_independent_answer_does_not():
    docs = {"a": {"q1": ANSWER}, "b": {"q1": ANSWER}, "c": {"q1": OTHER}}
    matches = compare_class(docs, {}, [])
    assert [(m.student, m.other, m.kind) for m in matches] == [("a", "b", "student")]
    assert matches[0].score == 1.0
    assert similar_to(matches) == {"a": "q1: b 1.00", "b": "q1: a 1.00"}


def test_the_reference_answer_in_any_language_and_the_question_are_sources():
    reference = {
        "zh-CN": "默认的 tl.maximum 返回不是 NaN 的那个操作数，所以输入 NaN 会变成 0，而 torch.relu 保留 NaN。",
        "en": ANSWER,
    }
    question = {
        "en": "Why does the default tl.maximum differ from torch.relu on NaN inputs, and what fixes it "
        "without costing bandwidth in the kernel?"
    }
    edited = ANSWER.replace("operand", "value").replace("speed", "bandwidth")
    docs = {
        "en_student": {"q1": edited},
        "zh_student": {"q1": reference["zh-CN"][:-1] + "！"},
        "quoter": {"q1": question["en"] + " " + OTHER},
    }
    found = {
        (m.student, m.other)
        for m in compare_class(docs, {"q1": {"reference": reference, "question": question}}, [])
    }
    assert ("en_student", "reference:en") in found
    assert ("zh_student", "reference:zh-CN") in found
    assert ("quoter", "question:en") in found


def test_quoting_the_question_is_no_match_between_two_students():
    question = {
        "en": "Why does the default tl.maximum differ from torch.relu on NaN inputs, and what fixes it "
        "without costing bandwidth in the kernel?"
    }
    docs = {"a": {"q1": question["en"] + " " + ANSWER}, "b": {"q1": question["en"] + " " + OTHER}}
    assert [
        m for m in compare_class(docs, {"q1": {"question": question}}, []) if m.kind == "student"
    ] == []


EXERCISE = bench.EXERCISE


def test_own_code_is_every_edit_outside_the_blank():
    code = (
        EXERCISE.replace("______", "tl.maximum(xv, 0.0)") + "\n\ndef helper(a):\n    return a * 2\n"
    )
    assert own_code(code, [EXERCISE]) == "tl.maximum(xv, 0.0)\n\ndef helper(a):\n    return a * 2"
    edited = EXERCISE.replace("______", "tl.where(xv > 0, xv, 0.0)  # mine").replace(
        "mask = offsets < n", "mask = offsets <= n"
    )
    assert (
        own_code(edited, [EXERCISE]) == "    mask = offsets <= n\n\ntl.where(xv > 0, xv, 0.0)"
    )  # the fill alone


def test_a_blank_the_class_fills_alike_and_the_exercise_itself_are_no_match():
    same = EXERCISE.replace("______", "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)")
    docs = {f"s{i}": {"code": same} for i in range(6)}
    docs["untouched"] = {"code": EXERCISE}
    assert compare_class(docs, {}, [EXERCISE]) == []


def test_code_renamed_and_reformatted_still_matches():
    helper = (
        "def scaled(values, factor):\n    shifted = values - tl.max(values, axis=0)\n"
        "    weights = tl.exp(shifted * factor)\n    total = tl.sum(weights, axis=0)\n"
        "    return tl.where(total > 0, weights / total, weights)\n"
    )
    renamed = (
        helper.replace("values", "v")
        .replace("factor", "k")
        .replace("weights", "w")
        .replace("total", "t")
    )
    renamed = renamed.replace("    ", "        ").replace("(v, k):", "(v, k):  # mine")
    docs = {
        "a": {"code": EXERCISE.replace("______", "tl.maximum(xv, 0.0)") + "\n\n" + helper},
        "b": {"code": EXERCISE.replace("______", "tl.where(xv > 0, xv, 0.0)") + "\n\n" + renamed},
        "c": {"code": EXERCISE.replace("______", "xv * (xv > 0)")},
    }
    assert [(m.student, m.other, m.part) for m in compare_class(docs, {}, [EXERCISE])] == [
        ("a", "b", "code")
    ]


def test_the_planted_copy_class_finds_every_copy_and_flags_no_independent_pair():
    result = bench.measure(120, seed=1)
    assert result["planted"] >= 14
    assert result["missed"] == []
    assert result["false_positives"] == []


def _row(student, answers=None, code=None):
    parts = {p: {"status": "answered", "text": t} for p, t in (answers or {}).items()}
    return SimpleNamespace(
        student=student,
        answers={"parts": parts} if parts else None,
        submission=SimpleNamespace(code=code) if code else None,
    )


def test_the_pages_escape_student_text_and_mark_the_shared_passages(tmp_path):
    attack = ANSWER + ' <script>alert("x")</script> <img src=x onerror=alert(1)>'
    rows = [
        _row("alice", {"q1": attack}),
        _row("bob", {"q1": attack}),
        _row("carol", {"q1": OTHER}),
    ]
    rubric = {"parts": [{"id": "q1", "kind": "manual", "prompt": {}, "reference": {}}]}
    cells = write_similarity(tmp_path, rows, rubric, [], Settings(), {}, TEMPLATES)
    assert cells == {"alice": "q1: bob 1.00", "bob": "q1: alice 1.00"}
    page = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "script&gt;" in page and "&lt;img" in page and "<mark>" in page
    markdown = (tmp_path / "similarity.md").read_text(encoding="utf-8")
    assert "alice" in markdown and "carol" not in markdown
    record = json.loads((tmp_path / "similarity.json").read_text(encoding="utf-8"))
    assert record["documents"]["carol"] == {"q1": OTHER}


def test_an_earlier_term_is_compared_through_its_similarity_json(tmp_path):
    last = tmp_path / "last_term"
    last.mkdir()
    rubric = {"parts": [{"id": "q1", "kind": "manual"}]}
    write_similarity(
        last, [_row("old_student", {"q1": ANSWER})], rubric, [], Settings(), {}, TEMPLATES
    )
    matches = compare_class(
        {"new_student": {"q1": ANSWER}}, {}, [], Settings(), earlier_terms([last])
    )
    assert [(m.student, m.kind, m.other) for m in matches] == [
        ("new_student", "earlier", f"{last}:old_student")
    ]
    with pytest.raises(GradeError, match="no readable similarity.json"):
        earlier_terms([tmp_path / "missing"])
