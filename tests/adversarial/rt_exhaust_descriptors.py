# expect: status=fail; score=0; flags=protocol; flags_gpu=
# (on a GPU the full descriptor table stops the worker's CUDA calls: every case is an error)
# Fills its descriptor table at import, so the checker's shared memory for a case cannot arrive and
# the worker falls back to the inputs' bytes; then a zeros kernel returns a tensor subclass whose
# detach() is torch.relu of the input. Without the shared memory only the worker's own report of
# its output would be judged: the checker must not believe it.
import os

import torch

_held = []
while len(_held) < 100000:
    try:
        _held.append(os.dup(0))
    except OSError:
        break


@triton.jit
def zeros_kernel(out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offsets, tl.zeros((BLOCK,), dtype=tl.float32), mask=offsets < n)


class Honest(torch.Tensor):
    source = None

    def detach(self):
        return torch.relu(Honest.source)


def relu(x, BLOCK=256):
    out = torch.empty_like(x)
    n = x.numel()
    zeros_kernel[(triton.cdiv(n, BLOCK),)](out, n, BLOCK=BLOCK)
    Honest.source = x
    return out.as_subclass(Honest)
