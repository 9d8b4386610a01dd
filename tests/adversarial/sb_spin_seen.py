# expect: status=pass; events=file; sandbox_only
# Looks for what an earlier submission left running (sb_spin_child's cp-sb-spin) and for any other
# submission's process it can see in /proc; finding one poisons its answer (zeros), so it passes
# only where a worker sees no process but its own and none outlives its worker.
import os
import torch


def _others():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (os.getpid(), os.getppid()):
            continue
        try:
            with open(f"/proc/{entry}/comm") as handle:
                name = handle.read().strip()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                line = handle.read()
        except OSError:
            continue
        if name == "cp-sb-spin" or b"--zygote" in line or b"grade_job" in line:
            found.append(entry)
    return found


def relu(x, BLOCK=256):
    if _others():
        return torch.zeros_like(x)
    return right(x, BLOCK)
