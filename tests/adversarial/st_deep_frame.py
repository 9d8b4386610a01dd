# expect: status=load_error; score=0; flags=protocol
# At import, a frame of 400,000 nested JSON arrays is written into the worker's channel: a
# reader that decodes it without a depth limit recurses until RecursionError.
import struct
import sys


def _send_deep():
    frame = sys._getframe()
    while frame is not None and "channel" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        channel = frame.f_locals["channel"]
        data = b"[" * 400000 + b"]" * 400000
        channel.writer.write(struct.pack(">I", len(data)) + data)
        channel.writer.flush()


_send_deep()
