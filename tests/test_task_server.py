"""The warm task server (generator/checker/jobs/task_server.py) behind local runners: one torch import,
a forked child per task, and a task's crash, hang or exit touches only that task."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from generator.runners import local as runners
from generator.runners.local import Runner

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the task server is Linux only"
)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Runner:
    runner = Runner(
        "interpreter", sys.executable, cache_dir=tmp_path_factory.mktemp("triton-cache")
    )
    runner.warm_up()
    yield runner


def script(folder: Path, body: str) -> list[str]:
    (folder / "task.py").write_text(textwrap.dedent(body), encoding="utf-8")
    return ["task.py"]


def server_of(runner: Runner) -> runners.TaskServer:
    server = runner._server(runner._env())
    assert server is not None and server.alive
    return server


def test_a_task_runs_in_a_child_that_already_has_torch(runner, tmp_path):
    argv = script(
        tmp_path,
        """
        import os, sys
        print("torch" in sys.modules, "triton" in sys.modules, os.environ["TRITON_INTERPRET"], os.getcwd())
        print("to stderr", file=sys.stderr)
        sys.exit(3)
    """,
    )
    result = runner.run([*argv], tmp_path, timeout=120)
    assert result.returncode == 3, result.stderr
    assert result.stdout.split() == ["True", "True", "1", str(tmp_path.resolve())]
    assert result.stderr.strip() == "to stderr"
    assert server_of(runner).process.pid != os.getpid()


def test_a_crash_fails_its_task_only(runner, tmp_path):
    crash = script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert runner.run(crash, tmp_path, timeout=120).returncode == -11
    ok = script(tmp_path, "print('after')\n")
    result = runner.run(ok, tmp_path, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "after")


def test_a_hang_is_killed_with_its_children_at_the_timeout(runner, tmp_path):
    marker = tmp_path / "grandchild.pid"
    hang = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(marker)!r}, "w").write(str(child.pid))
        time.sleep(120)
    """,
    )
    start = time.monotonic()
    result = runner.run(hang, tmp_path, timeout=3)
    assert result.timed_out and result.returncode == 124
    assert time.monotonic() - start < 30
    grandchild = int(marker.read_text())
    for _ in range(50):  # killed with its process group: gone, or a zombie until something reaps it
        if not running(grandchild):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the hanging task's own child survived the timeout")


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_an_uncaught_exception_is_exit_1_with_its_traceback(runner, tmp_path):
    result = runner.run(script(tmp_path, "raise ValueError('boom')\n"), tmp_path, timeout=120)
    assert result.returncode == 1 and "ValueError: boom" in result.stderr


def test_a_dead_server_answers_none_and_is_replaced(runner, tmp_path):
    """The module's server is killed; its replacement serves the tests after this one."""
    server = server_of(runner)
    server.process.kill()
    server.process.wait()
    for _ in range(100):
        if not server.alive:
            break
        time.sleep(0.05)
    assert (
        server.run(["task.py"], tmp_path, 10, dict(os.environ)) is None
    )  # run() then starts a process
    result = runner.run(script(tmp_path, "print('again')\n"), tmp_path, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "again")
    assert server_of(runner) is not server


def test_no_server_for_a_command_runner_or_when_switched_off(monkeypatch):
    assert Runner("command", sys.executable, "{cmd}")._server({}) is None
    monkeypatch.setenv("COURSEPACK_NO_TASK_SERVER", "1")
    assert Runner("interpreter", sys.executable)._server({}) is None


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# t"},
        {"cell_type": "code", "metadata": {"tags": ["setup"]}, "source": "x = 2\nprint('set up')"},
        {
            "cell_type": "code",
            "metadata": {"tags": ["check"]},
            "source": ["print('checked', x * 21)\n"],
        },
    ]
}


def run_cells(notebook: dict, tmp_path: Path) -> dict:
    """verify_job.execute_cells in a process of its own (IPython's shell is a per-process singleton)."""
    (tmp_path / "nb.json").write_text(json.dumps(notebook), encoding="utf-8")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import verify_job;"
        "print(json.dumps(verify_job.execute_cells(json.load(open('nb.json')))))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(Path(runners.__file__).parent.parent / "checker" / "jobs"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_notebook_cells_run_in_order_and_the_check_cell_output_is_kept(tmp_path):
    report = run_cells(NOTEBOOK, tmp_path)
    assert report == {"ok": True, "stdout": "checked 42\n", "stderr": ""}


def test_a_failing_cell_stops_the_notebook_and_is_named(tmp_path):
    broken = json.loads(json.dumps(NOTEBOOK))
    broken["cells"][1]["source"] = "x = 2\nraise RuntimeError('cell two')"
    report = run_cells(broken, tmp_path)
    assert not report["ok"]
    assert report["stderr"].startswith("code cell 1 of 2 raised:")
    assert "RuntimeError" in report["stderr"] and "cell two" in report["stderr"]
    assert "checked" not in report["stdout"]


def test_the_timeout_counts_from_the_start_of_the_task_and_env_is_the_tasks(tmp_path, monkeypatch):
    """A fresh server is still importing torch when the task is sent: that wait is not the task's."""
    monkeypatch.setenv("COURSEPACK_TEST_VALUE", "first")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # read when torch is imported: a server of its own
    runner = Runner("interpreter", sys.executable, cache_dir=tmp_path / "own-cache")
    argv = script(
        tmp_path, "import os, time\ntime.sleep(1)\nprint(os.environ['COURSEPACK_TEST_VALUE'])\n"
    )
    result = runner.run(argv, tmp_path, timeout=2.5)
    assert (result.returncode, result.stdout.strip(), result.timed_out) == (0, "first", False)
    monkeypatch.setenv(
        "COURSEPACK_TEST_VALUE", "second"
    )  # not an import-time variable: same server
    server = server_of(runner)
    assert runner.run(argv, tmp_path, timeout=30).stdout.strip() == "second"
    assert server_of(runner) is server


def test_closing_the_server_stops_the_tasks_still_running(runner, tmp_path):
    """The build's end (its stdin closes, however the build ends) leaves no task running. The
    module's server is closed: this test comes last in the file."""
    marker = tmp_path / "task.pid"
    argv = script(
        tmp_path,
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n",
    )
    results = []
    worker = threading.Thread(
        target=lambda: results.append(runner.run(argv, tmp_path, timeout=300))
    )
    worker.start()
    for _ in range(600):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    task = int(marker.read_text())
    server = server_of(runner)
    server.close()
    worker.join(30)
    assert not worker.is_alive() and results and results[0].returncode != 0
    for _ in range(50):
        if not running(task):
            break
        time.sleep(0.1)
    else:
        pytest.fail("a task outlived its server")
