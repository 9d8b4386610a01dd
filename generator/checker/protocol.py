"""How the checker's processes talk: frames of a JSON header and raw bytes, never pickles.

A frame is a 4-byte big-endian length, that many bytes of a JSON object, and, when the object
says "nbytes": N, N raw bytes (tensor data). The trusted side reads what an untrusted worker sends
with limits it sets itself: a header of at most MAX_HEADER bytes, a payload of at most the size
it expects; anything else is a ProtocolError, never an object built from the worker's bytes."""
import json
import struct
import threading
import zlib

MAX_HEADER = 1 << 20
# The dtypes a worker may name, with their sizes; nothing else is turned into a tensor.
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
          "int8": 1, "uint8": 1, "bool": 1}


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
        try:
            header = json.loads(self._exact(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"a header that is not JSON ({exc})") from None
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
    return torch.frombuffer(data, dtype=getattr(torch, dtype)).reshape(shape)


def checksum(data):
    return zlib.crc32(data) & 0xFFFFFFFF
