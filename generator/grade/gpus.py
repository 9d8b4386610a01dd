"""The GPUs of this machine that a local grading run spreads its trusted processes over.

A graded submission runs in a fresh worker with its own CUDA context, and one GPU's driver starts
and ends about 13 contexts a second, whatever the cores (BENCHMARKS.md): a machine with several
GPUs grades faster only when its workers are spread over them. Each trusted process (a task of
the run) is given one GPU, which its workers alone see (CUDA_VISIBLE_DEVICES)."""

from __future__ import annotations

import os
from typing import Callable, Mapping

from generator.checker.shared.environment import nvml_count


def visible_gpus(
    environ: Mapping[str, str] = os.environ, count: Callable[[], int] = nvml_count
) -> list[str]:
    """The devices as CUDA_VISIBLE_DEVICES names them, one per GPU this process may use: the
    instructor's own CUDA_VISIBLE_DEVICES, entries up to the first empty one (as CUDA reads it), or
    every GPU that NVML counts; [] where neither says (nothing is pinned then)."""
    chosen = environ.get("CUDA_VISIBLE_DEVICES")
    if chosen is None:
        return [str(index) for index in range(count())]
    entries = []
    for entry in chosen.split(","):
        if not entry.strip():
            break
        entries.append(entry.strip())
    return entries
