"""How many CUDA contexts one GPU starts (and ends) per second, from processes forked at once or
one after another, as the checker's worker factory forks its workers. A graded submission runs in
a fresh worker, so this bounds how many submissions one GPU can grade per second, whatever the CPU
count. The checker's workers start with one hardware queue (worker.start_cuda); pass
CUDA_DEVICE_MAX_CONNECTIONS=1 to measure as they start.

    python bench/cuda_context_bench.py [N ...]      N processes forked at once, each starting CUDA
                                                    and allocating one tensor (default 1 1 4 8 16 32)
    python bench/cuda_context_bench.py --steady S [--driver] [--alloc MB] [N ...]
        for S seconds, N processes at all times: each starts its context, allocates MB (default 2)
        and sets it, ends it (--driver: the bare driver through ctypes, releasing its context
        itself; else torch) and exits, and a new one is forked at once. Its rate counts whole
        lives, the end included: what a grading run pays per worker once it is under way.

Prints, per N: each process's times (median, max), the wall time and contexts per second. Needs a
CUDA GPU (Linux: fork). Never fails on time.
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
import warnings


def torch_start(torch, alloc_mb):
    torch.cuda.init()
    buffer = torch.empty(
        max(1, alloc_mb << 18), dtype=torch.float32, device="cuda"
    )  # MB of float32
    buffer.zero_()
    torch.cuda.synchronize()
    return torch.cuda.get_device_name(0)


def driver_life(alloc_mb, marks):
    """cuInit, the primary context, an allocation set to zero, its release: the times after each."""
    cuda = ctypes.CDLL("libcuda.so.1")
    device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    for call in (
        lambda: cuda.cuInit(0),
        lambda: cuda.cuDeviceGet(ctypes.byref(device), 0),
        lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
        lambda: cuda.cuCtxSetCurrent(context),
    ):
        if call() != 0:
            raise SystemExit("cuda_context_bench: the driver refused a call")
    marks.append(time.monotonic())  # the context is ready
    nbytes = max(1, alloc_mb) << 20
    if cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(nbytes)) != 0:
        raise SystemExit("cuda_context_bench: cuMemAlloc failed")
    cuda.cuMemsetD8_v2(pointer, ctypes.c_ubyte(0), ctypes.c_size_t(nbytes))
    cuda.cuCtxSynchronize()
    marks.append(time.monotonic())  # the work is done
    cuda.cuMemFree_v2(pointer)
    cuda.cuDevicePrimaryCtxRelease_v2(device)
    marks.append(time.monotonic())  # the context is gone
    name = ctypes.create_string_buffer(100)
    cuda.cuDeviceGetName(name, 100, device)
    return name.value.decode()


def child(start, write_end):
    """In the forked process: start() returns the device's name and appends its marks."""
    marks = [time.monotonic()]
    device = start(marks)
    os.write(write_end, json.dumps([marks, device, os.getpid()]).encode() + b"\n")
    os._exit(0)


def fork(start, read_end, write_end):
    with warnings.catch_warnings():  # torch's import starts a thread that a child does not need
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_end)
        child(start, write_end)
    return pid


def read_lines(read_end, kept=b""):
    with os.fdopen(read_end, "rb") as lines:
        return [json.loads(line) for line in (kept + lines.read()).splitlines()]


def drain(read_end):
    """What the children wrote so far (the pipe must not fill while they keep coming)."""
    kept = b""
    try:
        while chunk := os.read(read_end, 1 << 16):
            kept += chunk
    except BlockingIOError:
        pass
    return kept


def batch(start, n):
    """n processes forked at once; (median and max time to a working context, wall, device)."""
    read_end, write_end = os.pipe()
    began = time.monotonic()
    pids = [fork(start, read_end, write_end) for _ in range(n)]
    os.close(write_end)
    for pid in pids:
        os.waitpid(pid, 0)
    lives = read_lines(read_end)
    if len(lives) != n:
        raise SystemExit(
            f"cuda_context_bench: {n - len(lives)} of {n} processes did not start CUDA"
        )
    each = [marks[1] - marks[0] for marks, _, _ in lives]
    return (
        statistics.median(each),
        max(each),
        max(marks[1] for marks, _, _ in lives) - began,
        lives[0][1],
    )


def steady(start, n, seconds):
    """n processes alive at all times for `seconds`; every life from its fork to its reaping.
    Returns (lives ended within the time, its wall, [marks + [reaped]] of those, device)."""
    read_end, write_end = os.pipe()
    began = time.monotonic()
    deadline = began + seconds
    os.set_blocking(read_end, False)
    forked = {fork(start, read_end, write_end) for _ in range(n)}
    reaped, kept = {}, b""
    while forked:
        pid, status = os.wait()
        reaped[pid] = time.monotonic()
        if status != 0:
            raise SystemExit(f"cuda_context_bench: a process ended with status {status}")
        forked.discard(pid)
        kept += drain(read_end)
        if reaped[pid] < deadline:
            forked.add(fork(start, read_end, write_end))
    os.close(write_end)
    os.set_blocking(read_end, True)
    lives = read_lines(read_end, kept)
    within = sorted(end for end in reaped.values() if end <= deadline)
    return (
        len(within),
        (within[-1] - began) if within else seconds,
        [marks + [reaped[pid]] for marks, _, pid in lives],
        lives[0][1],
    )


def spread(values):
    return f"{statistics.median(values):.3f} s (max {max(values):.3f})"


def starter(driver, alloc):
    """(what each process does, its label): the bare driver, or torch as the workers start it."""
    if driver:
        return (lambda marks: driver_life(alloc, marks)), "the bare driver"
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = (
        "1"  # this process must not start CUDA: its children do
    )
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("cuda_context_bench: needs a CUDA GPU")
    return (
        lambda marks: (torch_start(torch, alloc), marks.append(time.monotonic()))[0]
    ), f"torch {torch.__version__}"


def main(argv):
    parser = argparse.ArgumentParser(
        description="How many CUDA contexts one GPU starts (and ends) per second."
    )
    parser.add_argument("counts", nargs="*", type=int, help="processes at once (N)")
    parser.add_argument(
        "--steady", type=float, metavar="S", help="whole lives for S seconds, N at all times"
    )
    parser.add_argument(
        "--driver", action="store_true", help="the bare driver through ctypes, not torch"
    )
    parser.add_argument(
        "--alloc", type=int, default=2, metavar="MB", help="memory each process allocates (2)"
    )
    args = parser.parse_args(argv)
    counts = args.counts or ([1, 4, 8, 16, 32] if args.steady else [1, 1, 4, 8, 16, 32])
    start, label = starter(args.driver, args.alloc)
    queues = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "8 (the default)")
    if args.steady is None:
        print(f"CUDA contexts started at once · {label} · hardware queues {queues}")
        for n in counts:
            median, longest, wall, device = batch(start, n)
            print(
                f"  {device} n={n:3d}  per process: median {median:.3f} s, max {longest:.3f} s  batch {wall:.3f} s  "
                f"-> {n / wall:.1f} contexts/s",
                flush=True,
            )
        return 0
    print(
        f"CUDA contexts' whole lives, {args.steady:g} s each, N at all times · {label} · {args.alloc} MB each · "
        f"hardware queues {queues}"
    )
    for n in counts:
        done, wall, lives, device = steady(start, n, args.steady)
        parts = f"to a context {spread([m[1] - m[0] for m in lives])}"
        if args.driver:
            parts += (
                f", work {spread([m[2] - m[1] for m in lives])}, release {spread([m[3] - m[2] for m in lives])}"
                f", exit {spread([m[4] - m[3] for m in lives])}"
            )
        else:
            parts += f", exit {spread([m[2] - m[1] for m in lives])}"
        print(
            f"  {device} n={n:3d}  {done} lives in {wall:.2f} s -> {done / wall:.1f} contexts/s  ({parts})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
