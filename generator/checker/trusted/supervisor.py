"""The trusted side of a check: it never imports the code under check. It computes every case's
inputs and expected output, starts workers (worker.py) from a factory (zygote.py) or as fresh
processes, sends each case's inputs, reads back data with limits it sets, and judges
(verdict.py). A worker that hangs is killed at the time-out; one that crashes, faults the GPU or
breaks the protocol fails the case it was running, and a fresh worker takes the remaining cases."""
import atexit
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time

from ..shared.common import GUARD, HERE, LESSON, exit_text, inplace, msg
from .cases import call_inputs, error_scale, expected_output, make_inputs, skip_reason
from ..shared.environment import thread_count
from ..shared.protocol import Channel, ProtocolError, check_frame, checksum, tensor_bytes
from ..shared.sandbox import (SCRATCH_ROOT, add_launchers, nobody_reaches_the_gpu, sandbox_command, sandbox_staging,
                      stage_launcher_seed)
from .static import kernels_defined, source_encoding, syntax_error
from .memory import offer_descriptors, share_case, shuffled
from .verdict import in_interpreter, judge_reported
from ..untrusted.zygote import fork_zygote

START_MARGIN_S = 120     # a worker's start: importing torch (a spawned one), CUDA, the first compile
GIVE_UP_AFTER = 3        # cases that each lost their worker, with nothing run to a verdict, before the rest are not run
LOST = ("timeout", "crash", "fault")
ERR_TAIL = 1 << 16


class PreparedCase:
    """One case, computed once in the trusted process and used for every kernel file checked."""

    def __init__(self, torch, case, use_gpu):
        self.case = case
        home = "cuda" if case.get("gpu_only") and use_gpu else "cpu"
        self.made = make_inputs(torch, case, home)
        calls = call_inputs(torch, case, self.made)
        self.expected = [expected_output(torch, made) for made in calls]   # per call, per output
        self.scale = [error_scale(torch, made) for made in calls]
        self.draw = home == "cuda"   # the worker draws these large inputs itself, on its GPU
        self.inputs, chunks, self.crc = [], [], []
        for name, storage, view in self.made:
            if not hasattr(view, "shape"):
                self.inputs.append({"name": name, "kind": "scalar", "value": view})
                self.crc.append(None)
                continue
            self.inputs.append({"name": name, "kind": "tensor", "dtype": str(view.dtype).replace("torch.", ""),
                                "shape": list(view.shape), "stride": list(view.stride()),
                                "offset": view.storage_offset(), "storage": storage.numel()})
            data = b"" if self.draw else tensor_bytes(torch, storage)
            chunks.append(data)
            self.crc.append(None if self.draw or name in inplace() else checksum(data))
        self.payload = b"".join(chunks)
        elements = sum(max(t.numel(), 1) + 2 * GUARD for outputs in self.expected for t in outputs)
        self.max_reply = 4 * 8 * elements + (1 << 20)


def prepare_cases(torch, use_gpu):
    return {case["id"]: (None if skip_reason(case, use_gpu) else PreparedCase(torch, case, use_gpu))
            for case in LESSON["cases"]}


class Worker:
    """One worker process, seen from the trusted side: frames in, frames out, its output's tail."""

    def __init__(self, channel, err_stream, kill):
        self.channel, self.kill = channel, kill
        self.frames, self.max_payload = queue.Queue(), 0
        self.err, self.exit_code, self.ended = bytearray(), None, threading.Event()
        # from a factory: its data socket, the socket for region descriptors, stop and resume
        self.sock = self.descriptors = self.freeze = self.resume = None
        self.stopped, self.stop_answer = threading.Event(), False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, args=(err_stream,), daemon=True).start()

    def _read(self):
        try:
            while True:
                frame = self.channel.recv(lambda: self.max_payload)
                if frame is None:
                    break
                self.frames.put(("frame",) + frame)
            self.frames.put(("eof", None, None))
        except ProtocolError as exc:
            self.frames.put(("protocol", str(exc), None))
        except (OSError, ValueError):
            self.frames.put(("eof", None, None))
        except Exception as exc:   # whatever the bytes were, this reader ends with a verdict, not a traceback
            self.frames.put(("protocol", f"{type(exc).__name__}: {str(exc)[:200]}", None))

    def _drain(self, stream):
        try:
            while True:
                chunk = stream.read(4096) if hasattr(stream, "read") else os.read(stream, 4096)
                if not chunk:
                    break
                self.err += chunk
                del self.err[:-ERR_TAIL]
        except (OSError, ValueError):
            pass
        self.ended.set()

    def next(self, timeout):
        try:
            return self.frames.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            return ("timeout", None, None)

    def send(self, header, payload=b"", max_reply=0):
        self.max_payload = max_reply
        try:
            self.channel.send(header, payload)
            return True
        except (OSError, ValueError):
            return False

    def stderr_tail(self, lines=6):
        self.ended.wait(2)
        text = self.err.decode("utf-8", "replace").strip()
        return "\n".join(text.splitlines()[-lines:])


class Factory:
    """Where workers come from. kind: "fork" (a factory forked from this process: torch is already
    imported here), "fresh" (a factory started as a new process), "sandbox" (a fresh factory in
    bubblewrap, each worker in namespaces of its own) or "spawn" (no factory: a new process per
    worker, where fork is unavailable, as on Windows; COURSEPACK_SPAWN=1 forces it)."""

    def __init__(self, kind, setup, checker=None, python=None, hidden=(), limits=None, seed_cache=None):
        self.kind, self.setup, self.limits = kind, setup, limits
        self.checker, self.python = str(checker or HERE / "check.py"), python or sys.executable
        self.workers, self.next_id, self.lock = {}, 0, threading.Lock()
        self.events = {}
        self.process, self.ctl = None, None
        if kind == "fork":
            self.ctl, self.pid = fork_zygote(setup)
        elif kind in ("fresh", "sandbox"):
            self._start_fresh(hidden, seed_cache)
        if self.ctl is not None:
            threading.Thread(target=self._control, daemon=True).start()

    def _start_fresh(self, hidden, seed_cache):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if self.kind == "sandbox":
            self.staging = sandbox_staging()
            self.as_root = bool(self.staging and self.setup["use_gpu"] and not nobody_reaches_the_gpu(self.staging))
            self.seed = stage_launcher_seed(seed_cache, always=True)
            argv = sandbox_command(self.python, self.checker, hidden, self.setup["use_gpu"], self.seed, self.staging,
                                   self.as_root)
        else:
            argv = [self.python, self.checker, "--zygote"]
        env = dict(os.environ, COURSEPACK_CTL_FD=str(theirs.fileno()),
                   COURSEPACK_INTERPRETER="" if self.setup["use_gpu"] else "1")
        if self.kind == "sandbox":
            argv[argv.index("--clearenv") + 1:argv.index("--clearenv") + 1] = [
                "--setenv", "COURSEPACK_CTL_FD", str(theirs.fileno()),
                "--setenv", "COURSEPACK_INTERPRETER", env["COURSEPACK_INTERPRETER"]]
        try:
            self.process = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        finally:
            theirs.close()
        self.ctl = ours
        self.ready = threading.Event()

    def _control(self):
        """The factory's messages: ready, each worker's pid and exit status."""
        while True:
            try:
                data = self.ctl.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            if "ready" in message:
                self.setup = dict(self.setup, **message["ready"]) if self.kind != "fork" else self.setup
                getattr(self, "ready", threading.Event()).set()
            elif "exit" in message:
                worker = self.workers.get(message["id"])
                if worker is not None:
                    worker.exit_code = message["exit"]
            elif "stopped" in message and message.get("id") in self.workers:
                worker = self.workers[message["id"]]
                worker.stop_answer = message["stopped"] is True
                worker.stopped.set()
        self.dead = True
        getattr(self, "ready", threading.Event()).set()
        for worker in list(self.workers.values()):
            if worker.exit_code is None:
                worker.exit_code = "factory"

    def wait_ready(self, timeout):
        """False when the factory did not start (or has ended)."""
        ready = getattr(self, "ready", None)
        if ready is not None and not ready.wait(timeout):
            return False
        return not getattr(self, "dead", False)

    def start(self):
        with self.lock:
            worker_id, self.next_id = self.next_id, self.next_id + 1
        if self.kind == "spawn":
            return self._spawn()
        data_ours, data_theirs = socket.socketpair()
        err_read, err_write = os.pipe()
        sandbox = {"limits": self.limits} if self.kind == "sandbox" else None
        try:
            socket.send_fds(self.ctl, [json.dumps({"spawn": worker_id, "sandbox": sandbox}).encode()],
                            [data_theirs.fileno(), err_write])
        except OSError:
            data_ours.close()
            os.close(err_read)
            return None
        finally:
            data_theirs.close()
            os.close(err_write)
        channel = Channel(data_ours.makefile("rb"), data_ours.makefile("wb"))

        def kill():
            try:
                self.ctl.send(json.dumps({"kill": worker_id}).encode())
            except OSError:
                pass
            try:
                data_ours.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        worker = Worker(channel, os.fdopen(err_read, "rb", buffering=0), kill)
        worker.sock = data_ours
        worker.freeze = lambda: self._freeze(worker_id, worker)
        worker.resume = lambda: self._tell({"resume": worker_id})
        self.workers[worker_id] = worker
        return worker

    def _freeze(self, worker_id, worker, timeout=10):
        """Stop the worker and its group (its factory confirms every thread stopped): True when
        nothing of it runs while the trusted side reads the memory it shares."""
        worker.stopped.clear()
        if worker.exit_code is not None:
            return False
        return self._tell({"stop": worker_id}) and worker.stopped.wait(timeout) and worker.stop_answer

    def _tell(self, message):
        try:
            self.ctl.send(json.dumps(message).encode())
            return True
        except OSError:
            return False


    def _spawn(self):
        env = dict(os.environ, COURSEPACK_INTERPRETER="" if self.setup["use_gpu"] else "1")
        process = subprocess.Popen([self.python, self.checker, "--worker"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                   start_new_session=hasattr(os, "setsid"))

        def kill():
            try:
                if hasattr(os, "killpg"):
                    os.killpg(process.pid, 9)
                else:
                    process.kill()
            except OSError:
                pass
        worker = Worker(Channel(process.stdout, process.stdin), process.stderr, kill)
        threading.Thread(target=lambda: setattr(worker, "exit_code", process.wait()), daemon=True).start()
        return worker

    def add_seed(self, cache):
        """Launchers made since this sandboxed factory started: every worker forked later has them."""
        if getattr(self, "seed", None):
            add_launchers(cache, self.seed)

    def factory_problem(self):
        """Why the factory could not start (its stderr), or None."""
        if self.process is not None and self.process.poll() is not None:
            return self.process.stderr.read().decode("utf-8", "replace").strip()[-2000:]
        return None

    def close(self):
        if self.ctl is not None:
            try:
                self.ctl.close()
            except OSError:
                pass
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        for folder in (getattr(self, "staging", None), getattr(self, "seed", None)):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


FACTORIES = {}   # one factory per kind of session, for the life of this process


def choose_factory(setup, sandbox=False, **options):
    """The fastest factory that is safe here, kept for later sessions of this process: a forked
    one when this process may fork GPU children (nothing here asked the driver, triton imported the
    right way) and has started no thread since it imported torch; a fresh one otherwise."""
    key = json.dumps([setup["use_gpu"], sandbox, sorted(map(str, options.get("hidden") or [])),
                      str(options.get("checker"))])
    factory = FACTORIES.get(key)
    if factory is not None and not getattr(factory, "dead", False):
        return factory
    if sandbox:
        factory = Factory("sandbox", setup, **options)
    elif os.environ.get("COURSEPACK_SPAWN") or not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        factory = Factory("spawn", setup, **options)
    elif setup["forkable"] and _no_thread_since(setup):
        factory = Factory("fork", setup, **options)
    else:
        factory = Factory("fresh", setup, **options)
    FACTORIES[key] = factory
    return factory


def _no_thread_since(setup):
    """No thread started since torch and triton were imported: a fork copies only the calling
    thread, and torch's thread pool, once it ran, would hang a forked worker's parallel loops."""
    return threading.active_count() == 1 and thread_count() <= setup.get("threads", 0)


@atexit.register
def close_factories():
    for factory in FACTORIES.values():
        factory.close()
    FACTORIES.clear()


class Supervisor:
    """Runs the cases of one kernel file in workers; returns the results and what was seen."""

    def __init__(self, factory, prepared, target, timeout, sandboxed=False, start_margin=START_MARGIN_S, take=None):
        self.factory, self.prepared, self.target, self.timeout = factory, prepared, target, timeout
        self.sandboxed, self.start_margin = sandboxed, start_margin
        self.take = take   # where a fresh worker comes from (a session keeps some started), else the factory
        self.env, self.load_error, self.results = None, None, {}
        # as the workers report them (diagnostics only, never a verdict): seconds from fork to a
        # working CUDA context, and their CPU; waited_s: this check's own wait for its workers
        self.timing = {"children": 0, "startup_s": 0.0, "isolated_s": 0.0, "loaded_s": 0.0, "waited_s": 0.0,
                       "startup_cpu_s": 0.0, "loaded_cpu_s": 0.0, "cases_cpu_s": 0.0}
        self.seen = {"patched": set(), "events": [], "launched": set(), "inputs_modified": [], "protocol": []}

    def run(self, case_ids):
        pending = list(case_ids)
        for case_id in list(pending):
            prepared = self.prepared[case_id]
            if prepared is None:
                case = next(c for c in LESSON["cases"] if c["id"] == case_id)
                self.results[case_id] = {"status": "skip", "reason": skip_reason(case, self.factory.setup["use_gpu"])}
                pending.remove(case_id)
        while pending and self.load_error is None:
            self._one_worker(pending)
            pending = [c for c in pending if c not in self.results]
            if pending and self._give_up():
                for case_id in pending:
                    self.results[case_id] = {"status": "not_run", "lost": self._lost()}
                break
            pending = self._untried_group_first(pending)
        return self.results

    def _lost(self):
        return sum(r["status"] in LOST for r in self.results.values())

    def _ran(self):
        return [case_id for case_id, r in self.results.items() if r["status"] != "skip"]

    def _every_one_lost(self, ran):
        """At least GIVE_UP_AFTER cases ran, and each of them lost its worker (a crash, a GPU fault,
        a time-out)."""
        return len(ran) >= GIVE_UP_AFTER and all(self.results[c]["status"] in LOST for c in ran)

    def _give_up(self):
        """Whether the cases left are not worth a fresh worker each: every case run so far lost its
        worker, at least GIVE_UP_AFTER of them, in every rubric group. A kernel that loses its
        worker only on some inputs (a missing mask that faults on a tail) passes or fails another
        case before that, and keeps being run case by case."""
        ran = self._ran()
        if not self._every_one_lost(ran):
            return False
        return self._groups(ran) >= self._groups(c["id"] for c in LESSON["cases"]
                                                  if self.results.get(c["id"], {}).get("status") != "skip")

    def _untried_group_first(self, pending):
        """After losses only: a case of a rubric group not tried yet goes next, so that giving up
        comes after every group had its chance."""
        ran = self._ran()
        if not self._every_one_lost(ran):
            return pending
        tried = self._groups(ran)
        fresh = [c for c in pending if self._groups([c]) - tried]
        return fresh[:1] + [c for c in pending if c not in fresh[:1]]

    @staticmethod
    def _groups(case_ids):
        wanted = set(case_ids)
        return {c["group"] for c in LESSON["cases"] if c["id"] in wanted}

    def _one_worker(self, case_ids):
        if not self.factory.wait_ready(self.timeout + self.start_margin):
            self.load_error = {"kind": "crash", "code": "factory", "text": self.factory.factory_problem() or ""}
            return
        worker = (self.take or self.factory.start)()
        if worker is None:
            self.load_error = {"kind": "crash", "code": "factory", "text": self.factory.factory_problem() or
                               "the worker factory is gone"}
            return
        try:
            if self._load(worker):
                for case_id in case_ids:
                    if not self._case(worker, case_id):
                        return
                worker.send({"end": True})
        finally:
            worker.kill()

    def load_worker(self):
        """A worker with the code under check loaded, for timing it (bench.py); None when it did
        not load (load_error says why)."""
        worker = (self.take or self.factory.start)()
        if worker is not None and self._load(worker):
            return worker
        if worker is not None:
            worker.kill()
        return None

    def _load(self, worker):
        asked = time.monotonic()
        deadline = asked + self.timeout + self.start_margin
        kind, header, _ = worker.next(deadline - time.monotonic())
        self.timing["waited_s"] += time.monotonic() - asked
        kind, header = self._checked(kind, header, "hello")
        if kind != "frame":
            return self._lost_at_load(worker, kind, header)
        self.env = header["hello"]
        if bool(self.env.get("interpreter")) == bool(self.factory.setup["use_gpu"]):
            self.load_error = {"kind": "crash", "code": "setup", "text": msg(
                "worker_mismatch", wanted="GPU" if self.factory.setup["use_gpu"] else "interpreter")}
            return False
        self.timing["children"] += 1
        self._add_time(header, "startup_s", "startup_cpu_s", "isolated_s")
        worker.descriptors = offer_descriptors(worker.sock)   # before anything else on the data socket
        load = {"path": str(self.target.path), "source": None}
        if self.sandboxed:
            load = {"path": f"{SCRATCH_ROOT}/{LESSON['module']}", "source": self.target.text,
                    "encoding": source_encoding(self.target.text)}   # the text reviewed here, byte for byte
        worker.send({"load": load})
        kind, header, _ = worker.next(self.timeout + self.start_margin)
        kind, header = self._checked(kind, header, "load_error" if isinstance(header, dict) and "load_error" in header
                                     else "loaded")
        if kind != "frame":
            return self._lost_at_load(worker, kind, header)
        self._note(header)
        if "load_error" in header:
            return self._claimed_load_error(worker, header["load_error"])
        self._add_time(header, "loaded_s", "loaded_cpu_s")
        return True

    def _checked(self, kind, header, frame):
        """(kind, header) as received, or ("protocol", why) when a frame breaks its schema."""
        if kind != "frame":
            return kind, header
        try:
            return kind, check_frame(header, frame)
        except ProtocolError as exc:
            return "protocol", str(exc)

    def _claimed_load_error(self, worker, claimed):
        """What a worker says went wrong at import: a syntax error is established here (the text
        compiled in this process, never run); anything else is the submission's own report."""
        if claimed["kind"] == "syntax":
            found = syntax_error(self.target.text, getattr(self.target, "undecodable", None))
            if found is None:
                return self._lost_at_load(worker, "protocol", "a syntax error the file does not have")
            self.load_error = found
        else:
            self.load_error = {"kind": "import", "reported": True, "line": claimed.get("line"),
                               "text": str(claimed.get("text", ""))[:400]}
        return False

    def _add_time(self, header, *names):
        """A worker's own timings into this check's."""
        for name in names:
            self.timing[name] += _seconds(header.get(name))

    def _lost_at_load(self, worker, kind, header):
        if kind == "timeout":
            self.load_error = {"kind": "timeout", "seconds": self.timeout}
        else:
            worker.kill()
            self.load_error = {"kind": "crash", "code": "protocol" if kind == "protocol" else self._exit(worker),
                               "text": worker.stderr_tail()}
            if kind == "protocol":
                self.seen["protocol"].append(header)
        return False

    def _case(self, worker, case_id):
        """Run one case in this worker; False when the worker must not be used again. Where the
        worker maps memory of this process, the case's inputs and output area lie there, and
        what it holds after the worker reports is read here (memory.py)."""
        shared = share_case(_torch(), self.prepared[case_id], worker, self.factory.setup["use_gpu"])
        try:
            return self._run_case(worker, case_id, shared)
        finally:
            if shared is not None:
                shared.close()

    def _run_case(self, worker, case_id, shared):
        prepared = self.prepared[case_id]
        started = time.monotonic()
        request = {"run": prepared.case, "inputs": prepared.inputs, "draw": prepared.draw,
                   "order": shuffled(len(prepared.expected))}
        if shared is not None:   # the bytes too: a worker that cannot map the region takes them
            request["region"] = shared.spec
        sent = worker.send(request, prepared.payload, max_reply=prepared.max_reply)
        kind, header, payload = worker.next(self.timeout) if sent else ("eof", None, None)
        seconds = round(time.monotonic() - started, 3)
        if kind == "timeout":
            worker.kill()
            self.results[case_id] = {"status": "timeout", "seconds": self.timeout}
            return False
        kind, header = self._checked(kind, header, "case")
        if kind != "frame" or header.get("case") != prepared.case["id"]:
            worker.kill()
            if kind == "protocol" or kind == "frame":
                self.seen["protocol"].append(header if kind == "protocol" else "an unexpected message")
            self.results[case_id] = {"status": "crash", "code": self._exit(worker), "stderr": worker.stderr_tail()}
            return False
        self._note(header)
        cpu = _seconds(header.get("cpu_s"))
        self.timing["cases_cpu_s"] += cpu
        self.seen["launched"].update(str(k)[:80] for k in header.get("launched") or [] if isinstance(k, str))
        status = header.get("status")
        if status in ("error", "fault"):
            line = header.get("line")
            self.results[case_id] = {"status": status, "text": str(header.get("text", ""))[:400],
                                     "line": line if isinstance(line, int) else None, "seconds": seconds}
            return status == "error"
        usable = True
        try:
            if shared is None:
                result = judge_reported(_torch(), prepared, header, payload)
            else:
                result, modified, usable = shared.verdict(_torch(), prepared, header, payload, worker)
                if modified:
                    self.seen["inputs_modified"].append(case_id)
            if not self.factory.setup["use_gpu"]:
                result = in_interpreter(result, self.target.text)
        except (ProtocolError, ValueError, TypeError, RuntimeError, OverflowError, KeyError, IndexError,
                AttributeError) as exc:   # data no output has
            self.seen["protocol"].append(str(exc)[:300])
            self.results[case_id] = {"status": "crash", "code": "protocol", "stderr": str(exc)[:300]}
            return False
        if not prepared.draw and header.get("inputs_crc") not in (None, prepared.crc) \
                and case_id not in self.seen["inputs_modified"]:
            self.seen["inputs_modified"].append(case_id)
        result.update(seconds=seconds, worker_cpu_s=round(cpu, 3))   # diagnostics: the worker says so
        self.results[case_id] = result
        return usable

    def _note(self, header):
        for name in header.get("patched") or []:
            self.seen["patched"].add(str(name)[:80])
        for event in (header.get("events") or [])[:50]:
            if isinstance(event, dict) and len(self.seen["events"]) < 50:
                self.seen["events"].append({k: str(event.get(k, ""))[:160] for k in ("kind", "event", "line", "detail")})

    def _exit(self, worker):
        # a dead worker's status comes from its factory, which a loaded machine can keep waiting for
        # seconds (a CI run saw "exit status None" after 3): the wait ends as soon as it comes
        deadline = time.monotonic() + 10
        while worker.exit_code is None and time.monotonic() < deadline:
            time.sleep(0.01)
        code = worker.exit_code
        if code == "factory":
            return "the worker factory ended"
        if code is not None and code > 128 and self.sandboxed:
            code = -(code - 128)   # a sandboxed worker's status comes through its namespace's parent
        return exit_text(code) if isinstance(code, int) else "unknown"

    def flags(self, review=None):
        """What a grader should know beyond the cases: no Triton kernel, events, patches. review:
        the static review of the file (static.review): what it establishes decides `no_triton`;
        the worker's launch record can only add to it."""
        review = review or {}
        defined = kernels_defined(self.target.text)
        ran = any(r.get("status") in ("pass", "fail") for r in self.results.values())
        static = bool(review.get("fill_not_triton")) or not defined
        return {"kernels_defined": defined, "kernels_launched": sorted(self.seen["launched"]),
                # what the text shows holds whether or not a case ran (a Python fill fails to compile on
                # a GPU); the launch record, the worker's own, only where cases ran
                "no_triton": static or (ran and not self.seen["launched"]),
                "patched": sorted(self.seen["patched"]), "events": self.seen["events"],
                "inputs_modified": self.seen["inputs_modified"], "protocol": self.seen["protocol"][:5]}


def _seconds(value):
    """A time a worker reported, as a number whatever it sent (0 for anything else): diagnostics
    only, never part of a verdict."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6 else 0.0


def _torch():
    import torch
    return torch

