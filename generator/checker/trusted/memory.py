"""Memory the trusted process owns and maps into a worker. For each case, one region holds every
tensor input inside guard bands, and an output area inside guard bands of poison: a memfd on the
CPU, on a GPU a cuMem allocation exported as a file descriptor (a descriptor crosses the
sandbox's namespaces; in a probe on the H200, torch's legacy IPC handle did not open even between
two plain processes). The descriptor travels over a socket of its own, set up when the worker says hello.

The worker builds the case's arguments as views of the region, and its first torch.empty_like /
torch.empty of the output's shape and dtype is the output area. When it reports, the trusted
process stops it (its factory sends SIGSTOP to its process group and waits for the stop), reads
the region itself and lets it go on: an input changed, a write past the output's end, the values
the kernel stored are seen there, whatever the worker's own report says."""
import ctypes
import mmap
import os
import signal
import socket
import time

from ..shared.common import GUARD, LESSON
from ..shared.protocol import DTYPES, ProtocolError
from .verdict import judge

ALIGN = 4096
MFD_CLOEXEC, MFD_ALLOW_SEALING = 1, 2
# the worker may write the region, never change its size: a file it shrank would make this process's
# own reads of the region fault (SIGBUS) and end the trusted side with every submission it judges
SEALS = 2 | 4 | 1          # F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL (fcntl is POSIX-only: imported where used)
F_ADD_SEALS = 1033


def _round(n, to=ALIGN):
    return (n + to - 1) // to * to


# --- the trusted side ---------------------------------------------------------------------------

def offer_descriptors(sock):
    """The trusted end of a socket for descriptors, its other end sent to the worker over its
    data socket (which has carried nothing since the worker's hello), or None."""
    if sock is None or not hasattr(socket, "send_fds"):
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        socket.send_fds(sock, [b"D"], [theirs.fileno()])
    except OSError:
        ours.close()
        return None
    finally:
        theirs.close()
    return ours


class Region:
    """One case's memory, owned here; fd is what the worker maps."""

    def __init__(self, torch, nbytes, device):
        self.torch, self.device, self.nbytes = torch, device, _round(max(nbytes, 1))
        self.fd, self.cuda = None, None
        if device == "cuda":
            torch.zeros(1, device="cuda")   # the device's context current in this thread
            self.fd, self.cuda = cuda_export(self.nbytes)
            self.tensor = device_tensor(torch, self.cuda[0], self.nbytes)
        else:
            self.fd = os.memfd_create("coursepack-case", MFD_CLOEXEC | MFD_ALLOW_SEALING)
            os.ftruncate(self.fd, self.nbytes)
            import fcntl
            fcntl.fcntl(self.fd, F_ADD_SEALS, SEALS)
            self.map = mmap.mmap(self.fd, self.nbytes)
            self.tensor = torch.frombuffer(self.map, dtype=torch.uint8)

    def send(self, descriptors):
        socket.send_fds(descriptors, [b"R"], [self.fd])

    def close(self):
        self.tensor = None
        if self.cuda is not None:
            self.torch.cuda.synchronize()
            cuda_release(*self.cuda, self.nbytes)
            self.cuda = None
        elif getattr(self, "map", None) is not None:
            try:
                self.map.close()
            except BufferError:   # a view of it still alive here: the memory goes with the last one
                pass
            self.map = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


NOT_SHARED = []   # why a case could not be shared here (the first reason; the old path is taken)


def share_case(torch, prepared, worker, use_gpu):
    """The case's region, written and sent to the worker, or None where it cannot be (a worker
    without a descriptor socket, no memfd or cuMem here): then inputs travel as bytes and the
    worker's report of its output stands alone, as before."""
    if prepared is None or getattr(worker, "descriptors", None) is None:
        return None
    try:
        return SharedCase(torch, prepared, "cuda" if use_gpu else "cpu", worker.descriptors)
    except (OSError, RuntimeError, AttributeError, ValueError) as exc:
        if not NOT_SHARED:
            NOT_SHARED.append(f"{type(exc).__name__}: {exc}"[:300])
        return None


class SharedCase:
    """A case's region on the trusted side: laid out, written, sent; read back after the report."""

    def __init__(self, torch, prepared, device, descriptors):
        self.layout = lay_out(prepared.made, prepared.expected)
        self.region = Region(torch, self.layout["nbytes"], device)
        try:
            self.sent = image(torch, prepared.made, prepared.expected, self.layout, self.region.tensor.device)
            _assign(self.region.tensor, 0, self.sent)
            if device == "cuda":
                torch.cuda.synchronize()
            self.region.send(descriptors)
        except BaseException:
            self.region.close()
            raise
        self.spec = dict(self.layout, nbytes=self.region.nbytes)

    def verdict(self, torch, prepared, report, payload, worker):
        """(result, inputs modified, worker still usable), read with the worker stopped; one that
        could not be stopped is killed first (and not used again)."""
        frozen = worker.freeze()
        if not frozen:
            worker.kill()
            deadline = time.monotonic() + 5
            while worker.exit_code is None and time.monotonic() < deadline:
                time.sleep(0.01)
        try:
            result, modified = read_back(torch, prepared, self.layout, self.sent, self.region, report, payload)
        finally:
            if frozen:
                worker.resume()
        return result, modified, frozen

    def close(self):
        self.region.close()


def lay_out(made, expected, offset=0):
    """Where each tensor input (its storage, guard bands before and after) and the output area lie
    in the region, in bytes from its start, the first from offset on: {"inputs": [spec or None per
    argument], "output": spec, "nbytes": where the last guard band ends}."""
    inputs = []
    for _, storage, view in made:
        if not hasattr(view, "shape"):
            inputs.append(None)
            continue
        item = storage.element_size()
        start = _round(offset) + GUARD * item
        inputs.append({"offset": start, "dtype": str(view.dtype).replace("torch.", ""), "count": storage.numel(),
                       "shape": list(view.shape), "stride": list(view.stride()), "view_offset": view.storage_offset()})
        offset = start + (storage.numel() + GUARD) * item
    item = expected.element_size()
    start = _round(offset) + GUARD * item
    output = {"offset": start, "dtype": str(expected.dtype).replace("torch.", ""), "shape": list(expected.shape)}
    return {"inputs": inputs, "output": output, "nbytes": start + (expected.numel() + GUARD) * item}


def image(torch, made, expected, layout, device, whole=None):
    """The region's bytes as the trusted side writes them: inputs in guard bands of NaN (of the
    largest value, for integers), the output area poisoned (into whole, when given)."""
    if whole is None:
        whole = torch.empty(_round(max(layout["nbytes"], 1)), dtype=torch.uint8, device=device)
        if whole.device.type == "cpu":
            whole.numpy().fill(0)
        else:
            whole.zero_()
    for (_, storage, _), spec in zip(made, layout["inputs"]):
        if spec is None:
            continue
        fill = float("nan") if storage.dtype.is_floating_point else torch.iinfo(storage.dtype).max
        banded = torch.full((spec["count"] + 2 * GUARD,), fill, dtype=storage.dtype, device=device)
        banded[GUARD:GUARD + spec["count"]] = storage.reshape(-1).to(device)
        _put(whole, spec["offset"] - GUARD * storage.element_size(), banded)
    poisoned = torch.full((expected.numel() + 2 * GUARD,), float(LESSON["poison"]), dtype=expected.dtype, device=device)
    _put(whole, layout["output"]["offset"] - GUARD * expected.element_size(), poisoned)
    return whole


def _put(whole, start, tensor):
    raw = tensor.view(-1).view(whole.dtype) if tensor.numel() else tensor.new_empty(0).view(whole.dtype)
    _assign(whole, start, raw)


def _assign(target, start, source):
    """target[start:start + n] = source (uint8): on the CPU through numpy, which copies on one thread
    (torch's parallel copy of a region took milliseconds on a busy 2-core machine)."""
    if target.device.type == "cpu":
        target.numpy()[start:start + source.numel()] = source.numpy()
    else:
        target[start:start + source.numel()] = source


def _differs(a, b, start, stop):
    """Whether a[start:stop] and b[start:stop] (uint8) differ anywhere."""
    if a.device.type == "cpu":
        return bool((a.numpy()[start:stop] != b.numpy()[start:stop]).any())
    return bool((a[start:stop] != b[start:stop]).any())


def read_back(torch, prepared, layout, sent, region, report, payload):
    """The case's result from what the trusted side reads in the region (the worker stopped), and
    whether an input or its guard bands changed (or the output lies in an input's memory). An output
    the worker says lies in the region is read there; one it sends as bytes is judged from them, and
    when the output area was written too, that must be right as well."""
    if "inputs_crc" in report:
        # the worker took the inputs' bytes instead of the region it was sent. Only its own process
        # can make the mapping fail here (a descriptor table it filled, say), and its report of its
        # output would then stand alone: that can only fail the case, never pass it
        raise ProtocolError("the worker did not use the memory the checker shared for this case, so its "
                            "output could not be read by the checker itself")
    seen = region.tensor[:sent.numel()]
    seen = torch.from_numpy(seen.numpy().copy()) if seen.device.type == "cpu" else seen.clone()
    expected = prepared.expected
    item = expected.element_size()
    out_start, band = layout["output"]["offset"], GUARD * expected.element_size()
    size = expected.numel() * item
    inputs_modified = _differs(seen, sent, 0, out_start - band)
    area = seen[out_start - band:out_start + size + band].cpu()
    own = {"output": {"dtype": layout["output"]["dtype"], "shape": layout["output"]["shape"]},
           "guard": {"elements": GUARD, "span": expected.numel()}}
    own_payload = bytes(area[band:band + size].numpy()) + bytes(area[:band].numpy()) + bytes(area[band + size:].numpy())
    from_area = judge(torch, prepared.case, prepared.made, expected, prepared.scale, own, own_payload)
    written = _differs(seen, sent, out_start - band, out_start + size + band)
    at = report.get("at")
    if at is not None:
        output, payload = report["output"], _located(torch, seen, report)
        inputs_modified = inputs_modified or at < out_start - band   # it lies in an input's memory
        if at == out_start and output == own["output"]:   # the output area, in whatever strides
            return judge(torch, prepared.case, prepared.made, expected, prepared.scale, own,
                         payload + own_payload[size:]), inputs_modified
        report = {"output": output, "guard": None}
    result = judge(torch, prepared.case, prepared.made, expected, prepared.scale, report, payload)
    if written and from_area["status"] != "pass":
        return from_area, inputs_modified
    return result, inputs_modified


def dense_strides(shape):
    """The strides of a row-major tensor of this shape."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return strides


def _located(torch, seen, report):
    """The bytes of the output the worker says lies at report["at"] in the region, read here."""
    output, at, stride = report.get("output"), report["at"], report.get("stride")
    dtype = output.get("dtype") if isinstance(output, dict) else None
    shape = output.get("shape") if isinstance(output, dict) else None
    if dtype not in DTYPES or not isinstance(shape, list) or not isinstance(stride, list) or len(stride) != len(shape):
        raise ProtocolError(f"an output at {at!r} described as {output!r} with strides {stride!r}")
    item = DTYPES[dtype]
    numel = 1
    for d in shape:
        numel *= d
    reach = (1 + sum((d - 1) * s for d, s in zip(shape, stride))) * item if numel else 0
    if at < 0 or at % item or at + reach > seen.numel() or any(s < 0 for s in stride):
        raise ProtocolError(f"an output at {at} of {reach} bytes in a region of {seen.numel()}")
    if not numel:
        return b""
    view = seen.view(getattr(torch, dtype)).as_strided(shape, stride, at // item)
    return view.contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()


def stop_group(group, timeout=5.0):
    """In the factory: SIGSTOP to a worker's process group and to every process under it (one it
    started in a session of its own too), then True once every thread of them is stopped (or has
    ended), False if that did not happen in time. The signal is sent again at each look (a process
    forked meanwhile gets it too). What is left: docs/checker.md."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(group, signal.SIGSTOP)
        except OSError:
            return False
        states = _group_states(group, signal.SIGSTOP)
        if states and all(state in "TtZX" for state in states):
            return True
        if "?" in states or time.monotonic() > deadline:
            return False
        time.sleep(0.0002)


def resume_group(group):
    for pid in _descendants(group) or []:
        _signal(pid, signal.SIGCONT)
    try:
        os.killpg(group, signal.SIGCONT)
    except OSError:
        pass


def _signal(pid, number):
    try:
        os.kill(pid, number)
    except OSError:
        pass


def _group_states(group, send=None):
    """The state letter of every thread of every process under the group's first process (sent the
    signal send first), or, where /proc lists no children, of every process of the group; "?"
    without /proc."""
    pids = _descendants(group)
    if pids is None:
        try:
            pids = [int(e) for e in os.listdir("/proc") if e.isdigit() and _stat(f"/proc/{e}/stat", 2) == str(group)]
        except OSError:   # no /proc: nothing can be confirmed stopped
            return ["?"]
    states = []
    for pid in pids:
        if send is not None:
            _signal(pid, send)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        states += [_stat(f"/proc/{pid}/task/{task}/stat", 0) or "X" for task in tasks]
    return states


def _descendants(root):
    """root and every process under it, from /proc's lists of children (read once they are
    stopped, when the lists are complete), or None where the kernel keeps no such lists."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return None
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                    pending += [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                pass
    return found


def _stat(path, field):
    """A field of a /proc stat file after the command's name (0: the state, 2: the process group)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return fields[field] if len(fields) > field else None


# --- the worker's side --------------------------------------------------------------------------

def accept_descriptors(channel):
    """The worker's end of the descriptor socket (offer_descriptors), when its channel is a socket."""
    sock = getattr(getattr(channel.reader, "raw", None), "_sock", None)
    if sock is None or not hasattr(socket, "recv_fds"):
        return None
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    return socket.socket(fileno=fds[0]) if fds else None


def map_region(torch, descriptors, nbytes, device):
    """The region the trusted side sent, as a uint8 tensor (never unmapped: a view of it that the
    code under check kept must stay valid for the worker's life)."""
    _, fds, _, _ = socket.recv_fds(descriptors, 1, 1)
    if not fds:
        raise OSError("no region descriptor came")
    fd = fds[0]
    try:
        if device == "cuda":
            return device_tensor(torch, cuda_import(fd, nbytes), nbytes)
        return torch.frombuffer(mmap.mmap(fd, nbytes), dtype=torch.uint8)
    finally:
        os.close(fd)


def region_arguments(torch, whole, header):
    """The case's arguments as views of the region; (arguments, the output area's spec)."""
    shared = header["region"]
    values = []
    for spec, sent in zip(shared["inputs"], header["inputs"]):
        if spec is None:
            values.append(float(sent["value"]))
            continue
        dtype = getattr(torch, spec["dtype"])
        item = torch.tensor([], dtype=dtype).element_size()
        values.append(whole.view(dtype).as_strided(spec["shape"], spec["stride"],
                                                    spec["offset"] // item + spec["view_offset"]))
    out = shared["output"]
    dtype = getattr(torch, out["dtype"])
    return values, {"base": whole.view(dtype), "start": out["offset"] // torch.tensor([], dtype=dtype).element_size(),
                    "shape": tuple(out["shape"]), "dtype": dtype}


# --- cuMem through the CUDA driver ----------------------------------------------------------------

class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Flags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Properties(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _Flags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


PINNED, POSIX_FD, ON_DEVICE, READ_WRITE = 1, 1, 1, 3
_DRIVER = []


def _driver():
    if not _DRIVER:
        _DRIVER.append(ctypes.CDLL("libcuda.so.1"))
    return _DRIVER[0]


def _ok(code, what):
    if code != 0:
        raise OSError(f"{what}: CUDA driver error {code}")


def _device():
    device = ctypes.c_int()
    _ok(_driver().cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
    return device.value


def cuda_export(nbytes):
    """(descriptor, (pointer, allocation handle)) of new device memory mapped here."""
    cuda, device = _driver(), _device()
    props = _Properties(PINNED, POSIX_FD, _Location(ON_DEVICE, device), None, _Flags())
    handle, fd = ctypes.c_uint64(), ctypes.c_int()
    _ok(cuda.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(_granular(nbytes, props)), ctypes.byref(props),
                         ctypes.c_uint64(0)), "cuMemCreate")
    _ok(cuda.cuMemExportToShareableHandle(ctypes.byref(fd), handle, ctypes.c_int(POSIX_FD), ctypes.c_uint64(0)),
        "cuMemExportToShareableHandle")
    return fd.value, (_map(handle, _granular(nbytes, props), device), handle)


def cuda_import(fd, nbytes):
    cuda, device = _driver(), _device()
    props = _Properties(PINNED, POSIX_FD, _Location(ON_DEVICE, device), None, _Flags())
    handle = ctypes.c_uint64()
    _ok(cuda.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), ctypes.c_int(POSIX_FD)),
        "cuMemImportFromShareableHandle")
    return _map(handle, _granular(nbytes, props), device)


def _granular(nbytes, props):
    step = ctypes.c_size_t()
    _ok(_driver().cuMemGetAllocationGranularity(ctypes.byref(step), ctypes.byref(props), 0), "granularity")
    return _round(nbytes, step.value)


def _map(handle, size, device):
    cuda, pointer = _driver(), ctypes.c_uint64()
    _ok(cuda.cuMemAddressReserve(ctypes.byref(pointer), ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(0),
                                 ctypes.c_uint64(0)), "cuMemAddressReserve")
    _ok(cuda.cuMemMap(pointer, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_uint64(0)), "cuMemMap")
    access = _Access(_Location(ON_DEVICE, device), READ_WRITE)
    _ok(cuda.cuMemSetAccess(pointer, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1)), "cuMemSetAccess")
    return pointer.value


def cuda_release(pointer, handle, nbytes):
    cuda = _driver()
    props = _Properties(PINNED, POSIX_FD, _Location(ON_DEVICE, _device()), None, _Flags())
    size = ctypes.c_size_t(_granular(nbytes, props))
    cuda.cuMemUnmap(ctypes.c_uint64(pointer), size)
    cuda.cuMemAddressFree(ctypes.c_uint64(pointer), size)
    cuda.cuMemRelease(handle)


def device_tensor(torch, pointer, nbytes):
    """A uint8 CUDA tensor over memory torch did not allocate (it never frees it)."""
    class Memory:
        __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (pointer, False), "version": 3}
    return torch.as_tensor(Memory(), device="cuda")
