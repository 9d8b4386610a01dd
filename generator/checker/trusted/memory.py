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

from ..shared.common import GUARD, inplace, outputs
from .cases import input_fill, returned
from ..shared.protocol import DTYPES, ProtocolError, filled, scalar_value
from .verdict import case_result, judge_output, poison_value, random_poison, split_outputs

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
        self.layout = lay_out(prepared.made, prepared.expected, scatter=True)
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


def lay_out(made, expected_calls, offset=0, scatter=False):
    """Where each tensor input (its storage, guard bands before and after) and each returned
    output's area lie in the region, in bytes from its start, the first from offset on:
    {"inputs": [spec or None per argument], "outputs": [[spec or None (in place) per output] per
    call], "nbytes": where the last guard band ends}. scatter: the calls' areas in an order and at
    gaps drawn here (os.urandom), so that code under check cannot tell a call by where its areas lie."""
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
    calls, outputs_start = [None] * len(expected_calls), _round(offset)
    for call in shuffled(len(expected_calls), scatter):
        areas = []
        for index, tensor in enumerate(expected_calls[call]):
            if not returned(index):
                areas.append(None)
                continue
            item = tensor.element_size()
            gap = (os.urandom(1)[0] % 16) * ALIGN if scatter else 0
            start = _round(offset) + gap + GUARD * item
            areas.append({"offset": start, "dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape)})
            offset = start + (tensor.numel() + GUARD) * item
        calls[call] = areas
    return {"inputs": inputs, "outputs": calls, "outputs_start": outputs_start, "nbytes": offset}


def shuffled(count, scatter=True):
    """range(count) shuffled on the OS's randomness (as it is where scatter is False)."""
    order = list(range(count))
    if scatter:
        for i in range(count - 1, 0, -1):   # Fisher-Yates
            j = int.from_bytes(os.urandom(4), "little") % (i + 1)
            order[i], order[j] = order[j], order[i]
    return order


def image(torch, made, expected_calls, layout, device, whole=None):
    """The region's bytes as the trusted side writes them: inputs in guard bands of NaN (of the
    largest value, for integers), each output area poisoned (into whole, when given)."""
    if whole is None:
        whole = torch.empty(_round(max(layout["nbytes"], 1)), dtype=torch.uint8, device=device)
        if whole.device.type == "cpu":
            whole.numpy().fill(0)
        else:
            whole.zero_()
    for (name, storage, _), spec in zip(made, layout["inputs"]):
        if spec is None:
            continue
        banded = _bands(torch, spec["count"] + 2 * GUARD, storage.dtype, name in inplace(), device)
        banded[GUARD:GUARD + spec["count"]] = storage.reshape(-1).to(device)
        _put(whole, spec["offset"] - GUARD * storage.element_size(), banded)
    for expected, areas in zip(expected_calls, layout["outputs"]):
        for index, (tensor, area) in enumerate(zip(expected, areas)):
            if area is None:
                continue
            count = tensor.numel() + 2 * GUARD
            if random_poison(torch, outputs()[index], tensor.dtype):   # bytes no kernel can predict
                raw = b"\xff" * count if tensor.dtype == torch.bool else os.urandom(count * tensor.element_size())
                poisoned = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(device).view(tensor.dtype)
            else:
                poisoned = filled(torch, count, poison_value(torch, outputs()[index], tensor.dtype), tensor.dtype, device)
            _put(whole, area["offset"] - GUARD * tensor.element_size(), poisoned)
    return whole


# Signalling NaNs with a payload, in an in-place input's guard bands: arithmetic on one gives
# another NaN (quiet, without the payload: other bits), so an unmasked load, compute and store
# past the input's end shows there; a canonical NaN would come back bit for bit.
SIGNALLING = {"float32": ("int32", 0x7FA0DEAD), "float16": ("int16", 0x7D5A), "bfloat16": ("int16", 0x7FA5)}


def _bands(torch, count, dtype, in_place, device):
    """An input's storage-sized tensor of its guard bands' value (count elements)."""
    name = str(dtype).replace("torch.", "")
    if in_place and name in SIGNALLING:
        bits, value = SIGNALLING[name]
        return torch.full((count,), value, dtype=getattr(torch, bits), device=device).view(dtype)
    return filled(torch, count, input_fill(torch, dtype), dtype, device)


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
    whether an input or its guard bands changed (or an output lies in an input's memory). An
    output the worker says lies in the region is read there; one it sends as bytes is judged from
    them, and when its output area was written too, that must be right as well. An in-place
    output is its input's memory, read here alone."""
    if "inputs_crc" in report:
        # the worker took the inputs' bytes instead of the region it was sent. Only its own process
        # can make the mapping fail here (a descriptor table it filled, say), and its report of its
        # output would then stand alone: that can only fail the case, never pass it
        raise ProtocolError("the worker did not use the memory the checker shared for this case, so its "
                            "output could not be read by the checker itself")
    seen = region.tensor[:sent.numel()]
    seen = torch.from_numpy(seen.numpy().copy()) if seen.device.type == "cpu" else seen.clone()
    entries, pieces = split_outputs(report, payload, len(prepared.expected))
    inputs_modified, checked = False, 0   # every byte before the outputs, but in-place inputs'
    for (name, _, _), spec in zip(prepared.made, layout["inputs"]):
        if spec is not None and name in inplace():
            item = DTYPES[spec["dtype"]]
            start = spec["offset"] - GUARD * item
            inputs_modified |= _differs(seen, sent, checked, start)
            checked = start + (spec["count"] + 2 * GUARD) * item
    inputs_modified |= _differs(seen, sent, checked, layout["outputs_start"])
    gap = _gap_write(seen, sent, layout, prepared.expected)
    if gap is not None:
        return gap, inputs_modified
    results, names, got_by_call = [], [], []
    for call, (expected_outputs, areas) in enumerate(zip(prepared.expected, layout["outputs"])):
        got_by_call.append({})
        ats = [entry.get("at") if isinstance(entry, dict) else None for entry in entries[call]]
        for index, (expected, area) in enumerate(zip(expected_outputs, areas)):
            spec, scale = outputs()[index], prepared.scale[call][index]
            entry, data = entries[call][index], pieces[call][index]
            if area is None:
                result, got = _read_inplace(torch, prepared, layout, seen, sent, spec, expected, scale)
            else:
                claimed = {at for other, at in enumerate(ats) if other != index and at is not None}
                (result, got), located_in_input = _read_returned(torch, prepared, seen, sent, area, spec, expected,
                                                                 scale, entry, data, layout, claimed)
                inputs_modified |= located_in_input
            results.append(result)
            names.append((call, spec["name"]))
            if got is not None:
                got_by_call[-1][spec["name"]] = got
    return case_result(torch, prepared, results, names, got_by_call), inputs_modified


def _gap_write(seen, sent, layout, expected_calls):
    """A result for a write between the output areas (in the gaps their alignment leaves, or after
    the last), outside every area and its guard bands; None where there is none."""
    spans = sorted((area["offset"] - GUARD * DTYPES[area["dtype"]],
                    area["offset"] + (expected_calls[call][index].numel() + GUARD) * DTYPES[area["dtype"]],
                    area, expected_calls[call][index])
                   for call, areas in enumerate(layout["outputs"]) for index, area in enumerate(areas)
                   if area is not None)
    at = layout["outputs_start"]
    for start, stop, area, tensor in spans + [(sent.numel(), sent.numel(), None, None)]:
        if _differs(seen, sent, at, start):
            before = [s for s in spans if s[1] <= start]
            near, near_tensor = (before[-1][2], before[-1][3]) if before else (spans[0][2], spans[0][3])
            changed = int((seen[at:start].cpu() != sent[at:start].cpu()).nonzero()[0]) + at
            return {"status": "fail", "reason": "wrote_past_end", "n": near_tensor.numel(),
                    "index": (changed - near["offset"]) // DTYPES[near["dtype"]]}
        at = max(at, stop)
    return None


def _read_returned(torch, prepared, seen, sent, area, spec, expected, scale, entry, data, layout, claimed):
    """((result, got), whether the output lies in an input's memory) for a returned output. claimed:
    where the call's other returned outputs say they lie (an area one of them took is theirs)."""
    item = expected.element_size()
    out_start, band = area["offset"], GUARD * item
    size = expected.numel() * item
    bits = bit_dtype(torch, item)
    now = seen[out_start - band:out_start + size + band].cpu()
    before = sent[out_start - band:out_start + size + band].cpu()
    stray = (now.view(bits) != before.view(bits))
    stray[GUARD:GUARD + expected.numel()] = False
    if bool(stray.any()):   # a write into the area's guard bands, whatever tensor comes back
        first = int(stray.nonzero()[0])
        return ({"status": "fail", "reason": "wrote_past_end", "index": first - GUARD, "n": expected.numel()},
                None), False
    poison = _area_poison(torch, spec, expected, before[band:band + size])
    judge_here = lambda rep, pay: judge_output(torch, prepared.case, prepared.made, expected, scale, rep, pay,
                                               spec, poison)
    own = {"output": {"dtype": area["dtype"], "shape": area["shape"]}, "guard": None}
    from_area = judge_here(own, bytes(now[band:band + size].numpy()))
    written = bool((now[band:band + size] != before[band:band + size]).any())
    at = entry.get("at")
    in_input = False
    if at is not None:
        output = entry.get("output")
        if not isinstance(output, dict) or not isinstance(entry.get("stride"), list):
            raise ProtocolError(f"an output at {at!r} described as {output!r}")
        if output.get("shape") != list(expected.shape):   # judged from the description: nothing of a size it chose is read
            return ({"status": "fail", "reason": "wrong_shape", "expected": list(expected.shape),
                     "got": [d if isinstance(d, int) else "?" for d in output.get("shape") or []][:8]}, None), False
        if output.get("dtype") != area["dtype"]:
            return ({"status": "fail", "reason": "wrong_dtype", "expected": str(expected.dtype),
                     "got": str(output.get("dtype"))[:40]}, None), False
        data = _located(torch, seen, entry)
        in_input = at < layout["outputs_start"]   # it lies in an input's memory
        if at == out_start:   # its own area, in whatever strides
            return judge_here(own, data), in_input
        entry = {"output": output, "guard": None}
    found = judge_here(entry, data)
    if written and from_area[0]["status"] != "pass" and out_start not in claimed:
        return from_area, in_input
    return found, in_input


def bit_dtype(torch, item):
    """The integer dtype of an element's size: elements compared bit for bit."""
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[item]


def _area_poison(torch, spec, expected, sent_area):
    """What the output area held before the call, to tell unwritten elements by: the poison value,
    or (integers, bool, float8 without a poison of their own) the random bytes this side wrote."""
    if not random_poison(torch, spec, expected.dtype):
        return poison_value(torch, spec, expected.dtype)
    held = sent_area.view(torch.uint8 if expected.dtype == torch.bool else expected.dtype)
    return held.reshape(expected.shape).double() if expected.numel() else held.double()


def _read_inplace(torch, prepared, layout, seen, sent, spec, expected, scale):
    """(result, got) for an in-place output: its input's view read from the region after the call;
    a write into the input's guard bands, or into its storage outside the view, is past its end."""
    index = next(i for i, (name, _, _) in enumerate(prepared.made) if name == spec["name"])
    where, view = layout["inputs"][index], prepared.made[index][2]
    dtype = getattr(torch, where["dtype"])
    item = DTYPES[where["dtype"]]
    start, count = where["offset"], where["count"]
    bits = bit_dtype(torch, item)
    span = slice(start - GUARD * item, start + (count + GUARD) * item)
    now, before = seen[span].cpu().view(bits), sent[span].cpu().view(bits)
    untouched = torch.ones(count + 2 * GUARD, dtype=torch.bool)   # the bands and the storage outside the view
    if view.numel():
        untouched.as_strided(where["shape"], where["stride"], GUARD + where["view_offset"]).fill_(False)
    stray = (now != before) & untouched
    if bool(stray.any()):
        return {"status": "fail", "reason": "wrote_past_end", "index": int(stray.nonzero()[0]) - GUARD,
                "n": view.numel()}, None
    got = seen.view(dtype).as_strided(where["shape"], where["stride"], start // item + where["view_offset"])
    got = got.contiguous().cpu()
    header = {"output": {"dtype": where["dtype"], "shape": where["shape"]}, "guard": None}
    data = got.reshape(-1).view(torch.uint8).numpy().tobytes() if got.numel() else b""
    return judge_output(torch, prepared.case, prepared.made, expected, scale, header, data, spec,
                        input_fill(torch, dtype))


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
    if at < 0 or at % item or at + reach > seen.numel() or any(s < 0 for s in stride) or numel * item > seen.numel():
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
    """(the region the trusted side sent, as a uint8 tensor; its retire()). retire() gives the
    region's memory back once the trusted side has read it (the worker calls it before it maps the
    next case's): a worker that kept every case's region would hold them all until it ends, and
    a GPU shared by many checks runs out. The address range stays backed after (on a GPU by one
    block of the worker's own mapped over it again and again, here by zero pages), so a view of it
    that the code under check kept stays valid: it reads what was left there, never faults."""
    _, fds, _, _ = socket.recv_fds(descriptors, 1, 1)
    if not fds:
        raise OSError("no region descriptor came")
    fd = fds[0]
    try:
        if device == "cuda":
            pointer, handle, size = cuda_import(fd, nbytes)
            return device_tensor(torch, pointer, nbytes), lambda: cuda_retire(torch, pointer, handle, size)
        region = mmap.mmap(fd, nbytes)
        return torch.frombuffer(region, dtype=torch.uint8), lambda: zero_pages(region, nbytes)
    finally:
        os.close(fd)


PROT_READ_WRITE, MAP_PRIVATE_FIXED_ANONYMOUS = 3, 0x02 | 0x10 | 0x20   # Linux's (memfd is Linux's)


def zero_pages(region, nbytes):
    """The memfd's pages in this process replaced by private zero pages at the same addresses:
    its memory is freed once the trusted side has closed it too."""
    view = ctypes.c_char.from_buffer(region)
    address = ctypes.addressof(view)
    del view   # its export of the mmap; the torch views keep the mmap object (and so the range) alive
    if _mmap()(address, nbytes, PROT_READ_WRITE, MAP_PRIVATE_FIXED_ANONYMOUS, -1, 0) != address:
        raise OSError(ctypes.get_errno(), "mmap over a retired region")


_LIBC_MMAP = []


def _mmap():
    """libc's mmap, typed (once per process, as _driver)."""
    if not _LIBC_MMAP:
        call = ctypes.CDLL(None, use_errno=True).mmap
        call.restype = ctypes.c_void_p
        call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        _LIBC_MMAP.append(call)
    return _LIBC_MMAP[0]


def region_arguments(torch, whole, header):
    """The case's arguments as views of the region; (arguments, each call's output areas: one per
    returned output)."""
    shared = header["region"]
    values = []
    for spec, sent in zip(shared["inputs"], header["inputs"]):
        if spec is None:
            values.append(scalar_value(sent["value"]))
            continue
        dtype = getattr(torch, spec["dtype"])
        item = torch.tensor([], dtype=dtype).element_size()
        values.append(whole.view(dtype).as_strided(spec["shape"], spec["stride"],
                                                    spec["offset"] // item + spec["view_offset"]))
    return values, [_areas(torch, whole, call) for call in shared["outputs"]]


def _areas(torch, whole, specs):
    """One call's output areas in the region (its returned outputs')."""
    areas = []
    for out in specs:
        if out is None:
            continue
        dtype = getattr(torch, out["dtype"])
        areas.append({"base": whole.view(dtype), "start": out["offset"] // torch.tensor([], dtype=dtype).element_size(),
                      "shape": tuple(out["shape"]), "dtype": dtype})
    return areas


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
    """(pointer, allocation handle, mapped size) of the trusted side's allocation, mapped here."""
    cuda, device = _driver(), _device()
    props = _Properties(PINNED, POSIX_FD, _Location(ON_DEVICE, device), None, _Flags())
    handle = ctypes.c_uint64()
    _ok(cuda.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), ctypes.c_int(POSIX_FD)),
        "cuMemImportFromShareableHandle")
    size = _granular(nbytes, props)
    return _map(handle, size, device), handle, size


_SCRATCH = []   # (handle, size): the one block a worker maps over its retired regions


def cuda_retire(torch, pointer, handle, size):
    """The imported allocation unmapped and released (its memory is freed once the trusted side
    released its own), and the range mapped again, block by block, to one small allocation of this
    process's: views of it stay valid and cost nothing."""
    torch.cuda.synchronize()
    cuda, device = _driver(), _device()
    _ok(cuda.cuMemUnmap(ctypes.c_uint64(pointer), ctypes.c_size_t(size)), "cuMemUnmap")
    _ok(cuda.cuMemRelease(handle), "cuMemRelease")
    if not _SCRATCH:
        props = _Properties(PINNED, POSIX_FD, _Location(ON_DEVICE, device), None, _Flags())
        block, step = ctypes.c_uint64(), _granular(1, props)
        _ok(cuda.cuMemCreate(ctypes.byref(block), ctypes.c_size_t(step), ctypes.byref(props), ctypes.c_uint64(0)),
            "cuMemCreate")
        _SCRATCH.append((block, step))
    block, step = _SCRATCH[0]
    for offset in range(0, size, step):
        _ok(cuda.cuMemMap(ctypes.c_uint64(pointer + offset), ctypes.c_size_t(step), ctypes.c_size_t(0), block,
                          ctypes.c_uint64(0)), "cuMemMap")
    access = _Access(_Location(ON_DEVICE, device), READ_WRITE)
    _ok(cuda.cuMemSetAccess(ctypes.c_uint64(pointer), ctypes.c_size_t(size), ctypes.byref(access),
                            ctypes.c_size_t(1)), "cuMemSetAccess")


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
