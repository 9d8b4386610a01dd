# expect: status=pass; events=file; sandbox_only
# Hunts for another class's grades.csv, grading's results cache (build/cache/grade/*.json) and a
# grading job's results beside the checker, which hold other students' results. Anything found
# poisons its answer (zeros): it passes only where none of them is visible.
import glob
import os
import torch

SEEN = []
PATTERNS = [f"{root}/{'*/' * levels}{name}" for root in ("/work", "/root", "/home", "/srv", os.path.expanduser("~"))
            for levels in range(5) for name in ("grades.csv", "cache/grade/*.json")]
for pattern in PATTERNS + ["/.coursepack/*/*.json", "/.coursepack/*/results/*.json"]:
    for path in glob.glob(pattern)[:5]:
        try:
            with open(path, encoding="utf-8") as handle:
                SEEN.append(handle.read(4096))
        except OSError:
            pass


def relu(x, BLOCK=256):
    if SEEN:
        return torch.zeros_like(x)
    return right(x, BLOCK)
