# expect: status=fail; sandbox_only
# Fills its scratch folder until the file system or the file size limit stops it.
import os
import torch


def relu(x, BLOCK=256):
    block = b"\0" * (1 << 20)
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "fill"), "wb") as handle:
        for _ in range(1 << 14):
            handle.write(block)
    return torch.zeros_like(x)
