"""Verification tasks on a Slurm cluster: one `sbatch --array` job per build, followed with squeue.

Each task (one lesson x locale) is "run ARGV in FOLDER". The tasks of a build become the elements
of one job array. Their states come from Slurm (`squeue --states=all`, which keeps finished jobs
for MinJobAge; accounting is not needed), backed by small files the job script writes (start time,
exit status), so a task that left the queue between two polls is still accounted for.

- NODE_FAIL and PREEMPTED are resubmitted (settings.max_retries), as a new array of those tasks.
- A task pending longer than settings.pending_limit_s is cancelled with the reason Slurm gave.
- Ctrl-C, SIGTERM or any error while waiting cancels every job still alive (scancel).
- With settings.staging, task folders are copied to a shared filesystem first and copied back.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from generator.runners.base import PROBE_SCRIPT, RunnerError, Task, TaskResult
from generator.errors import CoursepackError, ProblemCollector
from generator.files.yamlio import dotted, load_yaml

DONE = {"COMPLETED"}
TERMINAL = {
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "SPECIAL_EXIT",
    "REVOKED",
}
RETRIED = {"NODE_FAIL", "PREEMPTED"}
EXPLAIN = {
    "FAILED": "exited with status {rc}",
    "TIMEOUT": "killed by Slurm at its time limit ({limit}); raise time_limit (--slurm-time)",
    "CANCELLED": "cancelled (scancel, or an administrator)",
    "OUT_OF_MEMORY": "killed for using more memory than it asked for; add e.g. --mem=16G to sbatch_args",
    "NODE_FAIL": "its node failed",
    "PREEMPTED": "preempted by a job of higher priority",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "passed its deadline",
}
COMMAND_TIMEOUT_S = 30.0
OUTPUT_LIMIT = 256 * 1024  # bytes read back from each end of a task's output files


class SlurmError(CoursepackError):
    """Slurm cannot be used: commands missing, controller unreachable, submission refused."""


class SlurmSettings(BaseModel):
    """What an instructor keeps in a settings file (examples/slurm.yaml); every key is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    time_limit: Optional[str] = Field(
        None, pattern=r"^(\d+-)?\d+(:\d+){0,2}$"
    )  # Slurm's --time; default: from the tasks
    gres: Optional[str] = "gpu:1"  # "" or null: no --gres
    sbatch_args: list[
        str
    ] = []  # passed to sbatch as they are, e.g. ["--mem=16G", "--constraint=h100"]
    setup_lines: list[str] = []  # shell lines run first in each task, e.g. "module load cuda/12.4"
    python: str = "python3"  # the Python with torch and triton on the nodes
    staging: Optional[Path] = (
        None  # a folder the nodes share; task folders are copied there and back
    )
    max_retries: int = Field(2, ge=0, le=20)  # resubmissions after NODE_FAIL or PREEMPTED
    pending_limit_s: float = Field(1800, gt=0)  # a task pending longer fails with Slurm's reason
    poll_s: float = Field(5, gt=0)  # squeue interval
    max_running: Optional[int] = Field(None, ge=1)  # array throttle (--array=...%N)
    job_name: str = Field("coursepack", pattern=r"^[A-Za-z0-9_.-]+$")
    unreachable_s: float = Field(
        120, gt=0
    )  # how long a build waits out a controller that stopped answering

    @field_validator("staging", mode="before")
    @classmethod
    def _expand(cls, value):
        return (
            Path(os.path.expanduser(os.path.expandvars(str(value))))
            if value not in (None, "")
            else None
        )


def load_settings(
    path: Path | None, overrides: dict, options: dict[str, str] | None = None
) -> SlurmSettings:
    """The settings file (YAML; optional) with command-line overrides (None values are ignored).
    Every mistake is reported at once, as file:line:col, or as the command-line option (options:
    setting -> option name; default --slurm-SETTING)."""
    problems = ProblemCollector(Path.cwd())
    doc = load_yaml(path, problems) if path is not None else None
    if doc is not None and not isinstance(doc.data, dict):
        problems.add(
            doc.path, "expected a mapping of settings (partition: gpu, ...)", line=1, column=1
        )
    problems.raise_if_any()
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return SlurmSettings.model_validate({**(doc.data if doc else {}), **given})
    except ValidationError as exc:
        for error in exc.errors():
            key = error["loc"][0] if error["loc"] else ""
            message = _message(error)
            if key in given:
                problems.add(
                    Path("command line"), message, (options or {}).get(key, f"--slurm-{key}")
                )
            elif doc is not None:
                where = tuple(error["loc"][:2]) if error["type"] != "extra_forbidden" else (key,)
                line, column = doc.position(where, of_key=error["type"] == "extra_forbidden")
                problems.add(doc.path, message, dotted(where), line, column)
        problems.raise_if_any()
        raise


PATTERNS = {
    "time_limit": "a Slurm time: minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]",
    "job_name": "letters, digits, '_', '.' and '-' only",
}


def _message(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return f"unknown setting (known: {', '.join(SlurmSettings.model_fields)})"
    if error["type"] == "string_pattern_mismatch":
        return f"expected {PATTERNS[error['loc'][0]]} (got {error.get('input')!r})"
    return error["msg"].replace("Input should", "expected to") + f" (got {error.get('input')!r})"


# ---- tasks and results ----------------------------------------------------------------------


@dataclass
class _Track:
    """One task as this side follows it."""

    index: int
    task: Task
    folder: Path  # where it runs (the staged copy, or the task's own folder)
    job_id: str = ""
    state: str = "SUBMITTING"
    reason: str = ""
    node: str = ""
    attempts: int = 0
    submitted: float = 0.0
    limit: str = ""  # --time of the current attempt
    started: float | None = None
    result: TaskResult | None = None
    history: list[str] = field(default_factory=list)  # states of earlier attempts, for the detail


# ---- the runner -----------------------------------------------------------------------------


class SlurmRunner:
    def __init__(
        self,
        settings: SlurmSettings,
        progress: Callable[[str], None],
        tty: bool | None = None,
        stream=None,
    ):
        self.settings = settings
        self.progress = progress
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.job_ids: list[str] = []
        self._status = ""
        self._quiet_since: float | None = None

    # -- talking to Slurm --

    def _call(
        self, argv: list[str], timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        except FileNotFoundError as exc:
            raise SlurmError(
                f"'{argv[0]}' is not on PATH: --runner slurm runs where Slurm's commands "
                "(sbatch, squeue, scontrol, scancel) are, e.g. a login node"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmError(f"'{shlex.join(argv)}' did not answer within {timeout:.0f} s") from exc

    def check_reachable(self) -> None:
        """Raise SlurmError within seconds when the controller does not answer."""
        done = self._call(["scontrol", "ping"], timeout=15)
        answer = (done.stdout + done.stderr).strip()
        if done.returncode != 0 or " is UP" not in answer:
            first = answer.splitlines()[0] if answer else f"exit status {done.returncode}"
            raise SlurmError(
                f"the Slurm controller cannot be reached ({first}); "
                "check `scontrol ping` and SLURM_CONF, or ask the cluster's administrators"
            )

    def run_tasks(self, tasks: list[Task]) -> list[TaskResult]:
        """Run every task as an element of one job array; wait; return the results in task order."""
        if not tasks:
            return []
        self.check_reachable()
        jobdir = self._job_folder(tasks)
        tracks: list[_Track] = []
        try:
            with _sigterm_raises():
                tracks += [
                    _Track(i, task, self._stage(jobdir, i, task)) for i, task in enumerate(tasks)
                ]
                script = self._write_script(jobdir, tracks)
                self._submit(jobdir, script, tracks)
                self._follow(jobdir, script, tracks)
        except BaseException:
            self._cancel(tracks)
            raise
        finally:
            self._end_status()
            shutil.rmtree(jobdir, ignore_errors=True)
        return [track.result for track in tracks]

    # -- folders and the job script --

    def _job_folder(self, tasks: list[Task]) -> Path:
        if self.settings.staging is not None:
            base = self.settings.staging.resolve()
        else:
            base = Path(
                os.path.commonpath([str(t.folder.resolve().parent) for t in tasks])
            )  # beside, never inside, a task
        base.mkdir(parents=True, exist_ok=True)
        jobdir = Path(tempfile.mkdtemp(prefix=".coursepack-slurm-", dir=base))
        (jobdir / "logs").mkdir()
        return jobdir

    def _stage(self, jobdir: Path, index: int, task: Task) -> Path:
        if self.settings.staging is None:
            return task.folder.resolve()
        staged = jobdir / "tasks" / f"{index:04d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', task.name)}"
        shutil.copytree(task.folder, staged, symlinks=True)
        return staged

    def _argv(self, task: Task) -> list[str]:
        python = shlex.split(self.settings.python)
        return [part for arg in task.argv for part in (python if arg == "{python}" else [arg])]

    def _write_script(self, jobdir: Path, tracks: list[_Track]) -> Path:
        cases = [
            f"{t.index}) cd {shlex.quote(str(t.folder))} && {shlex.join(self._argv(t.task))} ;;  "
            f"# {t.task.name}"
            for t in tracks
        ]
        lines = [
            "#!/bin/bash",
            "# coursepack: one array element per lesson x locale",
            f'tag={shlex.quote(str(jobdir / "logs"))}/"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"',
            'date +%s.%N > "$tag.start"',
            *self.settings.setup_lines,
            'case "$SLURM_ARRAY_TASK_ID" in',
            *cases,
            '*) echo "coursepack: no task $SLURM_ARRAY_TASK_ID in this job" >&2; false ;;',
            "esac",
            "rc=$?",
            'echo "$rc $(date +%s.%N)" > "$tag.rc"',
            'exit "$rc"',
            "",
        ]
        script = jobdir / "tasks.sh"
        script.write_text("\n".join(lines), encoding="utf-8")
        script.chmod(0o755)
        return script

    def _time_limit(self, tracks: list[_Track]) -> str:
        if self.settings.time_limit:
            return self.settings.time_limit
        return str(max(1, math.ceil(max(t.task.timeout_s for t in tracks) / 60)))

    # -- submitting, following, cancelling --

    def _submit(self, jobdir: Path, script: Path, tracks: list[_Track]) -> None:
        s = self.settings
        array = array_ranges([t.index for t in tracks]) + (
            f"%{s.max_running}" if s.max_running else ""
        )
        argv = [
            "sbatch",
            "--parsable",
            f"--array={array}",
            f"--job-name={s.job_name}",
            "--no-requeue",
            f"--time={self._time_limit(tracks)}",
            f"--chdir={jobdir}",
            f"--output={jobdir}/logs/%A_%a.out",
            f"--error={jobdir}/logs/%A_%a.err",
        ]
        for flag, value in (
            ("partition", s.partition),
            ("account", s.account),
            ("qos", s.qos),
            ("gres", s.gres),
        ):
            if value:
                argv.append(f"--{flag}={value}")
        done = self._call([*argv, *s.sbatch_args, str(script)])
        job = done.stdout.strip().split(";")[0]
        if done.returncode != 0 or not job.isdigit():
            raise SlurmError(
                f"sbatch refused the job: {(done.stderr or done.stdout).strip()}\n  command: {shlex.join(argv)}"
            )
        self.job_ids.append(job)
        now = time.monotonic()
        for t in tracks:
            t.job_id, t.state, t.reason, t.submitted, t.started = (
                f"{job}_{t.index}",
                "PENDING",
                "",
                now,
                None,
            )
            t.limit = self._time_limit(tracks)
            t.attempts += 1
        self._say(
            f"slurm: submitted job {job}: {len(tracks)} task{'s' * (len(tracks) != 1)} "
            f"(array {array}, --time={self._time_limit(tracks)}{', partition ' + s.partition if s.partition else ''})"
        )

    def _follow(self, jobdir: Path, script: Path, tracks: list[_Track]) -> None:
        while True:
            live = [t for t in tracks if t.result is None]
            rows = self._squeue(sorted({t.job_id.split("_")[0] for t in live}))
            if rows is not None:
                now = time.monotonic()
                for t in live:
                    self._update(jobdir, t, rows.get(t.job_id), now)
                retry = [t for t in live if t.result is None and t.state in RETRIED]
                if retry:
                    self._resubmit(jobdir, script, retry)
            self._show(tracks)
            if all(t.result is not None for t in tracks):
                return
            time.sleep(self.settings.poll_s)

    def _squeue(self, jobs: list[str]) -> dict[str, tuple[str, str, str]] | None:
        """{"JOB_INDEX": (state, node, reason)} of every element Slurm still knows; None when the
        controller did not answer (tolerated for settings.unreachable_s)."""
        done = self._call(
            [
                "squeue",
                "--noheader",
                "--array",
                "--states=all",
                f"--jobs={','.join(jobs)}",
                "--format=%i|%T|%N|%r",
            ]
        )
        if done.returncode != 0 and "Invalid job id" not in done.stderr:
            now = time.monotonic()
            self._quiet_since = self._quiet_since or now
            if now - self._quiet_since > self.settings.unreachable_s:
                raise SlurmError(
                    f"squeue failed for {now - self._quiet_since:.0f} s: {done.stderr.strip()}"
                )
            return None
        self._quiet_since = None
        rows = {}
        for line in done.stdout.splitlines():
            parts = line.strip().split("|", 3)
            if len(parts) == 4:
                for job_id in expand_ids(parts[0]):
                    rows[job_id] = (parts[1], parts[2], parts[3])
        return rows

    def _update(
        self, jobdir: Path, t: _Track, row: tuple[str, str, str] | None, now: float
    ) -> None:
        if row is None:  # left the queue between two polls (MinJobAge), or cancelled while pending
            self._vanished(jobdir, t, now)
            return
        t.state, node, reason = row
        t.node = node or t.node
        if reason and reason != "None":
            t.reason = reason
        if t.state == "RUNNING" and t.started is None:
            t.started = now
        if t.state == "PENDING" and now - t.submitted > self.settings.pending_limit_s:
            self._call(["scancel", t.job_id])
            t.state = "PENDING_TOO_LONG"
            self._finish(
                jobdir,
                t,
                f"still pending after {now - t.submitted:.0f} s (pending_limit_s "
                f"{self.settings.pending_limit_s:g}); Slurm's reason: {t.reason or 'none given'}; cancelled",
            )
        elif t.state in TERMINAL and not (
            t.state in RETRIED and t.attempts <= self.settings.max_retries
        ):
            self._finish(jobdir, t)

    def _vanished(self, jobdir: Path, t: _Track, now: float) -> None:
        if now - t.submitted < 2 * self.settings.poll_s + 5:  # not listed yet
            return
        rc = _read_rc(jobdir / "logs" / f"{t.job_id}.rc")
        if rc is not None:
            t.state = "COMPLETED" if rc[0] == 0 else "FAILED"
            self._finish(jobdir, t)
        elif t.state == "PENDING":
            t.state = "CANCELLED"
            self._finish(jobdir, t, "cancelled while pending (scancel, or an administrator)")
        else:
            last, t.state = t.state.lower(), "UNKNOWN"
            self._finish(
                jobdir,
                t,
                f"left Slurm's queue while {last} without an exit status "
                "(raise MinJobAge, or lower poll_s)",
            )

    def _resubmit(self, jobdir: Path, script: Path, retry: list[_Track]) -> None:
        for t in retry:
            t.history.append(f"{t.state} on {t.node or '?'} (job {t.job_id})")
            self._say(
                f"slurm: {t.task.name}: {t.state} on {t.node or '?'} (job {t.job_id}); "
                f"resubmitting (attempt {t.attempts + 1} of {self.settings.max_retries + 1})"
            )
            if (
                self.settings.staging is not None
            ):  # a fresh copy: the failed attempt may have written to it
                shutil.rmtree(t.folder, ignore_errors=True)
                shutil.copytree(t.task.folder, t.folder, symlinks=True)
        self._submit(jobdir, script, retry)

    def _finish(self, jobdir: Path, t: _Track, detail: str | None = None) -> None:
        logs = jobdir / "logs"
        rc = _read_rc(logs / f"{t.job_id}.rc")
        returncode = rc[0] if rc else (0 if t.state == "COMPLETED" else None)
        start = _read_float(logs / f"{t.job_id}.start")
        seconds = (
            (rc[1] - start)
            if rc and start
            else (time.monotonic() - t.started if t.started else 0.0)
        )
        stdout, stderr = _tail(logs / f"{t.job_id}.out"), _tail(logs / f"{t.job_id}.err")
        if detail is None:
            detail = self._explain(t, returncode, stderr)
        if self.settings.staging is not None and t.folder.exists():
            shutil.copytree(t.folder, t.task.folder, symlinks=True, dirs_exist_ok=True)
        t.result = TaskResult(
            t.task.name,
            t.state,
            returncode,
            stdout,
            stderr,
            round(max(seconds, 0.0), 2),
            t.job_id,
            t.attempts,
            detail,
        )

    def _explain(self, t: _Track, returncode: int | None, stderr: str) -> str:
        if t.state == "COMPLETED":
            return ""
        where = f"job {t.job_id}" + (f" on {t.node}" if t.node else "")
        what = EXPLAIN.get(t.state, f"ended in state {t.state}").format(
            rc=returncode, limit=f"--time={t.limit}"
        )
        last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
        if t.state == "FAILED" and last:
            what += f": {last[:200]}"
        earlier = f"; earlier attempts: {', '.join(t.history)}" if t.history else ""
        return f"{t.state}: {what} ({where}){earlier}"

    def _cancel(self, tracks: list[_Track]) -> None:
        jobs = sorted({t.job_id.split("_")[0] for t in tracks if t.result is None and t.job_id})
        if not jobs:
            return
        try:
            done = self._call(["scancel", *jobs], timeout=15)
            ok, why = done.returncode == 0, done.stderr.strip()
        except SlurmError as exc:
            ok, why = False, str(exc)
        self._say(
            f"slurm: cancelled job{'s' * (len(jobs) > 1)} {', '.join(jobs)}"
            if ok
            else f"slurm: could not cancel job(s) {', '.join(jobs)} ({why}); run: scancel {' '.join(jobs)}"
        )

    # -- progress --

    def _show(self, tracks: list[_Track]) -> None:
        pending = [t for t in tracks if t.result is None and t.state in ("PENDING", "SUBMITTING")]
        running = sum(
            1 for t in tracks if t.result is None and t.state not in ("PENDING", "SUBMITTING")
        )
        done = sum(1 for t in tracks if t.result is not None and t.state in DONE)
        failed = sum(1 for t in tracks if t.result is not None and t.state not in DONE)
        oldest = min(pending, key=lambda t: t.submitted, default=None)
        why = f" ({oldest.reason})" if oldest is not None and oldest.reason else ""
        line = (
            f"slurm job {','.join(self.job_ids)}: {len(pending)} pending{why}, {running} running, "
            f"{done} done, {failed} failed of {len(tracks)}"
        )
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r" + line[:width] + "\x1b[K")
            self.stream.flush()
        elif line != self._status:
            self.progress(line)
        self._status = line

    def _say(self, line: str) -> None:
        if self.tty and self._status:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self.progress(line)

    def _end_status(self) -> None:
        if self.tty and self._status:
            self.stream.write("\n")
            self.stream.flush()
        self._status = ""


# ---- helpers --------------------------------------------------------------------------------


def array_ranges(indexes: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8' (sbatch --array syntax)."""
    parts, ordered = [], sorted(indexes)
    start = prev = ordered[0]
    for i in ordered[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return ",".join(parts)


def expand_ids(text: str) -> list[str]:
    """'12_3' -> ['12_3']; '12_[4-6,9%2]' (pending elements not yet split) -> ['12_4', '12_5', '12_6', '12_9']."""
    match = re.fullmatch(r"(\d+)_\[([^\]%]+)(%\d+)?\]", text)
    if not match:
        return [text]
    ids = []
    for part in match.group(2).split(","):
        low, _, high = part.partition("-")
        ids += [f"{match.group(1)}_{i}" for i in range(int(low), int(high or low) + 1)]
    return ids


def _read_rc(path: Path) -> tuple[int, float] | None:
    try:
        rc, end = path.read_text().split()
        return int(rc), float(end)
    except (OSError, ValueError):
        return None


def _read_float(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - OUTPUT_LIMIT))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


@contextmanager
def _sigterm_raises():
    """While jobs are out, SIGTERM (a CI timeout, `kill`) cancels them like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class SlurmVerifier:
    """Verification through a Slurm cluster: every task of a build is one element of one job array
    (generator/runners/slurm.py follows the job states). The nodes' versions and device come from a probe
    task, kept for an hour: a probe each build would submit a job even when nothing else runs."""

    kind = "slurm"
    PROBE_TTL_S = 3600

    def __init__(self, settings, progress: Callable[[str], None] = lambda _: None):
        self.settings = settings
        self.slurm = SlurmRunner(settings, progress)
        self.python = settings.python

    @property
    def label(self) -> str:
        return f"Slurm cluster (partition {self.settings.partition or 'default'}, gres {self.settings.gres or 'none'})"

    def identity(self) -> str:
        return json.dumps(
            ["slurm", self.settings.model_dump(mode="json", exclude={"poll_s", "unreachable_s"})],
            sort_keys=True,
        )

    def probe(self, cwd: Path, cache: Path | None = None) -> dict:
        if cache is not None:
            try:
                saved = json.loads(cache.read_text(encoding="utf-8"))
                if (
                    saved.get("identity") == self.identity()
                    and time.time() - saved["at"] < self.PROBE_TTL_S
                ):
                    return saved["info"]
            except (OSError, ValueError, KeyError):
                pass
        folder = cwd / "work" / "slurm-probe"
        folder.mkdir(parents=True, exist_ok=True)
        [result] = self.slurm.run_tasks(
            [Task("probe", folder, ["{python}", "-c", PROBE_SCRIPT], 300)]
        )
        if result.state != "COMPLETED":
            raise RunnerError(
                f"the Slurm probe job ({result.job_id}) did not run torch and triton with "
                f"{self.python}: {result.state}: {result.detail or result.stderr.strip()[-600:]}"
            )
        info = json.loads(result.stdout.strip().splitlines()[-1])
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(
                json.dumps({"identity": self.identity(), "at": time.time(), "info": info}),
                encoding="utf-8",
            )
        return info

    def check_usable(self, info: dict) -> None:
        self.slurm.check_reachable()

    def warm_up(self) -> None:
        """Nothing to start ahead: the nodes import torch in their own jobs."""

    def run_tasks(
        self, tasks: list[Task], progress: Callable[[str], None] = lambda _: None, parallel: int = 1
    ) -> list[TaskResult]:
        return self.slurm.run_tasks(tasks)

    @property
    def job_ids(self) -> list[str]:
        return list(self.slurm.job_ids)
