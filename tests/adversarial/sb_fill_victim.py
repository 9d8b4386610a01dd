# expect: status=pass; events=file; sandbox_only
# The neighbour of sb_fill_shared: needs 8 MiB in /tmp and in /dev/shm (as a compile or a
# shared-memory tensor would) and answers zeros when either is full or holds another's fill.
import os
import torch


def _room(folder):
    if os.path.exists(os.path.join(folder, "cp-sb-fill")):
        return False
    try:
        with open(os.path.join(folder, "cp-sb-room"), "wb") as handle:
            handle.write(b"\0" * (8 << 20))
            handle.flush()
            os.fsync(handle.fileno())
        os.remove(os.path.join(folder, "cp-sb-room"))
        return True
    except OSError:
        return False


def relu(x, BLOCK=256):
    if not (_room("/tmp") and _room("/dev/shm")):
        return torch.zeros_like(x)
    return right(x, BLOCK)
