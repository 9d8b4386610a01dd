"""Where students write their answers, and how grading reads them: one answer cell per manual part
in lesson.ipynb (identified in its metadata), one marked section per part in the report check.py
writes, the reference answers in the answer edition only; extraction by id, by heading in either
language, from reports, notebooks and zips; untouched, empty and absent places."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator.grade.answers import answered_cell, answers_of, labels, read_document
from generator.grade.collect import collect, submission_of
from generator.grade.lesson import load_lesson
from generator.content.loader import load_content
from generator.render.notebook import PART_KEY
from generator.render.render import LessonContext, jinja_env, render_pack
from generator.files.resources import TEMPLATES
from tests.conftest import REPO

PARTS = [
    "explanation",
    "failures",
    "q1",
    "q2",
    "q3",
]  # lesson 3's answer places, in the pack's order
MANUAL = ["explanation", "q1", "q2", "q3"]  # its manual parts (no failures part declared)


@pytest.fixture(scope="module")
def content():
    return load_content(REPO / "content")


@pytest.fixture(scope="module")
def lesson():
    return load_lesson(REPO / "content", "lesson03_relu")


@pytest.fixture(scope="module")
def known(lesson):
    return labels(lesson)


@pytest.fixture(scope="module")
def notebooks(content) -> dict[tuple[str, str], dict]:
    """lesson 3's lesson.ipynb by (locale, edition)."""
    env = jinja_env(TEMPLATES)
    found = {}
    for locale in ("zh-CN", "en"):
        for edition in ("exercise", "answer"):
            ctx = LessonContext(content, content.lessons["lesson03_relu"], locale, edition)
            found[locale, edition] = json.loads(
                render_pack(ctx, env, page=False).files["lesson.ipynb"]
            )
    return found


def part_of(cell: dict) -> str | None:
    return (cell["metadata"].get(PART_KEY) or {}).get("part")


def answer_cells(notebook: dict) -> dict[str, int]:
    return {part_of(c): i for i, c in enumerate(notebook["cells"]) if part_of(c)}


def source(cell: dict) -> str:
    return "".join(cell["source"])


def edited(notebook: dict, answers: dict[str, str], keep_ids: bool = True) -> bytes:
    """The notebook with answers written into the answer cells (and, keep_ids=False, every
    coursepack id dropped from the metadata, as a tool that strips metadata would)."""
    copy = json.loads(json.dumps(notebook))
    for cell in copy["cells"]:
        part = part_of(cell)
        if part in answers:
            cell["source"] = answers[part]
        if not keep_ids:
            cell["metadata"].pop(PART_KEY, None)
    return json.dumps(copy, ensure_ascii=False).encode()


# ---- the places in every edition -----------------------------------------------------------------


def test_every_manual_part_has_its_own_cell_under_its_question_identified_in_metadata(
    content, notebooks
):
    text = content.lessons["lesson03_relu"].texts
    for (locale, edition), notebook in notebooks.items():
        cells = notebook["cells"]
        places = answer_cells(notebook)
        assert list(places) == PARTS, (locale, edition)
        for part, index in places.items():
            assert (
                cells[index]["cell_type"] == "markdown" and part not in source(cells[index]).lower()
            )
        for qid in ("q1", "q2", "q3"):
            assert f"### {qid.upper()}" in source(
                cells[places[qid] - 1]
            )  # right under its question
        assert text[locale].rubric.parts["explanation"].title in source(
            cells[places["explanation"] - 1]
        )
        placeholder = content.locales[locale].checker["report_answer_here"]
        if edition == "exercise":
            assert {source(cells[places[p]]) for p in MANUAL} == {placeholder}
        else:
            assert (
                source(cells[places["q1"]]).strip() == text[locale].questions["q1"].answer.strip()
            )
            assert (
                source(cells[places["explanation"]])
                == text[locale].rubric.parts["explanation"].reference
            )


def test_the_exercise_holds_no_reference_answer(content, notebooks):
    text = content.lessons["lesson03_relu"].texts
    for locale in ("zh-CN", "en"):
        exercise = json.dumps(notebooks[locale, "exercise"], ensure_ascii=False)
        for secret in [text[locale].rubric.parts["explanation"].reference] + [
            q.answer.strip().splitlines()[0] for q in text[locale].questions.values()
        ]:
            assert json.dumps(secret, ensure_ascii=False)[1:-1] not in exercise


# ---- notebooks -------------------------------------------------------------------------------------


def test_a_notebook_read_by_its_cell_ids(notebooks, known):
    notebook = notebooks["zh-CN", "exercise"]
    data = edited(
        notebook,
        {"q1": "逐元素：每个 lane 独立。\n\n$\\max(x, 0)$", "q3": "", "explanation": "  \n"},
    )
    found = read_document("alice/lesson.ipynb", data, known)
    assert {p: a.status for p, a in found.items()} == {
        "explanation": "empty",
        "q1": "answered",
        "q2": "untouched",
        "q3": "empty",
    }
    assert found["q1"].text == "逐元素：每个 lane 独立。\n\n$\\max(x, 0)$"
    assert found["q1"].where == f"alice/lesson.ipynb cell {answer_cells(notebook)['q1'] + 1}"


@pytest.mark.parametrize("locale", ["zh-CN", "en"])
def test_a_notebook_without_the_ids_is_read_by_the_questions_headings(notebooks, known, locale):
    notebook = notebooks[locale, "exercise"]
    data = edited(
        notebook,
        {"q1": "my answer to one", "explanation": "I used the NaN-keeping maximum."},
        keep_ids=False,
    )
    found = read_document("lesson.ipynb", data, known)
    assert {p: a.status for p, a in found.items()} == {
        "explanation": "answered",
        "q1": "answered",
        "q2": "untouched",
        "q3": "untouched",
    }
    assert found["q1"].text == "my answer to one"
    assert found["explanation"].text == "I used the NaN-keeping maximum."


def test_the_answer_edition_reads_as_answered(notebooks, known):
    found = read_document("lesson.ipynb", json.dumps(notebooks["en", "answer"]).encode(), known)
    assert {a.status for a in found.values()} == {"answered"}


# ---- reports -----------------------------------------------------------------------------------------


def report(lesson, locale: str, tmp_path: Path) -> str:
    """What `check.py --report` writes (its own writer), for a blank that never ran."""
    module = lesson.languages[locale].module(tmp_path / "checkers")
    ev = SimpleNamespace(
        target=SimpleNamespace(text="def relu(x):\n    pass\n"), env=None, results={}
    )
    path = tmp_path / f"submission.{locale}.md"
    module.write_submission(str(path), ev, ["  fill in the blank"], "blank")
    return path.read_text(encoding="utf-8")


def test_the_report_has_a_marked_section_per_part_in_the_students_language(lesson, tmp_path, known):
    text = report(lesson, "zh-CN", tmp_path)
    for part in PARTS:
        assert text.count(f"<!-- coursepack:part={part} -->") == 1 and f"{{#part-{part}}}" in text
    assert "## 解释你的实现" in text and "### Q1" in text and "> 不要背定义" in text
    found = read_document("submission.md", text.encode(), known)
    assert {a.status for a in found.values()} == {"untouched"} and set(found) == set(MANUAL)


def test_a_report_read_by_marker_then_by_heading_after_edits(lesson, tmp_path, known):
    text = report(lesson, "zh-CN", tmp_path).replace(
        "_你的答案：_", "TODO", 1
    )  # the explanation's placeholder
    lines = text.splitlines()
    q1, q2, q3 = (lines.index(f"<!-- coursepack:part={q} -->") for q in ("q1", "q2", "q3"))
    lines[q1 + 2] = (
        "输入、状态、输出：\n\n```python\n# <!-- coursepack:part=q2 --> is code here\n```"
    )
    lines[q2] = ""  # the marker deleted: found by its heading
    lines[q2 + 2] = "Python 的 if 作用于一个数，不是一块 lane。"
    lines[q3] = (
        "<!--COURSEPACK:part = q3-->  只剩这一句"  # the marker edited, an answer on its line
    )
    lines[q3 + 2] = ""
    found = read_document("bob/submission.md", "\n".join(lines).encode(), known)
    assert {p: a.status for p, a in found.items()} == {
        "explanation": "answered",
        "q1": "answered",
        "q2": "answered",
        "q3": "answered",
    }
    assert found["q1"].text.startswith("输入、状态、输出") and "is code here" in found["q1"].text
    assert (
        found["q2"].text == "Python 的 if 作用于一个数，不是一块 lane。"
    )  # the quoted question left out
    assert found["q3"].text == "只剩这一句" and found["explanation"].text == "TODO"


def test_a_deleted_heading_does_not_take_in_the_next_question(lesson, tmp_path, known):
    text = report(lesson, "zh-CN", tmp_path).replace("### Q1 {#part-q1}\n", "")
    found = read_document("submission.md", text.encode(), known)
    assert found["q1"].status == "untouched" and "Q2" not in found["q1"].text


def test_an_english_report_whose_markers_are_gone(lesson, tmp_path, known):
    text = report(lesson, "en", tmp_path)
    text = "\n".join(line for line in text.splitlines() if "coursepack:part" not in line)
    text = text.replace("### Q2 {#part-q2}", "### q2: why not `if`").replace(
        "_Your answer:_", "Lanes are a vector; `if` wants one bool.", 3
    )
    found = read_document("submission.md", text.encode(), known)
    assert [found[p].status for p in MANUAL] == ["answered", "answered", "answered", "untouched"]
    assert found["q2"].text == "Lanes are a vector; `if` wants one bool."


# ---- what a student handed in ----------------------------------------------------------------------


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_answers_from_a_zip_and_a_kernel_file_alone(lesson, notebooks, known):
    kernel = (
        "\n".join(lesson.languages["en"].data["template"])
        .replace("______", "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", 1)
        .encode()
    )
    notebook = edited(notebooks["en", "exercise"], {"q2": "because lanes"})
    carol = submission_of(
        "carol",
        "folder",
        "",
        {"carol/work.zip": zipped({"hw/lesson.ipynb": notebook, "hw/relu.py": kernel})},
        lesson,
    )
    answers = answers_of(carol.documents, known)
    assert answers.source == "carol/work.zip/hw/lesson.ipynb" and answers.count() == 1
    assert answers.parts["q2"].where == "carol/work.zip/hw/lesson.ipynb cell " + str(
        answer_cells(notebooks["en", "exercise"])["q2"] + 1
    )
    dave = submission_of("dave", "folder", "", {"dave/relu.py": kernel}, lesson)
    alone = answers_of(dave.documents, known).json()
    assert alone == {
        "source": "",
        "parts": {p: {"status": "absent", "text": "", "where": ""} for p in MANUAL},
    }
    assert answered_cell(alone) == "absent" and answered_cell(answers.json()) == "1 of 4"


def test_the_best_place_wins_when_two_files_hold_answers(lesson, notebooks, tmp_path, known):
    notebook = edited(notebooks["zh-CN", "exercise"], {"q1": "笔记本里的答案"})
    text = report(lesson, "zh-CN", tmp_path).replace(
        "_你的答案：_", "报告里的答案", 3
    )  # explanation, q1, q2
    answers = answers_of([("e/lesson.ipynb", notebook), ("e/submission.md", text.encode())], known)
    assert (
        answers.parts["q1"].text == "笔记本里的答案"
        and answers.parts["explanation"].text == "报告里的答案"
    )
    assert answers.source == "e/submission.md"  # it gave two of the answers kept, the notebook one
    assert answers.parts["q3"].status == "untouched"


def test_answers_are_text_never_markup_to_run(notebooks, known):
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)"> [x](javascript:alert(3))'
    found = read_document(
        "lesson.ipynb", edited(notebooks["en", "exercise"], {"q1": hostile}), known
    )
    assert (
        found["q1"].status == "answered" and found["q1"].text == hostile
    )  # kept as written, for escaping


def test_a_class_folder_keeps_each_students_documents(lesson, notebooks, tmp_path, known):
    root = tmp_path / "class"
    (root / "ann").mkdir(parents=True)
    (root / "ann" / "lesson.ipynb").write_bytes(edited(notebooks["en", "exercise"], {"q1": "one"}))
    (root / "ben.ipynb").write_bytes(b"{not json")
    found = {s.student: answers_of(s.documents, known) for s in collect(root, lesson)}
    assert found["ann"].parts["q1"].status == "answered" and found["ben"].count("absent") == 4


def test_grading_writes_rubric_json_and_answers_json_for_every_row(lesson, notebooks, tmp_path):
    from generator.grade import run
    from generator.grade.rows import make_row, people

    root = tmp_path / "class"
    (root / "ann").mkdir(parents=True)
    (root / "ann" / "lesson.ipynb").write_bytes(
        edited(notebooks["en", "exercise"], {"q1": "one", "q3": ""})
    )
    (root / "cy").mkdir()
    (root / "cy" / "relu.py").write_text("\n".join(lesson.languages["en"].data["template"]) + "\n")
    rows = [
        make_row(lesson, student, submission, True, None, "not run here", None, "on")
        for student, submission, _ in people(collect(root, lesson), None)
    ]
    out = tmp_path / "grades"
    run._write_outputs(
        lesson, rows, out, tmp_path / "build", run.GradeOptions(root, lesson.id, out=out), "en"
    )
    rubric = json.loads((out / "rubric.json").read_text(encoding="utf-8"))
    assert [p["id"] for p in rubric["parts"]] == ["normal", "boundary"] + MANUAL and rubric[
        "pass_total"
    ] == 8
    answers = json.loads((out / "answers.json").read_text(encoding="utf-8"))
    assert list(answers) == ["ann", "cy"]
    assert answers["ann"]["source"] == "ann/lesson.ipynb"
    assert {p: a["status"] for p, a in answers["ann"]["parts"].items()} == {
        "explanation": "untouched",
        "q1": "answered",
        "q2": "untouched",
        "q3": "empty",
    }
    assert {a["status"] for a in answers["cy"]["parts"].values()} == {"absent"} and answers["cy"][
        "source"
    ] == ""
    table = (out / "grades.csv").read_text(encoding="utf-8")
    assert ",1 of 4," in table.splitlines()[2] and ",absent," in table.splitlines()[3]


@pytest.mark.cuda
@pytest.mark.parametrize("locale", ["zh-CN", "en"])
def test_a_report_written_on_the_gpu_reads_back_with_every_place(content, known, tmp_path, locale):
    """`python check.py --report` as a student runs it on a GPU, in a fresh process: the report says
    it ran there, and grading finds each part's place in it."""
    import subprocess
    import sys

    ctx = LessonContext(content, content.lessons["lesson03_relu"], locale, "exercise")
    pack = render_pack(ctx, jinja_env(TEMPLATES), page=False)
    for name in ("check.py", "relu.py"):
        (tmp_path / name).write_bytes(pack.files[name])
    kernel = tmp_path / "relu.py"
    kernel.write_text(
        kernel.read_text(encoding="utf-8").replace("______", "tl.maximum(xv, 0.0)", 1),
        encoding="utf-8",
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "check.py", "--report", "submission.md"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, (
        done.stdout + done.stderr
    )  # the default maximum drops NaN: two cases fail
    text = (tmp_path / "submission.md").read_text(encoding="utf-8")
    assert all(
        piece in text
        for piece in re.split(r"\{\w+\}", content.locales[locale].checker["report_gpu"])
    )
    assert (
        text.count(content.locales[locale].checker["report_explain_here"]) >= 1
    )  # the failing cases' places
    found = read_document("submission.md", text.encode(), known)
    assert {p: a.status for p, a in found.items()} == {p: "untouched" for p in MANUAL}


def test_a_declared_failures_part_is_read_with_its_cases(content_copy, tmp_path):
    """A lesson that grades the explanation of the failing cases (place: failures): its place in the
    notebook and in the report, whose section holds a heading per failing case."""
    lesson_yaml = content_copy / "content" / "lessons" / "lesson03_relu" / "lesson.yaml"
    text = lesson_yaml.read_text(encoding="utf-8")
    lesson_yaml.write_text(
        text.replace(
            "    - {id: q1, kind: manual, points: 2}\n",
            "    - {id: cases, kind: manual, points: 1, place: failures}\n"
            "    - {id: q1, kind: manual, points: 2}\n",
            1,
        ).replace("pass_total: 8", "pass_total: 9"),
        encoding="utf-8",
    )
    for locale, title in (("zh-CN", "失败用例的解释"), ("en", "Why the failing cases fail")):
        path = content_copy / "content" / "lessons" / "lesson03_relu" / f"text.{locale}.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text.replace(
                "  parts:\n",
                f"  parts:\n    cases:\n      title: {title}\n      prompt: {title}?\n",
                1,
            ),
            encoding="utf-8",
        )
    lesson = load_lesson(content_copy / "content", "lesson03_relu")
    known = labels(lesson)
    assert [p.id for p in known.parts] == ["explanation", "cases", "q1", "q2", "q3"]
    module = lesson.languages["en"].module(tmp_path / "checkers")
    failing = {"special_f32": {"status": "fail"}, "special_f16": {"status": "fail"}}
    ev = SimpleNamespace(target=SimpleNamespace(text="x\n"), env=None, results=failing)
    module.write_submission(str(tmp_path / "s.md"), ev, [], "fail")
    report = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert (
        "Why the failing cases fail {#part-cases}" in report
        and "<!-- coursepack:part=cases -->" in report
    )
    assert read_document("s.md", report.encode(), known)["cases"].status == "untouched"
    explained = report.replace(
        "_Explain why this case fails and what you changed:_", "NaN became 0.", 1
    )
    found = read_document("s.md", explained.encode(), known)["cases"]
    assert found.status == "answered" and "NaN became 0." in found.text and "### " in found.text
    content = load_content(content_copy / "content")
    ctx = LessonContext(content, content.lessons["lesson03_relu"], "en", "exercise")
    notebook = json.loads(
        render_pack(ctx, jinja_env(content_copy / "templates"), page=False).files["lesson.ipynb"]
    )
    assert list(answer_cells(notebook)) == ["explanation", "cases", "q1", "q2", "q3"]
