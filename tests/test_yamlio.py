from pathlib import Path

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
