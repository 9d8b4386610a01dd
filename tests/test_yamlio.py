import warnings
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from generator.errors import ProblemCollector
from generator.files.yamlio import load_yaml


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
    assert problems == [
        "x.yaml:3:1: a: duplicate key (first defined at line 1)",
        "x.yaml:4:1: b: duplicate key (first defined at line 2)",
    ]


def test_a_reused_anchor_is_located_not_a_python_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ruamel's ReusedAnchorWarning would raise here
        doc, problems = load(tmp_path, "a: &x one\nb: *x\nc: &x two\nd: *x\n")
    assert problems == [
        "x.yaml:3:4: anchor &x is defined again (first at line 1); give each anchor its own name"
    ]
    assert doc.data == {
        "a": "one",
        "b": "one",
        "c": "two",
        "d": "two",
    }  # YAML's reading, kept for the rest


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

SPEC_8_10 = (
    "a: >\n\n  folded\n  line\n\n  next\n  line\n    * bullet\n\n    * list\n    * lines\n\n"
    "  last\n  line\n\n# Comment\n"
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: >-\n  one\n  two\n  three\n", "one two three"),
        ("a: >\n  one\n  two\n", "one two\n"),
        ("a: >+\n  one\n  two\n\n\nb: x\n", "one two\n\n\n"),
        ("a: >-\n  one\n\n  two\n\n\n  three\n", "one\ntwo\n\nthree"),
        ("a: >\n  one\n    more indented\n  two\n  three\n", "one\n  more indented\ntwo three\n"),
        ("a: >-\n  one\n  \ttab-led\n  two\n", "one\n\ttab-led\ntwo"),
        (SPEC_8_10, "\nfolded line\nnext line\n  * bullet\n\n  * list\n  * lines\n\nlast line\n"),
        ("a: >2-\n    lead\n  one\n  two\n", "  lead\none two"),
        ("a:\n  - >-\n    item\n    one\n  - >-\n    item two\n", None),
        ("a: >-\r\n  one\r\n  two\r\n", "one two"),
        ("a: |\n  one\n  two\n", "one\ntwo\n"),
        ("a: |-\n  one\n    two\n", "one\n  two"),
        ("a: |+\n  one\n\nb: x\n", "one\n\n"),
        ("a: one\n  two\n\n  three\n", "one two\nthree"),
        ("a: 'one\n  two\n\n  three'\n", "one two\nthree"),
        ('a: "one\n  two\\\n  three"\n', "one twothree"),
    ],
)
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


def test_the_one_departure_from_yaml_1_2_is_a_fold_between_cjk_characters(tmp_path):
    """Issue 39: YAML puts a space at every fold; between two CJK characters there is none."""
    text = "a: >-\n  学完本课后，\n  你应该能\n  use Triton\n"
    doc, _ = load(tmp_path, text)
    assert YAML(typ="safe", pure=True).load(text)["a"] == "学完本课后， 你应该能 use Triton"
    assert doc.data["a"] == "学完本课后，你应该能 use Triton"


def test_positions_of_folded_values_are_kept(tmp_path):
    doc, _ = load(tmp_path, "x: 1\ngoal: >-\n  one\n  two\nnext: y\n")
    assert doc.position(("goal",)) == (2, 7)
    assert doc.position(("next",)) == (5, 7)


@pytest.mark.parametrize("escape", ["\\a", "\\x1b", "\\r", "\\x7f", "\\x85", "\\0"])
def test_control_characters_from_escapes_are_located(tmp_path, escape):
    _, problems = load(tmp_path, f'ok: "tab\\tand\\nnewline"\nbad:\n  - "x{escape}y"\n')
    assert len(problems) == 1
    assert problems[0].startswith("x.yaml:3:5: bad.0: control character U+")


# libyaml (through PyYAML) composes the node tree where it reads a text without complaint; ruamel's
# pure-Python composer where it complains. The two must give the same data and positions.
SAME_EITHER_WAY = {
    "folded": "a: >\n  one\n  two\n\n  three\n    indented\n  four\nb: >-\n  x\n  y\n\nc: >+\n  keep\n\n\nd: x\n",
    "literal": "a: |\n  one\n   two\n\n  three\nb: |-\n  x\nc: |+\n  y\n\n\nd: |2\n    lead\n",
    "quoted": 'a: "tab\\there \\u4e2d \\x41 \\/ \\\\ \\" \\N \\_"\nb: \'it\'\'s\'\nc: "multi\n  line\n\n  para"\n',
    "plain": 'a: multi\n  line plain\n  scalar\nb: 1e3\nc: no\nd: ~\nf: null\ng: "null"\n',
    "flow": 'a: [1, "two", {x: y, z: [w]}]\nb: {k: v, "q": \'r\'}\nc: []\nd: {}\n',
    "cjk": '标题: 中文内容，带有全角标点：冒号\n列表:\n  - 第一\n  - "第二 中"\n  - [甲, 乙丙]\n',
    "aliases": "a: &x {k: v}\nb: *x\nc: &y [1, 2]\nd: *y\ne:\n  <<: *x\n  y: 2\n",
    "comments": "# c\na: 1 # trailing\n# between\nb:\n  # inner\n  - x # y\n",
    "markers": "%YAML 1.2\n---\na: 1\n...\n",
    "crlf": "a: 1\r\nb: |\r\n  x\r\n  y\r\n",
    "bom": "\ufeffa: 1\n",
    "tags": "a: !!str 123\nb: !custom x\n",
    "nested": "a:\n  b:\n    c:\n      - d: 1\n        e: [f]\n",
    "key questions": "? a\n: b\n? [c, d]\n: e\n",
    "duplicate key": "a: 1\nb: 2\na: 3\n",
    "controls": 'a: "\\a bell"\nb: x\u0085y\n',
    "scalar root": "just text\n",
}


def _both_ways(tmp_path: Path, text: str, monkeypatch) -> tuple:
    import generator.files.yamlio as yamlio

    results = []
    for fast in (True, False):
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(yamlio, "_FastLoader", None)
            yamlio._compose.cache_clear()
            doc, problems = load(tmp_path, text)
        results.append((doc and doc.data, doc and doc.value_pos, doc and doc.key_pos, problems))
    yamlio._compose.cache_clear()
    return tuple(results)


@pytest.mark.parametrize("name", sorted(SAME_EITHER_WAY))
def test_libyaml_and_ruamel_compose_the_same(tmp_path, monkeypatch, name):
    fast, pure = _both_ways(tmp_path, SAME_EITHER_WAY[name], monkeypatch)
    assert fast == pure


def test_every_content_file_composes_the_same_either_way(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parent.parent / "content"
    files = sorted(root.rglob("*.yaml"))
    assert len(files) > 10
    for path in files:
        fast, pure = _both_ways(tmp_path, path.read_text(encoding="utf-8"), monkeypatch)
        assert fast == pure, path


def test_content_is_composed_by_libyaml(tmp_path):
    from generator.files.yamlio import fast_compose

    assert fast_compose("a: [b, {c: d}]\n") is not None, (
        "PyYAML with libyaml is in requirements/lock.txt"
    )
    assert (
        fast_compose("a: [b\n") is None
    )  # a syntax error: ruamel composes it again, for its message
    assert (
        fast_compose("a: &x 1\nb: &x 2\n") is None
    )  # an anchor defined twice: ruamel's composer notes it


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "a: b: c\n", "a: *nope\n", "a:\n\t- x\n"])
def test_syntax_errors_read_as_ruamel_words_them(tmp_path, monkeypatch, text):
    fast, pure = _both_ways(tmp_path, text, monkeypatch)
    assert fast == pure and fast[3] and fast[3][0].startswith("x.yaml:")


def test_where_the_two_differ(tmp_path, monkeypatch):
    """libyaml places an empty value after its key's colon (ruamel: at the next line), and reads a
    tab inside a plain value as the text YAML 1.2 says it is (ruamel refuses it)."""
    fast, pure = _both_ways(tmp_path, "a:\nb: x\n", monkeypatch)
    assert fast[1][("a",)] == (1, 3) and pure[1][("a",)] == (2, 1)
    fast, pure = _both_ways(tmp_path, "a: x\tb\n", monkeypatch)
    assert fast[0] == {"a": "x\tb"} and pure[0] is None
