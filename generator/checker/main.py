"""check.py's command line and the functions verification and grading call (check_units).

    python check.py                 check the kernel file beside this script
    python check.py PATH            check another .py file, or the exercise cell of an .ipynb
    python check.py --json          per-case results as JSON
    python check.py --hint N        hint level N
    python check.py --report F.md   write a submission report
    python check.py --bench         check, then time the kernel with the lesson's bench.py (GPU)
    python check.py --sandbox       run the code under check in the sandbox (Linux, bubblewrap)"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from .shared.common import EXIT_FAIL, EXIT_PASS, EXIT_UNRUNNABLE, HERE, LESSON, msg
from .shared.environment import missing_packages, platform_message, prepare
from .untrusted.bench import bench_after_check
from .trusted.present import Evaluation, json_result, render_report, write_submission
from .shared.protocol import Channel
from .shared.sandbox import sandbox_label, sandbox_problem, triton_cache_dir
from .trusted.static import blank_lines, load_target, read_target, review
from .trusted.supervisor import START_MARGIN_S, Supervisor, choose_factory, close_factories, prepare_cases
from .untrusted.worker import serve
from .untrusted.zygote import zygote_main


class Refused(Exception):
    """The check cannot run as asked (a sandbox that cannot start here); the message says why."""


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="check.py", description=LESSON.get("title", "coursepack check"))
    parser.add_argument("path", nargs="?", help=msg("help_path"))
    parser.add_argument("--json", action="store_true", help=msg("help_json"))
    parser.add_argument("--hint", type=int, metavar="N", help=msg("help_hint"))
    parser.add_argument("--report", metavar="FILE", help=msg("help_report"))
    parser.add_argument("--bench", action="store_true", help=msg("help_bench"))
    parser.add_argument("--timeout", type=float, default=LESSON.get("timeout_s", 120), help=msg("help_timeout"))
    parser.add_argument("--interpreter", action="store_true", help=msg("help_interpreter"))
    parser.add_argument("--sandbox", action="store_true", help=msg("help_sandbox"))
    parser.add_argument("--notebook-cell", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def show_hint(level):
    hints = LESSON["hints"]
    if not 1 <= level <= 4:
        print(msg("hint_range"))
        return EXIT_UNRUNNABLE
    if level > len(hints):
        print(msg("hint_answer_only"))
        return EXIT_UNRUNNABLE
    print(msg("hint_heading", level=level, name=LESSON["hint_names"][level - 1]))
    print(hints[level - 1])
    return EXIT_PASS


class Session:
    """The trusted process's tools for checking kernel files: torch and triton prepared, the worker
    factory started before any case is computed, every case's inputs and expected output."""

    def __init__(self, force_interpreter=False, sandbox=False, hidden=(), checker=None, limits=None, seed_cache=None,
                 start_margin=START_MARGIN_S, spares=1):
        if sandbox:
            why = sandbox_problem()
            if why:
                raise Refused(msg("sandbox_missing", why=why))
        started = time.monotonic()
        self.setup = prepare(force_interpreter)
        self.timing = {"import_s": round(time.monotonic() - started, 3)}
        import torch
        if sandbox and self.setup["use_gpu"] and not os.path.exists("/dev/nvidia-uvm"):
            torch.cuda.init()   # creates /dev/nvidia-uvm, which the sandbox cannot (no setuid there)
        self.sandbox = "bubblewrap" if sandbox else None
        self.start_margin = start_margin
        self.factory = choose_factory(self.setup, sandbox, checker=checker, hidden=hidden, limits=limits,
                                      seed_cache=seed_cache or triton_cache_dir())
        # spares: workers started now (CUDA, Triton's compile key) while this process computes the
        # cases; the first checks take them (hold_spares: each one taken is replaced at once)
        self.spares, self.spare_lock, self.closed, self.starting = [], threading.Lock(), False, 0
        self.wanted_spares, self.hold = max(0, spares), False
        self._refill()
        self.timing["factory_s"] = round(time.monotonic() - started - self.timing["import_s"], 3)
        if getattr(self.factory, "as_root", False):
            self.sandbox = "bubblewrap, as root in its namespace (the GPU driver is readable by root only here)"
        self.prepared = prepare_cases(torch, self.setup["use_gpu"])
        self.timing["cases_s"] = round(time.monotonic() - started, 3) - self.timing["import_s"] - self.timing["factory_s"]

    def evaluate(self, target, timeout, notebook=False):
        found = review(target.text, notebook or target.cell is not None, target.undecodable)
        blank = blank_lines(target.text)
        if blank:
            return Evaluation(target, found["edits"], found["fill"], blank, review=found)
        supervisor = Supervisor(self.factory, self.prepared, target, timeout, sandboxed=self.sandbox is not None,
                                start_margin=self.start_margin, take=self.take_worker)
        results = supervisor.run([c["id"] for c in LESSON["cases"]])
        return Evaluation(target, found["edits"], found["fill"], blank, supervisor.env, results, supervisor.load_error,
                          supervisor.timing, supervisor.flags(found), sandbox_label(self.sandbox, self.factory.setup),
                          review=found)

    def hold_spares(self, count):
        """Many checks to come (grading): from now on count workers wait ready, each one taken
        replaced at once, so that a check finds its worker's CUDA context started."""
        with self.spare_lock:
            self.wanted_spares, self.hold = max(0, count), True
        self._refill()

    def take_worker(self):
        """A worker that has not seen any code (a waiting spare, else a new one); None when the
        factory is gone. Every worker serves one kernel file only."""
        with self.spare_lock:
            worker = self.spares.pop(0) if self.spares else None
            hold = self.hold
        if hold:
            self._refill()
        return worker or self.factory.start()

    def _refill(self):
        with self.spare_lock:
            wanted = 0 if self.closed else max(0, self.wanted_spares - len(self.spares) - self.starting)
            self.starting += wanted
        for _ in range(wanted):
            worker = self.factory.start()
            with self.spare_lock:
                self.starting -= 1
                keep = worker is not None and not self.closed
                if keep:
                    self.spares.append(worker)
            if worker is not None and not keep:
                worker.kill()

    def close(self):
        """The factory stays for later sessions of this process (closed at its exit); workers
        started for checks that never came are stopped."""
        with self.spare_lock:
            spares, self.spares, self.closed = self.spares, [], True
        for worker in spares:
            worker.kill()


def open_session(job, policy, **options):
    """A runner job's Session (verify_job.py, grade_job.py) for the kernel files of its job.json,
    opened before that process starts any thread (its worker factory is then forked from there),
    in the sandbox as job["sandbox"] asks, under policy:
      "fallback"  verification: "auto" checks without a sandbox that cannot run here, "on" refuses
                  without one, "off" (the label says why there is none); a session that cannot
                  start: its traceback
      "strict"    grading: anything but "off" refuses without a sandbox; a session Refused: why
    options: Session's (start_margin, spares). Returns (session or None, what the sandbox is, why
    the session could not open, or "")."""
    strict = policy == "strict"
    if strict:
        why = None if job["sandbox"] == "off" else sandbox_problem()
        if why is not None:
            return None, "none", f"the sandbox cannot run on this runner: {why}"
        label = "off" if job["sandbox"] == "off" else "bubblewrap"
    else:
        why = sandbox_problem() if job["sandbox"] != "off" else "turned off"
        label = "bubblewrap" if why is None else f"none ({why})"
        if job["sandbox"] == "on" and why is not None:
            return None, label, f"the sandbox was asked for and cannot run here: {why}"
    try:
        session = Session(job["interpreter"], label == "bubblewrap", checker=os.path.abspath(job["checker"]),
                          **options)
    except Exception as exc:
        if not strict:
            return None, label, traceback.format_exc()[-4000:]
        if isinstance(exc, Refused):
            return None, "none", str(exc)
        raise
    return session, label, ""


def evaluate_static(target, notebook=False):
    found = review(target.text, notebook or target.cell is not None, target.undecodable, grammar=False)
    return Evaluation(target, found["edits"], found["fill"], blank_lines(target.text), review=found)


def check(args, out=print, display=None):
    missing = missing_packages()
    if missing:
        out(platform_message(missing))
        return EXIT_UNRUNNABLE
    with tempfile.TemporaryDirectory(prefix="coursepack-check-") as workdir:
        target = load_target(args.path, workdir, display)
        notebook = args.notebook_cell
        ev = evaluate_static(target, notebook)
        session = None
        if not ev.blank:
            try:
                hidden = [str(Path(target.path).resolve().parent), os.getcwd()]
                session = Session(args.interpreter, args.sandbox, hidden=hidden)
            except Refused as exc:
                out(str(exc))
                return EXIT_UNRUNNABLE
            begun = time.monotonic()
            ev = session.evaluate(target, args.timeout, notebook)
            session.timing["evaluate_s"] = round(time.monotonic() - begun, 3)
            session.close()
        lines, status = render_report(ev)
        if args.json:
            data = json_result(ev, status)
            data["timing"] = dict(ev.timing, **(session.timing if session else {}))
            out(json.dumps(data, ensure_ascii=False, indent=1))
        else:
            out("\n".join(lines))
        if args.report:
            write_submission(args.report, ev, lines, status)
            if not args.json:
                out(msg("report_written", file=args.report))
        code = {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(status, EXIT_UNRUNNABLE)
        if args.bench and not args.json:
            no_gpu = ev.env is not None and ev.env.get("interpreter") and not args.interpreter
            code = bench_after_check(target, status, out, no_gpu, session, args.timeout)
        return code


def check_unit(unit, timeout, session):
    """One kernel file's JSON result (as --json gives it, plus the report's text and timing). unit:
    {"id", "path"}, and where the report names it otherwise or it is a notebook's cell, "display"
    and "cell"."""
    started = time.monotonic()
    target = read_target(Path(unit["path"]), unit.get("display", unit["path"]), cell=unit.get("cell"))
    ev = session.evaluate(target, timeout)
    lines, status = render_report(ev)
    data = json_result(ev, status)
    data.update(text="\n".join(lines), seconds=round(time.monotonic() - started, 2), timing=ev.timing)
    return data


def check_units(units, jobs, timeout, session):
    """Verification and grading: the cases of many kernel files (check_unit's units), several at
    once, each in workers of its own, every case computed once in the session. Returns each
    unit's result by id."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(pool.map(lambda unit: (unit["id"], check_unit(unit, timeout, session)), units))


class CheckFailed(Exception):
    """Raised by check_notebook so that a notebook run stops at a failing check cell."""


def check_notebook(entry_function):
    """The notebook's check cell: check the cell that defined entry_function with check.py in a
    fresh process (this kernel has run the code under check: it cannot judge it), same output."""
    import inspect
    import linecache
    source_file = inspect.getsourcefile(entry_function)
    text = "".join(linecache.getlines(source_file)) if source_file else ""
    if not text:
        raise CheckFailed(msg("no_cell_source"))
    with tempfile.TemporaryDirectory(prefix="coursepack-cell-") as workdir:
        path = Path(workdir) / LESSON["module"]
        path.write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, str(HERE / "check.py"), str(path), "--notebook-cell"],
                              capture_output=True, text=True, encoding="utf-8", errors="replace")
    print(done.stdout, end="")
    if done.returncode != EXIT_PASS:
        raise CheckFailed(msg("notebook_failed"))


def worker_main():
    """`check.py --worker`: one worker as a fresh process (where no factory can fork one): the
    protocol on the stdin and stdout it was started with, its own prints to stderr."""
    started = time.monotonic()
    setup = prepare(os.environ.get("COURSEPACK_INTERPRETER") == "1")
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
    serve(Channel(reader, writer), setup["use_gpu"], started)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main()
    if argv[:1] == ["--zygote"]:
        zygote_main(int(os.environ["COURSEPACK_CTL_FD"]), os.environ.get("COURSEPACK_INTERPRETER") == "1")
        return 0
    args = parse_args(argv)
    if args.hint is not None:
        return show_hint(args.hint)
    display = msg("notebook_cell") if args.notebook_cell else None
    return check(args, display=display)


def exit_now(code):
    """Leave without Python's clean-up: with torch and triton loaded it takes most of a second, and
    nothing is left to do (files are closed, children stopped, output flushed here)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    close_factories()   # the workers' factory and its folders (os._exit runs no atexit)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1   # a closed or broken stdout (a pipe whose reader left)
    os._exit(code or 0)


if __name__ == "__main__":
    try:
        result = main()
    except SystemExit as stop:   # argparse, and a file that does not exist
        result = stop.code
    exit_now(result)
