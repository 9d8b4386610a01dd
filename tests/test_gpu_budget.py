"""How much verification runs at once on one GPU (gate/verify.py): bounded by the GPU's memory, so
that a course build does not run the device out of memory with every lesson's processes at once."""

from __future__ import annotations

import json
from types import SimpleNamespace

from generator.gate import verify as V

H200 = 150_110_011_392  # bytes, as torch reports an H200's total memory
GIB = 1 << 30


def runner(kind="cuda"):
    return SimpleNamespace(kind=kind)


def plan(tmp_path, name, units, jobs, locales=2, notebooks=2):
    folder = tmp_path / name
    folder.mkdir()
    job = {
        "units": [{"id": str(i)} for i in range(units)],
        "jobs": jobs,
        "answers": {str(i): "a" for i in range(locales)},
        "notebooks": {str(i): "a" for i in range(notebooks)},
    }
    (folder / "job.json").write_text(json.dumps(job))
    return SimpleNamespace(folder=folder)


def test_the_budget_is_a_share_of_the_gpu_memory_and_none_without_a_gpu():
    assert V.gpu_budget({"cuda": True, "gpu_memory": H200}, runner()) == 83
    assert V.gpu_budget({"cuda": True, "gpu_memory": 24 * GIB}, runner()) == 14
    assert V.gpu_budget({"cuda": True, "gpu_memory": GIB}, runner()) == 1
    assert V.gpu_budget({"cuda": False, "gpu_memory": 0}, runner()) is None
    assert V.gpu_budget({"cuda": True, "gpu_memory": H200}, runner("interpreter")) is None
    assert (
        V.gpu_budget({"cuda": True}, runner()) is None
    )  # a probe from before the memory was asked


def test_a_lesson_checks_fewer_kernel_files_at_once_on_a_small_gpu():
    pairs = [SimpleNamespace(notebook=True), SimpleNamespace(notebook=True)]
    assert V.unit_jobs(pairs, 8, 83) == 8
    assert V.unit_jobs(pairs, 8, 20) == 3  # 17 processes are the students' commands and notebooks
    assert V.unit_jobs(pairs, 8, 14) == 1


def test_lessons_at_once_hold_the_budget_and_at_least_one_runs(tmp_path):
    plans = [plan(tmp_path, f"l{i}", units=10, jobs=8) for i in range(7)]
    assert V.cuda_processes(plans[0]) == 8 + 17
    assert V.lessons_at_once(plans, 83) == 3  # the H200: 75 of 83
    assert V.lessons_at_once(plans, 14) == 1
    assert V.lessons_at_once(plans[:2], 1000) == 2
    few = plan(tmp_path, "few", units=2, jobs=8, locales=1, notebooks=0)
    assert V.cuda_processes(few) == 2 + 7
