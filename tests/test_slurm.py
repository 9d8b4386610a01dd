"""`--runner slurm` against a real single-node Slurm cluster (scripts/slurm_cluster.sh start).

Nothing of Slurm is mocked: jobs are submitted with sbatch and followed with squeue. Without a
cluster these tests skip with the reason, except under CI=true where a missing cluster fails.
The time-limit case needs Slurm's minute granularity (--time=1, then up to 30 s until slurmctld's
periodic check): about 85 s here, so it starts first, in the background, and is collected last.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

from generator.errors import ContentError
from generator.runners.slurm import (
    SlurmError,
    SlurmRunner,
    SlurmSettings,
    Task,
    expand_ids,
    array_ranges,
    load_settings,
)

REPO = Path(__file__).resolve().parent.parent
CLUSTER = Path(
    os.environ.get("COURSEPACK_SLURM_DIR") or Path(tempfile.gettempdir()) / "coursepack-slurm"
)
slurm = pytest.mark.slurm


def _settings(**kw) -> SlurmSettings:
    """No GPUs on the test node: no --gres. Fast polling."""
    return SlurmSettings(**{"gres": "", "python": sys.executable, "poll_s": 0.5, **kw})


def _sh(*argv: str, check: bool = True) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=check).stdout


def _cluster_problem() -> str | None:
    if shutil.which("sbatch") is None:
        return "Slurm is not installed (no sbatch); start the test cluster with scripts/slurm_cluster.sh start"
    if not (CLUSTER / "env").exists():
        return f"the test cluster is not running ({CLUSTER}/env missing); run scripts/slurm_cluster.sh start"
    ping = subprocess.run(
        ["scontrol", "ping"],
        capture_output=True,
        text=True,
        timeout=15,
        env=dict(os.environ, SLURM_CONF=str(CLUSTER / "slurm.conf")),
    )
    if " is UP" not in ping.stdout:
        return f"the test cluster's controller does not answer: {ping.stdout.strip() or ping.stderr.strip()}"
    return None


def _node_idle(timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _sh("sinfo", "--noheader", "--format=%N %T", check=False).split()
        if len(state) == 2 and state[1] in ("idle", "mixed", "allocated"):
            return state[0]
        time.sleep(0.5)
    raise AssertionError(f"the node did not come back: {_sh('sinfo', check=False)}")


@pytest.fixture(scope="module")
def cluster():
    problem = _cluster_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Slurm tests: {problem}")
        pytest.skip(problem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(CLUSTER / "slurm.conf"))
        yield _node_idle()


def _folders(tmp: Path, *names: str) -> list[Path]:
    for name in names:
        (tmp / name).mkdir(parents=True)
    return [tmp / name for name in names]


def _py(code: str) -> list[str]:
    return ["{python}", "-c", textwrap.dedent(code)]


@pytest.fixture(scope="module")
def timeout_run(cluster, tmp_path_factory):
    """A task that sleeps past its one-minute limit, running in the background while the others run."""
    folder = tmp_path_factory.mktemp("timeout")
    runner = SlurmRunner(_settings(time_limit="1", poll_s=1), lambda line: None)
    task = Task(
        "sleeper", folder, _py("import time; print('started', flush=True); time.sleep(600)"), 60
    )
    box: dict = {"started": time.monotonic()}
    thread = threading.Thread(
        target=lambda: box.update(results=runner.run_tasks([task])), daemon=True
    )
    thread.start()
    return thread, box, runner


# ---- settings (no cluster needed) -------------------------------------------------------------


def test_example_settings_file_loads_with_overrides():
    settings = load_settings(
        REPO / "examples" / "slurm.yaml", {"partition": "debug", "time_limit": None}
    )
    assert settings.partition == "debug"
    assert settings.gres == "gpu:1" and settings.setup_lines and settings.max_retries >= 1
    assert load_settings(None, {}).gres == "gpu:1"


def test_settings_mistakes_are_located(tmp_path):
    path = tmp_path / "slurm.yaml"
    path.write_text(
        "partition: gpu\npartion: gpu\ntime_limit: soon\nmax_retries: many\n", encoding="utf-8"
    )
    with pytest.raises(ContentError) as caught:
        load_settings(path, {"gres": ["not", "text"]})
    text = str(caught.value)
    assert "slurm.yaml:2:1: partion: unknown setting" in text
    assert "slurm.yaml:3:13: time_limit: expected a Slurm time" in text
    assert "slurm.yaml:4:14: max_retries:" in text
    assert "command line: --slurm-gres:" in text


def test_array_ranges_and_ids():
    assert array_ranges([7, 0, 1, 2, 5, 8]) == "0-2,5,7-8"
    assert expand_ids("12_[4-6,9%2]") == ["12_4", "12_5", "12_6", "12_9"]
    assert expand_ids("12_3") == ["12_3"]


# ---- real jobs --------------------------------------------------------------------------------


@slurm
def test_two_tasks_run_at_once_through_staging(cluster, timeout_run, tmp_path):
    """One array of two tasks; both run at the same time (seen by squeue and by the tasks' own clocks);
    the tasks run in a staged copy and what they write comes back."""
    lines: list[str] = []
    runner = SlurmRunner(_settings(staging=tmp_path / "shared"), lines.append)
    code = """
        import json, os, time
        start = time.time(); time.sleep(4)
        json.dump({"start": start, "end": time.time(), "cwd": os.getcwd()}, open("result.json", "w"))
    """
    tasks = [
        Task(f"lesson/{n}", folder, _py(code), 60)
        for n, folder in zip("ab", _folders(tmp_path, "a", "b"))
    ]
    started = time.monotonic()
    results = runner.run_tasks(tasks)
    assert [(r.name, r.state, r.returncode, r.attempts) for r in results] == [
        ("lesson/a", "COMPLETED", 0, 1),
        ("lesson/b", "COMPLETED", 0, 1),
    ]
    assert len(runner.job_ids) == 1 and all(
        r.job_id.startswith(runner.job_ids[0] + "_") for r in results
    )
    assert any(re.search(r"\b2 running\b", line) for line in lines), lines
    times = [json.loads((t.folder / "result.json").read_text()) for t in tasks]
    assert max(t["start"] for t in times) < min(t["end"] for t in times)  # overlapping
    assert all(str(tmp_path / "shared") in t["cwd"] for t in times)  # ran in the staged copy
    assert not list((tmp_path / "shared").iterdir())  # staging cleaned up
    assert time.monotonic() - started < 15


@slurm
def test_a_class_is_graded_in_one_job_array(cluster, tmp_path):
    """`coursepack grade --runner slurm`: submissions chunked per array element, all in one job
    (in the sandbox where bubblewrap runs on the node)."""
    from generator.checker.shared.sandbox import sandbox_problem
    from generator.grade.lesson import load_lesson
    from generator.grade.run import GradeOptions, grade
    from tests.conftest import small_lesson_copy
    from tests.test_grade import ANSWER, kernel

    content = small_lesson_copy(tmp_path, ["seed", "tail_257", "empty", "special_f32"])
    lesson = load_lesson(content, "lesson03_relu")
    fills = {
        "s1": ANSWER,
        "s2": "tl.where(xv > 0.0, xv, 0.0)",
        "s3": "xv",
        "s4": f"1.0 * {ANSWER}",
        "s5": "tl.abs(xv)",
    }
    (tmp_path / "class").mkdir()
    for student, fill in fills.items():
        (tmp_path / "class" / f"{student}.py").write_text(kernel(lesson, fill), encoding="utf-8")
    sandbox = "on" if sandbox_problem() is None else "off"
    lines: list[str] = []
    outcome = grade(
        GradeOptions(
            tmp_path / "class",
            "lesson03_relu",
            content=content,
            build=tmp_path / "build",
            runner="slurm",
            slurm=_settings(),
            chunk=2,
            jobs=2,
            timeout=20,
            sandbox=sandbox,
        ),
        lines.append,
    )
    assert [(t["units"], t["state"]) for t in outcome.tasks] == [
        (2, "COMPLETED"),
        (2, "COMPLETED"),
        (1, "COMPLETED"),
    ]
    assert len({t["job_id"].split("_")[0] for t in outcome.tasks}) == 1, outcome.tasks
    assert sum("submitted job" in line and "3 tasks" in line for line in lines) == 1, lines
    points = {row.student: (row.status, row.automatic) for row in outcome.rows}
    assert points == {
        "s1": ("graded", 3),
        "s2": ("graded", 2),
        "s3": ("graded", 0),
        "s4": ("graded", 3),
        "s5": ("graded", 0),
    }
    labels = {
        row.data["sandbox"] for row in outcome.rows
    }  # the sandbox, and what it lacks on the node
    if sandbox == "on":
        assert len(labels) == 1 and next(iter(labels)).split(";")[0] == "bubblewrap", labels
    else:
        assert labels == {None}
    assert (tmp_path / "build" / "grades" / "lesson03_relu" / "grades.csv").exists()


@slurm
def test_a_pack_is_verified_through_slurm(cluster, tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "build",
            "--no-verify",
            "--lesson",
            "lesson03_relu",
            "--locale",
            "en",
            "--out",
            str(tmp_path / "b"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    with zipfile.ZipFile(tmp_path / "b" / "dist" / "lesson03_relu-en-answer.zip") as archive:
        archive.extractall(tmp_path / "packs")
    pack = tmp_path / "packs" / "lesson03_relu-en-answer"
    task = Task("lesson03_relu/en", pack, ["{python}", "check.py", "--json", "--interpreter"], 300)
    terminal, lines = io.StringIO(), []
    [result] = SlurmRunner(_settings(), lines.append, tty=True, stream=terminal).run_tasks([task])
    assert (result.state, result.returncode) == ("COMPLETED", 0), result
    data = json.loads(result.stdout)
    assert data["status"] == "pass" and data["environment"]["interpreter"] is True
    # on a terminal the status is one line rewritten in place; only events are plain lines
    assert (
        "\r" in terminal.getvalue()
        and "1 running" in terminal.getvalue()
        and terminal.getvalue().endswith("\n")
    )
    assert len(lines) == 1 and lines[0].startswith("slurm: submitted job ")


@slurm
def test_a_task_cancelled_while_it_runs(cluster, tmp_path):
    def progress(line):
        if re.search(r"\b1 running\b", line):
            deadline = time.monotonic() + 60  # RUNNING comes before the task's Python has started
            while not (tmp_path / "started").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            _sh("scancel", f"{runner.job_ids[0]}_0")

    runner = SlurmRunner(_settings(), progress)
    code = "print('up', flush=True); open('started', 'w').close(); import time; time.sleep(120)"
    [result] = runner.run_tasks([Task("long", tmp_path, _py(code), 300)])
    assert result.state == "CANCELLED" and result.returncode is None
    assert result.detail.startswith("CANCELLED: cancelled") and result.job_id in result.detail
    assert "up" in result.stdout and "CANCELLED" in result.stderr  # slurmstepd's line


@slurm
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_build_cancels_its_jobs(cluster, tmp_path, sig):
    script = f"""
        import signal, sys; from pathlib import Path
        signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal, also when pytest runs in the background
        from generator.runners.slurm import SlurmRunner, SlurmSettings, Task
        runner = SlurmRunner(SlurmSettings(gres="", python=sys.executable, poll_s=0.5), lambda l: print(l, flush=True))
        runner.run_tasks([Task("t", Path({str(tmp_path)!r}), ["{{python}}", "-c", "import time; time.sleep(120)"], 300)])
    """
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    seen = []
    for line in child.stdout:
        seen.append(line)
        if " 1 running" in line:
            child.send_signal(sig)
            break
    out = "".join(seen) + child.communicate(timeout=30)[0]
    assert child.returncode != 0
    job = re.search(r"submitted job (\d+)", out).group(1)
    assert f"slurm: cancelled job {job}" in out
    deadline = time.monotonic() + 60
    while True:  # COMPLETING while slurmd stops the job's processes, then CANCELLED
        state = _sh("squeue", "--noheader", "--states=all", f"--jobs={job}", "--format=%T").split()
        if state != ["COMPLETING"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert state == ["CANCELLED"]


@slurm
def test_a_node_drained_during_a_build(cluster, tmp_path):
    """Two tasks, one at a time (max_running=1); the node is drained while the first runs: the first
    completes, the second stays pending and fails with the reason squeue gives."""
    node = cluster
    drained = []

    def progress(line):
        if re.search(r"\b1 running\b", line) and not drained:
            _sh("scontrol", "update", f"nodename={node}", "state=drain", "reason=coursepack test")
            drained.append(time.monotonic())

    runner = SlurmRunner(_settings(max_running=1, pending_limit_s=8), progress)
    tasks = [
        Task(f"t{i}", folder, _py("import time; time.sleep(2)"), 60)
        for i, folder in enumerate(_folders(tmp_path, "0", "1"))
    ]
    try:
        first, second = runner.run_tasks(tasks)
        reasons = _sh(
            "squeue",
            "--noheader",
            "--states=all",
            "--array",
            f"--jobs={second.job_id}",
            "--format=%T|%r",
        )
    finally:
        _sh("scontrol", "update", f"nodename={node}", "state=resume")
    assert drained and first.state == "COMPLETED"
    assert second.state == "PENDING_TOO_LONG" and second.returncode is None
    assert re.search(
        r"Slurm's reason: (ReqNodeNotAvail|Nodes required for job are DOWN, DRAINED)", second.detail
    ), second.detail
    assert reasons.startswith("CANCELLED|")  # it was not left queued
    _node_idle()


@slurm
def test_a_task_killed_by_its_time_limit(timeout_run):
    thread, box, runner = timeout_run
    thread.join(timeout=200)
    assert not thread.is_alive(), "the time limit did not end the task"
    [result] = box["results"]
    assert result.state == "TIMEOUT" and result.returncode is None
    assert result.detail.startswith("TIMEOUT: killed by Slurm at its time limit (--time=1)")
    assert "started" in result.stdout and "DUE TO TIME LIMIT" in result.stderr
    # Slurm kills at 60 s of its own clock plus up to 30 s until slurmctld's check; the seconds are
    # ours, from the task's first line, so they can fall a little short of Slurm's 60 (59.7 seen).
    assert 55 <= result.seconds < 130


@slurm
@pytest.mark.parametrize("failures", [1, 2])
def test_node_failure_is_retried(cluster, tmp_path, failures):
    """The node is set DOWN while the task runs (Slurm ends it with NODE_FAIL), `failures` times;
    max_retries=1: one failure is retried to completion, two are reported."""
    node, downed, lines = cluster, [], []

    def progress(line):
        lines.append(line)
        if (
            re.search(r"\b1 running\b", line)
            and len(downed) < failures
            and runner.job_ids[-1] not in downed
        ):
            downed.append(runner.job_ids[-1])
            _sh("scontrol", "update", f"nodename={node}", "state=down", "reason=coursepack test")

    runner = SlurmRunner(_settings(max_retries=1), progress)
    [result] = runner.run_tasks([Task("t", tmp_path, _py("import time; time.sleep(3)"), 60)])
    _sh(
        "scontrol", "update", f"nodename={node}", "state=resume", check=False
    )  # ReturnToService=2 may have done it
    assert (
        result.attempts == 2
        and len(runner.job_ids) == 2
        and result.job_id.startswith(runner.job_ids[1])
    )
    assert any(
        "NODE_FAIL on " in line and "resubmitting (attempt 2 of 2)" in line for line in lines
    )
    if failures == 1:
        assert (result.state, result.returncode, result.detail) == ("COMPLETED", 0, "")
    else:
        assert result.state == "NODE_FAIL"
        assert result.detail.startswith("NODE_FAIL: its node failed")
        assert f"earlier attempts: NODE_FAIL on {node} (job {runner.job_ids[0]}_0)" in result.detail
    _node_idle()


@slurm
def test_controller_down_is_a_clear_error_within_seconds(cluster, tmp_path):
    pid = int((CLUSTER / "slurmctld.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        runner = SlurmRunner(_settings(), lambda line: None)
        started = time.monotonic()
        with pytest.raises(
            SlurmError,
            match=r"the Slurm controller cannot be reached \(Slurmctld\(primary\) at .* is DOWN\)",
        ):
            runner.run_tasks([Task("t", tmp_path, ["true"], 60)])
        assert time.monotonic() - started < 5
        assert runner.job_ids == []
    finally:
        subprocess.run(
            [str(REPO / "scripts" / "slurm_cluster.sh"), "start"], check=True, timeout=120
        )
    _node_idle()
