"""Copy detection through `coursepack grade`, for real: a class of notebooks with answers (lesson 3
cut to five cases, the interpreter, the sandbox) in which two students share an answer and one
hands in the English reference answer lightly edited; then a later class compared with it
(--compare-with). Skipped, with the reason, where bubblewrap cannot run."""

from __future__ import annotations

import csv
import io
import json

from generator.cli import main
from generator.content.loader import load_content
from tests.test_review_grade import ANSWER, course, notebook  # noqa: F401 (course is a fixture)

SHARED = (
    "An if needs one truth value for the whole program, but xv > 0 is a block of truth values, one per "
    "lane, so the compiler refuses it; tl.where or tl.maximum decide every lane at once without a branch."
)
OWN = {
    "s1": "Each lane is independent: nothing crosses lanes and nothing branches, so one kernel fits.",
    "s4": "Masks keep the last block from reading past n; the store uses the same mask as the load.",
}


def _grade(root, content, hand_ins, out, *extra):
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
                *extra,
            ]
        )
        == 0
    )
    with open(out / "grades.csv", encoding="utf-8", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(io.StringIO(handle.read()))}


def test_grading_flags_shared_answers_the_reference_and_an_earlier_term(course, tmp_path):  # noqa: F811
    root, content, _ = course
    reference = load_content(content).lessons["lesson03_relu"].texts["en"].questions["q1"].answer
    edited = reference.replace("consecutive", "contiguous").replace("registers", "the registers")
    answers = {
        "s1": {"q1": OWN["s1"], "q2": SHARED},
        "s2": {"q2": SHARED},
        "s3": {"q1": edited},
        "s4": {"q1": OWN["s4"]},
    }
    hand_ins = tmp_path / "class"
    for sid, parts in answers.items():
        (hand_ins / sid).mkdir(parents=True)
        (hand_ins / sid / "lesson.ipynb").write_text(
            notebook(content, ANSWER, parts), encoding="utf-8"
        )
    rows = _grade(root, content, hand_ins, tmp_path / "term1")
    assert rows["s1"]["similar_to"] == "q2: s2 1.00" and rows["s2"]["similar_to"] == "q2: s1 1.00"
    assert rows["s3"]["similar_to"].startswith("q1: reference:en "), rows["s3"]["similar_to"]
    assert rows["s4"]["similar_to"] == ""
    assert rows["s1"]["status"] == "graded" and rows["s1"]["points_automatic"] == "3"
    assert "reference:en" in (tmp_path / "term1" / "similarity.md").read_text(encoding="utf-8")
    record = json.loads((tmp_path / "term1" / "similarity.json").read_text(encoding="utf-8"))
    assert record["documents"]["s2"]["q2"] == SHARED and "code" in record["documents"]["s2"]

    later = tmp_path / "class2"
    (later / "t1").mkdir(parents=True)
    (later / "t1" / "lesson.ipynb").write_text(
        notebook(content, ANSWER, {"q2": SHARED}), encoding="utf-8"
    )
    rows = _grade(
        root, content, later, tmp_path / "term2", "--compare-with", str(tmp_path / "term1")
    )
    cell = rows["t1"]["similar_to"]
    assert (
        f"q2: {tmp_path / 'term1'}:s1 1.00" in cell and f"q2: {tmp_path / 'term1'}:s2 1.00" in cell
    ), cell


def test_a_missing_earlier_term_stops_grading_before_any_code_runs(course, tmp_path, capsys):  # noqa: F811
    root, content, _ = course
    (tmp_path / "class" / "s1").mkdir(parents=True)
    (tmp_path / "class" / "s1" / "relu.py").write_text(
        "raise SystemExit('must not run')\n", encoding="utf-8"
    )
    code = main(
        [
            "grade",
            str(tmp_path / "class"),
            "--lesson",
            "lesson03_relu",
            "--content",
            str(content),
            "--out",
            str(tmp_path / "out"),
            "--cache",
            str(root / "build"),
            "--runner",
            "interpreter",
            "--compare-with",
            str(tmp_path / "nowhere"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "--compare-with" in err and "no readable similarity.json" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
