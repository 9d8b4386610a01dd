"""The worker factory: a process with torch and triton imported and nothing else of the check in
it (no input, no reference: it is forked, or started, before the trusted side computes any), that
forks one worker per request. Forking it is fast (torch is imported once); what a worker does to
itself (patches, a broken CUDA context, a crash) dies with that worker.

The trusted process talks to it over a SOCK_SEQPACKET control socket, one JSON message each way:
    -> {"spawn": 3, "sandbox": {...} | null}   with two file descriptors: the worker's data socket
                                              and the stream for its stdout and stderr
    <- {"id": 3, "pid": 1234}                 forked
    -> {"kill": 3}                            stop it (and every process it started)
    -> {"stop": 3}  <- {"id": 3, "stopped": true}   SIGSTOP to its group, every process of it stopped
    -> {"resume": 3}                          SIGCONT to its group
    <- {"id": 3, "exit": -9}                  it ended (negative: the signal that ended it)
The factory ends when the control socket closes, and takes its workers with it."""
import json
import os
import select
import signal
import socket
import sys
import time

from ..shared.common import leave
from ..shared.environment import prepare, warm_compile_key, warm_compiler
from ..trusted.memory import resume_group, stop_group
from ..shared.protocol import Channel
from ..shared.sandbox import isolate, join_cgroups, make_worker_cgroups, own_pids_work, refresh_seed, remove_cgroup
from .worker import SCRATCH, serve  # noqa: F401


def serve_requests(ctl, setup):
    """The factory's loop (in the factory process)."""
    children, cgroups = {}, {}   # worker id -> pid, -> its cgroup folders
    if setup["use_gpu"]:   # here, while the trusted side computes the cases: every worker inherits them
        warm_compile_key()
        warm_compiler()
    ctl.send(json.dumps({"ready": setup}).encode())
    while True:
        readable, _, _ = select.select([ctl], [], [], 0.05 if children else 1.0)
        if readable:
            try:
                data, fds, _, _ = socket.recv_fds(ctl, 65536, 2)
            except OSError:
                data, fds = b"", []
            if not data:
                break   # the trusted side is gone
            request = json.loads(data)
            if "spawn" in request:
                sandboxed = request.get("sandbox") is not None and setup.get("cgroups")
                cgroups[request["spawn"]] = make_worker_cgroups(
                    request["spawn"], request["sandbox"].get("limits")) if sandboxed else []
                pid = quiet_fork()
                if pid == 0:
                    ctl.close()
                    _worker(fds, request, setup, cgroups[request["spawn"]])
                for fd in fds:
                    os.close(fd)
                children[request["spawn"]] = pid
                ctl.send(json.dumps({"id": request["spawn"], "pid": pid}).encode())
            elif "kill" in request and request["kill"] in children:
                _kill_unless_ending(children[request["kill"]])
            elif "stop" in request:   # the trusted side reads its memory (a worker already gone: not stopped)
                stopped = request["stop"] in children and stop_group(children[request["stop"]])
                ctl.send(json.dumps({"id": request["stop"], "stopped": stopped}).encode())
            elif "resume" in request and request["resume"] in children:
                resume_group(children[request["resume"]])
        for worker_id, pid in list(children.items()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                del children[worker_id]
                for folder in cgroups.pop(worker_id, []):   # its PID namespace ended with it: empty
                    remove_cgroup(folder)
                ctl.send(json.dumps({"id": worker_id, "exit": os.waitstatus_to_exitcode(status)}).encode())
    for pid in children.values():
        _kill(pid)
    os._exit(0)


ENDING_S = 0.1


def _kill_unless_ending(pid):
    """Kill a worker, unless it ends within ENDING_S by itself: a worker in its own PID namespace
    hands its exit status on through two waiting processes (sandbox._hand_on_exit), and the trusted
    side, seeing its socket close, asks for the kill at once; killed then, a worker that aborted
    would be reported as killed. The status is only looked at (WNOWAIT): the loop reaps it."""
    deadline = time.monotonic() + ENDING_S
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:
            return
        time.sleep(0.002)
    _kill(pid)


def _kill(pid):
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _worker(fds, request, setup, cgroups=()):
    """In the forked worker: its own process group, its descriptors, the sandbox's second layer
    when asked, then the worker's life. Never returns."""
    global SCRATCH
    code = 0
    try:
        started = time.monotonic()
        os.setpgid(0, 0)
        _die_with_parent()
        data_fd, err_fd = fds
        _redirect_output(err_fd)
        join_cgroups(cgroups)
        if request.get("sandbox") is not None:
            SCRATCH = isolate(request["sandbox"].get("limits"), setup.get("own_pids", False))
        isolated = time.monotonic()
        sock = socket.socket(fileno=data_fd)
        channel = Channel(sock.makefile("rb"), sock.makefile("wb"))
        serve(channel, setup["use_gpu"], started, isolated,
              reseed=refresh_seed if request.get("sandbox") is not None else None)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        leave(code)


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _redirect_output(err_fd):
    """The code under check prints into the err stream (the trusted side keeps its tail): nothing it
    prints reaches the student's terminal or the checker's own output."""
    os.dup2(err_fd, 1)
    os.dup2(err_fd, 2)
    os.close(err_fd)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def zygote_main(ctl_fd, force_interpreter):
    """`check.py --zygote`: a factory started as a fresh process (in bubblewrap, or where this
    process could not be forked from): imports torch and triton itself."""
    _die_with_parent()
    ctl = socket.socket(fileno=ctl_fd)
    setup = prepare(force_interpreter)
    if os.environ.get("COURSEPACK_SANDBOX"):   # in bubblewrap: may each worker have its own PID namespace?
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            setup["own_pids"] = own_pids_work(setup["use_gpu"])
        # a cgroup per worker only where no worker can reach the factory (its own PID namespace)
        setup["cgroups"] = bool(setup["own_pids"] and os.environ.get("COURSEPACK_CGROUPS"))
    serve_requests(ctl, setup)


def fork_zygote(setup):
    """A factory forked from this process (torch and triton already imported here, no CUDA started,
    no case computed yet). Returns the trusted side's end of the control socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = quiet_fork()
    if pid == 0:
        try:
            ours.close()
            _die_with_parent()
            _redirect_output(os.open(os.devnull, os.O_WRONLY))
            serve_requests(theirs, setup)
        finally:
            os._exit(1)
    theirs.close()
    return ours, pid



def quiet_fork():
    """os.fork without Python 3.12's warning about threads: importing torch starts a native thread
    that a forked child does not need (the factory is forked before torch runs any work)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()
