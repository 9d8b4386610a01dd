"""What every part of check.py shares: the lesson's data, its messages, exit codes, constants.

check.py is one file joined by coursepack from the modules of this folder (generator/checker/
join.py); `from .x import ...` lines exist for readers and are left out of the joined file."""
import os
import signal
import sys
from pathlib import Path

# The data block below is written by coursepack when it builds the pack.
LESSON = {}  # coursepack:data

BLANK = "______"
INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "bool")
GUARD = 4096              # poisoned elements on each side of every output, to catch stray writes
HERE = Path(__file__).resolve().parent
EXIT_PASS, EXIT_FAIL, EXIT_UNRUNNABLE = 0, 1, 2
# Words of the CUDA errors that leave a process unusable (a CUDA error is sticky for its process).
GPU_FAULT_WORDS = ("illegal memory access", "illegal address", "misaligned address",
                   "operation not supported on global/shared address space", "unspecified launch failure",
                   "device-side assert", "an illegal instruction", "CUDA error")


def outputs():
    """The entry's outputs as lesson.yaml declares them (one, `out`, where it declares none)."""
    return LESSON.get("outputs") or [{"name": "out", "check": "values"}]


def inplace():
    """The inputs the entry writes into."""
    return LESSON.get("inplace") or []


def msg(key, **kw):
    return LESSON["messages"][key].format(**kw)


def exit_text(code):
    """How a process ended, in words: 'exit status 3', or the signal's name ('SIGKILL')."""
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def without_main_block(lines):
    """The lines before `if __name__ == "__main__":` (a notebook's exercise cell has no demo)."""
    start = next((i for i, line in enumerate(lines) if line.startswith("if __name__ == ")), len(lines))
    return lines[:start]


def leave(code):
    """End this process now, its output flushed, without Python's clean-up (with torch loaded that
    takes most of a second, and nothing is left to do)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
