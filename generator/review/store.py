"""The gradebook of one grading folder: gradebook.sqlite (the standard library's sqlite3, WAL).

Tables: meta (the rubric, the grading's own grades.csv), students (who, the automatic result, the
extracted answers, the regrade mark), scores and vetoes (one row per student and part or veto,
each with a version number), log (append-only: who changed what, when, from what to what).

Every change is one transaction that is committed before the caller answers; a change made from a
stale version (another grader saved the same part since) is refused with Conflict, never written
over. Each call opens its own connection, so a folder swapped in by a regrade is read at once."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from generator.errors import CoursepackError

FILE = "gradebook.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS students (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL, name TEXT NOT NULL, email TEXT NOT NULL,
    locale TEXT NOT NULL, slug TEXT NOT NULL, auto TEXT NOT NULL, detail TEXT NOT NULL, answers TEXT NOT NULL,
    regraded TEXT);
CREATE TABLE IF NOT EXISTS scores (
    student TEXT NOT NULL, part TEXT NOT NULL, points REAL, comment TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL, grader TEXT NOT NULL, updated REAL NOT NULL, PRIMARY KEY (student, part));
CREATE TABLE IF NOT EXISTS vetoes (
    student TEXT NOT NULL, veto TEXT NOT NULL, active INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL, grader TEXT NOT NULL, updated REAL NOT NULL, PRIMARY KEY (student, veto));
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, who TEXT NOT NULL, what TEXT NOT NULL,
    student TEXT NOT NULL, item TEXT NOT NULL, before TEXT, after TEXT);
"""


class ReviewError(CoursepackError):
    """The review cannot do what was asked (no grading folder, a score out of range ...)."""


class Conflict(ReviewError):
    """Someone saved this part since the version the change was made from."""

    def __init__(self, current: dict):
        super().__init__(
            f"changed by {current.get('grader') or 'someone'} since (now version {current['version']})"
        )
        self.current = current


@dataclass(frozen=True)
class Score:
    points: float | None
    comment: str
    version: int
    grader: str
    updated: float


@dataclass(frozen=True)
class Veto:
    active: bool
    reason: str
    version: int
    grader: str
    updated: float


class Gradebook:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / FILE

    @contextmanager
    def connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One connection; with write, one IMMEDIATE transaction committed on leaving (or rolled back)."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "PRAGMA synchronous=FULL"
            )  # committed is on disk before the page hears "saved"
            if write:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            else:
                yield db
        finally:
            db.close()

    def create(self) -> None:
        with self.connect() as db:
            db.executescript(SCHEMA)

    def exists(self) -> bool:
        return self.path.is_file()

    # --- reading -------------------------------------------------------------------------------

    def meta(self, key: str, default=None):
        with self.connect() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def rubric(self) -> dict:
        rubric = self.meta("rubric")
        if rubric is None:
            raise ReviewError(f"{self.path}: no rubric in the gradebook (grade the class first)")
        return rubric

    def students(self, detail: bool = False) -> list[dict]:
        """Every student in the grading's order: id, name, email, locale, slug, auto, answers,
        regraded; with detail, auto also holds the code, the exercise and the feedback page."""
        with self.connect() as db:
            rows = db.execute(
                f"SELECT {_columns(detail)} FROM students ORDER BY position"
            ).fetchall()
        return [_student(row, detail) for row in rows]

    def student(self, sid: str) -> dict | None:
        with self.connect() as db:
            row = db.execute(
                f"SELECT {_columns(True)} FROM students WHERE id = ?", (sid,)
            ).fetchone()
        return _student(row, True) if row else None

    def roster(self) -> list[tuple[str, str]]:
        """(id, name) of every student, in the grading's order (what a page needs to move about)."""
        with self.connect() as db:
            return db.execute("SELECT id, name FROM students ORDER BY position").fetchall()

    def regraded(self) -> set[str]:
        with self.connect() as db:
            return {r[0] for r in db.execute("SELECT id FROM students WHERE regraded IS NOT NULL")}

    def scores(
        self, part: str | None = None, student: str | None = None
    ) -> dict[tuple[str, str], Score]:
        where, args = _where(("part", part), ("student", student))
        with self.connect() as db:
            rows = db.execute(
                f"SELECT student, part, points, comment, version, grader, updated FROM scores{where}",
                args,
            ).fetchall()
        return {(r[0], r[1]): Score(*r[2:]) for r in rows}

    def vetoes(self, student: str | None = None) -> dict[tuple[str, str], Veto]:
        where, args = _where(("student", student))
        with self.connect() as db:
            rows = db.execute(
                f"SELECT student, veto, active, reason, version, grader, updated FROM vetoes{where}",
                args,
            ).fetchall()
        return {(r[0], r[1]): Veto(bool(r[2]), *r[3:]) for r in rows}

    def log(self) -> list[dict]:
        with self.connect() as db:
            rows = db.execute(
                "SELECT at, who, what, student, item, before, after FROM log ORDER BY id"
            ).fetchall()
        return [
            dict(zip(("at", "who", "what", "student", "item", "before", "after"), r)) for r in rows
        ]

    # --- writing -------------------------------------------------------------------------------

    def set_score(
        self, student: str, part: str, points: float | None, comment: str, version: int, grader: str
    ) -> Score:
        """Save one part's score and comment, made from `version` (0: never saved)."""
        rubric = self.rubric()
        limit = manual_points(rubric).get(part)
        if limit is None:
            raise ReviewError(f"{part}: not a manually graded part of {rubric.get('lesson')}")
        if points is not None and not 0 <= points <= limit:
            raise ReviewError(f"{part}: {points:g} points is outside 0..{limit:g}")
        with self.connect(write=True) as db:
            _known(db, student)
            row = db.execute(
                "SELECT points, comment, version, grader FROM scores WHERE student = ? AND part = ?",
                (student, part),
            ).fetchone()
            current = row[2] if row else 0
            if version != current:
                raise Conflict(
                    {"points": row[0], "comment": row[1], "version": row[2], "grader": row[3]}
                )
            now = time.time()
            db.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?, ?)",
                (student, part, points, comment, current + 1, grader, now),
            )
            before = {"points": row[0], "comment": row[1]} if row else None
            _log(
                db,
                now,
                grader,
                "score",
                student,
                part,
                before,
                {"points": points, "comment": comment},
            )
        return Score(points, comment, current + 1, grader, now)

    def set_veto(
        self, student: str, veto: str, active: bool, reason: str, version: int, grader: str
    ) -> Veto:
        rubric = self.rubric()
        if veto not in {v["id"] for v in rubric.get("vetoes", [])}:
            raise ReviewError(f"{veto}: not a veto of {rubric.get('lesson')}")
        if active and not reason.strip():
            raise ReviewError(f"{veto}: a veto needs a reason")
        with self.connect(write=True) as db:
            _known(db, student)
            row = db.execute(
                "SELECT active, reason, version, grader FROM vetoes WHERE student = ? AND veto = ?",
                (student, veto),
            ).fetchone()
            current = row[2] if row else 0
            if version != current:
                raise Conflict(
                    {"active": bool(row[0]), "reason": row[1], "version": row[2], "grader": row[3]}
                )
            now = time.time()
            db.execute(
                "INSERT OR REPLACE INTO vetoes VALUES (?, ?, ?, ?, ?, ?, ?)",
                (student, veto, int(active), reason, current + 1, grader, now),
            )
            before = {"active": bool(row[0]), "reason": row[1]} if row else None
            _log(
                db, now, grader, "veto", student, veto, before, {"active": active, "reason": reason}
            )
        return Veto(active, reason, current + 1, grader, now)

    def set_scores(
        self, changes: list[tuple[str, str, float | None, str, int]], grader: str
    ) -> int:
        """Several (student, part, points, comment, version) in one transaction: all or none."""
        with self.connect(write=True) as db:
            now = time.time()
            for student, part, points, comment, version in changes:
                row = db.execute(
                    "SELECT points, comment, version, grader FROM scores WHERE student = ? AND part = ?",
                    (student, part),
                ).fetchone()
                current = row[2] if row else 0
                if version != current:
                    raise Conflict(
                        {
                            "student": student,
                            "part": part,
                            "version": current,
                            "grader": row[3] if row else "",
                        }
                    )
                db.execute(
                    "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (student, part, points, comment, current + 1, grader, now),
                )
                before = {"points": row[0], "comment": row[1]} if row else None
                _log(
                    db,
                    now,
                    grader,
                    "sheet",
                    student,
                    part,
                    before,
                    {"points": points, "comment": comment},
                )
        return len(changes)


def manual_points(rubric: dict) -> dict[str, float]:
    return {p["id"]: p["points"] for p in rubric.get("parts", []) if p.get("kind") == "manual"}


def _columns(detail: bool) -> str:
    return "id, name, email, locale, slug, auto, answers, regraded" + (", detail" if detail else "")


def _student(row, detail: bool = False) -> dict:
    auto = json.loads(row[5])
    if detail:
        auto.update(json.loads(row[8]))
    return {
        "id": row[0],
        "name": row[1],
        "email": row[2],
        "locale": row[3],
        "slug": row[4],
        "auto": auto,
        "answers": json.loads(row[6]),
        "regraded": json.loads(row[7]) if row[7] else None,
    }


def _where(*pairs: tuple[str, str | None]) -> tuple[str, list]:
    used = [(name, value) for name, value in pairs if value is not None]
    if not used:
        return "", []
    return " WHERE " + " AND ".join(f"{name} = ?" for name, _ in used), [value for _, value in used]


def _known(db: sqlite3.Connection, student: str) -> None:
    if db.execute("SELECT 1 FROM students WHERE id = ?", (student,)).fetchone() is None:
        raise ReviewError(f"{student}: no such student in this grading")


def _log(
    db: sqlite3.Connection, at: float, who: str, what: str, student: str, item: str, before, after
) -> None:
    db.execute(
        "INSERT INTO log (at, who, what, student, item, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            at,
            who,
            what,
            student,
            item,
            None if before is None else json.dumps(before, ensure_ascii=False),
            json.dumps(after, ensure_ascii=False),
        ),
    )
