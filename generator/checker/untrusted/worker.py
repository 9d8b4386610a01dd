"""The untrusted side: a child process that imports the code under check, runs its entry on the
inputs it is sent and hands back data only (outputs with their guard bands, timings, the kernels it
launched, what it tried that a checked kernel has no business doing). It decides nothing: every
verdict is made from this data by the trusted process (supervisor.py, verdict.py), which never
imports the code under check.

Before the code under check is imported, the harness is in place: torch.empty and
torch.empty_like hand out poisoned memory inside guard bands (so a module-level
`from torch import empty_like` gets the poisoned one too), Triton's launches are recorded, and an
audit hook notes network, process, signal, file and gc-hunting attempts made from that code."""
import importlib.util
import os
import sys
import time
import traceback

from ..shared.common import GPU_FAULT_WORDS, GUARD, LESSON, inplace, outputs
from ..trusted.cases import input_fill, make_inputs, parse_value
from ..trusted.memory import accept_descriptors, dense_strides, map_region, region_arguments
from ..shared.protocol import checksum, filled, scalar_value, tensor_bytes, tensor_header
from ..shared.sandbox import quiet_folders, reported_file_event

WATCHED = {"socket.connect": "network", "socket.bind": "network", "socket.sendto": "network",
           "socket.getaddrinfo": "network", "os.kill": "signal", "os.killpg": "signal",
           "signal.pthread_kill": "signal", "os.fork": "process", "os.forkpty": "process",
           "os.posix_spawn": "process", "os.system": "process", "subprocess.Popen": "process",
           "os.exec": "process", "open": "file", "os.listdir": "file",
           "os.scandir": "file", "os.remove": "file", "os.rename": "file",
           "shutil.rmtree": "file", "gc.get_objects": "gc", "gc.get_referrers": "gc", "gc.get_referents": "gc",
           "ctypes.dlopen": "ctypes", "object.__setattr__": "patch", "sys.addaudithook": "audit"}
MAX_EVENTS = 50


class Harness:
    """What the worker watches while the code under check runs."""

    def __init__(self, torch, path, poison):
        self.torch, self.path, self.poison = torch, os.path.realpath(path), poison
        self.buffers, self.launched, self.events = [], set(), []
        self.originals = {}
        self.arena = None   # a call's free output areas in the trusted side's region (memory.region_arguments)
        self.timed_region = None   # the region of the trusted side's timed calls (run_timed)
        self.descriptors = None    # the socket the trusted side's region descriptors come over
        self.retire = None         # gives the last case's region back (memory.map_region)

    def install(self):
        torch = self.torch
        empty_like, empty = torch.empty_like, torch.empty
        self.originals = {"empty_like": empty_like, "empty": empty}

        def poisoned_empty_like(t, *args, **kwargs):
            plain = empty_like(t, *args, **kwargs)
            return plain if args else self._poisoned(plain)

        def poisoned_empty(*args, **kwargs):
            plain = empty(*args, **kwargs)
            return plain if kwargs.get("out") is not None else self._poisoned(plain)

        torch.empty_like, torch.empty = poisoned_empty_like, poisoned_empty
        self._record_launches()
        self.snapshot = {name: getattr(torch, name) for name in dir(torch) if callable(getattr(torch, name, None))}
        self.tensor_snapshot = dict(vars(torch.Tensor))
        self.timer_snapshot = clock_functions(torch)
        self.own_snapshot = dict(globals())   # the checker's own names, in this worker
        quiet_folders()   # before the hook: computing them opens files
        sys.addaudithook(self._audit)

    def _poisoned(self, plain):
        for index, area in enumerate(self.arena or []):   # the first free output area of its shape and dtype
            if tuple(plain.shape) == area["shape"] and plain.dtype == area["dtype"] \
                    and plain.device == area["base"].device and (not plain.numel() or _span(plain) == plain.numel()):
                del self.arena[index]   # an output area of the trusted side's region: read there, not reported
                return area["base"].as_strided(plain.shape, plain.stride(), area["start"])
        if not plain.is_floating_point() or not plain.numel():
            return plain
        span = _span(plain)
        buffer = filled(self.torch, span + 2 * GUARD, self.poison, plain.dtype, plain.device)
        self.buffers.append((buffer, span))
        return buffer.as_strided(plain.shape, plain.stride(), GUARD)

    def guard_of(self, out):
        """(span, the guard bands' bytes) when out lies in a poisoned buffer of this case."""
        if not out.numel():
            return None
        for buffer, span in self.buffers:
            if out.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr():
                bands = self.torch.cat([buffer[:GUARD], buffer[GUARD + span:]])
                return span, tensor_bytes(self.torch, bands)
        return None

    def _record_launches(self):
        target, launched = self.path, self.launched
        classes = []
        try:
            from triton.runtime.jit import JITFunction
            classes.append(JITFunction)
        except ImportError:
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            original = cls.run

            def run(self, *args, __original=original, **kwargs):
                fn = getattr(self, "fn", None)
                code = getattr(fn, "__code__", None)
                if not kwargs.get("warmup") and code is not None and os.path.realpath(code.co_filename) == target:
                    launched.add(fn.__name__)
                return __original(self, *args, **kwargs)
            cls.run = run

    def _audit(self, event, args):
        kind = WATCHED.get(event)
        if kind is None or len(self.events) >= MAX_EVENTS:
            return
        frame, depth = sys._getframe(1), 0
        limit = 1 << 20 if kind == "file" else 40   # a file read through helpers, at any depth, is its act
        while frame is not None and depth < limit:
            if frame.f_code.co_filename == self.path or os.path.realpath(frame.f_code.co_filename) == self.path:
                break
            frame, depth = frame.f_back, depth + 1
        else:
            return
        if frame is None:
            return
        if kind in ("process", "ctypes", "patch") and depth > 1:
            return   # torch or triton at work on the code's behalf (a compile, a cache file): not its own act
        if kind == "file" and not reported_file_event(event, args, depth, self.path, SCRATCH):
            return
        self.events.append({"kind": kind, "event": event, "line": frame.f_lineno,
                            "detail": _describe(event, args)})

    def patched(self):
        """Names of torch functions, Tensor attributes, clocks and the checker's own functions (in this
        worker) that the code under check replaced."""
        torch = self.torch
        names = [name for name, value in self.snapshot.items() if getattr(torch, name, None) is not value
                 and name not in ("empty", "empty_like")]
        names += [f"Tensor.{name}" for name, value in vars(torch.Tensor).items()
                  if self.tensor_snapshot.get(name) is not value]
        names += [name for name, value in clock_functions(torch).items() if self.timer_snapshot.get(name) is not value]
        own = globals()   # rebinding them here changes nothing the trusted side does: still an attempt
        names += [f"checker.{name}" for name, value in self.own_snapshot.items()
                  if callable(value) and own.get(name) is not value]
        return sorted(names)[:20]


def _span(tensor):
    """Elements from a tensor's first to its last (its strides' reach)."""
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))


def region_offset(out, whole):
    """Where out lies in the trusted side's region (bytes from its start), or None when it lies
    elsewhere, even in part."""
    if out.device != whole.device or any(stride < 0 for stride in out.stride()):
        return None
    start = out.data_ptr() - whole.data_ptr()
    reach = _span(out) * out.element_size() if out.numel() else 0
    return start if 0 <= start and start + reach <= whole.numel() and start % out.element_size() == 0 else None


def in_area(out, area):
    """Whether out is the output area itself (the trusted side then reads it from the region)."""
    if area is None or not out.numel():
        return False
    base = area["base"]
    start = base.data_ptr() + area["start"] * base.element_size()
    return out.device == base.device and out.dtype == base.dtype and out.data_ptr() == start \
        and tuple(out.shape) == area["shape"] and _span(out) == out.numel()


def clock_functions(torch):
    """The clocks a measurement reads: replacing one forges a time."""
    import time
    found = {f"time.{name}": getattr(time, name) for name in ("perf_counter", "monotonic", "time", "perf_counter_ns")}
    event = getattr(torch.cuda, "Event", None)
    for name in ("record", "elapsed_time", "synchronize", "query"):
        found[f"torch.cuda.Event.{name}"] = getattr(event, name, None)
    found["torch.cuda.synchronize"] = torch.cuda.synchronize
    try:
        import triton.testing
        found["triton.testing.do_bench"] = triton.testing.do_bench
    except ImportError:
        pass
    return found


SCRATCH = None   # the worker's private folder in a sandbox (writes there are its own business)


def _describe(event, args):
    try:
        if event == "object.__setattr__":
            return f"{getattr(args[0], '__name__', type(args[0]).__name__)}.{args[1]}"
        if event == "open":
            return f"{args[0]} ({args[1] or 'r'})"
        if event == "subprocess.Popen":
            return " ".join(map(str, args[1]))[:120] if args[1] else str(args[0])
        return ", ".join(map(str, args))[:120]
    except Exception:
        return ""


def import_student(path, name="student_kernel"):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def student_line(exc, path):
    target = os.path.realpath(path)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if os.path.realpath(frame.filename) == target]
    return lines[-1] if lines else None


def is_gpu_fault(torch, exc, device):
    """True when the process's GPU context is broken: a CUDA error is sticky for its process."""
    text = f"{type(exc).__name__}: {exc}"
    if type(exc).__name__ == "AcceleratorError" or any(word in text for word in GPU_FAULT_WORDS):
        return True
    if device != "cuda":
        return False
    try:
        torch.cuda.synchronize()
    except Exception:
        return True
    return False


def environment(torch, triton, use_gpu):
    env = {"torch": torch.__version__, "triton": triton.__version__,
           "python": sys.version.split()[0], "interpreter": not use_gpu}
    if use_gpu:
        env["device"] = torch.cuda.get_device_name(0)
    return env


def serve(channel, use_gpu, started, isolated=None, reseed=None):
    """The worker's life: hello, load the code under check, run the cases it is sent, until told
    to end (or right after a GPU fault: the process must not be used again). reseed: a sandboxed
    worker's Triton cache takes the launchers staged while it waited, before the code loads."""
    import torch
    import triton
    if os.environ.get("COURSEPACK_CHILD_THREADS"):   # many workers at once: a small thread pool each
        torch.set_num_threads(int(os.environ["COURSEPACK_CHILD_THREADS"]))
    if use_gpu:
        start_cuda(torch)   # its cost counts as start-up, not as case 1
        # then a lower CPU priority for its compiles and cases: one GPU's driver starts and ends
        # about 13 contexts a second, half that on a loaded CPU; the workers starting theirs and
        # the trusted processes go first (BENCHMARKS.md: lesson 3's class 12 % faster)
        try:
            os.nice(WORKER_NICE)
        except OSError:
            pass
    # isolated_s: from the fork to the sandbox in place (namespaces, scratch, seed, filters)
    channel.send({"hello": environment(torch, triton, use_gpu), "startup_s": round(time.monotonic() - started, 3),
                  "startup_cpu_s": round(cpu_seconds(), 3),
                  "isolated_s": round((isolated or started) - started, 3)})
    descriptors = accept_descriptors(channel)   # where the trusted side's regions come from
    request, _ = channel.recv()
    if reseed is not None:
        reseed()
    load = request["load"]
    path = load["path"]
    if load.get("source") is not None:   # a sandbox: the file travels as text into private scratch
        with open(path, "w", encoding=load.get("encoding") or "utf-8", newline="") as handle:
            handle.write(load["source"])
    harness = Harness(torch, path, float(LESSON["poison"]))
    harness.descriptors = descriptors
    harness.install()
    loading, loading_cpu = time.monotonic(), cpu_seconds()
    try:
        module = import_student(path)
        fn = getattr(module, LESSON["entry"])
    except SyntaxError as exc:
        channel.send({"load_error": {"kind": "syntax", "line": exc.lineno, "column": exc.offset, "text": exc.msg},
                      "events": harness.events})
        return
    except BaseException as exc:  # the module may raise anything at import, SystemExit included
        channel.send({"load_error": {"kind": "import", "line": student_line(exc, path),
                                     "text": f"{type(exc).__name__}: {exc}"[:400]}, "events": harness.events})
        return
    channel.send({"loaded_s": round(time.monotonic() - loading, 3), "loaded_cpu_s": round(cpu_seconds() - loading_cpu, 3),
                  "patched": harness.patched(), "events": harness.events})
    device = "cuda" if use_gpu else "cpu"
    while True:
        message = channel.recv(max_payload=1 << 36)
        if message is None or "end" in message[0]:
            return
        header, payload = message
        if "bench" in header:   # timed from the trusted side (bench.time_in_trusted)
            channel.send(run_timed(torch, harness, fn, header, device))
            continue
        begun = cpu_seconds()
        result, data = run_one(torch, harness, fn, header, payload, device, path)
        result["cpu_s"] = round(cpu_seconds() - begun, 3)   # compiles (ptxas included) and the run
        channel.send(result, data)
        if result.get("status") == "fault":
            return


def cpu_seconds():
    """CPU time of this process since it was forked (or started), and of the children it waited
    for (Triton's ptxas and compiler runs)."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


CU_CTX_SCHED_BLOCKING_SYNC = 0x4
WORKER_NICE = 5


def start_cuda(torch):
    """The worker's CUDA context, made for many workers on one GPU (BENCHMARKS.md, grading):
    - one hardware queue: a worker runs one case at a time on one stream, and contexts with the
      default eight start about 2.6 times slower when many start at once;
    - a thread that sleeps while it waits for the GPU: by default each process spins a core in
      every synchronisation, and sixteen workers sharing the GPU would spin the cores that compile
      the next submissions' kernels."""
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
    try:
        import ctypes
        cuda = ctypes.CDLL("libcuda.so.1")
        device = ctypes.c_int()
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), 0) == 0:
            cuda.cuDevicePrimaryCtxSetFlags_v2(device, CU_CTX_SCHED_BLOCKING_SYNC)
    except (OSError, AttributeError):   # no such driver library or call: CUDA's defaults
        pass
    torch.empty(1, device="cuda")


def _receive_inputs(torch, header, payload, device):
    """The case's arguments: fresh tensors from the bytes sent, with the strides declared, each
    storage inside guard bands of NaN (of the largest value, for integers): a kernel that reads
    past an input gets the same numbers on every machine, never what happens to lie there.
    Returns (arguments, [(guarded storage, first element, length) or None per argument])."""
    values, guarded, offset = [], [], 0
    for spec in header["inputs"]:
        if spec["kind"] == "scalar":
            values.append(scalar_value(spec["value"]))
            guarded.append(None)
            continue
        dtype = getattr(torch, spec["dtype"])
        count = spec["storage"]
        nbytes = count * torch.tensor([], dtype=dtype).element_size()
        chunk = payload[offset:offset + nbytes]
        offset += nbytes
        fill = input_fill(torch, dtype)
        storage = filled(torch, count + 2 * GUARD, fill, dtype, device)
        if count:
            storage[GUARD:GUARD + count] = torch.frombuffer(chunk, dtype=dtype).to(device)
        values.append(storage.as_strided(spec["shape"], spec["stride"], spec["offset"] + GUARD))
        guarded.append((storage, GUARD, count))
    return values, guarded


def run_timed(torch, harness, fn, header, device):
    """One timed round: the entry called on each set of inputs in the trusted side's region, each
    output left in (or copied into) its output area, then the whole device synchronized. The
    trusted side's clock and its own read-back of the outputs decide the time, not this answer."""
    bench = header["bench"]
    if bench.get("map"):
        harness.timed_region, _ = map_region(torch, harness.descriptors, bench["nbytes"], device)
    calls = [(args, areas[0]) for args, areas in
             (region_arguments(torch, harness.timed_region, {"region": spec, "inputs": header["inputs"]})
              for spec in bench["calls"])]
    try:
        for args, areas in calls:
            harness.arena = list(areas)
            outs = returned_tensors(torch, fn(*args), len(areas))
            if isinstance(outs, str):
                return {"bench": "error", "text": f"returned {outs}"[:200]}
            for out, area in zip(outs, areas):
                if not in_area(out, area):
                    area["base"].as_strided(area["shape"], dense_strides(area["shape"]), area["start"]).copy_(out)
        if device == "cuda":
            torch.cuda.synchronize()
        return {"bench": "done"}
    except BaseException as exc:  # the code under check may raise anything
        return {"bench": "error", "text": f"{type(exc).__name__}: {exc}"[:200]}


def returned_tensors(torch, out, count):
    """The entry's return value as its count tensors, or what it was instead, in words."""
    if count == 0:
        return []
    outs = list(out) if count > 1 and isinstance(out, (tuple, list)) else [out]
    if len(outs) != count or not all(isinstance(o, torch.Tensor) for o in outs):
        kind = type(out).__name__
        return f"{kind} of {len(out)}" if isinstance(out, (tuple, list)) else kind
    return outs


def case_calls(torch, case, args):
    """The arguments of each call of the case: its own, then one per further call, whose scalars
    replace the case's."""
    calls = [args]
    for call in case.get("calls") or []:
        calls.append([parse_value(torch, call[spec["name"]], spec.get("dtype")) if spec["name"] in call else arg
                      for spec, arg in zip(LESSON["inputs"], args)])
    return calls


def between_cases(torch, harness, device):
    """The last case's memory given back before the next case's: its region (read by the trusted
    side by now) and, on a GPU, what torch's allocator kept of it beyond a little, so that the checks
    sharing the GPU have it."""
    if harness.retire is not None:
        retire, harness.retire = harness.retire, None
        try:
            retire()
        except (OSError, RuntimeError) as exc:   # the region stays mapped: memory, not a verdict
            print(f"coursepack: a case's memory could not be given back ({exc})", file=sys.stderr)
    if device == "cuda" and torch.cuda.memory_reserved() > KEEP_RESERVED:
        torch.cuda.empty_cache()


KEEP_RESERVED = 256 << 20   # bytes of torch's cache a worker keeps between cases


def run_one(torch, harness, fn, header, payload, device, path):
    case = header["run"]
    between_cases(torch, harness, device)
    whole = None
    if header.get("region") is not None:   # inputs and the output areas in the trusted side's memory
        try:
            whole, harness.retire = map_region(torch, harness.descriptors, header["region"]["nbytes"], device)
        except (OSError, RuntimeError, ValueError) as exc:   # then the inputs sent as bytes, as before
            print(f"coursepack: the trusted side's memory could not be mapped here ({exc})", file=sys.stderr)
    if whole is not None:
        args, areas = region_arguments(torch, whole, header)
        guarded = []
    elif header.get("draw"):   # a GPU-only case: its large inputs drawn here, as the trusted side drew them
        args, guarded = [view for _, _, view in make_inputs(torch, case, device)], []
        areas = None
    else:
        args, guarded = _receive_inputs(torch, header, payload, device)
        areas = None
    harness.buffers.clear()
    harness.launched.clear()
    events_before = len(harness.events)
    started = time.monotonic()
    count = sum(1 for spec in outputs() if spec["name"] not in inplace())
    entries, data = [], []
    try:
        calls = case_calls(torch, case, args)
        order = header.get("order")   # the trusted side's shuffle: no call can tell it is the first
        order = order if sorted(order or []) == list(range(len(calls))) else list(range(len(calls)))
        described = {}
        for call in order:
            harness.arena = None if areas is None else list(areas[call])
            outs = returned_tensors(torch, fn(*calls[call]), count)
            if device == "cuda":
                torch.cuda.synchronize()
            described[call] = ([], [])
            _describe_outputs(torch, harness, outs, calls[call], guarded, whole, *described[call])
        for call in range(len(calls)):   # reported in the declared order
            entries += described[call][0]
            data += described[call][1]
        seconds = round(time.monotonic() - started, 4)
        result = {"case": case["id"], "status": "returned", "seconds": seconds, "outputs": entries}
        if guarded:
            result["inputs_crc"] = [None if g is None or LESSON["inputs"][i]["name"] in inplace()
                                    else checksum(tensor_bytes(torch, g[0][g[1]:g[1] + g[2]]))
                                    for i, g in enumerate(guarded)]
        data = b"".join(data)
    except BaseException as exc:  # the code under check may raise anything, SystemExit included
        text = str(exc).strip().splitlines()
        result = {"case": case["id"], "status": "error", "line": student_line(exc, path),
                  "text": f"{type(exc).__name__}: {text[0] if text else ''}"[:400]}
        data = b""
        if is_gpu_fault(torch, exc, device):
            result["status"] = "fault"
    result["launched"] = sorted(harness.launched)
    result["events"] = harness.events[events_before:]
    return result, data


def _describe_outputs(torch, harness, outs, args, guarded, whole, entries, data):
    """One entry per declared output of this call (and its bytes, where it is not read in the
    trusted side's region): a returned tensor, or an in-place input after the call."""
    returned = iter(outs) if not isinstance(outs, str) else None
    for spec in outputs():
        name = spec["name"]
        if name in inplace():
            index = next(i for i, s in enumerate(LESSON["inputs"]) if s["name"] == name)
            entry, chunk = _inplace_entry(torch, args[index], guarded[index] if guarded else None, whole)
        elif returned is None:
            entry, chunk = {"output": None, "got_type": outs[:80]}, b""
        else:
            entry, chunk = _returned_entry(torch, harness, next(returned), whole)
        entry["nbytes"] = len(chunk)
        entries.append(entry)
        data.append(chunk)


def _returned_entry(torch, harness, out, whole):
    if whole is not None and region_offset(out, whole) is not None:   # read there by the trusted side
        return {"output": tensor_header(torch, out), "guard": None, "at": region_offset(out, whole),
                "stride": list(out.stride())}, b""
    chunk = tensor_bytes(torch, out)
    guard = harness.guard_of(out)
    entry = {"output": tensor_header(torch, out), "guard": None if guard is None else {"elements": GUARD,
                                                                                         "span": guard[0]}}
    return entry, chunk + (guard[1] if guard is not None else b"")


def _inplace_entry(torch, view, guarded, whole):
    """An in-place input: read in the region by the trusted side, or sent with its guard bands."""
    if whole is not None or guarded is None:
        return ({"inplace": True}, b"") if whole is not None else \
            ({"output": tensor_header(torch, view), "guard": None}, tensor_bytes(torch, view))
    storage, first, length = guarded
    bands = torch.cat([storage[:first], storage[first + length:]])
    return ({"output": tensor_header(torch, view), "guard": {"elements": GUARD, "span": length}},
            tensor_bytes(torch, view) + tensor_bytes(torch, bands))
