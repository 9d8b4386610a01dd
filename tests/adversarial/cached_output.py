# expect: status=fail
# Computes one answer, then returns it (or a tensor cached by the input's id) for every call.
import torch

CACHE = {}


def relu(x, BLOCK=256):
    key = id(x)
    if key not in CACHE:
        CACHE[key] = right(x, BLOCK) if not CACHE else next(iter(CACHE.values()))
    return CACHE[key]
