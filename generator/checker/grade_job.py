#!/usr/bin/env python3
"""One chunk of a class's submissions, graded by a coursepack runner (this machine, a remote
command, a Slurm array element) in its job folder. Needs Python with torch and triton.

    python grade_job.py             reads job.json, writes results/<unit>.json and result.json

This process is the trusted side of the pack's checker (check.py beside this script, loaded as a
module): it imports torch and triton once, computes every case once, and checks job["jobs"]
submissions at once, each in workers forked from the checker's worker factory, in the sandbox
(job["sandbox"] "on": a grading run refuses to start without one; "off": the instructor turned it
off, and result.json says so). Each unit's result is written as soon as it is known
(results/<id>.json, atomically), so a run that is killed keeps what it finished. A unit is
{"id", "path", "display", "cell"}: a kernel file, or a notebook's exercise cell written to a file
(cell: its number), which is judged against the template without the demo block.
"""
import importlib.util
import json
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FACTORY_WAIT_S = 600


def load_checker(path):
    spec = importlib.util.spec_from_file_location("coursepack_grade_checker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_atomically(path, value):
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def open_session(job, checker):
    """(session or None, what the sandbox is, why nothing can run). Before any thread starts."""
    if job["sandbox"] == "off":
        label = "off"
    else:
        why = checker.sandbox_problem()
        if why is not None:
            return None, "none", f"the sandbox cannot run on this runner: {why}"
        label = "bubblewrap"
    try:
        session = checker.Session(job["interpreter"], label == "bubblewrap", checker=os.path.abspath(job["checker"]),
                                  start_margin=job["start_margin"])
    except checker.Refused as exc:
        return None, "none", str(exc)
    return session, label, ""


def grade_unit(checker, session, unit, timeout, results):
    """check.py's --json result for one unit, plus the lines it shows; written at once."""
    started = time.monotonic()
    try:
        data = dict(checker.check_unit(unit, timeout, session), date=time.strftime("%Y-%m-%d"))
    except Exception:   # the checker broke on this unit (a kernel's failures stay inside its workers)
        data = {"status": "checker_error", "error": traceback.format_exc()[-4000:],
                "seconds": round(time.monotonic() - started, 2)}
    write_atomically(results / f"{unit['id']}.json", {"id": unit["id"], "data": data})
    return unit["id"]


def main():
    job = json.loads(Path("job.json").read_text(encoding="utf-8"))
    started = time.monotonic()
    results = Path("results")
    results.mkdir(exist_ok=True)
    checker = load_checker(job["checker"])
    # many workers at once, each with a small torch thread pool rather than one thread per core
    os.environ["COURSEPACK_CHILD_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, int(job["jobs"]))))
    session, label, refused = open_session(job, checker)
    done = []
    if session is not None:
        # the factory's own start (a sandboxed one imports torch again) may take long on a loaded
        # machine: waited for once here, not within each unit's start margin
        session.factory.wait_ready(FACTORY_WAIT_S)
        todo = [u for u in job["units"] if not (results / f"{u['id']}.json").exists()]
        with ThreadPoolExecutor(max_workers=max(1, int(job["jobs"]))) as pool:
            done = list(pool.map(lambda u: grade_unit(checker, session, u, job["case_timeout"], results), todo))
    write_atomically(Path("result.json"), {"sandbox": label, "refused": refused, "graded": len(done),
                                           "seconds": round(time.monotonic() - started, 2),
                                           "session": session.timing if session is not None else None})
    checker.close_factories()   # the factory and its folders (os._exit below runs no atexit)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # without the teardown of torch's heap
