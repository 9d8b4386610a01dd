# expect: status=load_error
# Ends the process that imports it at once, skipping every handler.
import os

os._exit(0)


def relu(x, BLOCK=256):
    return right(x, BLOCK)
