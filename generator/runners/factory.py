"""The runner a build or a grading run asks for, by kind: auto, cuda, interpreter, command or slurm."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable

from generator.runners.base import RunnerError
from generator.runners.local import Runner
from generator.runners.options import RunnerOptions
from generator.runners.slurm import SlurmSettings, SlurmVerifier


def make_runner(
    options: RunnerOptions,
    cache_dir: Path | None,
    probe_cache: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
):
    """The runner of options.runner (auto: cuda where torch sees a GPU, else the interpreter);
    cache_dir: Triton's cache for local runners; probe_cache: where auto's probe is kept."""
    kind, python, template, slurm = (
        options.runner,
        options.python,
        options.runner_command,
        options.slurm,
    )
    if kind == "slurm":
        settings = slurm or SlurmSettings()
        return SlurmVerifier(
            settings.model_copy(update={"python": python}) if python else settings, progress
        )
    python = python or ("python3" if kind == "command" else sys.executable)
    if kind == "auto":
        with tempfile.TemporaryDirectory(prefix="coursepack-probe-") as where:
            # an empty folder: the probe imports nothing of the caller's folder (a torch.py there)
            info = Runner("cuda", python).probe(Path(where), probe_cache)
        kind = "cuda" if info["cuda"] else "interpreter"
    if kind == "command" and not template:
        raise RunnerError(
            "runner 'command' needs --runner-command, e.g. 'ssh gpu01 {shell_cmd}' "
            "or 'srun --gres=gpu:1 --chdir {cwd} {cmd}'"
        )
    if kind not in ("cuda", "interpreter", "command"):
        raise RunnerError(
            f"unknown runner '{kind}' (expected auto, cuda, interpreter, command or slurm)"
        )
    return Runner(kind, python, template or "", cache_dir=cache_dir)
