#!/usr/bin/env python3
"""What code in the sandbox sees of this machine: the sandbox's mount plan, then, from inside a
worker isolated as the checker isolates one (the same bubblewrap command line, the same isolate()),
a listing of /, /etc, /tmp, /dev/shm, /proc and of the folders named on the command line.

    python scripts/sandbox_view.py [--gpu] [FOLDER ...]     (FOLDER: e.g. the course, the build, home)

Run it where grading runs (needs bubblewrap; as root it runs as nobody, as grading does). The
folders named are also the sandbox's protected ones, as grading's are; home and the current folder
always are. Exit status 1 when the sandbox cannot start here, or a named folder shows anything
but the way to a mounted folder (the Python installation)."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "generator" / "checker" / "shared"))
import sandbox  # noqa: E402  (standalone: the standard library only)

INSIDE = r"""
import json, os, sys
sys.path.insert(0, "/.coursepack/checker")
import sandbox
own = sandbox.own_pids_work(GPU)
os.setpgid(0, 0)
sandbox.isolate({"processes": 64}, own)

def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return f"({exc.strerror})"

seen = {path: listing(path) for path in ["/", "/etc", "/tmp", "/dev/shm", "/.coursepack", "/.coursepack/checker"] + FOLDERS}
seen["/proc (processes)"] = [p for p in listing("/proc") if p.isdigit()]
seen["own PID namespace"] = own
print(json.dumps(seen, indent=1))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="as a GPU worker: the driver's libraries, /sys, /dev/nvidia*",
    )
    parser.add_argument("folders", nargs="*")
    args = parser.parse_args()
    why = sandbox.sandbox_problem()
    if why:
        print(f"no sandbox here: {why}", file=sys.stderr)
        return 1
    folders = [os.path.realpath(f) for f in args.folders]
    for step in sandbox.sandbox_plan(sys.executable, sandbox.__file__, folders, args.gpu):
        print("plan:", " ".join(step))
    staging = sandbox.sandbox_staging()
    try:
        argv = sandbox.sandbox_command(
            sys.executable, sandbox.__file__, folders, args.gpu, None, staging
        )
        start = argv.index("--zygote") - 1
        code = INSIDE.replace("GPU", repr(args.gpu)).replace("FOLDERS", repr(folders))
        argv[start : start + 2] = ["-c", code]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        if staging:
            subprocess.run(["rm", "-rf", staging], check=False)
    print(done.stdout, end="")
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    seen = json.loads(done.stdout)
    mounted = [
        step[2]
        for step in sandbox.sandbox_plan(sys.executable, sandbox.__file__, folders, args.gpu)
        if step[0] == "bind"
    ]
    shown = {
        f: [
            n
            for n in seen[f]
            if not any(
                m.startswith(os.path.join(f, n) + os.sep) or m == os.path.join(f, n)
                for m in mounted
            )
        ]
        for f in folders
        if isinstance(seen.get(f), list)
    }
    for folder, names in shown.items():
        if names:
            print(f"{folder} shows more than the way to a mounted folder: {names}", file=sys.stderr)
    return 1 if any(shown.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
