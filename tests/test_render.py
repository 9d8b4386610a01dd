"""Rendering the real lesson: both editions from one path, valid notebooks, no leaks."""

import json

import nbformat
import pytest

from generator.gate.leaks import fingerprints, scan_files
from tests.golden_update import real_course


@pytest.fixture(scope="module")
def rendered():
    return real_course()


@pytest.mark.parametrize("locale", ["zh-CN", "en"])
def test_editions(rendered, locale):
    content, groups = rendered
    lesson = content.lessons["lesson03_relu"]
    exercise = groups[("lesson03_relu", locale)]["exercise"][1]
    answer = groups[("lesson03_relu", locale)]["answer"][1]
    assert (
        set(exercise.files)
        == set(answer.files) - {"fused.py"}
        == {
            "relu.py",
            "lesson.md",
            "lesson.html",
            "lesson.ipynb",
            "check.py",
            "requirements.txt",
            "bench.py",
        }
    )
    assert b"______" in exercise.files["relu.py"] and b"______" not in answer.files["relu.py"]
    assert lesson.solution.fill.encode() in answer.files["relu.py"]
    text = lesson.texts[locale]
    md_ex, md_ans = exercise.files["lesson.md"].decode(), answer.files["lesson.md"].decode()
    for qid, q in text.questions.items():
        assert q.answer.strip().splitlines()[0] in md_ans
        assert q.prompt.strip().splitlines()[0] in md_ex
    assert text.hints[3] in md_ans and text.hints[3] not in md_ex
    assert scan_files(exercise.files, fingerprints(lesson, locale), exercise.name) == []
    assert "numpy" in exercise.files["requirements.txt"].decode()


@pytest.mark.parametrize("edition", ["exercise", "answer"])
def test_notebook_is_valid_and_tagged(rendered, edition):
    _, groups = rendered
    pack = groups[("lesson03_relu", "en")][edition][1]
    nb = nbformat.reads(pack.files["lesson.ipynb"].decode(), as_version=4)
    nbformat.validate(nb)
    tags = [c.metadata.get("tags", [""])[0] for c in nb.cells if c.cell_type == "code"]
    assert tags == ["setup", "exercise", "check"]
    exercise_cell = next(c for c in nb.cells if "exercise" in c.metadata.get("tags", []))
    kernel = pack.files["relu.py"].decode()
    assert exercise_cell.source + "\n" == kernel[: kernel.index("\n\nif __name__")].rstrip() + "\n"
    assert (
        "__main__" not in exercise_cell.source
    )  # a notebook runs cells as __main__: no demo there


def test_navigation_names_planned_lessons(rendered):
    _, groups = rendered
    md = groups[("lesson03_relu", "en")]["exercise"][1].files["lesson.md"].decode()
    assert (
        "**Previous:** Lesson 2: Load/store and vector addition (separate pack: lesson02_vector_add-en-exercise.zip)"
        in md
    )
    assert (
        "**Next:** Lesson 4: 2-D grids, strides and a broadcast bias (separate pack: lesson04_add_bias-en-exercise.zip)"
        in md
    )


def test_exercise_checker_holds_three_hints_answer_four(rendered):
    content, groups = rendered
    hint4 = content.lessons["lesson03_relu"].texts["en"].hints[3]
    ex = checker_data(groups[("lesson03_relu", "en")]["exercise"][1].files["check.py"])
    ans = checker_data(groups[("lesson03_relu", "en")]["answer"][1].files["check.py"])
    assert ex["hints"] == ans["hints"][:3] and len(ex["hints"]) == 3
    assert ans["hints"][3] == hint4


def checker_data(source: bytes) -> dict:
    from tests.conftest import lesson_data

    return lesson_data(source)


def test_a_bundle_pack_may_take_check_py_from_the_lone_pack(rendered):
    """A course bundle's pack takes check.py from the lesson's own pack (render_pack's `alone`): the
    checker's data must not depend on the bundle. Rendered both ways, every file is the same."""
    from generator.render.render import LessonContext, jinja_env, render_pack
    from generator.files.resources import TEMPLATES

    content, groups = rendered
    env = jinja_env(TEMPLATES)
    for (lesson_id, locale), editions in groups.items():
        for edition, (_, alone) in editions.items():
            ctx = LessonContext(content, content.lessons[lesson_id], locale, edition, bundle=True)
            taken, fresh = render_pack(ctx, env, alone=alone), render_pack(ctx, env)
            assert taken.files == fresh.files and taken.files["check.py"] == alone.files["check.py"]


def test_a_notebook_is_validated_once_per_shape_and_an_invalid_one_still_fails():
    """notebook.validate_notebook skips a notebook whose shape (sources emptied) was valid: only the
    sources may differ; a cell of another kind, a bad id or a source that is not text is checked."""
    import pytest
    from generator.content.markdown import Cell
    from generator.files.memo import current
    from generator.render.notebook import validate_notebook, build_notebook

    cells = [Cell("markdown", "# Title"), Cell("code", "x = 1", "exercise")]
    build_notebook(cells, "en", "T")
    shapes = current().sizes()["notebook.valid"]
    build_notebook(
        [Cell("markdown", "# Other words"), Cell("code", "y = 2", "exercise")], "en", "T"
    )
    assert current().sizes()["notebook.valid"] == shapes  # the same shape: not validated again
    good = json.loads(build_notebook(cells, "en", "T"))
    for cell in good["cells"]:
        cell["source"] = "".join(cell["source"])
    for broken in ({"cell_type": "raw?"}, {"id": "not an id!"}, {"source": 5}):
        notebook = json.loads(json.dumps(good))
        notebook["cells"][0].update(broken)
        with pytest.raises(nbformat.ValidationError):
            validate_notebook(notebook)
