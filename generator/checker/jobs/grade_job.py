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

Jobs on one machine share their work (job["share"]: the job folders beside this one): a unit is
run by whichever job claims it first (a file in ../claims), so a job that is done with its own
units takes the others' last ones instead of idling while one job's hanging submissions run out.
Where Triton's launchers are being made meanwhile from the lesson's answer (job["seed_done"]: the
file that appears when that is over), a job starts its sandbox and its workers' CUDA meanwhile, and
waits for it before its first check; each worker copies the launchers before it loads any code.
A job given a GPU (job["device"], as CUDA_VISIBLE_DEVICES names it) runs every worker on that one:
a machine's GPUs are spread over its jobs.
"""

import itertools
import json
import os
import sys
import time
import traceback
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FACTORY_WAIT_S = 600
SEED_WAIT_S = 120  # the longest wait for the launchers being made meanwhile (job["seed_done"])


CHECKER = None  # the pack's check.py, loaded as a module


def write_atomically(path, value):
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


class Queue:
    """The units this job runs: its own in order, then (with job["share"]) the other jobs', the last
    first; each one only once it is claimed, so no unit runs twice."""

    def __init__(self, job, results):
        self.lock, self.claims = (
            threading.Lock(),
            Path(job["share"]["claims"]) if job.get("share") else None,
        )
        own = [u for u in job["units"] if not (results / f"{u['id']}.json").exists()]
        theirs = [
            [dict(u, path=f"{folder}/{u['path']}") for u in reversed(_units_of(folder))]
            for folder in (job.get("share") or {}).get("jobs", [])
        ]
        # the others' last units first, one job after the other: each is relieved of its end
        self.units = own + [
            u for turn in itertools.zip_longest(*theirs) for u in turn if u is not None
        ]

    def next(self):
        with self.lock:
            while self.units:
                unit = self.units.pop(0)
                if self._claim(unit["id"]):
                    return unit
        return None

    def left(self):
        """How many units may still come to this job: those no job has claimed yet."""
        with self.lock:
            if self.claims is None:
                return len(self.units)
            return sum(1 for unit in self.units if not (self.claims / unit["id"]).exists())

    def _claim(self, unit_id):
        if self.claims is None:
            return True
        try:
            os.close(os.open(self.claims / unit_id, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            return False


def _units_of(folder):
    try:
        return json.loads((Path(folder) / "job.json").read_text(encoding="utf-8"))["units"]
    except (OSError, ValueError, KeyError):
        return []


def grade_unit(checker, session, unit, timeout, results):
    """check.py's --json result for one unit, plus the lines it shows; written at once."""
    started, began = time.monotonic(), time.time()
    try:
        data = dict(checker.check_unit(unit, timeout, session), date=time.strftime("%Y-%m-%d"))
    except (
        Exception
    ):  # the checker broke on this unit (a kernel's failures stay inside its workers)
        data = {
            "status": "checker_error",
            "error": traceback.format_exc()[-4000:],
            "seconds": round(time.monotonic() - started, 2),
        }
    data["clock"] = [round(began, 3), round(time.time(), 3)]  # when it ran (grade_bench's timeline)
    write_atomically(results / f"{unit['id']}.json", {"id": unit["id"], "data": data})
    return unit["id"]


def main():
    job = json.loads(Path("job.json").read_text(encoding="utf-8"))
    started = time.monotonic()
    results = Path("results")
    results.mkdir(exist_ok=True)
    from checker_module import load_checker  # beside this script in the job folder

    global CHECKER
    checker = CHECKER = load_checker(job["checker"])
    # many workers at once, each with a small torch thread pool rather than one thread per core, and
    # the jobs that share this machine (share) each with their part of the cores for the cases
    together = 1 + len((job.get("share") or {}).get("jobs", []))
    cores = os.cpu_count() or 1
    os.environ["COURSEPACK_CHILD_THREADS"] = str(
        max(1, cores // (together * max(1, int(job["jobs"]))))
    )
    if (
        together > 1 and "torch" in sys.modules
    ):  # forked from the task server: torch ran nothing yet
        sys.modules["torch"].set_num_threads(max(1, cores // together))
    if job.get("device") is not None:  # before the factory starts: its workers inherit it
        os.environ["CUDA_VISIBLE_DEVICES"] = str(job["device"])
    queue = Queue(job, results)
    jobs = max(1, int(job["jobs"]))
    spares = min(jobs, len(queue.units))
    seed_done = job.get("seed_done")  # launchers being made while this job starts
    session, label, refused = checker.open_session(
        job, "strict", start_margin=job["start_margin"], spares=spares
    )
    done = []
    if session is not None:
        # the factory's own start (a sandboxed one imports torch again) may take long on a loaded
        # machine: waited for once here, not within each unit's start margin
        session.factory.wait_ready(FACTORY_WAIT_S)
        if (
            seed_done
        ):  # the spares start their CUDA meanwhile; each takes the launchers before it loads code
            wait_for(Path(seed_done), SEED_WAIT_S)
            session.factory.add_seed(checker.triton_cache_dir())
        session.hold_spares(spares)

        def drain():
            while (unit := queue.next()) is not None:
                # no more workers waiting ready than checks may still come: a spare started for
                # none is a CUDA context the GPU's driver made and ended for nothing
                session.hold_spares(min(spares, queue.left()))
                done.append(grade_unit(checker, session, unit, job["case_timeout"], results))

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for running in [pool.submit(drain) for _ in range(jobs)]:
                running.result()
    write_atomically(
        Path("result.json"),
        {
            "sandbox": label,
            "refused": refused,
            "graded": len(done),
            "device": job.get("device"),
            "seconds": round(time.monotonic() - started, 2),
            "session": session.timing if session is not None else None,
        },
    )
    if session is not None:
        session.close()  # the spares no check came for
    checker.close_factories()  # the factory and its folders (os._exit below runs no atexit)
    return 0


if __name__ == "__main__":
    code = main()
    CHECKER.leave(code)  # without the teardown of torch's heap
