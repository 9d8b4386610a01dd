"""The verification gate: run the generated packs on a runner before anything is released.

Per lesson and locale, on the generated files (never the sources):
  answer            the answer kernel passes every case of the pack's checker
  mistake:ID        each declared wrong code fails on exactly the cases it declares, each with the
                    reason it declares
  student:answer    `python check.py` in the answer pack, a fresh process with nothing of ours in
                    its environment, exactly as the README tells students: passes
  student:exercise  the same in the exercise pack, on the untouched blank: asks for the blank
  student:spawn     (once per lesson) `python check.py` with COURSEPACK_SPAWN=1, the path Windows
                    takes (no fork): passes
  notebook          the answer lesson.ipynb executes top to bottom and its check cell passes
  bench             (GPU) the lesson's bench.py runs; its numbers go into the packs
The answer and the mistakes run in the checker's sandbox where bubblewrap can run there.

One task per lesson runs all of it (generator/checker/jobs/verify_job.py), so a runner starts torch
once per lesson, not once per step. Kernel files that differ only in comments (the same answer in
two languages) run once; every record still says what was verified for its pack.
"""

from __future__ import annotations

import datetime as _dt
import io
import itertools
import json
import shutil
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from generator.files.archive import write_tree
from generator.checker import copy_job_script
from generator.checker.join import joined
from generator.files.cache import BuildCache, key
from generator.content.codegen import BLANK
from generator.content.model import LessonSpec, Mistake
from generator.files.pack import Pack
from generator.runners.base import Task, TaskResult
from generator.runners.local import Runner

VERIFY_JOB = Path(__file__).parent.parent / "checker" / "jobs" / "verify_job.py"
JOB_TIMEOUT_S = 3600
Progress = Callable[[str], None]


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: str = ""
    cases: list[dict] = field(default_factory=list)
    data: dict | None = None
    unproven: bool = False  # a mistake none of whose failing cases runs on this runner


@dataclass
class PackPair:
    """One lesson x locale to verify: both editions and the declared mistakes' code. verify_all lets
    go of the packs and the code (release) once they are in the lesson's job folder or the cache."""

    lesson_id: str
    locale: str
    spec: LessonSpec
    exercise: Pack | None
    answer: Pack | None
    mistakes: list[tuple[Mistake, str]]
    notebook: bool

    @property
    def label(self) -> str:
        return f"{self.lesson_id}/{self.locale}"

    def content_key(self) -> str:
        return key(
            self.exercise.content_hash(),
            self.answer.content_hash(),
            json.dumps([m.model_dump() for m, _ in self.mistakes], sort_keys=True),
            str(self.notebook),
        )

    def release(self) -> None:
        self.exercise = self.answer = None
        self.mistakes = [(mistake, "") for mistake, _ in self.mistakes]


@dataclass
class Outcome:
    records: dict[tuple[str, str], dict] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    disagreements: dict[str, list] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    tasks: list[dict] = field(default_factory=list)


def code_key(code: str) -> str:
    """The same key for kernel files that differ only in comments and blank lines."""
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL)
        ]
        return key(*[f"{t.type}:{t.string}" for t in tokens])[:16]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return key(code)[:16]


def verify_all(
    pairs: Iterable[PackPair],
    runner: Runner,
    info: dict,
    cache: BuildCache,
    work: Path,
    jobs: int,
    progress: Progress,
    sandbox: str = "auto",
) -> Outcome:
    """pairs: read once, in order, a lesson's locales one after another (a generator may render them
    as they are asked for). Each lesson's pairs not in the cache are written to its job folder as
    they come and then let go of; every task runs afterwards, together (one Slurm job array)."""
    outcome = Outcome()
    identity = key(runner.identity(), json.dumps(info, sort_keys=True), sandbox)
    bench_identity = key(
        runner.identity(), json.dumps(info, sort_keys=True)
    )  # benches: without the sandbox
    keys, kept, plans, seen = {}, [], [], set()
    budget = gpu_budget(info, runner)
    for lesson_id, group in itertools.groupby(pairs, key=lambda pair: pair.lesson_id):
        if lesson_id in seen:
            raise ValueError(f"verify_all: {lesson_id}'s locales must come one after another")
        seen.add(lesson_id)
        lesson_pairs = list(group)
        pending = []
        for pair in lesson_pairs:
            keys[pair.label] = (pair.content_key(), key(pair.content_key(), identity))
            hit = cache.records.get(keys[pair.label][1])
            if hit is not None:
                outcome.records[(pair.lesson_id, pair.locale)] = hit["record"]
                outcome.cached[pair.label] = True
                progress(
                    f"verify {pair.label}: cached ({'passed' if hit['record']['passed'] else 'FAILED'})"
                )
            else:
                pending.append(pair)
        if pending:
            units, steps = (
                (jobs, None) if budget is None else lesson_concurrency(pending, jobs, budget)
            )
            plans.append(
                _plan(pending, work / lesson_id, runner, units, bench_identity, sandbox, steps)
            )
        for pair in lesson_pairs:
            pair.release()
        kept += lesson_pairs
    gpu = bool(info["cuda"]) and runner.kind != "interpreter"
    if plans:
        progress(
            f"verify {', '.join(f'{p.lesson_id} ({len(p.pairs)} locale(s), {len(p.units)} kernel files)' for p in plans)}"
            f" on {runner.label} ..."
        )
        warmups = (
            _bench_warmups(plans, runner, info, cache) if gpu and runner.kind == "cuda" else []
        )
        tasks = [p.task for p in plans] + warmups
        parallel = len(tasks) if gpu else 1
        if gpu and budget is not None:
            parallel = lessons_at_once(plans, budget)
            progress(
                f"verify {parallel} lesson(s) at once: about {max(p.cuda_processes for p in plans)} CUDA "
                f"processes each, {budget} in {GPU_SHARE:.0%} of the GPU's "
                f"{info['gpu_memory'] / 2**30:.0f} GiB"
            )
        results = runner.run_tasks(tasks, progress, parallel=parallel)[: len(plans)]
        benches = _benches(plans, runner, info, cache, gpu, progress)
        for plan, result in zip(plans, results):
            outcome.tasks.append(
                {
                    "lesson": plan.lesson_id,
                    "state": result.state,
                    "job_id": result.job_id,
                    "seconds": round(result.seconds, 1),
                    "attempts": result.attempts,
                }
            )
            for pair in plan.pairs:
                steps = _steps(plan, pair, result, benches.get(plan.lesson_id), gpu)
                record = make_record(runner, info, steps, result.seconds, plan, pair)
                content_key, cache_key = keys[pair.label]
                cache.records.put(
                    cache_key, {"content_key": content_key, "record": record, "pack": pair.label}
                )
                outcome.records[(pair.lesson_id, pair.locale)] = record
                outcome.cached[pair.label] = False
                width = max(26, *(len(step.name) for step in steps))
                for step in steps:
                    progress(
                        f"       {'ok  ' if step.ok else 'FAIL'} {pair.label:22} {step.name:{width}} "
                        f"{step.seconds:6.1f} s  {step.detail[:160]}"
                    )
    entries: dict[str, list[dict]] = {}  # the cache's records by the packs they verified
    for entry in cache.records.values():
        entries.setdefault(entry.get("content_key"), []).append(entry)
    for pair in kept:
        record = outcome.records[(pair.lesson_id, pair.locale)]
        outcome.disagreements[pair.label] = disagreements(
            entries.get(keys[pair.label][0], []), keys[pair.label][0]
        )
        if not record["passed"]:
            outcome.failed += [
                f"{pair.label}: {s['name']}: {s['detail']}" for s in record["steps"] if not s["ok"]
            ]
    return outcome


# ---- the GPU's memory: how much runs at once ---------------------------------------------------
# A lesson's task holds many CUDA processes at once: a worker per kernel file checked at once and
# the job's own trusted side, and each student command and notebook a check.py of its own (its
# trusted side and a worker; a notebook's kernel too). On an H200 a course build with every lesson
# at once held about 150 of them and ran out of its 140 GiB (143 GiB in use at the peak); with 3
# lessons at once (75 of them) it peaked at 100-113 GiB: about 1.5 GiB each (a context, torch's
# cache, a case's data).
GPU_PROCESS_BYTES = 3 << 29  # 1.5 GiB
GPU_SHARE = 0.6  # of the device's memory that verification plans for: the rest for peaks, others


def gpu_budget(info: dict, runner: Runner) -> int | None:
    """The CUDA processes verification may hold at once on the runner's GPU, or None (no GPU, or
    its memory unknown: every lesson at once, as before)."""
    memory = info.get("gpu_memory") or 0
    if not info.get("cuda") or runner.kind == "interpreter" or memory <= 0:
        return None
    return max(1, int(memory * GPU_SHARE // GPU_PROCESS_BYTES))


def _fixed_processes(locales: int, notebooks: int) -> int:
    """A lesson task's CUDA processes besides its batch's workers: its own trusted side, a
    check.py (trusted side and worker) per student command (answer and exercise per locale, one
    spawn), and per notebook its kernel's and its check cell's check.py."""
    return 1 + 2 * (2 * locales + 1) + 3 * notebooks


STEP_PROCESSES = 3  # the most CUDA processes one student command or notebook holds


def lesson_concurrency(pairs: list[PackPair], jobs: int, budget: int) -> tuple[int, int | None]:
    """(kernel files a lesson checks at once, its steps at once or None for all of them): jobs and
    every step, fewer where the budget would not hold them (kernel files first, then the student
    commands and notebooks, which then wait for their turn after the batch's)."""
    locales, notebooks = len(pairs), sum(1 for pair in pairs if pair.notebook)
    fixed = _fixed_processes(locales, notebooks)
    units = max(1, min(jobs, budget - fixed))
    if units + fixed <= budget:
        return units, None
    others = 2 * locales + 1 + notebooks
    return units, 1 + min(others, max(1, (budget - units - 1) // STEP_PROCESSES))


def cuda_processes(job: dict) -> int:
    """The CUDA processes a lesson's task (its job.json) holds at once, at most."""
    batch = min(job["jobs"], len(job["units"]))
    if job.get("steps_at_once"):
        return batch + 1 + STEP_PROCESSES * (job["steps_at_once"] - 1)
    return batch + _fixed_processes(len(job["answers"]), len(job["notebooks"]))


def lessons_at_once(plans: list[Plan], budget: int) -> int:
    """Lessons verified at once: as many of the largest as the budget holds, at least one."""
    return max(1, min(len(plans), budget // max(plan.cuda_processes for plan in plans)))


# ---- planning: one job folder per lesson -------------------------------------------------------


@dataclass
class Plan:
    lesson_id: str
    folder: Path
    pairs: list[PackPair]
    units: dict[str, str]  # unit id -> its path in the folder
    unit_of: dict[tuple[str, str], str]  # (locale, step name) -> unit id
    task: Task
    bench: str | None = None  # the bench's cache key, where the lesson has one
    bench_folder: Path | None = None  # the answer pack it runs in
    cuda_processes: int = 0  # its task's at once, at most (cuda_processes of its job.json)


def _plan(
    pairs: list[PackPair],
    folder: Path,
    runner: Runner,
    jobs: int,
    bench_identity: str,
    sandbox: str = "auto",
    steps_at_once: int | None = None,
) -> Plan:
    clear(folder)
    folder.mkdir(parents=True)
    spec = pairs[0].spec
    units: dict[str, str] = {}
    unit_of: dict[tuple[str, str], str] = {}
    exercises, answers, notebooks = {}, {}, {}
    for pair in pairs:
        answers[pair.locale] = answer_dir = (
            write_tree(pair.answer, folder).relative_to(folder).as_posix()
        )
        exercises[pair.locale] = write_tree(pair.exercise, folder).relative_to(folder).as_posix()
        if pair.notebook:
            notebooks[pair.locale] = answer_dir
        codes = [("answer", pair.answer.files[spec.kernel_file].decode())]
        codes += [(f"mistake:{m.id}", code) for m, code in pair.mistakes]
        for step, code in codes:
            unit = code_key(code)
            if unit not in units:
                path = Path("units") / unit / spec.kernel_file
                (folder / path).parent.mkdir(parents=True)
                (folder / path).write_text(code, encoding="utf-8")
                units[unit] = path.as_posix()
            unit_of[(pair.locale, step)] = unit
    job = {
        "units": [{"id": u, "path": p} for u, p in units.items()],
        "checker": f"{exercises[pairs[0].locale]}/check.py",
        "exercises": exercises,
        "answers": answers,
        "spawn_locales": [pairs[0].locale],
        "notebooks": notebooks,
        "jobs": jobs,
        "steps_at_once": steps_at_once,  # None: every step at once
        "case_timeout": spec.checks.timeout_s,
        "timeout": JOB_TIMEOUT_S - 60,
        "student_timeout": spec.checks.timeout_s * 4,
        "notebook_timeout": spec.checks.timeout_s * 4,
        "interpreter": runner.kind == "interpreter",
        "sandbox": sandbox,
    }
    (folder / "job.json").write_text(json.dumps(job, indent=1), encoding="utf-8")
    copy_job_script(VERIFY_JOB.name, folder)
    task = Task(pairs[0].lesson_id, folder, ["{python}", "verify_job.py"], JOB_TIMEOUT_S)
    answer = pairs[0].answer
    return Plan(
        pairs[0].lesson_id,
        folder,
        pairs,
        units,
        unit_of,
        task,
        bench_key(answer, spec, bench_identity) if spec.bench else None,
        folder / answer.name,
        cuda_processes(job),
    )


# ---- reading a job's results into steps --------------------------------------------------------


def _steps(
    plan: Plan, pair: PackPair, task: TaskResult, bench: Step | None, gpu: bool
) -> list[Step]:
    result = _read(plan.folder / "result.json")
    if result is None:
        why = task.detail or f"{task.state}: {(task.stderr or task.stdout).strip()[-800:]}"
        return [Step("job", False, task.seconds, f"the verification task did not finish: {why}")]
    units = result["batch"].get("units") or {}
    steps = []
    for step_name in ["answer"] + [f"mistake:{m.id}" for m, _ in pair.mistakes]:
        unit = plan.unit_of[(pair.locale, step_name)]
        data = units.get(unit)
        shared = [
            loc for (loc, name), u in plan.unit_of.items() if u == unit and loc != pair.locale
        ]
        note = f" (the same code as {', '.join(sorted(set(shared)))}: run once)" if shared else ""
        if data is None:
            steps.append(Step(step_name, False, 0.0, "no result: " + _batch_why(result["batch"])))
        elif step_name == "answer":
            ok = data["status"] == "pass"
            where = f"sandbox: {result['batch'].get('sandbox', '?')}"
            steps.append(
                Step(
                    "answer",
                    ok,
                    data.get("seconds", 0.0),
                    (f"{where}{note}" if ok else _why(data)),
                    data["cases"],
                    _timing(data),
                )
            )
        else:
            mistake = next(m for m, _ in pair.mistakes if f"mistake:{m.id}" == step_name)
            steps.append(_mistake_step(step_name, mistake, data, pair.spec, note))
    students = result.get("students") or {}
    steps.append(
        _student_step("student:answer", students.get(f"answer/{pair.locale}"), expect_pass=True)
    )
    steps.append(
        _student_step(
            "student:exercise", students.get(f"exercise/{pair.locale}"), expect_pass=False
        )
    )
    if f"spawn/{pair.locale}" in students:
        steps.append(
            _student_step("student:spawn", students[f"spawn/{pair.locale}"], expect_pass=True)
        )
    if pair.notebook:
        steps.append(_notebook_step(result["notebooks"].get(pair.locale)))
    if gpu and pair.spec.bench and bench is not None:
        steps.append(bench)
    return steps


def _mistake_step(name: str, mistake: Mistake, data: dict, spec: LessonSpec, note: str) -> Step:
    if data["status"] not in ("pass", "fail"):
        return Step(name, False, data.get("seconds", 0.0), _why(data), data.get("cases", []))
    ran = {c["id"] for c in data["cases"] if c["status"] != "skip"}
    failed = {c["id"] for c in data["cases"] if c["status"] not in ("pass", "skip")}
    expected = expected_failures(mistake, spec) & ran
    if (
        not expected and not failed and expected_failures(mistake, spec)
    ):  # nothing it fails runs here
        return Step(
            name,
            True,
            data.get("seconds", 0.0),
            "not proven here: every case it fails is skipped on this runner",
            data["cases"],
            _timing(data),
            unproven=True,
        )
    problems = (
        []
        if failed == expected
        else [f"expected to fail {sorted(expected)}, failed {sorted(failed)}"]
    )
    for case in data["cases"]:
        declared = mistake.reason_for(case["id"])
        if case["id"] in failed and declared is not None and shown_reason(case) != declared:
            problems.append(
                f"{case['id']}: the checker shows '{shown_reason(case)}', the mistake declares '{declared}'"
            )
    detail = "; ".join(problems) if problems else note.strip()
    return Step(name, not problems, data.get("seconds", 0.0), detail, data["cases"], _timing(data))


def shown_reason(case: dict) -> str:
    """The reason a student is shown for a failing case: its reason, or what kind of failure it was."""
    if case["status"] == "fail":
        return case.get("reason") or "wrong_value"
    return case["status"]


def _timing(data: dict) -> dict:
    """Where a kernel file's time went: starting children (torch, CUDA), importing it, its cases
    (the first one includes the JIT compile)."""
    ran = [c.get("seconds", 0.0) for c in data.get("cases", []) if c["status"] != "skip"]
    timing = data.get("timing") or {}
    return {
        "children": timing.get("children", 0),
        "startup_s": round(timing.get("startup_s", 0.0), 2),
        "import_s": round(timing.get("loaded_s", 0.0), 2),
        "first_case_s": round(ran[0], 2) if ran else 0.0,
        "other_cases_s": round(sum(ran[1:]), 2),
    }


def _student_step(name: str, data: dict | None, expect_pass: bool) -> Step:
    """A student's `python check.py`: the answer must pass (exit 0), the untouched exercise must ask
    for the blank (exit 2 and the blank in its message)."""
    if data is None:
        return Step(name, False, 0.0, "not run")
    if expect_pass:
        ok = data["returncode"] == 0
    else:
        ok = data["returncode"] == 2 and BLANK in data["stdout"]
    detail = (
        data.get("command", "")
        if ok
        else (
            f"`{data.get('command', 'python check.py')}` exit {data['returncode']}"
            f"{' (timed out)' if data.get('timed_out') else ''}: "
            f"{(data['stdout'].strip()[-1200:] + ' ' + data['stderr'].strip()[-600:]).strip()}"
        )
    )
    return Step(name, ok, data["seconds"], detail)


def _notebook_step(data: dict | None) -> Step:
    if data is None:
        return Step("notebook", False, 0.0, "not run")
    ok = data["returncode"] == 0 and "NOTEBOOK-OK" in data["stdout"]
    detail = (
        ""
        if ok
        else (
            f"timed out after {data['seconds']:.0f} s"
            if data["timed_out"]
            else f"exit status {data['returncode']}: {(data['stderr'] or data['stdout']).strip()[-1200:]}"
        )
    )
    return Step("notebook", ok, data["seconds"], detail)


def expected_failures(mistake: Mistake, spec: LessonSpec) -> set[str]:
    ids = {c.id for c in spec.checks.cases}
    if isinstance(mistake.fails, list):
        return set(mistake.fails)
    return ids - set(mistake.fails.all_except)


def _why(data: dict) -> str:
    bad = [c["id"] for c in data.get("cases", []) if c["status"] not in ("pass", "skip")]
    return f"status {data['status']}; failing cases: {bad}; load error: {data.get('load_error')}"


def _batch_why(batch: dict) -> str:
    if batch.get("timed_out"):
        return f"the batch timed out after {batch['seconds']:.0f} s"
    return f"exit status {batch.get('returncode')}: {(batch.get('stderr') or '').strip()[-800:]}"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---- the bench: once per lesson, alone on the GPU, cached by the code it times ----------------


def bench_key(answer: Pack, spec: LessonSpec, identity: str) -> str:
    """Everything a bench's numbers depend on: the code of every Python file it can import (comments
    do not count, so a translated comment does not re-run it), and the runner."""
    parts = [
        f"{name}:{code_key(data.decode())}"
        for name, data in sorted(answer.files.items())
        if name.endswith(".py") and name != "check.py"
    ]
    return key(*parts, code_key(joined()), identity)


def _bench_warmups(plans: list[Plan], runner: Runner, info: dict, cache: BuildCache) -> list[Task]:
    """Each bench that will run, started early with --warmup-only: it compiles every kernel it times
    (into the shared Triton and Inductor caches) while the GPU checks run, so that the timed run,
    alone on the GPU afterwards, compiles nothing. Local GPU only: a remote node has its own caches."""
    tasks = []
    for plan in plans:
        pair = plan.pairs[0]
        if plan.bench and cache.benches.get(plan.bench) is None:
            tasks.append(
                Task(
                    f"{plan.lesson_id}-bench-warmup",
                    plan.bench_folder,
                    ["{python}", pair.spec.bench, "--warmup-only"],
                    900,
                )
            )
    return tasks


def _benches(
    plans: list[Plan], runner: Runner, info: dict, cache: BuildCache, gpu: bool, progress: Progress
) -> dict[str, Step]:
    found = {}
    for plan in plans:
        spec = plan.pairs[0].spec
        if not gpu or not plan.bench:
            continue
        name = plan.bench
        hit = cache.benches.get(name)
        if hit is not None:
            found[plan.lesson_id] = Step(
                "bench", hit["ok"], 0.0, "measured earlier; same code (from cache)", [], hit["data"]
            )
            continue
        progress(f"bench  {plan.lesson_id} on {info['device']} (alone on the GPU) ...")
        folder = plan.bench_folder
        [result] = runner.run_tasks(
            [
                Task(
                    f"{plan.lesson_id}-bench",
                    folder,
                    ["{python}", spec.bench, "--json", "bench.json"],
                    900,
                )
            ]
        )
        data = _read(folder / "bench.json")
        ok = data is not None and all((data.get("checks") or {}).values())
        detail = (
            ""
            if ok
            else (
                "a bench check failed: " + ", ".join(k for k, v in data["checks"].items() if not v)
                if data
                else f"{result.state}: {(result.stderr or result.stdout).strip()[-800:]}"
            )
        )
        step = Step("bench", ok, result.seconds, detail, [], data)
        if data is not None:
            cache.benches.put(name, {"ok": ok, "data": data})
        found[plan.lesson_id] = step
    return found


# ---- records -------------------------------------------------------------------------------------


def make_record(
    runner: Runner, info: dict, steps: list[Step], seconds: float, plan: Plan, pair: PackPair
) -> dict:
    answer = next((s for s in steps if s.name == "answer"), None)
    return {
        "runner": runner.kind,
        "runner_label": runner.label,
        "device": info["device"],
        "gpu": bool(info["cuda"]) and runner.kind != "interpreter",
        "torch": info["torch"],
        "triton": info["triton"],
        "python": info["python"],
        "date": _dt.date.today().isoformat(),
        "seconds": round(seconds, 1),
        "passed": all(s.ok for s in steps),
        "steps": [
            {"name": s.name, "ok": s.ok, "seconds": round(s.seconds, 2), "detail": s.detail}
            for s in steps
        ],
        "cases": [{"id": c["id"], "status": c["status"]} for c in (answer.cases if answer else [])],
        "mistakes_caught": sum(
            1 for s in steps if s.name.startswith("mistake:") and s.ok and not s.unproven
        ),
        "mistakes_unproven": sum(1 for s in steps if s.name.startswith("mistake:") and s.unproven),
        "mistakes_declared": len(pair.mistakes),
        "details": {
            s.name: [{"id": c["id"], "status": c["status"]} for c in s.cases]
            for s in steps
            if s.cases
        },
        "bench": next((s.data for s in steps if s.name == "bench" and s.data), None),
        "timing": {s.name: s.data for s in steps if s.name != "bench" and s.data},
    }


def disagreements(entries: list[dict], content_key: str) -> list[dict]:
    """Cases whose status differs between a GPU run and an interpreter run of the same packs."""
    same = [e for e in entries if e.get("content_key") == content_key]
    gpu = [e for e in same if e["record"].get("gpu")]
    cpu = [e for e in same if not e["record"].get("gpu")]
    if not gpu or not cpu:
        return []
    found = []
    g, c = gpu[-1]["record"]["details"], cpu[-1]["record"]["details"]
    for step in sorted(set(g) & set(c)):
        gs = {x["id"]: x["status"] for x in g[step]}
        cs = {x["id"]: x["status"] for x in c[step]}
        for case in sorted(set(gs) & set(cs)):
            if gs[case] != cs[case] and "skip" not in (gs[case], cs[case]):
                found.append({"step": step, "case": case, "gpu": gs[case], "interpreter": cs[case]})
    return found


def clear(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
