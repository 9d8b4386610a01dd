"""Use the built packs as a student would, on this machine (a GPU, or the interpreter on a laptop):

    python scripts/student_session.py [build/dist]

For every lesson: the answer edition's `python check.py` (timed, with Triton's cache empty and then
warm, next to a bare `import torch`), and the exercise edition in every language with the lesson's
first declared wrong fill. For lessons whose kernel loads `x + offsets`, also a kernel that reads far
outside its tensor (a GPU fault). Prints what the student sees; changes nothing in the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def run(
    args: list[str], cwd: Path, env: dict | None = None
) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
        timeout=900,
    )
    return time.monotonic() - start, done


def show(title: str, seconds: float, done: subprocess.CompletedProcess) -> None:
    print(f"\n===== {title}  (exit {done.returncode}, {seconds:.2f} s)")
    print(done.stdout.rstrip())
    if done.returncode not in (0, 1, 2) or "Traceback" in done.stderr:
        print("--- stderr ---\n" + done.stderr.rstrip()[-2000:])


def first_fill(lesson_id: str) -> str | None:
    text = (REPO / "content" / "lessons" / lesson_id / "lesson.yaml").read_text(encoding="utf-8")
    found = re.search(r'fill:\s*"([^"]+)"', text)
    return found.group(1) if found else None


def main(argv: list[str]) -> int:
    dist = Path(argv[0]) if argv else REPO / "build" / "dist"
    work = Path(tempfile.mkdtemp(prefix="coursepack-student-"))
    packs = {}
    for path in sorted(dist.glob("lesson*.zip")):
        with zipfile.ZipFile(path) as archive:
            archive.extractall(work)
        packs[path.stem] = work / path.stem
    torch_times = [run(["-c", "import torch"], work)[0] for _ in range(3)]
    print(f"import torch: median {statistics.median(torch_times):.2f} s of {len(torch_times)}")
    for name, pack in packs.items():
        if not name.endswith("-en-answer"):
            continue
        cache = work / f"triton-cache-{name}"
        for label in ("Triton cache empty", "Triton cache warm"):
            seconds, done = run(["check.py"], pack, {"TRITON_CACHE_DIR": str(cache)})
            show(
                f"{name}: python check.py ({label}; import torch alone {statistics.median(torch_times):.2f} s)",
                seconds,
                done,
            )
    for name, pack in packs.items():
        if not name.endswith("-exercise"):
            continue
        lesson_id = name.split("-")[0]
        fill = first_fill(lesson_id)
        kernel = next(p for p in pack.glob("*.py") if p.name not in ("check.py", "bench.py"))
        if fill:
            wrong = work / f"{name}-wrong" / kernel.name
            wrong.parent.mkdir()
            wrong.write_text(
                kernel.read_text(encoding="utf-8").replace("______", fill, 1), encoding="utf-8"
            )
            show(f"{name}: a typical wrong fill `{fill}`", *run(["check.py", str(wrong)], pack))
        answer = packs.get(name.replace("-exercise", "-answer"))
        source = (answer / kernel.name).read_text(encoding="utf-8") if answer else ""
        if name.endswith("-en-exercise") and "tl.load(x + offsets, mask=mask)" in source:
            fault = work / f"{name}-fault" / kernel.name
            fault.parent.mkdir()
            fault.write_text(
                source.replace(
                    "tl.load(x + offsets, mask=mask)",
                    "tl.load(x + offsets * 1000003 * 1000, mask=mask)",
                    1,
                ),
                encoding="utf-8",
            )
            show(
                f"{name}: a kernel that reads far outside its tensor",
                *run(["check.py", str(fault)], pack),
            )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
