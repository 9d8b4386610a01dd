#!/usr/bin/env python3
"""One lesson's verification, run in its job folder by a coursepack runner (this machine, a remote
command, a Slurm task). Needs Python with torch and triton; nbclient and ipykernel for notebooks.

    python verify_job.py            reads job.json, writes result.json, exits 0 unless it broke

Three kinds of step, run at once:
  batch      every distinct kernel file (answers, declared mistakes) through one check.py process:
             torch is imported once and shared by forking, each kernel file in its own children
  exercise   each language's untouched exercise pack must ask for the blank (no torch needed)
  notebook   each language's answer notebook executes top to bottom, its check cell included
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NOTEBOOK_SCRIPT = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read("lesson.ipynb", as_version=4)
NotebookClient(nb, timeout={timeout}, kernel_name="python3", resources={{"metadata": {{"path": "."}}}}).execute()
checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
print("".join(o.get("text", "") for c in checks for o in c.get("outputs", [])))
print("NOTEBOOK-OK")
"""


def run(command, cwd, timeout, **extra_env):
    start = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", **extra_env)
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env)
        code, out, err, timed_out = done.returncode, done.stdout, done.stderr, False
    except subprocess.TimeoutExpired as exc:
        code, timed_out = 124, True
        out, err = _text(exc.stdout), _text(exc.stderr)
    return {"returncode": code, "stdout": out[-20000:], "stderr": err[-4000:], "timed_out": timed_out,
            "seconds": round(time.monotonic() - start, 2)}


def _text(value):
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def batch(job):
    spec = {"units": job["units"], "out": "units.json", "jobs": job["jobs"], "timeout": job["case_timeout"],
            "interpreter": job["interpreter"]}
    Path("batch.json").write_text(json.dumps(spec), encoding="utf-8")
    result = run([sys.executable, job["checker"], "--batch", "batch.json"], ".", job["timeout"])
    try:
        result["units"] = json.loads(Path("units.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result["units"] = None
    return result


def exercise(folder, timeout):
    as_json = run([sys.executable, "check.py", "--json"], folder, timeout)
    plain = run([sys.executable, "check.py"], folder, timeout)
    try:
        status = json.loads(as_json["stdout"])["status"]
    except (ValueError, KeyError):
        status = None
    return {"returncode": as_json["returncode"], "status": status, "plain": plain["stdout"][-4000:],
            "stderr": as_json["stderr"], "seconds": round(as_json["seconds"] + plain["seconds"], 2)}


def notebook(folder, timeout):
    # beside the batch's children: a small thread pool each, not one thread per core
    threads = str(max(1, (os.cpu_count() or 1) // 8))
    return run([sys.executable, "-c", NOTEBOOK_SCRIPT.format(timeout=int(timeout))], folder, timeout + 60,
               OMP_NUM_THREADS=threads, COURSEPACK_CHILD_THREADS=threads)


def main():
    job = json.loads(Path("job.json").read_text(encoding="utf-8"))
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=1 + len(job["exercises"]) + len(job["notebooks"])) as pool:
        units = pool.submit(batch, job)
        exercises = {locale: pool.submit(exercise, folder, 120) for locale, folder in job["exercises"].items()}
        notebooks = {locale: pool.submit(notebook, folder, job["notebook_timeout"])
                     for locale, folder in job["notebooks"].items()}
        result = {"batch": units.result(),
                  "exercises": {locale: f.result() for locale, f in exercises.items()},
                  "notebooks": {locale: f.result() for locale, f in notebooks.items()}}
    result["seconds"] = round(time.monotonic() - started, 2)
    Path("result.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
