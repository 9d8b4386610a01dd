# expect: status=fail
# Ends the process from inside the entry, skipping every handler.
import os


def relu(x, BLOCK=256):
    os._exit(0)
