"""One row per student: who, in which language, the checker's result for their code, and what
grading makes of it (a status, points per rubric group, flags and notes). Pure: data in, rows out.

Status, the first that applies:
  no submission       a roster student nothing was found for
  unreadable          nothing gradable was found, or several different versions (the reason says)
  crashed             the process running the code died, the checker broke, or its task gave no result
  sandbox violation   the code tried what a kernel has no business doing (network, files, processes,
                      signals, ...) or sent the checker data it refuses
  timed out           importing the code, or a case, ran past its time limit
  graded              everything else, pass or fail
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.grade.collect import Reason, Submission
from generator.grade.lesson import GradeLesson
from generator.grade.roster import Student, match

CONTAINER = "container"  # graded without our sandbox in a container that refuses it (gradescope.py)
STATUSES = ("graded", "no submission", "unreadable", "crashed", "timed out", "sandbox violation")
FLAGS = (
    "withheld",
    "edits_outside_blank",
    "unreviewed",
    "fill_not_triton",
    "no_triton",
    "torch_computes",
    "claim_differs",
    "sandbox_events",
    "patched",
    "inputs_modified",
    "protocol",
    "blank",
    "late",
    "other_code",
    "not_in_roster",
    "sandbox_off",
    "cases_not_run",
)


@dataclass
class Row:
    student: str
    name: str = ""
    email: str = ""
    locale: str = ""
    submission: Submission | None = None
    data: dict | None = None  # check.py's --json result for the graded code
    status: str = "graded"
    reason: Reason | None = None  # why there is no result (unreadable, no submission, crashed)
    flags: list[str] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)  # shown beyond check.py's own lines
    points: dict = field(default_factory=lambda: {"normal": 0, "boundary": 0})
    slug: str = ""  # the student's id as a file name: feedback/<slug>.md
    answers: dict | None = (
        None  # the manual parts' answers, as answers.json holds them (answers.py)
    )
    similar_to: str = ""  # copy detection's matches (similarity.py): evidence for the instructor

    @property
    def automatic(self) -> int:
        return self.points["normal"] + self.points["boundary"]


def assign_slugs(rows: list[Row]) -> None:
    """File names from the students' ids: safe characters only, and never two alike."""
    taken: set[str] = set()
    for row in rows:
        base = (
            "".join(c if c.isalnum() or c in "-_.@" else "_" for c in row.student).strip(".")
            or "student"
        )
        slug, n = base, 1
        while slug.casefold() in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug.casefold())
        row.slug = slug


def people(
    submissions: list[Submission], roster: list[Student] | None
) -> list[tuple[Student, Submission | None, bool]]:
    """(student, their submission or None, in the roster) for every submission and roster row."""
    if roster is None:
        return [(Student(s.student, s.name, s.email), s, True) for s in submissions]
    found, seen = [], set()
    for submission in submissions:
        student = match(roster, submission.student, submission.email)
        if student is None:
            found.append(
                (Student(submission.student, submission.name, submission.email), submission, False)
            )
        else:
            if student.id in seen:  # two hand-ins matched one student (an id and an alias, say)
                found.append(
                    (
                        Student(submission.student, submission.name, submission.email),
                        submission,
                        False,
                    )
                )
                continue
            seen.add(student.id)
            found.append((student, submission, True))
    found += [(student, None, True) for student in roster if student.id not in seen]
    return sorted(found, key=lambda item: item[0].id)


def make_row(
    lesson: GradeLesson,
    student: Student,
    submission: Submission | None,
    in_roster: bool,
    data: dict | None,
    failed: str | None,
    locale: str | None,
    sandbox: str,
) -> Row:
    """locale: --locale (it wins), else the roster's, else the submission's own pack language,
    else the course's source language. failed: why the run gave no result for this code."""
    chosen = (
        locale
        or student.locale
        or (submission.locale if submission else None)
        or lesson.source_locale
    )
    row = Row(
        student.id,
        student.name or (submission.name if submission else ""),
        student.email or (submission.email if submission else ""),
        chosen,
        submission,
    )
    if not in_roster:
        row.flags.append("not_in_roster")
        row.notes.append(("flag_not_in_roster", {}))
    if sandbox in ("off", CONTAINER):
        row.flags.append("sandbox_off")
    if submission is None:
        row.status, row.reason = "no submission", ("no_submission", {})
        return row
    if submission.late:
        row.flags.append("late")
        row.notes.append(("flag_late", {}))
    if submission.notes:
        row.flags.append("other_code")
        row.notes += submission.notes
    if submission.problem is not None:
        row.status, row.reason = "unreadable", submission.problem
        return row
    if data is None:
        row.status, row.reason = "crashed", ("flag_task_failed", {"why": failed or "?"})
        return row
    row.data = data
    row.status = status_of(data)
    if data["status"] in ("pass", "fail"):
        row.points = {
            "normal": int(data["score"]["normal"]),
            "boundary": int(data["score"]["boundary"]),
        }
    row.flags += checker_flags(data)
    if submission.claim is not None and submission.claim != data["status"]:
        row.flags.append("claim_differs")
        row.notes.append(
            ("flag_claim_differs", {"claimed": submission.claim, "actual": data["status"]})
        )
    row.flags = [f for f in FLAGS if f in row.flags]
    return row


def status_of(data: dict) -> str:
    flags = data.get("flags") or {}
    load_error = data.get("load_error") or {}
    cases = {c.get("status") for c in data.get("cases") or []}
    if flags.get("events") or flags.get("protocol"):
        return "sandbox violation"
    if load_error.get("kind") == "timeout" or "timeout" in cases:
        return "timed out"
    if load_error.get("kind") == "crash" or "crash" in cases:
        return "crashed"
    return "graded"


def checker_flags(data: dict) -> list[str]:
    flags = data.get("flags") or {}
    found = []
    if data.get("edits_outside_blank"):
        found.append("edits_outside_blank")
    if data.get("status") == "blank":
        found.append("blank")
    for key, flag in (
        ("no_triton", "no_triton"),
        ("events", "sandbox_events"),
        ("patched", "patched"),
        ("inputs_modified", "inputs_modified"),
        ("protocol", "protocol"),
        ("withheld", "withheld"),
        ("unreviewed", "unreviewed"),
        ("fill_not_triton", "fill_not_triton"),
        ("torch_computes", "torch_computes"),
    ):
        if flags.get(key):
            found.append(flag)
    if any(c.get("status") == "skip" for c in data.get("cases") or []):
        found.append(
            "cases_not_run"
        )  # a kernel may differ on them (a dtype or a size test): not established
    return found


def failed_cases(data: dict | None) -> list[dict]:
    """The cases that ran and did not pass."""
    return [
        c
        for c in (data or {}).get("cases") or []
        if c.get("status") not in ("pass", "skip", "not_run")
    ]


def device_of(data: dict | None) -> str:
    """Where a result was computed: the GPU's name, or the Triton interpreter on the CPU."""
    env = (data or {}).get("environment") or {}
    if not env:
        return ""
    return "CPU (Triton interpreter)" if env.get("interpreter") else str(env.get("device", "?"))


def sandbox_of(data: dict | None, sandbox: str) -> str:
    """How the code of a result ran: bubblewrap, off (--sandbox off), CONTAINER (a Gradescope
    container that refuses the sandbox), or "" when it did not run."""
    if not (data or {}).get("environment"):
        return ""
    return data.get("sandbox") or (sandbox if sandbox in ("off", CONTAINER) else "none")
