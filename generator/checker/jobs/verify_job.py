#!/usr/bin/env python3
"""One lesson's verification, run in its job folder by a coursepack runner (this machine, a remote
command, a Slurm task). Needs Python with torch and triton; IPython to execute notebooks.

    python verify_job.py            reads job.json, writes result.json, exits 0 unless it broke

This process is the trusted side of the checker for the lesson's kernel files: it imports torch and
triton once (through the checker's one setup), and the code under check runs in workers forked
from the checker's worker factory (in the sandbox where bubblewrap can run). Kinds of step, run at
once:
  batch      every distinct kernel file (answers, declared mistakes) through the checker's
             check_units
  student    the literal student commands, each a fresh process with nothing of coursepack's in
             its environment, in the unzipped packs as their README says: `python check.py` in
             each language's answer pack (must pass) and exercise pack (must ask for the blank),
             and `python check.py` with COURSEPACK_SPAWN=1 (the path Windows takes: no fork)
  notebook   each language's answer notebook: every code cell, in order, in an IPython shell (the
             interpreter a Jupyter kernel wraps) in a child of this process; the check cell included
"""

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def run(command, cwd, timeout, env=None):
    start = time.monotonic()
    env = (
        env
        if env is not None
        else dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    )
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        code, out, err, timed_out = done.returncode, done.stdout, done.stderr, False
    except subprocess.TimeoutExpired as exc:
        code, timed_out = 124, True
        out, err = _decoded(exc.stdout), _decoded(exc.stderr)
    return {
        "returncode": code,
        "stdout": out[-20000:],
        "stderr": err[-4000:],
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - start, 2),
    }


def _decoded(value):
    """A timed-out process's output as text (subprocess gives it as bytes, or None)."""
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# What a student's shell would not have: coursepack's and the runner's own settings.
NOT_A_STUDENTS = (
    "TRITON_INTERPRET",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "COURSEPACK_",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "IPYTHONDIR",
    "OMP_NUM_THREADS",
)


def student_env(**extra):
    """The environment of a student's fresh shell on this machine: what makes Python and the GPU
    found (PATH, PYTHONPATH, library paths, visible devices), nothing that steers the checker."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_A_STUDENTS)}
    return dict(env, **extra)


CHECKER = None  # the pack's check.py, loaded as a module


def batch(job, checker, opened):
    started = time.monotonic()
    session, label, why = opened
    result = {
        "returncode": 0,
        "stdout": "",
        "stderr": why,
        "timed_out": False,
        "sandbox": label,
        "units": None,
    }
    if session is None:
        result["returncode"] = 1
    else:
        try:
            result["units"] = checker.check_units(
                job["units"], job["jobs"], job["case_timeout"], session
            )
        except Exception:  # the checker broke (not a kernel: those fail inside their own workers)
            result.update(returncode=1, stderr=traceback.format_exc()[-4000:])
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def student(folder, timeout, **extra_env):
    """`python check.py` as the pack's README tells students, in a fresh process and shell."""
    result = run([sys.executable, "check.py"], folder, timeout, env=student_env(**extra_env))
    result["command"] = " ".join([*(f"{k}={v}" for k, v in extra_env.items()), "python check.py"])
    return result


def start_notebook(folder, context):
    """Fork the notebook's child now, while this process has no other thread: a fork copies the
    locks other threads hold (tempfile's, an import's) and the child would wait on them forever.
    It waits for its turn (notebook() gives it) before it runs a cell."""
    receive, send = context.Pipe(duplex=False)
    wait, go = context.Pipe(duplex=False)
    # not daemonic: the check cell starts children of its own
    process = context.Process(target=_notebook_child, args=(send, wait, go, str(folder)))
    process.start()
    send.close()
    wait.close()
    return process, receive, go


def notebook(started_notebook, timeout):
    """The notebook's record, the same as a `python -c` step (stdout ends with NOTEBOOK-OK when
    every cell ran)."""
    process, receive, go = started_notebook
    started = time.monotonic()
    try:
        go.send(True)
    except OSError:
        pass  # the child ended already: its report says why
    go.close()
    report, timed_out = None, False
    if receive.poll(max(timeout - (time.monotonic() - started), 0)):
        try:
            report = receive.recv()
        except (EOFError, OSError):
            report = None
    else:
        timed_out = True
    _stop(process)
    receive.close()
    if report is None:
        why = (
            f"timed out: the notebook did not finish within {timeout} s"
            if timed_out
            else f"the notebook's process ended ({CHECKER.exit_text(process.exitcode)})"
        )
        report = {"ok": False, "stdout": "", "stderr": why}
    stdout = report["stdout"] + ("\nNOTEBOOK-OK\n" if report["ok"] else "")
    return {
        "returncode": 0 if report["ok"] else (124 if timed_out else 1),
        "stdout": stdout[-20000:],
        "stderr": report["stderr"][-4000:],
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - started, 2),
    }


def _notebook_child(send, wait, go, folder):
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # a timeout stops the cells' own children too
    go.close()  # the job's end only: an ended job is an end of file here
    try:
        wait.recv()  # its turn: a GPU's memory may not hold every step at once
    except EOFError:
        os._exit(1)  # the job ended first
    folder = os.path.abspath(folder)
    os.chdir(folder)
    sys.path.insert(
        0, folder
    )  # as in a kernel started in the notebook's folder: `from check import ...`
    report = {"ok": False, "stdout": "", "stderr": ""}
    try:
        report = execute_cells(json.loads(Path("lesson.ipynb").read_text(encoding="utf-8")))
    except BaseException:
        report["stderr"] = traceback.format_exc()[-4000:]
    finally:
        send.send(report)
        send.close()


def execute_cells(notebook):
    """Run the code cells in order, stopping at the first that raises; the outputs of the cells
    tagged `check`, or the failing cell's output and traceback."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.utils.capture import capture_output
        from traitlets.config import Config
    except ImportError as exc:
        return {
            "ok": False,
            "stdout": "",
            "stderr": f"IPython is needed to execute the notebook on the runner "
            f"({exc}); install it there, or build with --no-notebook",
        }
    config = Config()
    config.HistoryManager.enabled = False  # nothing written to ~/.ipython
    shell = InteractiveShell.instance(config=config, colors="nocolor")
    checks = []
    code_cells = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells, start=1):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        with capture_output() as captured:
            result = shell.run_cell(source, store_history=True)
        if "check" in cell.get("metadata", {}).get("tags", []):
            checks.append(captured.stdout)
        if not result.success:
            where = f"code cell {number} of {len(code_cells)} raised:\n"
            return {
                "ok": False,
                "stdout": "".join(checks),
                "stderr": where + captured.stdout + captured.stderr,
            }
    return {"ok": True, "stdout": "".join(checks), "stderr": ""}


def _stop(process):
    if process.is_alive() and hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
    if process.is_alive():
        process.kill()
    process.join(10)


def main():
    job = json.loads(Path("job.json").read_text(encoding="utf-8"))
    started = time.monotonic()
    from checker_module import load_checker  # beside this script in the job folder

    global CHECKER
    checker = CHECKER = load_checker(job["checker"])
    # many workers at once, each with a small torch thread pool rather than one thread per core
    os.environ["COURSEPACK_CHILD_THREADS"] = str(
        max(1, (os.cpu_count() or 1) // max(1, int(job["jobs"])))
    )
    opened = checker.open_session(job, "fallback")
    import multiprocessing

    context = multiprocessing.get_context("fork")
    if job["notebooks"]:
        profile = Path(
            "ipython"
        ).resolve()  # IPython's own folder, in the job folder: not the user's
        profile.mkdir(exist_ok=True)
        os.environ.setdefault("IPYTHONDIR", str(profile))
        try:  # imported once here too, for every notebook child
            import IPython.core.interactiveshell  # noqa: F401
        except ImportError:
            pass  # each notebook step reports it
    started_notebooks = {
        locale: start_notebook(folder, context) for locale, folder in job["notebooks"].items()
    }
    commands = [(f"answer/{locale}", folder, {}) for locale, folder in job["answers"].items()]
    commands += [(f"exercise/{locale}", folder, {}) for locale, folder in job["exercises"].items()]
    commands += [
        (f"spawn/{locale}", folder, {"COURSEPACK_SPAWN": "1"})
        for locale, folder in job["answers"].items()
        if locale in job["spawn_locales"]
    ]
    steps = 1 + len(commands) + len(job["notebooks"])
    # fewer at once where the planner said so (the GPU's memory): the batch first, then the rest
    with ThreadPoolExecutor(max_workers=job.get("steps_at_once") or steps) as pool:
        units = pool.submit(batch, job, checker, opened)
        students = {
            name: pool.submit(student, folder, job["student_timeout"], **env)
            for name, folder, env in commands
        }
        notebooks = {
            locale: pool.submit(notebook, begun, job["notebook_timeout"])
            for locale, begun in started_notebooks.items()
        }
        result = {
            "batch": units.result(),
            "students": {name: f.result() for name, f in students.items()},
            "notebooks": {locale: f.result() for locale, f in notebooks.items()},
        }
    result["seconds"] = round(time.monotonic() - started, 2)
    Path("result.json").write_text(
        json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    code = main()
    # without the teardown of torch's heap (most of a second); nothing is left open
    CHECKER.leave(code)
