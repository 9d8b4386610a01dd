"""Bad content as a translator or author would write it: every problem located, all at once."""

from pathlib import Path

import pytest

from generator.errors import ContentError
from generator.content.loader import load_content

EN = "content/lessons/lesson03_relu/text.en.yaml"
ZH = "content/lessons/lesson03_relu/text.zh-CN.yaml"
SPEC = "content/lessons/lesson03_relu/lesson.yaml"


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def problems(root: Path) -> list[str]:
    with pytest.raises(ContentError) as info:
        load_content(root / "content")
    return [str(p) for p in info.value.problems]


def test_real_content_loads():
    content = load_content(Path(__file__).parent.parent / "content")
    assert [lesson.spec.id for lesson in content.published] == [
        "lesson02_vector_add",
        "lesson03_relu",
        "lesson04_add_bias",
        "lesson05_softmax",
        "lesson06_matmul",
        "lesson07_cross_entropy",
    ]
    assert set(content.published[0].texts) == {"zh-CN", "en"}


def test_unknown_key_is_located(content_copy):
    edit(content_copy, ZH, "  q2:\n    prompt:", "  q2:\n    promt:")
    found = problems(content_copy)
    assert any(p.startswith(ZH) and ": questions.q2.promt: unknown key" in p for p in found)
    assert any(p.startswith(ZH) and ": questions.q2.prompt: missing" in p for p in found)
    # In a translation the same typo is an unknown key; the missing unit falls back to the source.
    edit(content_copy, ZH, "  q2:\n    promt:", "  q2:\n    prompt:")
    edit(content_copy, EN, "  q2:\n    prompt:", "  q2:\n    promt:")
    found = problems(content_copy)
    assert [p for p in found if p.startswith(EN)] and all(
        "questions.q2.promt: unknown key" in p for p in found
    )


def test_all_errors_of_all_files_come_together(content_copy):
    edit(content_copy, EN, "goal: >-", "goal:\n  nested: map\ngoal2: >-")
    edit(content_copy, ZH, "recap: >-", "recap: [a, b]\nrecap_: >-")
    edit(content_copy, SPEC, "dims: {N: 256}}", "dims: {N: big}}")
    found = problems(content_copy)
    assert any(p.startswith(f"{EN}:") and "goal: expected text" in p for p in found)
    assert any(p.startswith(f"{ZH}:") and "recap: expected text" in p for p in found)
    assert any(
        p.startswith(f"{SPEC}:")
        and "checks.cases.1.dims.N: expected a whole number (got 'big')" in p
        for p in found
    )
    for p in found:
        path, line, column = p.split(":")[:3]
        assert line.isdigit() and column.isdigit(), p


def test_mistake_naming_unknown_case(content_copy):
    edit(
        content_copy,
        SPEC,
        "fails: [special_f32, special_f16, special_bf16]",
        "fails: [special_f33]",
    )
    assert any(
        "checks.mistakes.0.fails: unknown case 'special_f33'" in p for p in problems(content_copy)
    )


def test_missing_translation_file(content_copy):
    (content_copy / EN).unlink()
    assert any(p.startswith(EN) and "file not found" in p for p in problems(content_copy))


def test_unknown_locale_in_course(content_copy):
    edit(content_copy, "content/course.yaml", "locales: [zh-CN, en]", "locales: [zh-CN, en, fr]")
    assert any("content/locales/fr.yaml: file not found" in p for p in problems(content_copy))


def test_code_comment_keys_follow_solution_markers(content_copy):
    edit(content_copy, ZH, "  offsets: 本 program", "  offset: 本 program")
    found = problems(content_copy)
    assert any(
        "code_comments.offsets: missing (required by the @text markers in solution.py)" in p
        for p in found
    )
    assert any("code_comments.offset: unknown key" in p for p in found)


def test_blank_marker_problems_are_located(content_copy):
    edit(content_copy, "content/lessons/lesson03_relu/solution.py", "  # @blank arg=1", "")
    found = problems(content_copy)
    assert any(
        "solution.py:1:1: expected exactly one '# @blank' marker (none found)" in p for p in found
    )


def test_symlink_leaving_content_is_refused(content_copy, tmp_path):
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text((content_copy / EN).read_text(encoding="utf-8"), encoding="utf-8")
    (content_copy / EN).unlink()
    (content_copy / EN).symlink_to(outside)
    assert any("leaves the content folder" in p for p in problems(content_copy))
