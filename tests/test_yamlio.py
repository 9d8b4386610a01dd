import warnings
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from generator.errors import ProblemCollector
from generator.yamlio import load_yaml


def load(tmp_path: Path, text: str | bytes):
    path = tmp_path / "x.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    problems = ProblemCollector(tmp_path)
    return load_yaml(path, problems), [str(p) for p in problems.problems]


def test_yaml_11_traps_stay_text(tmp_path):
    doc, problems = load(tmp_path, "a: no\nb: on\nc: 1e3\nd: 0o17\ne: yes\n")
    assert problems == []
    assert doc.data == {"a": "no", "b": "on", "c": "1e3", "d": "0o17", "e": "yes"}


def test_positions_are_one_based(tmp_path):
    doc, _ = load(tmp_path, "top:\n  inner: value\n")
    assert doc.position(("top", "inner")) == (2, 10)
    assert doc.position(("top", "inner"), of_key=True) == (2, 3)


def test_duplicate_keys_are_all_reported(tmp_path):
    _, problems = load(tmp_path, "a: 1\nb: 2\na: 3\nb: 4\n")
    assert problems == ["x.yaml:3:1: a: duplicate key (first defined at line 1)",
                        "x.yaml:4:1: b: duplicate key (first defined at line 2)"]


def test_a_reused_anchor_is_located_not_a_python_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # ruamel's ReusedAnchorWarning would raise here
        doc, problems = load(tmp_path, "a: &x one\nb: *x\nc: &x two\nd: *x\n")
    assert problems == ["x.yaml:3:4: anchor &x is defined again (first at line 1); give each anchor its own name"]
    assert doc.data == {"a": "one", "b": "one", "c": "two", "d": "two"}   # YAML's reading, kept for the rest


def test_tab_indentation_is_located(tmp_path):
    _, problems = load(tmp_path, "a:\n\tb: 1\n")
    assert len(problems) == 1 and problems[0].startswith("x.yaml:2:1: YAML syntax")


def test_non_utf8_is_located(tmp_path):
    _, problems = load(tmp_path, b"a: ok\nb: caf\xe9\n")
    assert problems == ["x.yaml:2:7: not valid UTF-8 (byte 0xe9); save the file as UTF-8"]


def test_empty_and_huge_files(tmp_path):
    _, problems = load(tmp_path, "")
    assert "empty" in problems[0]
    _, problems = load(tmp_path, "a: " + "x" * (1 << 21))
    assert "limited to" in problems[0]


def test_null_words_become_none(tmp_path):
    doc, _ = load(tmp_path, "a:\nb: ~\nc: 'null'\n")
    assert doc.data == {"a": None, "b": None, "c": "null"}


# ---- scalar values are what YAML 1.2 says they are (issue 10.1: no fold markers) -----------------

SPEC_8_10 = ("a: >\n\n  folded\n  line\n\n  next\n  line\n    * bullet\n\n    * list\n    * lines\n\n"
             "  last\n  line\n\n# Comment\n")


@pytest.mark.parametrize("text, expected", [
    ("a: >-\n  one\n  two\n  three\n", "one two three"),
    ("a: >\n  one\n  two\n", "one two\n"),
    ("a: >+\n  one\n  two\n\n\nb: x\n", "one two\n\n\n"),
    ("a: >-\n  one\n\n  two\n\n\n  three\n", "one\ntwo\n\nthree"),
    ("a: >\n  one\n    more indented\n  two\n  three\n", "one\n  more indented\ntwo three\n"),
    ("a: >-\n  one\n  \ttab-led\n  two\n", "one\n\ttab-led\ntwo"),
    (SPEC_8_10, "\nfolded line\nnext line\n  * bullet\n\n  * list\n  * lines\n\nlast line\n"),
    ("a: >2-\n    lead\n  one\n  two\n", "  lead\none two"),
    ("a:\n  - >-\n    item\n    one\n  - >-\n    item two\n", None),
    ("a: >-\n  学完本课后，\n  你应该能\n", "学完本课后， 你应该能"),
    ("a: >-\r\n  one\r\n  two\r\n", "one two"),
    ("a: |\n  one\n  two\n", "one\ntwo\n"),
    ("a: |-\n  one\n    two\n", "one\n  two"),
    ("a: |+\n  one\n\nb: x\n", "one\n\n"),
    ("a: one\n  two\n\n  three\n", "one two\nthree"),
    ("a: 'one\n  two\n\n  three'\n", "one two\nthree"),
    ('a: "one\n  two\\\n  three"\n', "one twothree"),
])
def test_scalar_values_match_yaml_1_2(tmp_path, text, expected):
    """Every kind of scalar reads as a YAML 1.2 safe loader reads it; ruamel's round-trip composer
    used to leave a U+0007 fold marker at each fold of a folded (`>`) scalar."""
    doc, problems = load(tmp_path, text)
    assert problems == []
    reference = YAML(typ="safe", pure=True).load(text)
    assert doc.data["a"] == reference["a"]
    if expected is not None:
        assert doc.data["a"] == expected
    assert "\a" not in repr(doc.data)


def test_positions_of_folded_values_are_kept(tmp_path):
    doc, _ = load(tmp_path, "x: 1\ngoal: >-\n  one\n  two\nnext: y\n")
    assert doc.position(("goal",)) == (2, 7)
    assert doc.position(("next",)) == (5, 7)


@pytest.mark.parametrize("escape", ["\\a", "\\x1b", "\\r", "\\x7f", "\\x85", "\\0"])
def test_control_characters_from_escapes_are_located(tmp_path, escape):
    _, problems = load(tmp_path, f'ok: "tab\\tand\\nnewline"\nbad:\n  - "x{escape}y"\n')
    assert len(problems) == 1
    assert problems[0].startswith("x.yaml:3:5: bad.0: control character U+")
