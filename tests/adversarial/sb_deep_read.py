# expect: status=pass; events=file
# Reads files through helpers several frames below its own code (pathlib, linecache, codecs,
# importlib's loader, a chain of its own functions), where a hook that looks one frame up sees
# nothing; then answers right. Each read must be reported.
import codecs
import importlib.util
import linecache
from pathlib import Path

TARGETS = ("/etc/passwd", "/etc/hostname", "/work/main/content/lessons/lesson03_relu/solution.py")


def _through_pathlib(path):
    return Path(path).read_text()


def _through_linecache(path):
    return "".join(linecache.getlines(path))


def _through_codecs(path):
    with codecs.open(path, "r", "utf-8") as handle:
        return handle.read()


def _through_importlib(path):
    spec = importlib.util.spec_from_file_location("cp_sb_deep", path)
    return spec.loader.get_data(path) if spec else b""


def _deeper(read, path, depth=6):
    return read(path) if depth == 0 else _deeper(read, path, depth - 1)


for reader in (_through_pathlib, _through_linecache, _through_codecs, _through_importlib):
    for target in TARGETS:
        try:
            _deeper(reader, target)
        except Exception:
            pass


def relu(x, BLOCK=256):
    return right(x, BLOCK)
