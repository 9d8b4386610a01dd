# expect: status=fail
# Ends the process from inside the entry.
import sys


def relu(x, BLOCK=256):
    sys.exit(0)
