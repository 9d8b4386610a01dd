"""The review page through Flask's test client: the token, the pages, saving with versions,
what students wrote shown sanitized, grades.csv and the feedback pages rewritten on each save,
the code view and the vetoes it proposes."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest

from generator.review.app import COOKIE, HEADER, Settings, create_app
from generator.review.codeview import code_lines, proposals, removed_guards
from generator.review.sync import sync
from generator.review.texts import languages, words
from tests.review_fixture import EXERCISE, answer_set, make_folder, student

TOKEN = "t0ken-for-tests"
EVIL = (
    '<script>window.pwned=1</script> <img src=x onerror="window.pwned=2"> [link](javascript:alert(1)) '
    '<a href="javascript:alert(1)" onclick="x()">raw</a> $x^2$'
)


@pytest.fixture
def folder(tmp_path):
    answers = {
        "s001": answer_set(EVIL),
        "s002": answer_set(),
        "s003": {
            "source": "relu.py",
            "parts": {
                p: {"status": "absent", "text": "", "where": ""}
                for p in ("explanation", "q1", "q2", "q3")
            },
        },
    }
    no_mask = EXERCISE.replace("    mask = offs < n\n", "").replace(", mask=mask", "")
    students = [
        student(1),
        student(
            2,
            code=no_mask.replace("______", "tl.maximum(x, 0.0)"),
            edits=[6, 7, 9],
            flags=["edits_outside_blank", "claim_differs"],
            claim="pass",
            cases=[
                {
                    "id": "tail",
                    "group": "boundary",
                    "status": "fail",
                    "name": "tail",
                    "reason": "wrote_past_end",
                }
            ],
        ),
        student(3, code=None, status="no submission"),
    ]
    folder = make_folder(tmp_path, students=students, answers=answers)
    sync(folder)
    return folder


@pytest.fixture
def client(folder):
    app = create_app(Settings(folder, TOKEN, "ann"))
    app.testing = True
    c = app.test_client()
    c.set_cookie(COOKIE, TOKEN)
    return c


def test_token_required_and_compared(folder):
    c = create_app(Settings(folder, TOKEN)).test_client()
    assert c.get("/").status_code == 403
    assert c.get("/?token=wrong").status_code == 403
    first = c.get(f"/?token={TOKEN}")
    assert (
        first.status_code == 302 and first.headers["Location"] == "/"
    )  # the token leaves the address bar
    assert (
        "HttpOnly" in first.headers["Set-Cookie"]
        and "SameSite=Strict" in first.headers["Set-Cookie"]
    )
    assert c.get("/").status_code == 200
    # a post needs the header, not only the cookie (another site can make the browser send the cookie)
    assert (
        c.post("/api/score", json={"at": 0, "part": "q1", "points": 1, "version": 0}).status_code
        == 403
    )


def test_pages_render_in_both_languages(client):
    for lang, word in (("en", "Reference answer"), ("zh-CN", "参考答案")):
        page = client.get(f"/part/q1/0?lang={lang}").get_data(as_text=True)
        assert word in page and f'lang="{lang}"' in page
    overview = client.get("/").get_data(as_text=True)
    assert "已批 0 / 3" in overview  # the rubric's source language by default
    assert client.get("/part/normal/0").status_code == 404  # automatic parts are not graded here
    assert client.get("/student/9").status_code == 404


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.bad += [
            (tag, k, v) for k, v in attrs if k.startswith("on") or "javascript:" in (v or "")
        ]


def test_student_content_is_sanitized(client):
    page = client.get("/part/q1/0?lang=en").get_data(as_text=True)
    answer = page.split('class="answer"', 1)[1].split("</div>", 1)[0]
    found = _Tags()
    found.feed(answer)
    assert "script" not in found.tags and "img" not in found.tags and found.bad == []
    assert "&lt;script&gt;" in answer and "math" in found.tags
    csp = client.get("/").headers["Content-Security-Policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )


def _post(client, url, **body):
    response = client.post(url, json=body, headers={HEADER: TOKEN})
    response.close()  # as the server does once it has sent the answer: grades.csv and feedback rewritten
    return response


def test_save_conflict_and_outputs_rewritten(client, folder):
    saved = _post(client, "/api/score", at=1, part="q1", points=2, comment="clear", version=0)
    assert saved.status_code == 200 and saved.get_json() == {"ok": True, "version": 1}
    stale = _post(client, "/api/score", at=1, part="q1", points=0, comment="", version=0)
    assert stale.status_code == 409 and stale.get_json()["current"]["points"] == 2
    assert _post(client, "/api/score", at=1, part="q1", points=3, version=1).status_code == 400
    assert _post(client, "/api/score", at=1, part="q1", points="x", version=1).status_code == 400
    grades = {
        r["student_id"]: r
        for r in csv.DictReader(io.StringIO((folder / "grades.csv").read_text("utf-8")))
    }
    assert (
        grades["s002"]["manual_q1"] == "2"
        and grades["s002"]["result"] == "manual: 1 of 4 parts graded"
    )
    feedback = (folder / "feedback" / "s002.md").read_text(encoding="utf-8")  # s002 reads Chinese
    assert "## 教师批改" in feedback and "**问题 1**: 2 / 2" in feedback and "clear" in feedback
    assert feedback.startswith("# Feedback · s002")  # grading's own page, kept above
    assert "教师批改" in (folder / "feedback" / "s002.html").read_text(encoding="utf-8")
    again = client.get("/part/q1/1").get_data(as_text=True)
    assert 'data-version="1"' in again and ">clear</textarea>" in again


def test_veto_saved_and_proposals_shown(client, folder):
    page = client.get("/student/1?lang=en").get_data(as_text=True)
    assert "Proposed: lines with a mask or an assert" in page
    assert "Proposed: the report claims pass, the re-run says fail" in page
    assert (
        _post(
            client, "/api/veto", at=1, veto="boundary_removed", active=True, reason="", version=0
        ).status_code
        == 400
    )
    assert (
        _post(
            client,
            "/api/veto",
            at=1,
            veto="boundary_removed",
            active=True,
            reason="mask gone",
            version=0,
        ).status_code
        == 200
    )
    page = client.get("/student/1?lang=en").get_data(as_text=True)
    assert 'value="mask gone"' in page and 'data-active="1"' in page
    grades = {
        r["student_id"]: r
        for r in csv.DictReader(io.StringIO((folder / "grades.csv").read_text("utf-8")))
    }
    assert grades["s002"]["vetoes"] == "boundary_removed: mask gone"


def test_anonymous_and_seeded_order(folder):
    app = create_app(Settings(folder, TOKEN, anonymous=True, seed=7))
    c = app.test_client()
    c.set_cookie(COOKIE, TOKEN)
    page = c.get("/?lang=en").get_data(as_text=True)
    assert "Student Name" not in page and "s00" not in page and "Student 1" in page
    for path in ("/student/0", "/student/1", "/part/q1/0"):  # nor in a file's path
        assert "s00" not in c.get(path + "?lang=en").get_data(as_text=True)
    again = create_app(Settings(folder, TOKEN, seed=7)).test_client()
    again.set_cookie(COOKIE, TOKEN)
    names = lambda html: re.findall(r"Student Name(\d)", html)  # noqa: E731
    order = names(again.get("/?lang=en").get_data(as_text=True))
    assert sorted(order) == ["1", "2", "3"]
    assert order == names(
        again.get("/?lang=en").get_data(as_text=True)
    )  # the same seed, the same order


def test_code_view_marks_fill_edits_and_removed_lines():
    no_mask = EXERCISE.replace("    mask = offs < n\n", "").replace(", mask=mask", "")
    auto = student(2, code=no_mask.replace("______", "tl.maximum(x, 0.0)"), edits=[6, 7, 9])
    lines = code_lines(auto)
    kinds = {(line.kind, line.text.strip()) for line in lines}
    assert ("removed", "mask = offs < n") in kinds and ("fill", "y = tl.maximum(x, 0.0)") in kinds
    assert ("edit", "x = tl.load(x_ptr + offs)") in kinds
    assert not any(
        line.kind == "removed" and "______" in line.text for line in lines
    )  # the blank is the fill
    assert removed_guards(auto) == [
        "mask = offs < n",
        "x = tl.load(x_ptr + offs, mask=mask)",
        "tl.store(y_ptr + offs, y, mask=mask)",
    ]
    assert (
        proposals({"vetoes": [{"id": "lucky_result"}]}, auto, words("en")) == {}
    )  # not declared: not proposed
    blank_line = "    tl.store(y_ptr + offs, ______, mask=mask)  # TODO: fill the blank"
    exercise = EXERCISE.replace(
        "    y = ______\n    tl.store(y_ptr + offs, y, mask=mask)", blank_line
    )
    filled = exercise.replace(
        "______, mask=mask)  # TODO: fill the blank", "tl.maximum(x, 0.0), mask=mask)"
    )
    assert (
        removed_guards(student(1, code=filled, exercise=exercise)) == []
    )  # the fill is no removal
    dropped = filled.replace("tl.maximum(x, 0.0), mask=mask)", "tl.maximum(x, 0.0))")
    assert removed_guards(student(1, code=dropped, exercise=exercise)) == [blank_line.strip()]
    assert code_lines(student(1, code=None)) == []


def test_every_language_has_every_word():
    keys = [set(words(lang)) for lang in languages()]
    assert set(languages()) >= {"en", "zh-CN"} and all(k == keys[0] for k in keys)


def test_a_restarted_server_brings_grades_csv_and_feedback_up_to_date(folder):
    import time
    from generator.review.store import Gradebook

    Gradebook(folder).set_score("s001", "q1", 2, "saved, then the server was killed", 0, "ann")
    create_app(Settings(folder, TOKEN, refresh=True))
    deadline = time.monotonic() + 20
    while "saved, then the server was killed" not in (folder / "feedback" / "s001.md").read_text(
        encoding="utf-8"
    ):
        assert time.monotonic() < deadline, "feedback not rewritten"
        time.sleep(0.05)
    grades = {
        r["student_id"]: r
        for r in csv.DictReader(io.StringIO((folder / "grades.csv").read_text("utf-8")))
    }
    assert grades["s001"]["manual_q1"] == "2"


def test_a_regraded_student_is_marked(folder, tmp_path):
    from generator.review.sync import carry_over

    students = [
        student(1),
        student(2, points={"normal": 0, "boundary": 0}, status="timed out"),
        student(3, code=None, status="no submission"),
    ]
    fresh = make_folder(tmp_path / "again", students=students)
    carry_over(folder, fresh)
    assert [c["student"] for c in sync(fresh)] == ["s002"]
    c = create_app(Settings(fresh, TOKEN)).test_client()
    c.set_cookie(COOKIE, TOKEN)
    overview = c.get("/?lang=en").get_data(as_text=True)
    assert overview.count('class="tag regraded"') == 1
    page = c.get("/part/q1/1?lang=en").get_data(as_text=True)
    assert "Automatic result changed at the last regrade: 3 (graded) → 0 (timed out)" in page


def test_similar_answers_are_shown_beside_the_answer_and_hidden_when_anonymous(folder):
    import json

    matches = [
        {
            "part": "q1",
            "student": "s001",
            "kind": "student",
            "other": "s002",
            "score": 0.92,
            "shared": 9,
        },
        {
            "part": "q1",
            "student": "s002",
            "kind": "reference",
            "other": "reference:en",
            "score": 0.81,
            "shared": 7,
        },
    ]
    (folder / "similarity.json").write_text(
        json.dumps({"documents": {}, "matches": matches}), encoding="utf-8"
    )
    for anonymous, expected in ((False, "s001 92%"), (True, "another student 92%")):
        c = create_app(Settings(folder, TOKEN, anonymous=anonymous)).test_client()
        c.set_cookie(COOKIE, TOKEN)
        at = next(
            i
            for i in range(3)
            if "reference answer (en) 81%" in c.get(f"/part/q1/{i}?lang=en").get_data(as_text=True)
        )
        page = c.get(f"/part/q1/{at}?lang=en").get_data(as_text=True)
        assert "Similar (similarity.md): " in page and expected in page, page
        assert "相似（见 similarity.md）" in c.get(f"/part/q1/{at}?lang=zh-CN").get_data(
            as_text=True
        )
        assert "Similar" not in c.get(f"/part/q2/{at}?lang=en").get_data(as_text=True)


def test_a_save_with_a_bad_body_is_refused_never_a_server_error(client):
    for body in (
        [1, 2],
        {"at": -1, "part": "q1", "points": 1, "version": 0},
        {"at": 0, "part": "q1", "points": 1, "version": 1e400},
        {"at": "0", "part": "q1", "points": 1},
        {"at": 0, "part": "q1", "points": 1, "version": -1},
    ):
        response = client.post("/api/score", json=body, headers={HEADER: TOKEN})
        assert response.status_code == 400, (body, response.status_code)
    response = client.post(
        "/api/score", data="1e400", content_type="application/json", headers={HEADER: TOKEN}
    )
    assert response.status_code == 400
