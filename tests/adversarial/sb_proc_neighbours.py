# expect: status=pass; events=file; sandbox_only
# Looks through /proc for its neighbours (other students' workers, the factory, the grader): their
# command lines, their current folders, their /tmp through /proc/PID/root. It copies the first
# other relu.py it can read; seeing any process but itself and its parent poisons its answer.
import glob
import os
import torch

OTHERS = [p for p in glob.glob("/proc/[0-9]*") if int(os.path.basename(p)) not in (os.getpid(), os.getppid())]
COPIED = []
for proc in OTHERS[:50]:
    for path in (f"{proc}/root/tmp/relu.py", f"{proc}/cwd/relu.py", f"{proc}/root/tmp/w/relu.py"):
        try:
            with open(path) as handle:
                COPIED.append(handle.read())
        except OSError:
            pass


def relu(x, BLOCK=256):
    if OTHERS or COPIED:
        return torch.zeros_like(x)
    return right(x, BLOCK)
