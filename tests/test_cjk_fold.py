"""Folded and plain multi-line scalars joined the way the language needs (issue 39)."""

from pathlib import Path

import pytest

from generator.files.cjkfold import joiner
from generator.errors import ProblemCollector
from generator.files.yamlio import load_yaml

ROOT = Path(__file__).resolve().parent.parent


def read(tmp_path: Path, text: str, **options):
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    problems = ProblemCollector(tmp_path)
    doc = load_yaml(path, problems, **options)
    assert problems.problems == []
    return doc.data


def test_japanese_and_chinese_folded_scalars_join_without_a_space(tmp_path):
    data = read(
        tmp_path,
        "ja: >\n  カーネルを書き、\n  二つのことを説明する。\n"
        "zh: >-\n  为什么逐元素运算在 Triton 里是\n  “无分支的向量语义”。\n",
    )
    assert data == {
        "ja": "カーネルを書き、二つのことを説明する。\n",
        "zh": "为什么逐元素运算在 Triton 里是“无分支的向量语义”。",
    }


def test_latin_words_korean_and_mixed_folds_keep_their_space(tmp_path):
    data = read(
        tmp_path,
        "en: >-\n  two\n  words\nko: >-\n  커널을\n  작성합니다\n"
        "mixed: >-\n  在\n  Triton 里\n  是\narrow: >-\n  下标 →\n  掩码\n",
    )
    assert data == {
        "en": "two words",
        "ko": "커널을 작성합니다",
        "mixed": "在 Triton 里是",
        "arrow": "下标 → 掩码",
    }


def test_plain_multiline_scalars_and_blank_lines(tmp_path):
    data = read(tmp_path, "a: 第一行\n  第二行\n\n  第三段\nb: >\n  甲\n\n  乙\n    缩进\n  丙\n")
    assert data == {"a": "第一行第二行\n第三段", "b": "甲\n乙\n  缩进\n丙\n"}


def test_the_old_reading_keeps_a_space_at_every_fold(tmp_path):
    assert read(tmp_path, "a: >-\n  甲\n  乙\n", latin_folds=True) == {"a": "甲 乙"}


def test_quoted_and_literal_scalars_are_yamls_own_reading(tmp_path):
    data = read(tmp_path, 'a: "甲\n  乙"\nb: |\n  甲\n  乙\n')
    assert data == {"a": "甲 乙", "b": "甲\n乙\n"}


@pytest.mark.parametrize(
    "before, after, joined",
    [
        ("是", "“", ""),
        ("。", "不", ""),
        ("；", "以", ""),
        ("”", "以", ""),
        ("→", "掩", " "),
        ("a", "b", " "),
        ("字", "b", " "),
        ("다", "가", " "),
    ],
)
def test_joiner(before, after, joined):
    assert joiner(before, after) == joined


def test_shipped_lesson3_goal_has_no_stray_space():
    path = ROOT / "content" / "lessons" / "lesson03_relu" / "text.zh-CN.yaml"
    goal = load_yaml(path, ProblemCollector(ROOT)).data["goal"]
    assert "Triton 里是“无分支的向量语义”" in goal
