#!/usr/bin/env python3
"""A Gradescope autograder for one lesson, from the instructor's checkout:

    python scripts/gradescope_autograder.py --lesson lesson03_relu [--content content] [--out FILE.zip]
                                            [--sandbox on|off] [--timeout S] [--locale L]

writes build/gradescope/<lesson>-autograder.zip (or --out), to upload as a programming
assignment's autograder ("Zip file upload"). At its root, as Gradescope's specification wants:

  setup.sh        run once when Gradescope builds the image (Ubuntu, root): Python, bubblewrap, a
                  virtual environment with the CPU builds of torch and triton, this coursepack
  run_autograder  run for each submission: `coursepack grade --gradescope` reads
                  /autograder/submission and writes /autograder/results/results.json
  kit.json        the lesson as grading needs it: its check.py in every language and the texts of
                  grading; no content, no answer, no declared mistake (students' code runs in this
                  container)
  coursepack/     this checkout's generator, templates and pyproject.toml (what `pip install` needs)

The containers have no GPU: results come from the Triton interpreter and say so. Every
submission runs in coursepack's sandbox; where the container refuses user namespaces (not every
Docker configuration allows them), grading stops with the reason, and `--sandbox off` builds an
autograder that runs submissions without it (results.json then says so), Gradescope's container
per submission being the only confinement. run_autograder reads AUTOGRADER (default /autograder),
COURSEPACK (default the installed command) and COURSEPACK_CACHE (default $TMPDIR/coursepack-grade)
so that it can be tried outside Gradescope."""

from __future__ import annotations

import argparse
import io
import stat
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TORCH, TRITON, NUMPY = "2.13.0", "3.9.0", "2.4.6"   # requirements/lock.txt's CPU builds

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends python3 python3-pip python3-venv bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q --upgrade pip
/autograder/venv/bin/pip install -q --index-url https://download.pytorch.org/whl/cpu "torch=={TORCH}"
/autograder/venv/bin/pip install -q "triton=={TRITON}" "numpy=={NUMPY}"
/autograder/venv/bin/pip install -q /autograder/source/coursepack
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: the student's files in $AUTOGRADER/submission, the
# result in $AUTOGRADER/results/results.json. Written by scripts/gradescope_autograder.py.
set -euo pipefail
AUTOGRADER=${{AUTOGRADER:-/autograder}}
COURSEPACK=${{COURSEPACK:-$AUTOGRADER/venv/bin/coursepack}}
mkdir -p "$AUTOGRADER/results"
exec $COURSEPACK grade --gradescope --kit "$AUTOGRADER/source/kit.json" --sandbox {sandbox} {options}\\
    --gradescope-submission "$AUTOGRADER/submission" \\
    --gradescope-metadata "$AUTOGRADER/submission_metadata.json" \\
    --gradescope-results "$AUTOGRADER/results/results.json" \\
    --cache "${{COURSEPACK_CACHE:-${{TMPDIR:-/tmp}}/coursepack-grade}}"
"""


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def autograder_zip(content: Path, lesson_id: str, sandbox: str, timeout: float | None, locale: str | None) -> bytes:
    from generator.grade.lesson import kit_json, load_lesson
    lesson = load_lesson(content, lesson_id)
    options = (f"--timeout {timeout:g} " if timeout else "") + (f"--locale {locale} " if locale else "")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", SETUP.encode(), executable=True)
        _add(archive, "run_autograder", RUN.format(sandbox=sandbox, options=options).encode(), executable=True)
        _add(archive, "kit.json", kit_json(lesson).encode())
        files = [REPO / "pyproject.toml", REPO / "README.md"]
        for folder in ("generator", "templates"):
            files += sorted(p for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in files:
            _add(archive, f"coursepack/{path.relative_to(REPO).as_posix()}", path.read_bytes())
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", required=True)
    parser.add_argument("--content", type=Path, default=REPO / "content")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--sandbox", choices=["on", "off"], default="on")
    parser.add_argument("--timeout", type=float, help="seconds per case (default: the lesson's)")
    parser.add_argument("--locale", help="every result in this language (default: the student's pack's)")
    args = parser.parse_args(argv)
    from generator.errors import CoursepackError
    try:
        data = autograder_zip(args.content, args.lesson, args.sandbox, args.timeout, args.locale)
    except CoursepackError as exc:
        print(f"gradescope_autograder: error: {exc}", file=sys.stderr)
        return 1
    out = args.out or args.content.resolve().parent / "build" / "gradescope" / f"{args.lesson}-autograder.zip"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"wrote {out}: upload it as the assignment's autograder (sandbox {args.sandbox})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
