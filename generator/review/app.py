"""The review page: a Flask application over one grading folder's gradebook.

Every request needs the server's token (in the URL once, as Jupyter does: then a cookie for this
address only), compared in constant time; posts also carry it in a header, so another site cannot
post through the grader's browser. Pages are rendered on the server from the gradebook; the one
script (static/review.js, the only script the Content-Security-Policy allows) saves a score or a
veto and moves on with the keyboard. A save is committed before the answer says "saved"; one made
from a stale version answers 409 with what is there now. grades.csv and the student's feedback
page are rewritten right after the answer is sent."""

from __future__ import annotations

import hmac
import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path

from jinja2 import StrictUndefined
from markupsafe import Markup

from flask import Flask, abort, jsonify, make_response, redirect, render_template, request

from generator.review.codeview import code_lines, proposals
from generator.review.exports import number_text, write_grades_csv
from generator.review.feedback import write_all_feedback, write_student_feedback
from generator.review.render import markdown_html
from generator.review.store import Conflict, Gradebook, ReviewError, manual_points
from generator.review.texts import languages, localized, progress, words
from generator.review.totals import result_text, standing, standings

COOKIE = "coursepack_review"
HEADER = "X-Review-Token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@dataclass
class Settings:
    folder: Path
    token: str
    grader: str = "grader"
    locale: str | None = None  # the page's language (default: the rubric's source language)
    anonymous: bool = False  # names and ids hidden; students numbered in the page's order
    seed: int | None = None  # a shuffled order, the same for every grader with the same seed
    refresh: bool = (
        False  # rewrite grades.csv and every feedback page from the gradebook at the start
    )


def create_app(settings: Settings) -> Flask:
    here = Path(__file__).parent
    app = Flask(
        __name__, template_folder=str(here / "templates"), static_folder=str(here / "static")
    )
    app.jinja_options = {
        "autoescape": True,
        "undefined": StrictUndefined,
    }  # .j2 is not among Flask's escaped
    book = Gradebook(settings.folder)
    if not book.exists():
        raise ReviewError(
            f"{settings.folder}: no {book.path.name} (grade the class first: coursepack grade)"
        )
    view = View(book, settings)
    if settings.refresh:  # a server killed between a save and its rewrite left them behind
        threading.Thread(target=view.rewrite_all, daemon=True).start()

    @app.before_request
    def _token():
        given = request.args.get("token") or request.cookies.get(COOKIE) or ""
        if request.method == "POST":
            given = request.headers.get(HEADER, "")
        if not hmac.compare_digest(given.encode(), settings.token.encode()):
            abort(403)
        if request.args.get("token"):  # once in the URL, then the cookie: the address bar loses it
            response = redirect(request.path + _query(request.args, drop="token"))
            response.set_cookie(COOKIE, settings.token, httponly=True, samesite="Strict", path="/")
            return response
        return None

    @app.after_request
    def _headers(response):
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.get("/")
    def overview():
        return view.page("overview.html.j2", **view.overview())

    @app.get("/part/<part>/<int:at>")
    def by_question(part: str, at: int):
        return view.page("question.html.j2", **view.question(part, at))

    @app.get("/student/<int:at>")
    def by_student(at: int):
        return view.page("student.html.j2", **view.student_page(at))

    @app.post("/api/score")
    def score():
        data = _body()
        return view.save(
            lambda: book.set_score(
                view.sid(data.get("at")),
                str(data.get("part", "")),
                _points(data.get("points")),
                str(data.get("comment", "")),
                _version(data),
                settings.grader,
            ),
            data,
        )

    @app.post("/api/veto")
    def veto():
        data = _body()
        return view.save(
            lambda: book.set_veto(
                view.sid(data.get("at")),
                str(data.get("veto", "")),
                bool(data.get("active")),
                str(data.get("reason", "")),
                _version(data),
                settings.grader,
            ),
            data,
        )

    return app


def _body() -> dict:
    """A save's JSON object; anything else is a 400, never a server error."""
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        abort(400)
    return data


def _version(data: dict) -> int:
    value = data.get("version", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReviewError(f"version {value!r}: expected a whole number of 0 or more")
    return value


def _unscored(score) -> bool:
    return score is None or score.points is None


def _points(value) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ReviewError(f"{value!r} is not a number") from None


def _query(args, drop: str) -> str:
    from urllib.parse import urlencode

    kept = [(k, v) for k, v in args.items(multi=True) if k != drop]
    return "?" + urlencode(kept) if kept else ""


class View:
    """What each page shows, from the gradebook."""

    def __init__(self, book: Gradebook, settings: Settings):
        self.book, self.settings = book, settings
        self.writing = threading.Lock()
        self._similarity: tuple = (None, [])  # (similarity.json's mtime, its matches)

    # --- shared ------------------------------------------------------------------------------

    def context(self) -> dict:
        rubric = self.book.rubric()
        locale = (
            request.args.get("lang") or self.settings.locale or rubric.get("source_locale", "en")
        )
        if locale not in languages():
            locale = "en"
        return {
            "rubric": rubric,
            "locale": locale,
            "w": words(locale),
            "languages": languages(),
            "source": rubric.get("source_locale", locale),
            "lesson": rubric.get("lesson", ""),
        }

    def page(self, template: str, **values):
        ctx = self.context()
        ctx.update(values)
        ctx["t"] = lambda value: localized(value, ctx["locale"], ctx["source"])
        ctx["num"] = number_text
        ctx["progress"] = progress
        ctx["md"] = lambda text: Markup(markdown_html(text or ""))  # sanitized (render.py)
        ctx["config_token"] = self.settings.token
        ctx["anonymous"] = self.settings.anonymous  # file paths name the student: not shown then
        ctx["lang_query"] = "?lang=" + ctx["locale"] if request.args.get("lang") else ""
        return render_template(template, **ctx)

    def order(self) -> list[tuple[str, str]]:
        """(id, name) in the page's order: the grading's, or shuffled by the seed."""
        roster = self.book.roster()
        if self.settings.seed is not None:
            random.Random(self.settings.seed).shuffle(roster)
        return roster

    def sid(self, at) -> str:
        order = self.order()
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < len(order):
            raise ReviewError(f"no student at {at!r}")  # never a negative index: the last student
        return order[at][0]

    def who(self, at: int, sid: str, name: str) -> str:
        if self.settings.anonymous:
            return words(self.context()["locale"])["anonymous"].format(n=at + 1)
        return f"{name} ({sid})" if name else sid

    def part(self, rubric: dict, part: str) -> dict:
        found = next(
            (p for p in rubric["parts"] if p["id"] == part and p.get("kind") == "manual"), None
        )
        if found is None:
            abort(404)
        return found

    def answer(self, student: dict, part: str) -> dict:
        given = (student["answers"].get("parts") or {}).get(part) or {
            "status": "absent",
            "text": "",
        }
        text = given.get("text") or ""
        html = markdown_html(text) if given.get("status") == "answered" and text.strip() else ""
        return {**given, "html": html, "similar": self.similar(student["id"], part)}

    def similar(self, sid: str, part: str) -> list[dict]:
        """The copy detection's matches of this answer (grading's similarity.json), labelled for the
        page; another student is named only when the page is not anonymous."""
        w = words(self.context()["locale"])
        found = []
        for m in self.similarity():
            if m.get("part") != part or sid not in (m.get("student"), m.get("other")):
                continue
            kind, other = m.get("kind"), m["other"] if m.get("student") == sid else m.get("student")
            if kind in ("reference", "question"):
                label = w[f"similar_{kind}"].format(locale=str(other).partition(":")[2])
            elif kind == "student" and not self.settings.anonymous:
                label = str(other)
            else:
                label = w["similar_earlier" if kind == "earlier" else "similar_student"]
            found.append({"label": label, "score": f"{float(m.get('score', 0)):.0%}"})
        return found

    def similarity(self) -> list[dict]:
        """similarity.json's matches, read again only when the file changed (a regrade)."""
        path = Path(self.settings.folder) / "similarity.json"
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return []
        if self._similarity[0] != stamp:
            try:
                matches = json.loads(path.read_text(encoding="utf-8")).get("matches") or []
            except (OSError, ValueError, AttributeError):
                matches = []
            self._similarity = (stamp, [m for m in matches if isinstance(m, dict)])
        return self._similarity[1]

    # --- pages -------------------------------------------------------------------------------

    def overview(self) -> dict:
        rubric = self.book.rubric()
        order = self.order()
        scores = self.book.scores()
        graded = {
            p: sum(1 for (_, part), s in scores.items() if part == p and s.points is not None)
            for p in manual_points(rubric)
        }
        vetoes = self.book.vetoes()
        vetoed = {sid for (sid, _), v in vetoes.items() if v.active}
        regraded = self.book.regraded()
        results = {s.student["id"]: s.result for s in standings(self.book)}
        students = [
            {
                "at": i,
                "who": self.who(i, sid, name),
                "vetoed": sid in vetoed,
                "regraded": sid in regraded,
                "graded": sum(
                    1 for p in graded if (sid, p) in scores and scores[sid, p].points is not None
                ),
                "result": results[sid],
            }
            for i, (sid, name) in enumerate(order)
        ]
        return {
            "graded": graded,
            "count": len(order),
            "students": students,
            "parts_manual": list(graded),
            "regraded_count": len(regraded),
        }

    def question(self, part: str, at: int) -> dict:
        rubric = self.book.rubric()
        info = self.part(rubric, part)
        order = self.order()
        if not 0 <= at < len(order):
            abort(404)
        sid, name = order[at]
        student = self.book.student(sid)
        scores = self.book.scores(part=part)
        score = scores.get((sid, part))
        done = sum(1 for s in scores.values() if s.points is not None)
        ungraded = next(
            (i for i in range(at + 1, len(order)) if _unscored(scores.get((order[i][0], part)))),
            None,
        )
        return {
            "ungraded": ungraded,
            "part": info,
            "at": at,
            "count": len(order),
            "who": self.who(at, sid, name),
            "answer": self.answer(student, part),
            "score": score,
            "done": done,
            "regraded": student["regraded"],
            "prev": at - 1 if at > 0 else None,
            "next": at + 1 if at + 1 < len(order) else None,
        }

    def student_page(self, at: int) -> dict:
        rubric = self.book.rubric()
        order = self.order()
        if not 0 <= at < len(order):
            abort(404)
        sid, name = order[at]
        student = self.book.student(sid)
        scores, vetoes = self.book.scores(student=sid), self.book.vetoes(student=sid)
        ctx = self.context()
        parts = [
            {
                "part": p,
                "answer": self.answer(student, p["id"]),
                "score": scores.get((sid, p["id"])),
            }
            for p in rubric["parts"]
            if p.get("kind") == "manual"
        ]
        s = standing(rubric, student, scores, vetoes)
        return {
            "at": at,
            "count": len(order),
            "who": self.who(at, sid, name),
            "student": student,
            "parts": parts,
            "lines": code_lines(student["auto"]),
            "vetoes": vetoes,
            "sid": sid,
            "proposed": proposals(rubric, student["auto"], ctx["w"]),
            "result": s.result,
            "result_text": result_text(s.result),
            "prev": at - 1 if at > 0 else None,
            "next": at + 1 if at + 1 < len(order) else None,
        }

    # --- saving ------------------------------------------------------------------------------

    def save(self, change, data: dict):
        try:
            saved = change()
        except Conflict as exc:
            current = exc.current
            return make_response(
                jsonify({"conflict": True, "current": current, "message": str(exc)}), 409
            )
        except (ReviewError, ValueError, TypeError) as exc:
            return make_response(jsonify({"error": str(exc)}), 400)
        sid = self.sid(data.get("at"))
        response = jsonify({"ok": True, "version": saved.version})
        response.call_on_close(
            lambda: self.rewrite(sid)
        )  # once the answer is sent: the save is committed
        return response

    def rewrite_all(self) -> None:
        with self.writing:
            write_grades_csv(self.book.folder)
            write_all_feedback(self.book.folder)

    def rewrite(self, sid: str) -> None:
        """grades.csv and the student's feedback page, one save at a time (they share files)."""
        with self.writing:
            write_grades_csv(self.book.folder)
            write_student_feedback(self.book, sid)
