"""The answer edition minus the exercise edition is exactly the declared answer material."""

import pytest

from generator.pipeline.build import render_all
from generator.pipeline.options import BuildOptions
from generator.gate.leaks import LeakError
from generator.content.loader import load_content
from tests.conftest import REPO


def render(root):
    templates = root / "templates"
    options = BuildOptions(content=root / "content", templates=templates, locales=("en",))
    return render_all(load_content(options.content), options)


def test_real_editions_agree():
    assert render(REPO)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            "{% if answer %}\nA drifted line only the answer edition has.\n{% endif %}\n",
            "answer-only line is not declared",
        ),
        (
            "{% if not answer %}\nA drifted line only the exercise edition has.\n{% endif %}\n",
            "exercise-only line is not declared",
        ),
    ],
)
def test_drifted_template_is_an_error(content_copy, change, message):
    path = content_copy / "templates" / "pack" / "lesson.md.j2"
    path.write_text(path.read_text(encoding="utf-8") + change, encoding="utf-8")
    with pytest.raises(LeakError, match=message):
        render(content_copy)


def test_answer_printed_into_the_exercise_is_a_leak(content_copy):
    path = content_copy / "templates" / "pack" / "lesson.md.j2"
    text = path.read_text(encoding="utf-8").replace(
        "{{ q.answer if answer else placeholder }}", "{{ placeholder }} {{ q.answer }}"
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LeakError, match="contains answer-only material from questions"):
        render(content_copy)


def test_a_line_is_covered_as_by_taking_every_piece_away():
    """line_covered stops once three characters or fewer are left: taking more pieces away could not
    change its answer."""
    import re
    from generator.gate.pairing import CELL_HEADER, line_covered, loose

    def every(line, pieces):
        if CELL_HEADER.match(line):
            return True
        rest = loose(line)
        for piece in pieces:
            rest = rest.replace(piece, "")
        return len(re.sub(r"\d", "", rest)) <= 3

    pieces = ["referenceanswer", "tlmaximumxv00", "answer", "ab", "x"]
    for line in [
        "Reference answer",
        "tl.maximum(xv, 0.0) and 12",
        "answer abc",
        "xyz abab",
        "nothing here",
        "1. ab",
        "",
        "[markdown {}]",
        "ab ab ab ab x",
    ]:
        assert line_covered(line, pieces) == every(line, pieces), line
