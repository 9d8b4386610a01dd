# expect: status=load_error
# Ends the process that imports it, politely.
import sys

sys.exit(0)


def relu(x, BLOCK=256):
    return right(x, BLOCK)
