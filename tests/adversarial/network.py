# expect: status=pass; events=network
# Tries to phone home (refused in the sandbox), then computes the right answer.
import socket


def _phone():
    for address in (("1.1.1.1", 80), ("127.0.0.1", 22)):
        try:
            with socket.create_connection(address, timeout=1):
                pass
        except OSError:
            pass


_phone()


def relu(x, BLOCK=256):
    return right(x, BLOCK)
