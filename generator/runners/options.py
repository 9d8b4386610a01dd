"""The runner settings a build and a grading run share (BuildOptions and GradeOptions take them in):
which runner, its Python, its command template, its Slurm settings and how many steps run at once."""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.runners.base import default_jobs
from generator.runners.slurm import SlurmSettings


@dataclass(kw_only=True)
class RunnerOptions:
    runner: str = "auto"  # auto | cuda | interpreter | command | slurm
    python: str | None = None  # the runner's Python (default: this one; python3 for command)
    runner_command: str | None = None  # runner "command"'s template: 'ssh gpu01 {shell_cmd}', ...
    slurm: SlurmSettings | None = None  # runner "slurm"'s settings (default: SlurmSettings())
    jobs: int = field(default_factory=default_jobs)  # steps at once (the CPU count, at most 8)
