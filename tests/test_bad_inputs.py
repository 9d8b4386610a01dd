"""The bad-input corpus: each broken input gives a located, readable error, exit status 1, no
traceback, and leaves build/dist exactly as it was."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from generator.cli import main

EN = "content/lessons/lesson03_relu/text.en.yaml"
ZH = "content/lessons/lesson03_relu/text.zh-CN.yaml"
SPEC = "content/lessons/lesson03_relu/lesson.yaml"
SOL = "content/lessons/lesson03_relu/solution.py"
COURSE = "content/course.yaml"
LOC_EN = "content/locales/en.yaml"
TPL = "templates/pack/lesson.md.j2"
# the grading page's last line, where a broken `{% endautoescape %}` is reported
PAGE_END = next(
    i
    for i, line in enumerate(
        (Path(__file__).resolve().parent.parent / "templates/grade/page.html.j2")
        .read_text(encoding="utf-8")
        .splitlines(),
        1,
    )
    if "endautoescape" in line
)
LOCATED = re.compile(r"^(content|templates)/[\w./-]+:\d+(:\d+)?: ", re.M)
FILE_ONLY = re.compile(r"^(content|templates)/[\w./-]+: ", re.M)


def replace(rel, old, new):
    def apply(root: Path):
        path = root / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return apply


def both(first, second):
    def apply(root: Path):
        first(root)
        second(root)

    return apply


def write(rel, data: bytes):
    def apply(root: Path):
        (root / rel).write_bytes(data)

    return apply


def remove(rel):
    def apply(root: Path):
        (root / rel).unlink()

    return apply


def empty_unit(root: Path, rel: str, keypath: tuple) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    data = yaml.load((root / rel).read_text(encoding="utf-8"))
    node = data
    for key in keypath[:-1]:
        node = node[key]
    node[keypath[-1]] = ""
    with open(root / rel, "w", encoding="utf-8") as f:
        yaml.dump(data, f)


def symlink_out(root: Path):
    outside = root / "outside.yaml"
    outside.write_bytes((root / EN).read_bytes())
    (root / EN).unlink()
    (root / EN).symlink_to(outside)


def large(root: Path):
    with open(root / EN, "a", encoding="utf-8") as f:
        f.write("# " + "x" * (2 << 20) + "\n")


# (id, mutation, text expected in the error, whether a line number is expected)
CORPUS = [
    ("malformed_yaml", replace(EN, "goal: >-", "goal: [unclosed"), "YAML syntax", True),
    ("tab_indent", replace(EN, "  what: |", "\twhat: |"), "YAML syntax", True),
    ("duplicate_key", replace(EN, "demo: |", "goal: again\ndemo: |"), "duplicate key", True),
    (
        "wrong_type_list",
        replace(EN, "recap: >-", "recap: [a, b]\nrecap_old: >-"),
        "recap: expected text",
        True,
    ),
    (
        "wrong_type_map",
        replace(ZH, "role: >-", "role:\n  nested: x\nrole_old: >-"),
        "role: expected text",
        True,
    ),
    ("unknown_key", replace(EN, "  q2:\n    prompt:", "  q2:\n    promt:"), "unknown key", True),
    (
        "missing_key",
        replace(ZH, "references_note:", "references_notes:"),
        "references_note: missing",
        True,
    ),
    (
        "translation_unknown_key",
        replace(EN, "references_note:", "references_notes:"),
        "references_notes: unknown key",
        True,
    ),
    ("missing_text_file", remove(EN), "file not found", False),
    ("missing_locale_file", remove(LOC_EN), "file not found", False),
    ("missing_solution", remove(SOL), "file not found", False),
    (
        "blank_marker_missing",
        replace(SOL, "  # @blank arg=1", ""),
        "exactly one '# @blank' marker",
        True,
    ),
    (
        "blank_marker_doubled",
        replace(
            SOL,
            "    xv = tl.load(x + offsets, mask=mask)",
            "    xv = tl.load(x + offsets, mask=mask)\n    tl.store(out, xv)  # @blank arg=1",
        ),
        "exactly one '# @blank' marker",
        True,
    ),
    (
        "blank_arg_out_of_range",
        replace(SOL, "# @blank arg=1", "# @blank arg=7"),
        "out of range",
        True,
    ),
    ("unknown_code_marker", replace(SOL, "# @text:mask", "# @txt:mask"), "unknown marker", True),
    (
        "solution_syntax_error",
        replace(SOL, "def relu(x, BLOCK=256):", "def relu(x, BLOCK=256:"),
        "not valid Python",
        True,
    ),
    (
        "jinja_syntax",
        replace(TPL, "{% for item in text.pass_criteria %}", "{% for item in text.pass_criteria %"),
        "template syntax",
        True,
    ),
    (
        "jinja_undefined",
        replace(TPL, "{{ text.goal }}", "{{ text.gaol }}"),
        "has no attribute 'gaol'",
        True,
    ),
    (
        "unknown_locale",
        replace(COURSE, "locales: [zh-CN, en]", "locales: [zh-CN, en, fr]"),
        "fr.yaml: file not found",
        False,
    ),
    (
        "bad_locale_code",
        replace(COURSE, "locales: [zh-CN, en]", "locales: [zh-CN, EN_us]"),
        "locales.1",
        True,
    ),
    (
        "source_not_in_locales",
        replace(COURSE, "source_locale: zh-CN", "source_locale: ja"),
        "source_locale",
        False,
    ),
    ("non_utf8", write(EN, "goal: caf\xe9\n".encode("latin-1")), "not valid UTF-8", True),
    ("very_large_file", large, "limited to", False),
    ("empty_file", write(ZH, b""), "empty", True),
    ("top_level_list", write(ZH, b"- a\n- b\n"), "expected a mapping", True),
    ("symlink_out", symlink_out, "leaves the content folder", False),
    (
        "lesson_id_dotdot",
        replace(COURSE, "{id: lesson02_vector_add, number: 2", "{id: ../escape, number: 2"),
        "lessons.0.id",
        True,
    ),
    (
        "output_name_slash",
        replace(SPEC, "kernel_file: relu.py", "kernel_file: sub/relu.py"),
        "kernel_file",
        True,
    ),
    (
        "output_name_dotdot",
        replace(SPEC, "kernel_file: relu.py", "kernel_file: ../relu.py"),
        "kernel_file",
        True,
    ),
    (
        "duplicate_lesson",
        replace(COURSE, "{id: lesson04_add_bias, number: 4", "{id: lesson03_relu, number: 4"),
        "listed twice",
        False,
    ),
    (
        "published_without_folder",
        replace(
            COURSE,
            "{id: lesson06_matmul, number: 6, status: published}",
            "{id: lesson06_matmul, number: 6, status: published}\n"
            "  - {id: lesson07_attention, number: 7, status: published}",
        ),
        "has no folder",
        False,
    ),
    (
        "id_mismatch",
        replace(SPEC, "id: lesson03_relu", "id: lesson03_other"),
        "does not match its folder",
        False,
    ),
    (
        "case_without_dims",
        replace(
            SPEC, "{id: block_1, group: normal, dims: {N: 256}}", "{id: block_1, group: normal}"
        ),
        "without 'dims' every tensor input needs its values",
        True,
    ),
    (
        "case_value_not_number",
        replace(SPEC, '"-2.0", "0.0"', '"minus two", "0.0"'),
        "is not a number",
        False,
    ),
    (
        "negative_size",
        replace(SPEC, "dims: {N: 256}}", "dims: {N: -3}}"),
        "greater than or equal to 0",
        True,
    ),
    ("unknown_dtype", replace(SPEC, "dtype: float16}", "dtype: float8}"), "dtype", True),
    (
        "duplicate_case_id",
        replace(SPEC, "{id: block_4,", "{id: block_1,"),
        "case ids must be unique",
        False,
    ),
    (
        "mistake_unknown_case",
        replace(SPEC, "fails: [special_f32, special_f16, special_bf16]", "fails: [nope]"),
        "unknown case 'nope'",
        False,
    ),
    (
        "rubric_missing_key",
        replace(SPEC, "  pass_total: 8\n", ""),
        "rubric.pass_total: missing",
        True,
    ),
    (
        "too_few_hints",
        replace(EN, '  - "Full answer', '  #- "Full answer')
        if False
        else replace(EN, "hints:\n  - ", "hints:\n  - only one\nhints_old:\n  - "),
        "hints",
        True,
    ),
    (
        "code_comment_missing",
        replace(ZH, "  mask: 最后一个块", "  mask_: 最后一个块"),
        "code_comments.mask: missing",
        True,
    ),
    (
        "code_comment_unknown_key",
        replace(EN, "code_comments:\n", "code_comments:\n  offsetz: a comment\n"),
        "code_comments.offsetz: unknown key",
        True,
    ),
    (
        "checker_case_unknown_key",
        replace(EN, "  cases:\n", "  cases:\n    no_such_case: a name\n"),
        "checker.cases.no_such_case: unknown key",
        True,
    ),
    (
        "unbalanced_math",
        replace(EN, "ReLU fits\n    on one line:", "ReLU $fits\n    on one line:"),
        "unbalanced $",
        True,
    ),
    (
        "raw_html",
        replace(ZH, "学完本课后", "<script>alert(1)</script>学完本课后"),
        "raw HTML",
        True,
    ),
    (
        "quarto_block_fence",
        replace(EN, "ReLU fits\n    on one line:", "ReLU fits\n    ::: on one line:"),
        "':::'",
        True,
    ),
    (
        "quarto_template",
        replace(
            "templates/quarto/lesson.qmd.j2", "{% for fig in figures %}", "{% for fig in figures %"
        ),
        "template syntax",
        True,
    ),
    (
        "grade_page_template",
        replace("templates/grade/page.html.j2", "{% endautoescape %}", "{% endautoescape"),
        f"templates/grade/page.html.j2:{PAGE_END}:",
        True,
    ),
    (
        "checker_message_missing",
        replace(LOC_EN, '  raised: "raised {text}"\n', ""),
        "checker.raised: missing in en",
        False,
    ),
    # issue 43's keys: dtypes, integer draws and values, outputs, in-place inputs, calls
    (
        "dim_bound_on_float",
        replace(
            SPEC,
            "draw: {low: 0.125, high: 8.125, alternate_signs: true}",
            "draw: {low: 0, high: N}",
        ),
        "a dimension name as a bound draws integers",
        True,
    ),
    (
        "fractional_int_bound",
        replace(
            SPEC,
            "shape: [N]\n      draw: {low: 0.125, high: 8.125, alternate_signs: true}",
            "shape: [N]\n      dtype: int64\n      draw: {low: 0.5, high: N}",
        ),
        "is not a whole number",
        True,
    ),
    (
        "int_value_not_integer",
        replace(SPEC, "    - name: x\n", "    - name: x\n      dtype: int32\n"),
        "is not an integer of int32",
        True,
    ),
    (
        "int8_value_out_of_range",
        both(
            replace(SPEC, '"-2.0", "0.0"', '"300", "0"'),
            replace(SPEC, "    - name: x\n", "    - name: x\n      dtype: int8\n"),
        ),
        "300 is outside int8's range",
        True,
    ),
    (
        "inplace_not_an_input",
        replace(SPEC, "  reasons: [nan_dropped", "  inplace: [y]\n  reasons: [nan_dropped"),
        "'y' is not a tensor input",
        True,
    ),
    (
        "inplace_not_an_output",
        replace(SPEC, "  reasons: [nan_dropped", "  inplace: [x]\n  reasons: [nan_dropped"),
        "an in-place input is judged as an output",
        True,
    ),
    (
        "property_without_check",
        replace(
            SPEC,
            "  reasons: [nan_dropped",
            "  outputs: [{name: out, check: property}]\n  reasons: [nan_dropped",
        ),
        "needs reference.py to define check(inputs, got)",
        True,
    ),
    (
        "tolerance_on_int_output",
        replace(
            SPEC,
            "  reasons: [nan_dropped",
            "  outputs: [{name: out, dtype: int8, compare: {float32: {rtol: 0.1}}}]\n"
            "  reasons: [nan_dropped",
        ),
        "compares exactly",
        True,
    ),
    (
        "call_on_a_tensor",
        replace(
            SPEC,
            "{id: block_1, group: normal, dims: {N: 256}}",
            "{id: block_1, group: normal, dims: {N: 256}, calls: [{x: '1.0'}]}",
        ),
        "'x' is not a scalar input",
        True,
    ),
    (
        "math_pandoc_reads_as_dollars",
        replace(EN, "and $\\text{BLOCK} = 256$:", "and $\\text{BLOCK} = $ 256:"),
        "Quarto (pandoc) reads as dollar signs",
        True,
    ),
    (
        "source_lacks_a_message",
        replace("content/locales/zh-CN.yaml", "  in_call:", "  in_call_old:"),
        "lacks messages check.py shows: in_call",
        True,
    ),
    (
        "answer_translation_missing",
        lambda root: empty_unit(root, EN, ("questions", "q3", "answer")),
        "questions.q3.answer: missing in en: a release never falls back",
        True,
    ),
]


@pytest.fixture
def with_dist(content_copy: Path) -> Path:
    dist = content_copy / "build" / "dist"
    dist.mkdir(parents=True)
    (dist / "previous.zip").write_bytes(b"the previous release")
    return content_copy


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("case_id, mutate, expected, has_line", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_input(with_dist, capsys, case_id, mutate, expected, has_line):
    root = with_dist
    mutate(root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        code = main(
            [
                "build",
                "--content",
                "content",
                "--templates",
                "templates",
                "--out",
                "build",
                "--no-verify",
            ]
        )
    finally:
        os.chdir(cwd)
    captured = capsys.readouterr()
    err = captured.err.split("coursepack: error: ", 1)[-1]
    assert code == 1, captured
    assert "Traceback" not in captured.err + captured.out
    assert expected in err, err
    assert (LOCATED if has_line else FILE_ONLY).search(err) or LOCATED.search(err), err
    assert [p.name for p in (root / "build" / "dist").iterdir()] == ["previous.zip"]
    assert (root / "build" / "dist" / "previous.zip").read_bytes() == b"the previous release"


def test_check_compiles_every_template(content_copy, capsys):
    """`coursepack check` compiles the templates a build never renders (the grading page's), so a
    broken one is found before an instructor grades."""
    replace("templates/grade/page.html.j2", "{% endautoescape %}", "{% endautoescape")(content_copy)
    code = main(
        [
            "check",
            "--content",
            str(content_copy / "content"),
            "--templates",
            str(content_copy / "templates"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert f"templates/grade/page.html.j2:{PAGE_END}:1: template syntax: " in err, err
    assert "Traceback" not in err
