#!/usr/bin/env python3
"""A warm start for the tasks of a runner on this machine: this process imports torch and triton
once, and every task it is sent runs in a child forked from it, so no task imports them again.
Nothing here starts CUDA: the children do, each its own (a forked child may; its parent must not
have). Linux only; elsewhere each task is a process of its own.

    python task_server.py

Reads one JSON request per line on stdin, a script task to run:
    {"id": 7, "cwd": "/job/folder", "argv": ["verify_job.py"], "env": {...}, "out": "/tmp/x.out",
     "err": "/tmp/x.err"}
and writes one JSON line per event on stdout:
    {"ready": 2.41}            torch and triton are imported (seconds it took)
    {"id": 7, "pid": 1234}     the task's child started (its own process group: kill that to stop it)
    {"id": 7, "exit": 0}       it ended (negative: the signal that ended it)
The child runs argv[0] as __main__ with argv as sys.argv, in cwd, with env as its environment, its
output in the files named.
The server ends when stdin closes (the build's end, however it ends), and stops the tasks still
running then. It ignores SIGINT: Ctrl-C in the build's terminal ends the build, which closes stdin.
"""

import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # this checkout's generator package
from generator.checker.shared.common import leave  # noqa: E402

_WRITE = threading.Lock()


def write(message):
    with _WRITE:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def run_child(request):
    """In the forked child: become the task, then leave without returning to the server's code."""
    code = 1
    try:
        signal.signal(
            signal.SIGINT, signal.default_int_handler
        )  # the server ignores it; the task must not
        os.setpgrp()
        for fd, name, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(name, flags, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
        sys.stderr = open(
            2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False
        )
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        script = os.path.abspath(request["argv"][0])
        sys.argv = [script, *request["argv"][1:]]
        sys.path[0] = os.path.dirname(script)  # as `python script.py` would have it
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        leave(code)


def reap(tasks, lock):
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.02)
            continue
        with lock:
            task_id = tasks.pop(pid, None)
        if task_id is not None:
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            write({"id": task_id, "exit": code})


def main():
    # Ctrl-C in the build's terminal reaches this process too: it ends when the build closes its
    # stdin instead (the build's exit, however it comes), and stops the tasks still running then.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    started = time.monotonic()
    # torch and triton imported as every checker path imports them (TRITON_INTERPRET decided
    # before triton), shared by every child; nothing here starts CUDA
    from generator.checker.shared.environment import prepare

    prepare(force_interpreter=os.environ.get("TRITON_INTERPRET") == "1")
    write({"ready": round(time.monotonic() - started, 3)})
    tasks, lock = {}, threading.Lock()
    threading.Thread(target=reap, args=(tasks, lock), daemon=True).start()
    for line in sys.stdin:
        request = json.loads(line)
        # Holding both locks: the reaper cannot see the child before it is registered, nor be in
        # the middle of a write (its lock would stay taken in the child) when the fork happens.
        with lock, _WRITE:
            pid = os.fork()
            if pid == 0:
                run_child(request)
            tasks[pid] = request["id"]
        write({"id": request["id"], "pid": pid})
    with lock:
        for pid in list(tasks):  # the build is over: nothing may outlive it
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    leave(main())  # without the teardown of torch's heap; its children are stopped
