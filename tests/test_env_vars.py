"""Every environment switch the code reads is documented in docs/architecture.md."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\bCOURSEPACK_[A-Z0-9_]*[A-Z0-9]\b")
TEST_ONLY = {
    "COURSEPACK_TEST_VALUE"
}  # a value tests/test_task_server.py passes to a task, no switch


def test_every_environment_switch_is_documented():
    documented = set(NAME.findall((REPO / "docs" / "architecture.md").read_text(encoding="utf-8")))
    used = {}
    for top in ("generator", "scripts", "tests", "bench"):
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in (".py", ".sh") and "golden" not in path.parts and path.is_file():
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    for name in NAME.findall(line):
                        used.setdefault(name, f"{path.relative_to(REPO)}:{number}")
    missing = [
        f"{where}: {name}"
        for name, where in sorted(used.items())
        if name not in documented and name not in TEST_ONLY
    ]
    assert missing == [], "environment variables not in docs/architecture.md:\n  " + "\n  ".join(
        missing
    )
