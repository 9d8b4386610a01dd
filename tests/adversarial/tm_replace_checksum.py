# expect: status=pass; flags=inputs_modified
# Computes ReLU in place, in its input, and replaces the worker's checksum() (wherever the checker
# lives in this process) by one that gives the checksum of the input as it was.
import sys
import zlib

ORIGINAL = []


def _forged(data):
    return zlib.crc32(ORIGINAL[-1]) & 0xFFFFFFFF if ORIGINAL else zlib.crc32(data) & 0xFFFFFFFF


for module in list(sys.modules.values()):
    if hasattr(module, "checksum") and hasattr(module, "run_one"):
        module.checksum = _forged


def relu(x, BLOCK=256):
    ORIGINAL.append(x.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes() if x.numel() else b"")
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, x, n, BLOCK=BLOCK)
    return x
