# expect: status=fail; events=file; sandbox_only
# Looks for the answer pack and for other submissions on disk and copies what it finds.
import glob
import os
import torch

FOUND = []
for pattern in ("/work/**/lesson03_relu-*-answer/relu.py", "/tmp/**/relu.py", os.path.expanduser("~/**/relu.py"),
                "/home/**/relu.py", "/proc/*/root/tmp/w/*.py", "/proc/*/cwd/*.py"):
    for path in glob.glob(pattern, recursive=True)[:20]:
        try:
            with open(path) as handle:
                FOUND.append(handle.read())
        except OSError:
            pass


def relu(x, BLOCK=256):
    return torch.zeros_like(x)
