import pytest

from generator.content.codegen import BLANK, CodeMarkerError, parse_solution, render_code

SOLUTION = """import triton.language as tl

def k(x, out, mask):
    xv = x
    # @text:store
    tl.store(out, tl.maximum(xv, 0.0), mask=mask)  # @blank arg=1
"""


def test_exercise_and_answer_come_from_one_source():
    source = parse_solution(SOLUTION)
    assert source.fill == "tl.maximum(xv, 0.0)"
    exercise = render_code(source, {"store": "store it"}, "TODO: fill", answer=False)
    answer = render_code(source, {"store": "store it"}, "TODO: fill", answer=True)
    assert f"tl.store(out, {BLANK}, mask=mask)  # TODO: fill" in exercise
    assert "tl.maximum" not in exercise and "@blank" not in exercise
    assert "    tl.store(out, tl.maximum(xv, 0.0), mask=mask)\n" in answer
    assert "    # store it\n" in exercise and "    # store it\n" in answer
    compile(exercise, "exercise.py", "exec")
    compile(answer, "answer.py", "exec")


def test_mistake_fill_replaces_the_blank():
    source = parse_solution(SOLUTION)
    code = render_code(source, {"store": "s"}, "TODO", answer=False, fill="xv")
    assert "tl.store(out, xv, mask=mask)  # TODO" in code


def test_keyword_blank():
    source = parse_solution("f(a, b=g(1))  # @blank kw=b\n")
    assert source.fill == "g(1)"


def test_value_blank_marks_the_right_hand_side_of_an_assignment():
    """`# @blank value`: the whole right-hand side of a one-line assignment is the blank."""
    text = (
        "import triton.language as tl\n\ndef k(xv, acc):\n"
        "    num = tl.exp(xv - tl.max(xv, axis=0))  # @blank value\n"
        "    acc += tl.dot(xv, xv)  # @blank value\n"
    )
    with pytest.raises(CodeMarkerError, match="exactly one"):
        parse_solution(text)
    source = parse_solution(text.replace("  # @blank value\n    acc", "\n    acc"))
    assert source.fill == "tl.dot(xv, xv)"
    source = parse_solution(
        text.replace("  # @blank value\n", "\n", 2).replace(
            "axis=0))\n", "axis=0))  # @blank value\n"
        )
    )
    assert source.fill == "tl.exp(xv - tl.max(xv, axis=0))"
    exercise = render_code(source, {}, "TODO: fill", answer=False)
    assert f"    num = {BLANK}  # TODO: fill\n" in exercise
    assert "    num = tl.exp(xv - tl.max(xv, axis=0))\n" in render_code(
        source, {}, "TODO", answer=True
    )
    assert "    num = tl.exp(xv)  # TODO\n" in render_code(
        source, {}, "TODO", answer=False, fill="tl.exp(xv)"
    )


@pytest.mark.parametrize(
    "text, message, line",
    [
        ("f(a)\n", "exactly one '# @blank' marker (none found)", 1),
        ("f(a)  # @blank arg=0\nf(b)  # @blank arg=0\n", "exactly one", 2),
        ("f(a)  # @blank arg=3\n", "out of range", 1),
        ("x = 1  # @blank arg=0\n", "must follow a statement that is a call", 1),
        ("f(1)  # @blank value\n", "must follow an assignment on one line", 1),
        ("x = (1 +\n     2)  # @blank value\n", "must follow an assignment on one line", 2),
        ("f(a)  # @blank arg=0\n# @txt:oops\n", "unknown marker '@txt'", 2),
        ("def f(:\n", "not valid Python", 1),
    ],
)
def test_marker_errors_are_located(text, message, line):
    with pytest.raises(CodeMarkerError) as info:
        parse_solution(text)
    assert message in str(info.value)
    assert info.value.line == line


def test_the_generator_and_check_py_mark_the_blank_alike():
    """Two definitions, one per side of the trust boundary (content/ may not import checker/):
    the exercise file's blank is the one check.py looks for."""
    from generator.checker.shared import common

    assert BLANK == common.BLANK
