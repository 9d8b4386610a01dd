"""`coursepack grade` and the review together, for real: a class of four (three kernel files, a
notebook with an answer) graded in the Triton interpreter in the sandbox (lesson 3 cut to five
cases), its gradebook filled; manual scores and a veto given; a regrade after one student's
hand-in changes keeps them, lists that student in regrade.md and marks them; the page proposes
boundary_removed for the hand-in that deletes its masks; `coursepack review export` writes
Canvas's file with the totals. Skipped, with the reason, where bubblewrap cannot run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from generator.cli import main
from generator.grade.lesson import load_lesson
from generator.review.codeview import removed_guards
from generator.review.store import Gradebook
from tests.conftest import small_lesson_copy

REPO = Path(__file__).resolve().parent.parent
KEEP = ["seed", "tail_257", "random_f16", "empty", "special_f32"]  # as tests/test_grade_e2e.py
ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from generator.checker.shared.sandbox import sandbox_problem

    why = sandbox_problem()
    if why:
        pytest.skip(f"no sandbox here: {why}")
    root = tmp_path_factory.mktemp("review-grade")
    content = small_lesson_copy(root, KEEP)
    return root, content, load_lesson(content, "lesson03_relu")


def notebook(content: Path, fill: str, answers: dict[str, str]) -> str:
    """The English exercise notebook with the blank filled and answers in the answer cells."""
    from generator.content.loader import load_content
    from generator.render.render import LessonContext, jinja_env, render_pack
    from generator.files.resources import TEMPLATES

    course = load_content(content)
    ctx = LessonContext(course, course.lessons["lesson03_relu"], "en", "exercise")
    data = json.loads(render_pack(ctx, jinja_env(TEMPLATES), page=False).files["lesson.ipynb"])
    for cell in data["cells"]:
        if "exercise" in cell["metadata"].get("tags", []):
            cell["source"] = "".join(cell["source"]).replace("______", fill, 1)
        part = (cell["metadata"].get("coursepack") or {}).get("part")
        if part in answers:
            cell["source"] = answers[part]
    return json.dumps(data)


def kernel(lesson, fill: str) -> str:
    return "\n".join(lesson.languages["en"].data["template"]).replace("______", fill, 1) + "\n"


def _grade(root: Path, content: Path, hand_ins: Path) -> Path:
    out = root / "grades"
    assert (
        main(
            [
                "grade",
                str(hand_ins),
                "--lesson",
                "lesson03_relu",
                "--content",
                str(content),
                "--out",
                str(out),
                "--cache",
                str(root / "build"),
                "--runner",
                "interpreter",
                "--timeout",
                "20",
                "-j",
                "2",
            ]
        )
        == 0
    )
    return out


def test_grade_review_regrade_export(course, tmp_path, capsys):
    root, content, lesson = course
    hand_ins = tmp_path / "class"
    right = kernel(lesson, ANSWER)
    no_mask = right.replace(", mask=mask", "").replace("mask=mask, ", "")
    assert no_mask != right
    for sid, code in (("s1", right), ("s2", no_mask), ("s3", kernel(lesson, "xv"))):
        (hand_ins / sid).mkdir(parents=True)
        (hand_ins / sid / "relu.py").write_text(code, encoding="utf-8")
    (hand_ins / "s4").mkdir()
    (hand_ins / "s4" / "lesson.ipynb").write_text(
        notebook(content, ANSWER, {"q1": "The tail: $n$ mod BLOCK."}), encoding="utf-8"
    )
    out = _grade(root, content, hand_ins)
    book = Gradebook(out)
    rubric = book.rubric()
    assert [p["id"] for p in rubric["parts"] if p["kind"] == "manual"] == [
        "explanation",
        "q1",
        "q2",
        "q3",
    ]
    students = {s["id"]: s for s in book.students()}
    assert set(students) == {"s1", "s2", "s3", "s4"}
    q1 = students["s4"]["answers"]["parts"]["q1"]
    assert (q1["status"], q1["text"]) == ("answered", "The tail: $n$ mod BLOCK.")
    s4 = book.student("s4")["auto"]  # a notebook's cell against the exercise without its main block
    assert "if __name__" not in s4["exercise"] and removed_guards(s4) == [] and s4["edits"] == []
    assert students["s1"]["auto"]["points"] == {"normal": 2, "boundary": 1}
    assert students["s2"]["answers"]["parts"]["q1"]["status"] == "absent"  # the kernel file only
    assert removed_guards(book.student("s2")["auto"]) and not removed_guards(
        book.student("s1")["auto"]
    )
    for part in ("explanation", "q1", "q2", "q3"):
        book.set_score("s1", part, 1, "", 0, "ann")
    book.set_veto("s2", "boundary_removed", True, "masks deleted", 0, "ann")

    (hand_ins / "s3" / "relu.py").write_text(
        right, encoding="utf-8"
    )  # s3 fixes the fill: a regrade
    capsys.readouterr()
    out = _grade(root, content, hand_ins)
    assert "regrade: manual scores kept; 1 student(s)" in capsys.readouterr().err
    book = Gradebook(out)
    assert (
        book.scores()[("s1", "q1")].points == 1 and book.vetoes()[("s2", "boundary_removed")].active
    )
    assert book.regraded() == {"s3"}
    report = (out / "regrade.md").read_text(encoding="utf-8")
    assert "| s3 |" in report and "-> pass" in report
    grades = {
        r["student_id"]: r
        for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text("utf-8")))
    }
    assert (grades["s1"]["total"], grades["s1"]["result"]) == ("7", "fail")  # 3 + 4 < 8
    assert grades["s2"]["result"] == "fail" and "masks deleted" in grades["s2"]["vetoes"]
    assert grades["s3"]["result"] == "manual: 0 of 4 parts graded"
    feedback = (out / "feedback" / "s1.md").read_text(encoding="utf-8")
    assert "7 / 10" in feedback

    canvas = tmp_path / "canvas.csv"
    assert (
        main(
            [
                "review",
                "export",
                str(out),
                "--format",
                "canvas",
                "-o",
                str(canvas),
                "--assignment",
                "L3",
            ]
        )
        == 0
    )
    rows = {
        r["SIS User ID"]: r for r in csv.DictReader(io.StringIO(canvas.read_text(encoding="utf-8")))
    }
    assert (rows["s1"]["L3"], rows["s3"]["L3"]) == ("7", "")
