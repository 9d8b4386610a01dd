"""Runners on this machine: its GPU, the Triton interpreter on its CPU, or a command template (ssh,
srun, docker), with the warm task server that forks each step from one torch import. A runner runs
tasks: a folder and a command each; one task verifies one lesson (generator/checker/jobs/verify_job.py is
what the command runs). The types they share are in base.py; make_runner (factory.py) picks one.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from generator.runners.base import PROBE_SCRIPT, RunnerError, RunResult, Task, TaskResult

TASK_SERVER = Path(__file__).resolve().parent.parent / "checker" / "jobs" / "task_server.py"
_SERVERS: dict[str, "TaskServer"] = {}
# Read when torch or triton is imported (the server's import serves every task): a change starts a
# new server. Every other variable is the task's own (the child takes the environment of its request).
# (Triton reads its own variables, TRITON_CACHE_DIR and TRITON_INTERPRET among them, when used.)
IMPORT_TIME_ENV = (
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_HOME",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
)
_SERVERS_LOCK = threading.Lock()


class TaskServer:
    """A warm process (generator/checker/jobs/task_server.py) that imported torch and triton once and
    forks a child per script task: a lesson's verification then starts without importing them.
    One per runner Python and environment, for the life of this process (a test session runs many
    builds); every request is answered, and a dead server makes run() return None (the caller
    then starts a process as before)."""

    START_WAIT_S = 600  # for the server's import of torch (a cold disk) and the task's fork

    def __init__(self, python: str, env: dict[str, str]):
        self.tmp = Path(tempfile.mkdtemp(prefix="coursepack-tasks-"))
        with open(self.tmp / "server.err", "wb") as errors:
            self.process = subprocess.Popen(
                [python, str(TASK_SERVER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=env,
                text=True,
                bufsize=1,
            )
        self.events: dict[int, dict] = {}
        self.cond = threading.Condition()
        self.writing = threading.Lock()  # one request line at a time from the runner's threads
        self.next_id = 0
        self.alive = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                if "id" in message:
                    self.events.setdefault(message["id"], {}).update(message)
                self.cond.notify_all()
        with self.cond:
            self.alive = False
            self.cond.notify_all()

    def run(
        self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str]
    ) -> RunResult | None:
        """The task's result; None if the server cannot run it (the caller starts a process). The
        timeout counts from the task's start, not from the server's own import of torch."""
        with self.cond:
            if not self.alive:
                return None
            task_id, self.next_id = self.next_id, self.next_id + 1
        out, err = self.tmp / f"{task_id}.out", self.tmp / f"{task_id}.err"
        request = {
            "id": task_id,
            "cwd": str(Path(cwd).resolve()),
            "argv": argv,
            "env": env,
            "out": str(out),
            "err": str(err),
        }
        start = time.monotonic()
        try:
            with self.writing:
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
        except (OSError, ValueError):
            return None
        with self.cond:
            if not self.cond.wait_for(
                lambda: "pid" in self.events.get(task_id, {}) or not self.alive, self.START_WAIT_S
            ):
                self.alive = False  # never started: stop the server, so that the task never does
                self.process.kill()
            if "pid" not in self.events.get(task_id, {}):
                self.events.pop(task_id, None)
                return None
            timed_out, deadline = False, time.monotonic() + timeout
            while "exit" not in self.events[task_id] and self.alive:
                left = deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                elif timed_out:
                    break  # killed, and still no word of its end
                else:
                    timed_out, deadline = True, time.monotonic() + 10
                    self._kill(self.events[task_id]["pid"])
            event = self.events.pop(task_id)
        result = RunResult(
            124 if timed_out else event.get("exit", -9),
            _read_text(out),
            _read_text(err),
            time.monotonic() - start,
            timed_out,
        )
        for path in (out, err):
            path.unlink(missing_ok=True)
        return result

    @staticmethod
    def _kill(pid: int | None) -> None:
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


@atexit.register
def close_servers() -> None:
    for server in list(_SERVERS.values()):
        server.close()
    _SERVERS.clear()


@dataclass
class Runner:
    """Where packs are run. kind: cuda, interpreter or command."""

    kind: str
    python: str = sys.executable
    template: str = ""
    timeout: float = 600.0
    cache_dir: Path | None = None  # Triton's compile cache for local runs

    @property
    def label(self) -> str:
        return {
            "cuda": "local CUDA GPU",
            "interpreter": "Triton interpreter on the CPU",
            "command": f"command runner ({self.template.split()[0] if self.template else '?'})",
        }[self.kind]

    def identity(self) -> str:
        return json.dumps([self.kind, self.python, self.template])

    def run_tasks(
        self, tasks: list[Task], progress: Callable[[str], None] = lambda _: None, parallel: int = 1
    ) -> list[TaskResult]:
        """Each task's command in its folder; up to `parallel` at once. A task's argv starts with
        "{python}": run() puts the runner's Python there."""

        def one(task: Task) -> TaskResult:
            if task.argv[:1] != ["{python}"]:
                raise RunnerError(
                    f"task {task.name}: its command must start with {{python}}: {task.argv}"
                )
            result = self.run(task.argv[1:], task.folder, task.timeout_s)
            state = (
                "TIMEOUT"
                if result.timed_out
                else ("COMPLETED" if result.returncode == 0 else "FAILED")
            )
            detail = (
                f"timed out after {task.timeout_s:.0f} s"
                if result.timed_out
                else (
                    ""
                    if result.returncode == 0
                    else f"exit status {result.returncode}: {result.stderr.strip()[-600:]}"
                )
            )
            return TaskResult(
                task.name,
                state,
                result.returncode,
                result.stdout,
                result.stderr,
                result.seconds,
                detail=detail,
            )

        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            return list(pool.map(one, tasks))

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        if self.cache_dir is not None:
            env["TRITON_CACHE_DIR"] = str(self.cache_dir)
        if self.kind == "interpreter":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        return env

    def warm_up(self) -> None:
        """Start the task server now (torch imports while the build renders); local Linux runs only."""
        self._server(self._env())

    def _server(self, env: dict[str, str]) -> TaskServer | None:
        if (
            self.kind not in ("cuda", "interpreter")
            or not sys.platform.startswith("linux")
            or os.environ.get("COURSEPACK_NO_TASK_SERVER")
        ):
            return None
        key = json.dumps([self.python, self.kind, [env.get(name) for name in IMPORT_TIME_ENV]])
        with _SERVERS_LOCK:
            server = _SERVERS.get(key)
            if server is None or not server.alive:
                try:
                    server = _SERVERS[key] = TaskServer(self.python, env)
                except OSError:
                    return None
            return server

    def run(self, args: list[str], cwd: Path, timeout: float | None = None) -> RunResult:
        env = self._env()
        if args and args[0].endswith(".py"):
            server = self._server(env)
            result = server.run(args, cwd, timeout or self.timeout, env) if server else None
            if result is not None:
                return result
        command = [self.python, *args]
        shell = False
        if self.kind == "command":
            command = expand_template(self.template, cwd, command)
            shell = True
        start = time.monotonic()
        try:
            done = subprocess.run(
                command,
                cwd=cwd,
                env=env,
                shell=shell,
                capture_output=True,
                text=True,
                timeout=timeout or self.timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            return RunResult(
                124, _text(exc.stdout), _text(exc.stderr), time.monotonic() - start, True
            )
        except OSError as exc:
            raise RunnerError(f"cannot start the {self.kind} runner ({command!r}): {exc}") from exc
        return RunResult(done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def probe(self, cwd: Path, cache: Path | None = None) -> dict:
        """Versions and device of the runner; cached locally while torch and triton are unchanged."""
        stamp = self._install_stamp() if cache is not None and self.kind != "command" else None
        if stamp is not None:
            try:
                saved = json.loads(cache.read_text(encoding="utf-8"))
                if saved.get("stamp") == stamp:
                    return saved["info"]
            except (OSError, ValueError):
                pass
        info = self._probe(cwd)
        if stamp is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"stamp": stamp, "info": info}), encoding="utf-8")
        return info

    def _install_stamp(self) -> str | None:
        """Where torch and triton are installed and when they changed, without importing them."""
        script = (
            "import importlib.util as u, os, sys; s = [u.find_spec(m) for m in ('torch', 'triton')];"
            "print(repr([sys.executable] + [(x.origin, os.path.getmtime(x.origin)) for x in s if x]))"
        )
        try:
            done = subprocess.run(
                [self.python, "-c", script], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        devices = (
            sorted(p.name for p in Path("/dev").glob("nvidia*")) if Path("/dev").exists() else []
        )
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        return (
            json.dumps([self.kind, done.stdout.strip(), devices, visible, PROBE_SCRIPT])
            if done.returncode == 0
            else None
        )

    def _probe(self, cwd: Path) -> dict:
        result = self.run(["-c", PROBE_SCRIPT], cwd, timeout=300)
        if result.returncode != 0:
            raise RunnerError(
                f"the {self.kind} runner cannot import torch and triton with {self.python}:\n"
                + result.stderr.strip()[-800:]
            )
        info = json.loads(result.stdout.strip().splitlines()[-1])
        if self.kind == "interpreter":
            info["device"] = "CPU (Triton interpreter)"
        return info

    def check_usable(self, info: dict) -> None:
        if self.kind == "cuda" and not info["cuda"]:
            raise RunnerError(
                "runner 'cuda' was chosen but torch sees no CUDA GPU (use --runner interpreter)"
            )


def expand_template(template: str, cwd: Path, command: list[str]) -> str:
    """{cwd}: the folder; {cmd}: the command, for a local shell (srun, docker);
    {shell_cmd}: 'cd FOLDER && COMMAND' as one quoted word, for a remote shell (ssh HOST {shell_cmd})."""
    folder = shlex.quote(str(cwd))
    return template.format(
        cwd=folder,
        cmd=shlex.join(command),
        shell_cmd=shlex.quote(f"cd {folder} && {shlex.join(command)}"),
    )


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
