"""The review's gradebook: versions, conflicts, two graders at once, the log, a process killed in
the middle of a write, the regrade's carry-over and report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from generator.review.store import Conflict, Gradebook, ReviewError
from generator.review.sync import carry_over, sync, write_regrade
from tests.review_fixture import make_folder, student

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def book(tmp_path) -> Gradebook:
    folder = make_folder(tmp_path)
    assert sync(folder) == []  # the first sync: nothing to compare with
    return Gradebook(folder)


def test_sync_fills_students_answers_and_wal(book):
    students = book.students()
    assert [s["id"] for s in students] == ["s001", "s002", "s003"]
    assert students[0]["answers"]["parts"]["q1"]["status"] == "answered"
    assert "code" not in students[0]["auto"] and "code" in book.student("s001")["auto"]
    with book.connect() as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_score_versions_and_stale_conflict(book):
    first = book.set_score("s001", "q1", 2, "good", 0, "ann")
    assert first.version == 1
    with pytest.raises(Conflict) as stale:  # bob opened the page before ann saved
        book.set_score("s001", "q1", 1, "meh", 0, "bob")
    assert stale.value.current == {"points": 2, "comment": "good", "version": 1, "grader": "ann"}
    assert book.scores()[("s001", "q1")].points == 2
    assert book.set_score("s001", "q1", 1.5, "ok", 1, "bob").version == 2


def test_two_graders_different_parts_both_kept(book):
    book.set_score("s001", "q1", 2, "", 0, "ann")
    book.set_score("s001", "q2", 1, "", 0, "bob")  # a different part: its own version
    scores = book.scores(student="s001")
    assert (scores[("s001", "q1")].points, scores[("s001", "q2")].points) == (2, 1)


def test_refuses_out_of_range_unknown_part_student_and_auto_part(book):
    for args, what in (
        (("s001", "q1", 2.5), "outside 0..2"),
        (("s001", "q1", -1), "outside"),
        (("s001", "q9", 1), "not a manually graded part"),
        (("s001", "normal", 1), "not a manually graded part"),
        (("nobody", "q1", 1), "no such student"),
    ):
        with pytest.raises(ReviewError, match=what):
            book.set_score(*args, "", 0, "ann")
    assert book.scores() == {} and book.log() == []


def test_vetoes_need_a_reason_and_are_versioned(book):
    with pytest.raises(ReviewError, match="needs a reason"):
        book.set_veto("s002", "boundary_removed", True, " ", 0, "ann")
    with pytest.raises(ReviewError, match="not a veto"):
        book.set_veto("s002", "made_up", True, "x", 0, "ann")
    assert book.set_veto("s002", "boundary_removed", True, "mask= deleted", 0, "ann").version == 1
    with pytest.raises(Conflict):
        book.set_veto("s002", "boundary_removed", False, "", 0, "bob")
    veto = book.vetoes()[("s002", "boundary_removed")]
    assert veto.active and veto.reason == "mask= deleted"


def test_log_is_append_only_who_what_when(book):
    book.set_score("s001", "q1", 2, "a", 0, "ann")
    book.set_score("s001", "q1", 1, "b", 1, "bob")
    log = book.log()
    assert [(e["who"], e["what"], e["item"]) for e in log] == [
        ("ann", "score", "q1"),
        ("bob", "score", "q1"),
    ]
    assert json.loads(log[1]["before"]) == {"points": 2, "comment": "a"}
    assert log[0]["at"] <= log[1]["at"]


WRITER = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {repo!r})
    from generator.review.store import Gradebook
    book = Gradebook({folder!r})
    book.set_score("s001", "q1", 2, "saved before the kill", 0, "ann")
    print("saved", flush=True)
    with book.connect(write=True) as db:   # a second change, killed before its commit
        db.execute("UPDATE scores SET points = 0, comment = 'half' WHERE part = 'q1'")
        db.execute("INSERT INTO log (at, who, what, student, item) VALUES (0, 'x', 'x', 'x', 'x')")
        print("writing", flush=True)
        time.sleep(60)
""")


def test_a_killed_process_loses_nothing_it_said_was_saved(book):
    script = WRITER.format(repo=str(REPO), folder=str(book.folder))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "saved"
        assert child.stdout.readline().strip() == "writing"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    score = book.scores()[("s001", "q1")]
    assert (score.points, score.comment, score.version) == (2, "saved before the kill", 1)
    assert [e["who"] for e in book.log()] == ["ann"]
    assert book.set_score("s001", "q2", 1, "", 0, "bob").version == 1  # not left locked


def test_regrade_keeps_manual_scores_and_lists_changed_results(tmp_path, book):
    book.set_score("s002", "q1", 2, "kept", 0, "ann")
    book.set_veto("s002", "lucky_result", True, "wrong reasoning", 0, "ann")
    new = tmp_path / "new"
    students = [
        student(1),
        student(
            2,
            points={"normal": 1, "boundary": 0},
            cases=[
                {
                    "id": "seed",
                    "group": "normal",
                    "status": "fail",
                    "name": "seed",
                    "reason": "nan",
                },
                {"id": "tail", "group": "boundary", "status": "pass", "name": "tail", "reason": ""},
            ],
        ),
        student(3),
    ]
    fresh = make_folder(new, students=students)
    assert carry_over(book.folder, fresh)
    changed = sync(fresh)
    assert [c["student"] for c in changed] == ["s002"]
    assert changed[0]["before"] == "3 (graded)" and changed[0]["after"] == "1 (graded)"
    assert changed[0]["cases"] == ["seed: pass -> fail"]
    again = Gradebook(fresh)
    assert again.scores()[("s002", "q1")].comment == "kept"
    assert again.vetoes()[("s002", "lucky_result")].active
    assert again.regraded() == {"s002"}
    write_regrade(fresh, "lesson03_relu", changed)
    report = (fresh / "regrade.md").read_text(encoding="utf-8")
    assert "| s002 | 3 (graded) | 1 (graded) | seed: pass -> fail |" in report


def test_many_graders_at_once_lose_nothing(book):
    import threading

    errors = []

    def grade(part: str, grader: str) -> None:
        try:
            for sid in ("s001", "s002", "s003"):
                book.set_score(sid, part, 1, grader, 0, grader)
        except Exception as exc:  # noqa: BLE001 - any failure is the test's
            errors.append(exc)

    threads = [
        threading.Thread(target=grade, args=(part, f"g{i}"))
        for i, part in enumerate(("q1", "q2", "q3", "explanation"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(book.scores()) == 12 and len(book.log()) == 12
