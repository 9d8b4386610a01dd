import pytest

from generator.codegen import BLANK, CodeMarkerError, parse_solution, render_code

SOLUTION = '''import triton.language as tl

def k(x, out, mask):
    xv = x
    # @text:store
    tl.store(out, tl.maximum(xv, 0.0), mask=mask)  # @blank arg=1
'''


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


@pytest.mark.parametrize("text, message, line", [
    ("f(a)\n", "exactly one '# @blank' marker (none found)", 1),
    ("f(a)  # @blank arg=0\nf(b)  # @blank arg=0\n", "exactly one", 2),
    ("f(a)  # @blank arg=3\n", "out of range", 1),
    ("x = 1  # @blank arg=0\n", "must follow a statement that is a call", 1),
    ("f(a)  # @blank arg=0\n# @txt:oops\n", "unknown marker '@txt'", 2),
    ("def f(:\n", "not valid Python", 1),
])
def test_marker_errors_are_located(text, message, line):
    with pytest.raises(CodeMarkerError) as info:
        parse_solution(text)
    assert message in str(info.value)
    assert info.value.line == line
