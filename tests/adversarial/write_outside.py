# expect: status=pass; events=file
# Tries to write outside its scratch folder (refused in the sandbox), then computes the right answer.
import os

for path in ("/etc/coursepack-was-here", os.path.expanduser("~/coursepack-was-here"), "/usr/coursepack-was-here"):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        os.remove(path)
    except OSError:
        pass


def relu(x, BLOCK=256):
    return right(x, BLOCK)
