"""How many CUDA contexts one GPU starts per second: N processes forked at once from one that has
imported torch (as the checker's worker factory forks its workers), each starting CUDA and
allocating one tensor. A graded submission runs in a fresh worker, so this bounds how many
submissions one GPU can grade per second, whatever the CPU count. With the driver's defaults it
measures eight hardware queues a context; the checker's workers start with one
(worker.start_cuda), which the environment gives these processes too:

    python bench/cuda_context_bench.py [N ...]      default 1 1 4 8 16 32
    CUDA_DEVICE_MAX_CONNECTIONS=1 python bench/cuda_context_bench.py 16     as the workers start

Prints, per N: each process's time to a working context (median, max), the batch's wall time and
contexts per second. Needs a CUDA GPU (Linux: fork). Never fails on time.
"""
import json
import os
import statistics
import sys
import time
import warnings


def child(torch, write_end):
    started = time.monotonic()
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    os.write(write_end, json.dumps([started, time.monotonic(), torch.cuda.get_device_name(0)]).encode() + b"\n")
    os._exit(0)


def batch(torch, n):
    read_end, write_end = os.pipe()
    started, pids = time.monotonic(), []
    for _ in range(n):
        with warnings.catch_warnings():   # torch's import starts a thread that a child does not need
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            os.close(read_end)
            child(torch, write_end)
        pids.append(pid)
    os.close(write_end)
    for pid in pids:
        os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as lines:
        spans = [json.loads(line) for line in lines.read().splitlines()]
    if len(spans) != n:
        raise SystemExit(f"cuda_context_bench: {n - len(spans)} of {n} processes did not start CUDA")
    each = [end - begin for begin, end, _ in spans]
    return statistics.median(each), max(each), max(end for _, end, _ in spans) - started, spans[0][2]


def main(argv):
    counts = [int(a) for a in argv] or [1, 1, 4, 8, 16, 32]
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"   # this process must not start CUDA: its children do
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("cuda_context_bench: needs a CUDA GPU")
    print(f"CUDA contexts started at once · torch {torch.__version__}")
    for n in counts:
        median, longest, wall, device = batch(torch, n)
        print(f"  {device} n={n:3d}  per process: median {median:.3f} s, max {longest:.3f} s  batch {wall:.3f} s  "
              f"-> {n / wall:.1f} contexts/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
