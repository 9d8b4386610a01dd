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


def plan(units, jobs, locales=2, notebooks=2):
    job = {
        "units": [{"id": str(i)} for i in range(units)],
        "jobs": jobs,
        "answers": {str(i): "a" for i in range(locales)},
        "notebooks": {str(i): "a" for i in range(notebooks)},
    }
    return SimpleNamespace(job=job, cuda_processes=V.cuda_processes(job))


def test_the_budget_is_a_share_of_the_gpu_memory_and_none_without_a_gpu():
    assert V.gpu_budget({"cuda": True, "gpu_memory": H200}, runner()) == 55
    assert V.gpu_budget({"cuda": True, "gpu_memory": 24 * GIB}, runner()) == 9
    assert V.gpu_budget({"cuda": True, "gpu_memory": GIB}, runner()) == 1
    assert V.gpu_budget({"cuda": False, "gpu_memory": 0}, runner()) is None
    assert V.gpu_budget({"cuda": True, "gpu_memory": H200}, runner("interpreter")) is None
    assert (
        V.gpu_budget({"cuda": True}, runner()) is None
    )  # a probe from before the memory was asked


def test_a_lesson_runs_fewer_kernel_files_and_then_fewer_steps_at_once_on_a_small_gpu():
    pairs = [SimpleNamespace(notebook=True), SimpleNamespace(notebook=True)]
    assert V.lesson_concurrency(pairs, 8, 55) == (8, None)  # 25 processes: everything at once
    assert V.lesson_concurrency(pairs, 8, 20) == (3, None)  # 17 are the students' and notebooks'
    assert V.lesson_concurrency(pairs, 8, 14) == (1, 5)  # the batch and 4 of its 7 other steps
    assert V.lesson_concurrency(pairs, 8, 9) == (1, 3)  # a 24 GiB card
    assert V.lesson_concurrency(pairs, 8, 1) == (1, 2)  # at least one step beside the batch


def test_lessons_at_once_hold_the_budget_and_at_least_one_runs():
    plans = [plan(units=10, jobs=8) for _ in range(7)]
    assert V.cuda_processes(plans[0].job) == 8 + 17
    assert V.lessons_at_once(plans, 55) == 2  # the H200: 50 of 55
    assert V.lessons_at_once(plans, 14) == 1
    assert V.lessons_at_once(plans[:2], 1000) == 2
    few = plan(units=2, jobs=8, locales=1, notebooks=0)
    assert V.cuda_processes(few.job) == 2 + 7
    small = plan(units=10, jobs=1)
    assert V.cuda_processes(dict(small.job, steps_at_once=5)) == 1 + 1 + 3 * 4


def test_a_lesson_whose_steps_take_turns_still_verifies_every_one(tmp_path, monkeypatch):
    """Where the budget holds the batch and one more step only, the student commands and the
    notebook (which waits for its turn before it runs a cell) run one after another, and the lesson
    verifies as with every step at once."""
    from generator.pipeline.build import build
    from tests.conftest import options_for, small_lesson_copy

    small_lesson_copy(tmp_path, ["seed", "tail_257", "random_f16", "empty", "special_f32"])
    monkeypatch.setattr(V, "gpu_budget", lambda info, runner: 3)
    result = build(
        options_for(
            tmp_path, runner="interpreter", jobs=1, lessons=("lesson03_relu",), locales=("en",)
        ),
        progress=lambda _: None,
    )
    job = json.loads((tmp_path / "build" / "work" / "lesson03_relu" / "job.json").read_text())
    assert job["steps_at_once"] == 2 and job["jobs"] == 1
    record = result.verification["lesson03_relu/en"]
    steps = {step["name"]: step["ok"] for step in record["steps"]}
    assert record["passed"] and steps["notebook"] and steps["student:spawn"], steps
