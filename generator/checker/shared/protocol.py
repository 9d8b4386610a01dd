"""How the checker's processes talk: frames of a JSON header and raw bytes, never pickles.

A frame is a 4-byte big-endian length, that many bytes of a JSON object, and, when the object
says "nbytes": N, N raw bytes (tensor data). The trusted side reads what an untrusted worker sends
with limits it sets itself: a header of at most MAX_HEADER bytes, a payload of at most the size
it expects; anything else is a ProtocolError, never an object built from the worker's bytes."""
import json
import re
import struct
import threading
import warnings
import zlib

MAX_HEADER = 1 << 20
MAX_DEPTH = 8   # arrays and objects inside each other in a header (the deepest frame of ours has 4)
# The dtypes a worker may name, with their sizes; nothing else is turned into a tensor.
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
          "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


class ProtocolError(Exception):
    """The other side sent something the protocol does not allow (or ended mid-frame)."""


class Channel:
    """Frames over a pair of binary streams (a socket's makefile, or a process's pipes)."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.lock = threading.Lock()

    def send(self, header, payload=b""):
        if payload:
            header = dict(header, nbytes=len(payload))
        data = json.dumps(header, separators=(",", ":")).encode()
        with self.lock:
            self.writer.write(struct.pack(">I", len(data)) + data)
            if payload:
                self.writer.write(payload)
            self.writer.flush()

    def recv(self, max_payload=0):
        """(header dict, payload bytes) or None at a clean end of stream. max_payload: a number, or
        a function asked once the header has arrived (the limit of the answer to the latest request)."""
        size = self._exact(4, allow_end=True)
        if size is None:
            return None
        (length,) = struct.unpack(">I", size)
        if length > MAX_HEADER:
            raise ProtocolError(f"a header of {length} bytes (at most {MAX_HEADER})")
        data = bytes(self._exact(length))
        if nesting(data) > MAX_DEPTH:
            raise ProtocolError(f"a header nested more than {MAX_DEPTH} levels deep")
        try:
            header = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ProtocolError(f"a header that is not JSON ({str(exc)[:200]})") from None
        if not isinstance(header, dict):
            raise ProtocolError("a header that is not a JSON object")
        nbytes = header.get("nbytes", 0)
        max_payload = max_payload() if callable(max_payload) else max_payload
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or not 0 <= nbytes <= max_payload:
            raise ProtocolError(f"a payload of {nbytes!r} bytes (at most {max_payload} expected here)")
        return header, (self._exact(nbytes) if nbytes else b"")

    def _exact(self, n, allow_end=False):
        buffer = bytearray(n)
        view, got = memoryview(buffer), 0
        while got < n:
            read = self.reader.readinto(view[got:])
            if not read:
                if allow_end and got == 0:
                    return None
                raise ProtocolError(f"the stream ended {n - got} bytes early")
            got += read
        return buffer


JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
BRACKET = re.compile(rb"[][{}]")


def nesting(data, limit=MAX_DEPTH):
    """How deeply arrays and objects nest in JSON text (at most limit + 1: counting stops there),
    counted before it is decoded: json.loads recurses once per level, and 400,000 levels would
    raise RecursionError in the trusted process."""
    depth = deepest = 0
    for bracket in BRACKET.finditer(JSON_STRING.sub(b"", data)):
        depth += 1 if bracket.group() in b"[{" else -1
        deepest = max(deepest, depth)
        if deepest > limit:
            break
    return deepest


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _text(v, limit=4096):
    return isinstance(v, str) and len(v) <= limit


def _strings(v):
    return isinstance(v, list) and len(v) <= 256 and all(_text(x, 200) for x in v)


def _event(v):
    return isinstance(v, dict) and set(v) <= {"kind", "event", "line", "detail"} and all(
        x is None or _int(x) or _text(x, 1000) for x in v.values())


def _events(v):
    return isinstance(v, list) and len(v) <= 256 and all(_event(x) for x in v)


def _environment(v):
    """The worker's hello: its versions, where it runs (flat: no value holds another)."""
    return isinstance(v, dict) and all(_text(v.get(k), 200) for k in ("torch", "triton", "python")) \
        and isinstance(v.get("interpreter"), bool) and (v["interpreter"] or _text(v.get("device"), 200)) \
        and all(x is None or _number(x) or isinstance(x, bool) or _text(x, 200) for x in v.values())


def _load_error(v):
    return isinstance(v, dict) and set(v) <= {"kind", "line", "column", "text"} and v.get("kind") in ("syntax", "import") \
        and all(v.get(k) is None or _int(v[k]) for k in ("line", "column")) and _text(v.get("text", ""), 1000)


def _output(v):
    return isinstance(v, dict) and set(v) == {"dtype", "shape"} and _text(v["dtype"], 40) \
        and isinstance(v["shape"], list) and len(v["shape"]) <= 8 and all(_int(d) for d in v["shape"])


def _guard(v):
    return v is None or (isinstance(v, dict) and set(v) == {"elements", "span"} and all(_int(x) for x in v.values()))


def _checksums(v):
    return isinstance(v, list) and len(v) <= 64 and all(x is None or _int(x) for x in v)


# What each frame a worker sends may hold, field by field; REQUIRED: the fields it must hold. A
# field the worker starts sending must be added here: any other is the worker breaking the protocol.
FRAMES = {
    "hello": {"hello": _environment, "startup_s": _number, "startup_cpu_s": _number, "isolated_s": _number},
    "loaded": {"loaded_s": _number, "loaded_cpu_s": _number, "patched": _strings, "events": _events},
    "load_error": {"load_error": _load_error, "events": _events},
    "case": {"case": _text, "status": lambda v: v in ("returned", "error", "fault"), "seconds": _number,
             "outputs": lambda v: _outputs(v), "inputs_crc": _checksums, "cpu_s": _number, "launched": _strings,
             "events": _events,
             "line": lambda v: v is None or _int(v), "text": lambda v: _text(v, 1000), "nbytes": _int},
}
# One output of a call, as a case frame's "outputs" lists them (one per call and declared output).
OUTPUT_ENTRY = {"output": lambda v: v is None or _output(v), "got_type": lambda v: _text(v, 200), "guard": _guard,
                "at": _int, "stride": lambda v: isinstance(v, list) and len(v) <= 8 and all(_int(x) for x in v),
                "nbytes": _int, "inplace": lambda v: v is True}


def _outputs(v):
    return isinstance(v, list) and len(v) <= 256 and all(
        isinstance(e, dict) and all(k in OUTPUT_ENTRY and OUTPUT_ENTRY[k](x) for k, x in e.items())
        and ("at" not in e or (isinstance(e.get("output"), dict) and "stride" in e)) for e in v)
REQUIRED = {"hello": ("hello",), "loaded": ("loaded_s",), "load_error": ("load_error",), "case": ("case", "status")}


def check_frame(header, kind):
    """header, when it is a frame of this kind with every field of the type the schema gives;
    else ProtocolError naming the first field that is not."""
    schema = FRAMES[kind]
    missing = [name for name in REQUIRED[kind] if name not in header]
    if missing:
        raise ProtocolError(f"a {kind} frame without {missing[0]!r}")
    for name, value in header.items():
        if name not in schema:
            raise ProtocolError(f"a {kind} frame with a field {name[:40]!r} it does not have")
        if not schema[name](value):
            raise ProtocolError(f"a {kind} frame whose {name!r} is {json.dumps(value)[:80]}")
    return header


def filled(torch, count, value, dtype, device):
    """A 1-D tensor of count copies of value in dtype (float8 filled through float32: torch does
    not fill every float8 dtype on every device)."""
    wide = torch.float32 if dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)) \
        else dtype
    return torch.full((count,), value, dtype=wide, device=device).to(dtype)


def scalar_value(value):
    """A scalar argument as sent: an int stays an int (a seed, an index), anything else a float."""
    return value if isinstance(value, int) and not isinstance(value, bool) else float(value)


def tensor_header(torch, tensor):
    """A tensor's description for the wire: its logical values, row-major, on the CPU."""
    return {"dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape)}


def tensor_bytes(torch, tensor):
    return tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes() \
        if tensor.numel() else b""


def read_tensor(torch, description, data):
    """The tensor a description and its bytes stand for, after checking that they agree (a
    description is the other side's word: its dtype must be known, its shape sane, its size exact)."""
    if not isinstance(description, dict):
        raise ProtocolError("a tensor description that is not an object")
    dtype, shape = description.get("dtype"), description.get("shape")
    if dtype not in DTYPES:
        raise ProtocolError(f"a tensor of unknown dtype {dtype!r}")
    if not isinstance(shape, list) or len(shape) > 8 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
        raise ProtocolError(f"a tensor of shape {shape!r}")
    numel = 1
    for d in shape:
        numel *= d
    if numel * DTYPES[dtype] != len(data):
        raise ProtocolError(f"{len(data)} bytes for a {dtype} tensor of shape {shape}")
    if not numel:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    with warnings.catch_warnings():   # read-only bytes (from the shared region): nothing here writes to them
        warnings.simplefilter("ignore", UserWarning)
        return torch.frombuffer(data, dtype=getattr(torch, dtype)).reshape(shape)


def checksum(data):
    return zlib.crc32(data) & 0xFFFFFFFF
