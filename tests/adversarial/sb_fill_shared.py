# expect: status=pass; events=file; sandbox_only
# Fills /dev/shm and /tmp (tmpfs: the machine's memory) until the file system says no, leaves
# /dev/shm full (its own /tmp it empties again: its kernels compile there), then answers right:
# its neighbours (sb_fill_victim) must not be the ones who pay.
import os

BLOCK_BYTES = b"\1" * (1 << 20)


def _fill(folder):
    try:
        with open(os.path.join(folder, "cp-sb-fill"), "wb") as handle:
            for _ in range(1 << 14):
                handle.write(BLOCK_BYTES)
                handle.flush()
    except OSError:
        pass


for folder in ("/dev/shm", "/var/tmp", "/tmp"):
    _fill(folder)
try:
    os.remove("/tmp/cp-sb-fill")
except OSError:
    pass


def relu(x, BLOCK=256):
    return right(x, BLOCK)
