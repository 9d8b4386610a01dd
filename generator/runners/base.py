"""What every runner shares: a task (a folder and a command), its result, the runner error, and
the probe that reads a Python's torch, triton and device."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from generator.errors import CoursepackError

# gc is off while torch imports, and the process ends without the interpreter's teardown: no
# collection passes over torch's objects, a third of this process's time (1.2 of 4 s on the 2-core
# CI machine). (A normal exit after gc.freeze() would have nanobind report Triton's types as leaked.)
PROBE_SCRIPT = (
    "import gc; gc.disable(); import json, os, sys, torch, triton; g = torch.cuda.is_available();"
    "print(json.dumps({'torch': torch.__version__, 'triton': triton.__version__,"
    "'python': sys.version.split()[0], 'cuda': g,"
    "'device': torch.cuda.get_device_name(0) if g else 'CPU',"
    "'gpu_memory': torch.cuda.get_device_properties(0).total_memory if g else 0}),"
    "flush=True); os._exit(0)"
)


@dataclass(frozen=True)
class Task:
    name: str  # the lesson id
    folder: Path  # the working directory
    argv: list[str]  # "{python}" stands for the runner's Python
    timeout_s: float


@dataclass
class TaskResult:
    name: str
    state: str  # COMPLETED, FAILED, TIMEOUT (Slurm adds its own states)
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    job_id: str = ""
    attempts: int = 1
    detail: str = ""


def default_jobs() -> int:
    """Steps run at once by default: the CPU count, at most 8."""
    return min(8, os.cpu_count() or 2)


class RunnerError(CoursepackError):
    pass


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
