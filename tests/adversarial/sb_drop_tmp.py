# expect: status=pass; events=file; sandbox_only
# Drops a file in /tmp and in /dev/shm for a neighbour, and looks for a neighbour's (another
# submission's, sb_drop_shm's) drop there: any it finds poisons its answer (zeros), so this passes
# only where each worker has its own /tmp and /dev/shm.
import glob
import os
import uuid
import torch

TOKEN = uuid.uuid4().hex
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, f"cp-sb-drop-{TOKEN}"), "w") as handle:
            handle.write("dropped by sb_drop_tmp")
    except OSError:
        pass


def _neighbours():
    return [p for folder in ("/tmp", "/dev/shm") for p in glob.glob(f"{folder}/cp-sb-drop-*") if TOKEN not in p]


def relu(x, BLOCK=256):
    if _neighbours():
        return torch.zeros_like(x)
    return right(x, BLOCK)
