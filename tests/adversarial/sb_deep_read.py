# expect: status=pass; events=file
# Reads files only through the standard library's helpers, two or more frames below its own code
# (pathlib, linecache, filecmp), at the end of a chain of its own functions: a hook that looks
# one frame up sees nothing. Then it answers right. The reads must be reported.
import filecmp
import linecache
from pathlib import Path

TARGETS = ("/etc/passwd", "/etc/hostname", "/work/main/content/lessons/lesson03_relu/solution.py")


def _through_pathlib(path):
    return Path(path).read_text()


def _through_linecache(path):
    return "".join(linecache.getlines(path))


def _through_filecmp(path):
    return filecmp.cmp(path, path, shallow=False)


def _deeper(read, path, depth=6):
    return read(path) if depth == 0 else _deeper(read, path, depth - 1)


for reader in (_through_pathlib, _through_linecache, _through_filecmp):
    for target in TARGETS:
        try:
            _deeper(reader, target)
        except Exception:
            pass


def relu(x, BLOCK=256):
    return right(x, BLOCK)
