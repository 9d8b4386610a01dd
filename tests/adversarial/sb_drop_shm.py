# expect: status=pass; events=file; sandbox_only
# sb_drop_tmp's neighbour: drops its own file in /dev/shm and /tmp
# and fails itself (zeros) when it sees sb_drop_tmp's, or any other submission's, drop there.
import glob
import os
import uuid
import torch

TOKEN = uuid.uuid4().hex
for folder in ("/dev/shm", "/tmp"):
    try:
        with open(os.path.join(folder, f"cp-sb-drop-{TOKEN}"), "w") as handle:
            handle.write("dropped by sb_drop_shm")
    except OSError:
        pass


def _neighbours():
    return [p for folder in ("/tmp", "/dev/shm") for p in glob.glob(f"{folder}/cp-sb-drop-*") if TOKEN not in p]


def relu(x, BLOCK=256):
    if _neighbours():
        return torch.zeros_like(x)
    return right(x, BLOCK)
