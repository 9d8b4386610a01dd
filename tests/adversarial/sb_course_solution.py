# expect: status=pass; events=file; sandbox_only
# Looks for the course's own reference solution (content/lessons/lesson03_relu/solution.py)
# wherever an instructor keeps a checkout, through pathlib, and reads it. Finding it poisons the
# answer (zeros: a file that ran it would pass with no Triton of its own), so this passes only
# where the sandbox shows no course; the search itself is reported.
from pathlib import Path
import torch

FOUND = []
for root in (Path("/work"), Path("/root"), Path("/home"), Path("/srv"), Path("/opt"), Path.home(), Path.cwd().parent):
    for levels in range(4):   # a checkout up to three folders down
        pattern = "*/" * levels + "content/lessons/lesson03_relu/solution.py"
        try:
            FOUND += sorted(root.glob(pattern))[:1]
        except OSError:
            pass


SOURCES = [path.read_text() for path in FOUND]


def relu(x, BLOCK=256):
    if SOURCES:
        return torch.zeros_like(x)
    return right(x, BLOCK)
