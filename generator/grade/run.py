"""`coursepack grade`: the pipeline. Gather everything first (the lesson's checkers, the roster,
every submission read), then run only the code whose result is not cached, then write every
output at once: the output folder is swapped in whole, so it is never half written.

    collect (collect.py, roster.py) -> units and the cache (tasks.py) -> runner tasks (tasks.py,
    generator/checker/jobs/grade_job.py) -> rows (rows.py) -> grades.csv (gradebook.py),
    feedback/ (feedback.py), gradescope/ (gradescope.py), summary.md/.html (summary.py)

`grade_in_container` is the same for one student inside a Gradescope autograder container."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from generator.files.archive import replace_dir
from generator.files.cache import BuildCache, key, write_text_atomically
from generator.checker.shared.sandbox import launcher_entries, sandbox_problem
from generator.errors import CoursepackError
from generator.files.resources import default_out
from generator.grade import gradescope as gs
from generator.grade.answers import answers_json, attach_answers
from generator.grade.collect import Submission, collect, read_tree, submission_of
from generator.grade.feedback import check_lines, write_feedback
from generator.grade.gpus import visible_gpus
from generator.grade.gradebook import gradebook_csv
from generator.grade.lesson import GradeError, GradeLesson, load_kit, load_lesson
from generator.grade.pages import html_page
from generator.grade.roster import Student, match, read_roster
from generator.grade.rubric import rubric_document, rubric_json
from generator.grade.rows import CONTAINER, Row, assign_slugs, make_row, people
from generator.grade.similarity import Settings
from generator.grade.similarity_pages import earlier_terms, write_similarity
from generator.grade.summary import CHART, score_chart, summary_markdown
from generator.grade.tasks import (
    START_S,
    ResultStore,
    Unit,
    collect_results,
    harvest,
    plan,
    unit_key,
)
from generator.render.render import check_templates, jinja_env
from generator.files.resources import TEMPLATES
from generator.review.record import after_grading
from generator.runners.base import Task
from generator.runners.factory import make_runner
from generator.runners.options import RunnerOptions

SUBMISSIONS_PER_PROCESS = 4

Progress = Callable[[str], None]


@dataclass
class GradeOptions(RunnerOptions):
    """A grading run's settings; the runner's (runner, python, runner_command, slurm, jobs) are
    RunnerOptions', keyword-only."""

    submissions: Path | None = None
    lesson: str = ""
    content: Path | None = None  # the course's content folder (not needed with a kit)
    templates: Path = TEMPLATES
    out: Path | None = None  # default: <build>/grades/<lesson>
    build: Path | None = None  # the cache and job folders; default: build/ beside the content
    locale: str | None = None  # every feedback in this language
    roster: Path | None = None
    chunk: int | None = None  # submissions per task (default: all in one locally, 50 elsewhere)
    timeout: float | None = None  # seconds per case (default: the lesson's timeout_s)
    sandbox: str = "on"  # "off": the documented opt-out; every output says so
    gradescope_submission: Path = gs.SUBMISSION
    gradescope_results: Path = gs.RESULTS
    gradescope_metadata: Path = gs.METADATA
    gradescope_visibility: str = (
        "visible"  # of the case tests in results.json (the groups' stay visible)
    )
    kit: Path | None = (
        None  # a grading kit instead of the content (scripts/gradescope_autograder.py)
    )
    similarity: Settings = field(
        default_factory=Settings
    )  # copy detection's thresholds (similarity.py)
    compare_with: list[Path] = field(default_factory=list)  # earlier terms' grading folders


@dataclass
class GradeOutcome:
    rows: list[Row]
    out: Path | None
    ran: int = 0  # distinct pieces of code run now
    cached: int = 0  # distinct pieces of code whose result came from the cache
    seconds: float = 0.0
    run_seconds: float = 0.0
    tasks: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def grade(options: GradeOptions, progress: Progress = _stderr) -> GradeOutcome:
    started = time.monotonic()
    if options.content is None:
        raise CoursepackError("grading needs the course's content folder (--content)")
    build = options.build or default_out(options.content)
    build.mkdir(parents=True, exist_ok=True)  # the runners start in it (a new --cache folder too)
    runner = _runner(options, build, progress)
    if options.submissions is not None and options.submissions.exists():
        runner.warm_up()  # the task server imports torch while the lesson and the submissions are read
    lesson = load_lesson(options.content, options.lesson)
    check_templates(
        jinja_env(options.templates)
    )  # a broken page template stops grading before it runs code
    earlier = earlier_terms(
        options.compare_with
    )  # read before any code runs: a bad folder stops here
    out = options.out or build / "grades" / lesson.id
    check_out_folder(out)
    locales = list(lesson.languages)
    if options.locale and options.locale not in locales:
        raise GradeError(
            f"--locale {options.locale}: not one of the course's languages ({', '.join(locales)})"
        )
    roster = read_roster(options.roster, locales) if options.roster else None
    if not options.submissions.exists():
        raise GradeError(f"{options.submissions}: no such file or folder")
    submissions = collect(options.submissions, lesson)
    pairs = people(submissions, roster)
    progress(
        f"grade {lesson.id}: {len(submissions)} submission(s) in {options.submissions}"
        + (f", {len(roster)} student(s) in the roster" if roster is not None else "")
    )
    outcome = GradeOutcome([], out)
    results, failures = _run(
        lesson, [s for _, s, _ in pairs if s is not None], runner, options, build, outcome, progress
    )
    rows = [
        make_row(
            lesson,
            student,
            submission,
            in_roster,
            results.get(id(submission)),
            failures.get(id(submission)),
            options.locale,
            options.sandbox,
        )
        for student, submission, in_roster in pairs
    ]
    assign_slugs(rows)
    instructor = options.locale or lesson.source_locale
    _write_outputs(lesson, rows, out, build, options, instructor, earlier)
    outcome.rows, outcome.seconds = rows, time.monotonic() - started
    return outcome


def grade_in_container(options: GradeOptions, progress: Progress = _stderr) -> GradeOutcome:
    """Gradescope's container: the one submission in /autograder/submission, graded in the Triton
    interpreter (the containers have no GPU), to /autograder/results/results.json. Once the lesson
    is read, a results.json is written whatever happens: the grade, or why there is none
    (gradescope.py says how the sandbox is chosen there)."""
    started = time.monotonic()
    if options.kit is None and options.content is None:
        raise CoursepackError(
            "grading needs a grading kit (--kit) or the content folder (--content)"
        )
    lesson = load_kit(options.kit) if options.kit else load_lesson(options.content, options.lesson)
    sid, name, email = gs.submitter(options.gradescope_metadata)
    roster = read_roster(options.roster, list(lesson.languages)) if options.roster else None
    known = match(roster, sid, email) if roster else None
    student = Student(known.id, name, email, known.locale) if known else Student(sid, name, email)
    outcome = GradeOutcome([], None)
    try:
        _grade_one(lesson, student, options, outcome, progress)
    except Exception as exc:  # noqa: BLE001 - the student sees why, not "the autograder failed"
        locale = options.locale or student.locale or lesson.source_locale
        why = str(exc) if isinstance(exc, CoursepackError) else f"{type(exc).__name__}: {exc}"
        gs.write_results(
            options.gradescope_results,
            gs.not_graded_json(lesson, locale, student.id, "not_graded", why, options.sandbox),
        )
        progress(f"wrote {options.gradescope_results}: not graded: {why}")
        if not isinstance(exc, CoursepackError):
            raise  # a defect: its traceback for the instructor's log
        outcome.problems = [why]
    outcome.seconds = time.monotonic() - started
    return outcome


def _grade_one(
    lesson: GradeLesson,
    student: Student,
    options: GradeOptions,
    outcome: GradeOutcome,
    progress: Progress,
) -> None:
    folder = options.gradescope_submission
    if not folder.is_dir():
        raise GradeError(
            f"{folder}: no submission folder (Gradescope puts the student's files there)"
        )
    submission = submission_of(student.id, "gradescope", student.name, read_tree(folder), lesson)
    submission.email = student.email
    problem = None if options.sandbox == "off" else sandbox_problem()
    how, refused = gs.sandbox_in_container(options.sandbox, problem)
    if refused is not None:
        locale = options.locale or student.locale or submission.locale or lesson.source_locale
        gs.write_results(
            options.gradescope_results,
            gs.not_graded_json(lesson, locale, student.id, "sandbox_required", refused, "on"),
        )
        progress(
            f"wrote {options.gradescope_results}: not graded, the sandbox cannot run here: {refused}"
        )
        outcome.problems = [refused]
        return
    if how == CONTAINER:
        progress(
            f"the sandbox cannot run in this container ({problem}): grading without it, "
            "in this container alone; results.json says so"
        )
    run_options = GradeOptions(
        **{**options.__dict__, "runner": "interpreter", "sandbox": "off" if how != "on" else "on"}
    )
    build = options.build or Path(os.environ.get("TMPDIR", "/tmp")) / "coursepack-grade"
    results, failures = {}, {}
    if submission.code is not None and submission.problem is None:  # else nothing to run: no runner
        build.mkdir(parents=True, exist_ok=True)  # the runner starts in it
        runner = _runner(run_options, build, progress)
        runner.warm_up()  # the task server imports torch while the probe runs
        results, failures = _run(
            lesson, [submission], runner, run_options, build, outcome, progress
        )
    row = make_row(
        lesson,
        student,
        submission,
        True,
        results.get(id(submission)),
        failures.get(id(submission)),
        options.locale,
        how,
    )
    output = check_lines(lesson, row, build / "checkers")
    gs.write_results(
        options.gradescope_results,
        gs.results_json(lesson, row, output, how, options.gradescope_visibility),
    )
    progress(
        f"wrote {options.gradescope_results}: {row.status}, {row.automatic} automatic point(s)"
    )
    outcome.rows = [row]


def check_out_folder(out: Path) -> None:
    """The output folder is replaced whole: refuse one that holds something else."""
    if out.exists() and any(out.iterdir()) and not (out / "grades.csv").exists():
        raise GradeError(
            f"--out {out}: the folder exists and holds no earlier grading (no grades.csv); "
            "it would be replaced whole: choose a new or empty folder"
        )


def _runner(options: GradeOptions, build: Path, progress: Progress):
    probes = BuildCache(build).probes
    runner = make_runner(options, build / "triton-cache", probes / "auto.json", progress)
    if options.sandbox not in ("on", "off"):
        raise GradeError(f"--sandbox {options.sandbox}: expected on or off")
    if options.sandbox == "on" and runner.kind in ("cuda", "interpreter"):
        why = sandbox_problem()
        if why is not None:
            raise GradeError(
                f"the sandbox cannot run here: {why}. Grading never runs students' code unconfined; "
                "install bubblewrap, or pass --sandbox off to run it without (every output then says so)"
            )
    return runner


def _run(
    lesson: GradeLesson,
    submissions: list[Submission],
    runner,
    options: GradeOptions,
    build: Path,
    outcome: GradeOutcome,
    progress: Progress,
) -> tuple[dict[int, dict], dict[int, str]]:
    """Each gradable submission's result (by id() of the submission), and why some have none."""
    info = runner.probe(build, BuildCache(build).probes / f"{runner.kind}.json")
    runner.check_usable(info)
    identity = key(runner.identity(), json.dumps(info, sort_keys=True))
    timeout = float(options.timeout or lesson.spec.checks.timeout_s)
    store = ResultStore(build / "cache" / "grade")
    work = build / "work" / f"grade-{lesson.id}"
    recovered = harvest(work, store)
    if recovered:
        progress(f"kept {recovered} result(s) of an earlier run that did not finish")
    units: dict[str, Unit] = {}
    key_of: dict[int, str] = {}
    for submission in submissions:
        if submission.code is None or submission.problem is not None:
            continue
        unit = unit_key(
            submission.code,
            submission.cell,
            lesson.checker_hash,
            identity,
            timeout,
            options.sandbox,
        )
        key_of[id(submission)] = unit
        units.setdefault(
            unit, Unit(unit, submission.code, submission.cell, lesson.spec.kernel_file)
        )
    pending = [u for u in units.values() if store.data(u.key) is None]
    outcome.cached, outcome.ran = len(units) - len(pending), len(pending)
    missing: dict[str, str] = {}
    if pending:
        local = runner.kind in ("cuda", "interpreter")
        seed = LauncherSeed(lesson, runner, build, identity, timeout)
        seeding = (
            runner.kind == "cuda" and info["cuda"] and options.sandbox == "on" and seed.needed()
        )
        if seeding:
            seed.start(progress)
        gpus = visible_gpus() if runner.kind == "cuda" and info["cuda"] else []
        procs = (
            trusted_processes(options.jobs, len(pending), len(gpus))
            if local and not options.chunk
            else 1
        )
        jobs = max(1, options.jobs // procs)
        if procs > 1:  # in the order of their keys (a hash), whatever order the folder had: each
            # process gets its share of the hangs and crashes
            ordered = sorted(pending, key=lambda u: u.key)
            pending = [u for k in range(procs) for u in ordered[k::procs]]
        chunk = options.chunk or (-(-len(pending) // procs) if local else 50)
        chunks = plan(
            pending,
            work,
            lesson.checker,
            chunk,
            jobs,
            timeout,
            options.sandbox,
            runner.kind == "interpreter" or not info["cuda"],
            len(lesson.spec.checks.cases),
            share=local and procs > 1,
            seed_done=seed.done if seeding else None,
            devices=gpus,
        )
        progress(
            f"grade {len(pending)} distinct submission(s) ({outcome.cached} from the cache) on {runner.label}: "
            f"{info['device']} · torch {info['torch']} · triton {info['triton']} · "
            f"sandbox {options.sandbox} · "
            f"{len(chunks)} task(s), {jobs} at once in each"
            + (f", {procs} at once" if procs > 1 else "")
            + (f", over {len(gpus)} GPUs" if len(gpus) > 1 else "")
        )
        begun = time.monotonic()
        try:
            results = runner.run_tasks([c.task for c in chunks], progress, parallel=procs)
        finally:
            seed.finish()
        outcome.run_seconds = time.monotonic() - begun
        finished = collect_results(chunks, results, store)
        outcome.tasks = finished.tasks
        if finished.refused:
            raise GradeError(
                "the sandbox cannot run on the runner, so nothing was graded: "
                + "; ".join(sorted(set(finished.refused)))
                + ". Install bubblewrap there, or pass --sandbox off (every output then says so)"
            )
        missing = finished.missing
        rate = len(pending) / outcome.run_seconds if outcome.run_seconds else 0.0
        progress(
            f"graded {len(pending) - len(missing)} in {outcome.run_seconds:.1f} s ({rate:.1f} per second)"
            + (
                f"; {len(missing)} without a result (rows say crashed; a later run tries them again)"
                if missing
                else ""
            )
        )
        outcome.problems = sorted(set(missing.values()))
        if not missing:
            shutil.rmtree(work, ignore_errors=True)  # every result is in the store
    elif units:
        progress(f"every result ({len(units)}) is in the cache: nothing to run")
    by_id = {id(s): s for s in submissions}
    results = {}
    for sid, unit in key_of.items():
        data = store.data(unit)
        if data is not None:
            edits, fill = lesson.review_edits(
                by_id[sid].code, by_id[sid].cell is not None, build / "checkers"
            )
            results[sid] = dict(data, edits_outside_blank=edits, fill=fill)
    failures = {
        sid: missing.get(unit, "no result") for sid, unit in key_of.items() if sid not in results
    }
    return results, failures


class LauncherSeed:
    """Triton's launchers for the lesson's kernels in the runner's Triton cache, once per lesson,
    checker and runner. Triton compiles with gcc a C launcher for each kernel signature, and its
    driver's utilities, once per cache: a sandboxed worker's cache is its own, so each one would
    compile them again (1.2 CPU s per submission on the H200 host) unless the sandbox seeds it
    with copies (stage_launcher_seed). An instructor's build leaves them there; for a build folder
    without, the lesson's answer (our code, not a student's) is checked once to make them, while
    the grading jobs start: they wait for `done` before their first check (grade_job.py)."""

    def __init__(self, lesson: GradeLesson, runner, build: Path, identity: str, timeout: float):
        self.lesson, self.runner, self.timeout = lesson, runner, timeout
        self.marker = BuildCache(build).root / "grade-seed" / key(lesson.checker_hash, identity)
        self.folder = build / "work" / f"grade-seed-{lesson.id}"
        self.done = self.folder / "done"
        self.thread: threading.Thread | None = None

    def needed(self) -> bool:
        cache = self.runner.cache_dir
        return (
            self.lesson.answer is not None
            and cache is not None
            and not (self.marker.exists() and launcher_entries(str(cache)))
        )

    def start(self, progress: Progress) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        lesson = self.lesson
        (self.folder / "check.py").write_text(lesson.checker, encoding="utf-8")
        (self.folder / lesson.spec.kernel_file).write_text(lesson.answer, encoding="utf-8")
        task = Task(
            "grade-seed",
            self.folder,
            [
                "{python}",
                "check.py",
                lesson.spec.kernel_file,
                "--json",
                "--timeout",
                str(self.timeout),
            ],
            START_S + len(lesson.spec.checks.cases) * self.timeout,
        )
        self.thread = threading.Thread(target=self._run, args=(task, progress), daemon=True)
        self.thread.start()

    def _run(self, task: Task, progress: Progress) -> None:
        try:
            [result] = self.runner.run_tasks([task], progress)
            made = result.state == "COMPLETED" and bool(
                launcher_entries(str(self.runner.cache_dir))
            )
            if made:
                self.marker.parent.mkdir(parents=True, exist_ok=True)
                self.marker.write_text(self.lesson.id, encoding="utf-8")
                progress(
                    f"Triton's launchers made from the lesson's answer in {result.seconds:.1f} s (each sandboxed "
                    "worker starts with copies)"
                )
            else:
                progress(
                    f"the lesson's answer did not pass on the runner ({result.detail or result.state}; "
                    f"{self.folder}): each sandboxed worker compiles Triton's launchers itself"
                )
        finally:
            self.done.write_text("", encoding="utf-8")

    def finish(self) -> None:
        """Wait for the seeding task; its folder goes (its result is in the cache, or reported)."""
        if self.thread is not None:
            self.thread.join()
            if self.marker.exists():
                shutil.rmtree(self.folder, ignore_errors=True)


def trusted_processes(jobs: int, units: int, gpus: int = 1) -> int:
    """How many trusted processes grade at once on this machine: one per SUBMISSIONS_PER_PROCESS
    submissions checked at once, and at least one per GPU (each runs its workers on one: gpus.py).
    A trusted process judges every case of its submissions in Python (0.13-0.18 CPU s per
    submission on the H200 host), one thread at a time: with sixteen at once, one process would be
    the bottleneck (BENCHMARKS.md)."""
    return max(1, min(max(jobs // SUBMISSIONS_PER_PROCESS, gpus), units))


def _write_outputs(
    lesson: GradeLesson,
    rows: list[Row],
    out: Path,
    build: Path,
    options: GradeOptions,
    instructor: str,
    earlier: dict | None = None,
) -> None:
    """Everything in a fresh folder beside out, then swapped in for it."""
    new = out.with_name(out.name + ".new")
    if new.exists():
        shutil.rmtree(new)
    new.mkdir(parents=True)
    modules = build / "checkers"
    attach_answers(
        lesson, rows
    )  # the manual parts' answers: grades.csv counts them, answers.json holds them
    for row in rows:
        output = check_lines(
            lesson, row, modules
        )  # what check.py shows: the feedback page's and Gradescope's
        write_feedback(lesson, row, new / "feedback", output, options.templates, options.sandbox)
        gs.write_results(
            new / "gradescope" / row.slug / "results.json",
            gs.results_json(lesson, row, output, options.sandbox),
        )
    language = lesson.languages[instructor]
    rubric = lesson.spec.rubric
    chart = score_chart(rows, rubric.normal + rubric.boundary, language)
    summary = summary_markdown(lesson, rows, instructor, options.sandbox)
    (new / CHART).write_text(chart, encoding="utf-8")
    (new / "summary.md").write_text(summary, encoding="utf-8")
    title = language.text("summary_title", lesson=lesson.heading(instructor))
    (new / "summary.html").write_text(
        html_page(summary, title, instructor, options.templates, {CHART: chart}), encoding="utf-8"
    )
    exercises = ["\n".join(language.data["template"]) for language in lesson.languages.values()]
    similar = write_similarity(
        new,
        rows,
        rubric_document(lesson),
        exercises,
        options.similarity,
        earlier or {},
        options.templates,
    )
    for row in rows:
        row.similar_to = similar.get(row.student, "")
    write_text_atomically(
        new / "grades.csv", gradebook_csv(lesson, rows, instructor, options.sandbox)
    )
    (new / "rubric.json").write_text(
        rubric_json(lesson), encoding="utf-8"
    )  # the parts, points and vetoes
    (new / "answers.json").write_text(
        answers_json(rows), encoding="utf-8"
    )  # each student's answers
    # the review's gradebook: the old folder's carried over (manual scores kept), filled, regrade.md
    after_grading(
        lesson,
        rows,
        out,
        new,
        instructor,
        lambda row: check_lines(lesson, row, modules),
        modules,
        _stderr,
    )
    replace_dir(new, out)
