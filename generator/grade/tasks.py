"""Running a class's code through the trusted checker: units (each distinct piece of code once),
job folders of chunks of units, the runner's tasks (generator/checker/jobs/grade_job.py in each
folder: on this machine through the warm task server, through a command template, or as the
elements of one Slurm job array), and harvesting the results they leave.

A job writes each unit's result to results/<unit>.json as soon as it has it, so a run that was
killed (the instructor's Ctrl-C, a node that died) keeps what it finished: harvest() moves those
results into the store before anything else runs, and only the rest is planned again.

A result is cached only when nothing could have damaged it: never one whose submission tried to
get out of its worker (a sandbox event: a file, process, signal, network ... attempt, or frames
the trusted side refused), nor one that ran at the same time as such a submission (a neighbour's
trace: whatever it did to the machine, this result may show). Those serve this run only
(ResultStore.hold) and are run again the next time."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from generator.checker import copy_job_script
from generator.files.cache import Store, read_json
from generator.runners.base import Task, TaskResult

GRADE_JOB = Path(__file__).resolve().parent.parent / "checker" / "jobs" / "grade_job.py"
START_S = 600  # a task's own start: torch, the sandboxed factory, the cases
START_MARGIN_S = 60  # a worker's start and its import of the code, beyond the case time-out
MAX_TASK_S = 4 * 3600


@dataclass(frozen=True)
class Unit:
    """One distinct piece of code to check (students who handed in the same code share it)."""

    key: str
    code: str
    cell: int | None  # a notebook's exercise cell: judged without the kernel file's demo block
    module: str  # the kernel file's name


def unit_key(
    code: str, cell: int | None, checker_hash: str, runner: str, timeout: float, sandbox: str
) -> str:
    """What a result depends on: the code (byte for byte), whether it is a notebook cell, the
    checker, the runner (kind, Python, versions, device), the time-out and the sandbox."""
    parts = [
        code,
        "cell" if cell is not None else "file",
        checker_hash,
        runner,
        repr(float(timeout)),
        sandbox,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:40]


class ResultStore(Store):
    """Results by unit key, under build/cache/grade/ (each an atomic JSON file), and this run's
    results that are not cached (held in memory, for this run only)."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self.held: dict[str, dict] = {}

    def hold(self, key: str, value: dict) -> None:
        self.held[key] = value

    def data(self, key: str) -> dict | None:
        found = self.held.get(key) or self.get(key)
        return (
            found["data"]
            if isinstance(found, dict) and isinstance(found.get("data"), dict)
            else None
        )


def tried_escape(data: dict) -> bool:
    """The submission tried to act outside its worker, or sent frames the trusted side refused."""
    flags = data.get("flags") if isinstance(data.get("flags"), dict) else {}
    return bool(flags.get("events") or flags.get("protocol"))


def _clock(data: dict) -> tuple[float, float] | None:
    clock = data.get("clock")
    if (
        isinstance(clock, list)
        and len(clock) == 2
        and all(isinstance(t, (int, float)) for t in clock)
    ):
        return float(clock[0]), float(clock[1])
    return None


def uncacheable(results: dict[str, dict]) -> set[str]:
    """The keys of the results (key -> data, one run's) not to cache: those that tried to escape,
    and those whose run overlapped one of them in time (a result without its clock counts as
    overlapping)."""
    escaped = {key for key, data in results.items() if tried_escape(data)}
    spans = [_clock(results[key]) for key in escaped]
    found = set(escaped)
    for key, data in results.items():
        mine = _clock(data)
        if key not in found and any(
            mine is None or span is None or (mine[0] < span[1] and span[0] < mine[1])
            for span in spans
        ):
            found.add(key)
    return found


def harvest(folder: Path, store: ResultStore) -> int:
    """Move the unit results a run that did not finish left in its job folders into the store;
    how many were not there yet. Those not to cache are dropped: this run runs them again."""
    tasks = sorted(folder.glob("task-*")) if folder.exists() else []
    found = {key: value for task_dir in tasks for key, value in _results_in(task_dir).items()}
    return len(
        harvest_one(
            found, store, uncacheable({k: v["data"] for k, v in found.items()}), keep=False
        )[0]
    )


def _results_in(task_dir: Path) -> dict[str, dict]:
    """The unit results a job folder holds, by key (well-formed ones only)."""
    found = {}
    for path in sorted((task_dir / "results").glob("*.json")):
        value = read_json(path)
        if (
            isinstance(value, dict)
            and isinstance(value.get("data"), dict)
            and value.get("id") == path.stem
        ):
            found[path.stem] = value
    return found


def harvest_one(
    found: dict[str, dict], store: ResultStore, uncached: set[str], keep: bool = True
) -> tuple[list[str], dict[str, str]]:
    """Unit results (key -> result) into the store: (keys stored, {key: the checker's own error}).
    A unit the checker itself broke on is not stored: a later run tries it again. Those in
    `uncached` are held for this run (keep) or dropped, never stored."""
    stored, broken = [], {}
    for key, value in found.items():
        if store.data(key) is not None:
            continue
        if value["data"].get("status") == "checker_error":
            broken[key] = "the checker broke: " + str(value["data"].get("error", ""))[-300:]
        elif key in uncached:
            if keep:
                store.hold(key, value)
        else:
            store.put(key, value)
            stored.append(key)
    return stored, broken


@dataclass
class Chunk:
    task: Task
    units: list[Unit]


def plan(
    units: list[Unit],
    folder: Path,
    checker: str,
    chunk: int,
    jobs: int,
    timeout: float,
    sandbox: str,
    interpreter: bool,
    cases: int,
    share: bool = False,
    seed_done: Path | None = None,
    devices: list[str] | None = None,
) -> list[Chunk]:
    """Job folders under folder (emptied first), chunk units each: job.json, grade_job.py,
    check.py and the units' files. share: the jobs run at once on one machine and take each
    other's units when done with their own (claimed in folder/claims). seed_done: a file that
    appears once Triton's launchers are made (run.LauncherSeed): the jobs check nothing before.
    devices: the GPU of each job in turn (its CUDA_VISIBLE_DEVICES; gpus.py)."""
    if folder.exists():
        shutil.rmtree(folder)
    chunks = []
    size = max(1, chunk)
    names = [f"task-{index:04d}" for index in range(-(-len(units) // size))]
    if share:
        (folder / "claims").mkdir(parents=True)
    for index, start in enumerate(range(0, len(units), size)):
        mine = units[start : start + size]
        task_dir = folder / names[index]
        (task_dir / "units").mkdir(parents=True)
        entries = []
        for unit in mine:
            path = task_dir / "units" / unit.key / unit.module
            path.parent.mkdir()
            path.write_text(unit.code, encoding="utf-8")
            display = "lesson.ipynb" if unit.cell is not None else unit.module
            entries.append(
                {
                    "id": unit.key,
                    "path": path.relative_to(task_dir).as_posix(),
                    "display": display,
                    "cell": unit.cell,
                }
            )
        job = {
            "units": entries,
            "checker": "check.py",
            "jobs": jobs,
            "case_timeout": timeout,
            "start_margin": min(START_MARGIN_S, max(30.0, timeout)),
            "interpreter": interpreter,
            "sandbox": sandbox,
        }
        if seed_done is not None:
            job["seed_done"] = str(seed_done.resolve())
        if devices:
            job["device"] = devices[index % len(devices)]
        if share:  # the others from the next one on, so that the jobs done first spread over them
            others = names[index + 1 :] + names[:index]
            job["share"] = {"claims": "../claims", "jobs": [f"../{name}" for name in others]}
        (task_dir / "job.json").write_text(json.dumps(job, indent=1), encoding="utf-8")
        (task_dir / "check.py").write_text(checker, encoding="utf-8")
        copy_job_script(GRADE_JOB.name, task_dir)
        waves = math.ceil(
            (len(units) if share else len(mine)) / max(1, jobs)
        )  # sharing: it may run them all
        limit = min(MAX_TASK_S, START_S + waves * cases * timeout)
        chunks.append(
            Chunk(Task(f"grade-{index:04d}", task_dir, ["{python}", "grade_job.py"], limit), mine)
        )
    return chunks


@dataclass
class Finished:
    """What the tasks of a run left: refusals (no sandbox there), and units without a result."""

    refused: list[str]
    missing: dict[str, str]  # unit key -> why its task gave no result
    tasks: list[dict]


def collect_results(chunks: list[Chunk], results: list[TaskResult], store: ResultStore) -> Finished:
    refused, missing, tasks = [], {}, []
    # every folder first: a unit's result may lie in another job's (share), its neighbours in any
    found = {
        key: value for chunk in chunks for key, value in _results_in(chunk.task.folder).items()
    }
    broken = harvest_one(found, store, uncacheable({k: v["data"] for k, v in found.items()}))[1]
    for chunk, result in zip(chunks, results):
        folder = chunk.task.folder
        summary = read_json(folder / "result.json") or {}
        tasks.append(
            {
                "task": chunk.task.name,
                "units": len(chunk.units),
                "state": result.state,
                "job_id": result.job_id,
                "seconds": round(result.seconds, 1),
                "sandbox": summary.get("sandbox", "?"),
                "device": summary.get("device"),
            }
        )
        if summary.get("refused"):
            refused.append(summary["refused"])
        why = (
            summary.get("refused")
            or result.detail
            or (
                f"{result.state}: {(result.stderr or result.stdout).strip()[-300:]}"
                if result.state != "COMPLETED"
                else "the task ended without this result"
            )
        )
        for unit in chunk.units:
            if store.data(unit.key) is None:
                missing[unit.key] = broken.get(unit.key, why)
    return Finished(refused, missing, tasks)
