# expect: status=pass; flags=patched
# A correct kernel that makes every GPU timing read a microsecond (for --bench).
import time
import torch

torch.cuda.Event.elapsed_time = lambda self, other: 0.001
time.perf_counter = lambda: 0.0


def relu(x, BLOCK=256):
    return right(x, BLOCK)
