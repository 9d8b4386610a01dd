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


def test_a_bundle_folder_is_the_pack_with_its_navigation_linked(rendered):
    """A course bundle's folder is the lesson's one rendering finished for the bundle: every file
    the same as in its own zip except where the navigation section is (lesson.md, the notebook,
    the page) and the manifest that lists them; there the other lessons' zips become links to
    their folders."""
    import dataclasses

    from generator.render.render import finalize_pack, jinja_env
    from generator.files.resources import TEMPLATES

    content, groups = rendered
    env = jinja_env(TEMPLATES)
    for editions in groups.values():
        for ctx, pack in editions.values():
            own = finalize_pack(ctx, env, pack, None)
            folder = finalize_pack(dataclasses.replace(ctx, bundle=True), env, pack, None)
            assert set(own.files) == set(folder.files)
            differ = {n for n in own.files if own.files[n] != folder.files[n]}
            assert differ == {"lesson.md", "lesson.ipynb", "lesson.html", "manifest.json"}
            mine, theirs = (p.files["lesson.md"].decode() for p in (own, folder))
            head = mine[: mine.rindex("\n## ")]
            assert theirs.startswith(head) and "](../lesson" in theirs[len(head) :]
            assert "](../lesson" not in mine and ".zip" in mine[len(head) :]


def test_a_navigation_template_without_a_section_of_its_own_is_refused(content_copy):
    """The bundle folder swaps the navigation section whole: a navigation.md.j2 that does not start
    a section (its text would join the references' notebook cell) is a clear error."""
    import dataclasses

    from generator.content.loader import load_content
    from generator.render.render import LessonContext, RenderError, finalize_pack, jinja_env
    from generator.render.render import render_pack

    templates = content_copy / "templates"
    nav = templates / "pack" / "navigation.md.j2"
    nav.write_text(nav.read_text(encoding="utf-8").replace("## ", "", 1), encoding="utf-8")
    content, env = load_content(content_copy / "content"), jinja_env(templates)
    ctx = LessonContext(content, content.lessons["lesson03_relu"], "en", "exercise")
    pack = render_pack(ctx, env, page=False)
    assert finalize_pack(ctx, env, pack, None).files["lesson.md"]
    with pytest.raises(RenderError, match="navigation.md.j2 must render a section of its own"):
        finalize_pack(dataclasses.replace(ctx, bundle=True), env, pack, None)


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
