#!/usr/bin/env python3
"""A Gradescope autograder for one lesson, from the instructor's checkout:

    python scripts/gradescope_autograder.py --lesson lesson03_relu [--content content] [--out FILE.zip]
        [--sandbox auto|on|off] [--visibility V] [--timeout S] [--locale L] [--roster ROSTER]

writes build/gradescope/<lesson>-autograder.zip (or --out), to upload as a programming
assignment's autograder ("Zip file upload"). At its root, as Gradescope's specification wants:

  setup.sh        run once when Gradescope builds the image (Ubuntu, root): bubblewrap, a virtual
                  environment from the image's python3 with the CPU builds of torch and triton
                  pinned for that Python (pins(): Ubuntu 22.04, Gradescope's default, has 3.10,
                  which triton 3.9.0 and numpy 2.4.6 have no wheels for), this coursepack
  run_autograder  run for each submission: `coursepack grade --gradescope` reads
                  /autograder/submission and writes /autograder/results/results.json
  kit.json        the lesson as grading needs it: its check.py in every language and the texts of
                  grading; no content, no answer, no declared mistake (students' code runs in this
                  container)
  roster.csv      with --roster: each student's id, aliases and language (no names, no emails)
  coursepack/     this checkout's generator, templates and pyproject.toml (what `pip install` needs)

The containers have no GPU: results come from the Triton interpreter and say so. --sandbox auto
(the default) runs every submission in coursepack's sandbox where the container allows the user
namespaces bubblewrap needs, and where it does not (Docker's default seccomp profile refuses
them) grades without it, the container made for that one submission being the confinement;
every result says which. --sandbox on never grades without it: there, results.json says why
nothing was graded. --sandbox off never uses it. --visibility sets when students see the case
tests (Gradescope's hidden, after_due_date, after_published, visible); the rubric groups' tests
are always visible. Results are in --locale, else the roster's language for the student, else
the language of the student's own pack where it shows; a course of several languages needs one
of the two options, so that no result falls back on the source language by accident.

run_autograder reads AUTOGRADER (default /autograder), COURSEPACK (default the installed command)
and COURSEPACK_CACHE (default $TMPDIR/coursepack-grade) so that it can be tried outside
Gradescope."""

from __future__ import annotations

import argparse
import csv
import io
import re
import stat
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LOCK = REPO / "requirements" / "lock.txt"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
# Where the lock's pins have no wheels for the image's Python: the newest releases that have.
OLDER = {"3.10": {"triton": "3.8.0", "numpy": "2.2.6"}}
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")  # an image's python3 that setup.sh installs for
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def lock_pins() -> dict[str, str]:
    found = dict(
        re.findall(r"^(torch|triton|numpy)==(\S+)$", LOCK.read_text(encoding="utf-8"), re.M)
    )
    return {name: found[name] for name in ("torch", "triton", "numpy")}


def pins(python: str) -> dict[str, str]:
    """torch, triton and numpy for an image whose python3 is `python` ("3.10", "3.12", ...)."""
    return {**lock_pins(), **OLDER.get(python, {})}


def setup_sh() -> str:
    cases = "\n".join(
        f"  {py}) TORCH={p['torch']} TRITON={p['triton']} NUMPY={p['numpy']} ;;"
        for py, p in ((py, pins(py)) for py in PYTHONS)
    )
    return f"""#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root).
set -euo pipefail
AUTOGRADER=${{AUTOGRADER:-/autograder}}
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends python3 python3-pip python3-venv bubblewrap
PY=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# torch, triton and numpy with wheels for this Python (scripts/gradescope_autograder.py: pins)
case "$PY" in
{cases}
  *) echo "setup.sh: this image's python3 is $PY; the autograder needs one of {", ".join(PYTHONS)}:" \\
          "choose Gradescope's Ubuntu 22.04 base image or a newer one" >&2; exit 1 ;;
esac
python3 -m venv "$AUTOGRADER/venv"
"$AUTOGRADER/venv/bin/pip" install -q --upgrade pip
"$AUTOGRADER/venv/bin/pip" install -q --index-url {TORCH_INDEX} "torch==$TORCH"
"$AUTOGRADER/venv/bin/pip" install -q "triton==$TRITON" "numpy==$NUMPY"
"$AUTOGRADER/venv/bin/pip" install -q "$AUTOGRADER/source/coursepack"
"""


RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: the student's files in $AUTOGRADER/submission, the
# result in $AUTOGRADER/results/results.json. Written by scripts/gradescope_autograder.py.
set -euo pipefail
AUTOGRADER=${{AUTOGRADER:-/autograder}}
COURSEPACK=${{COURSEPACK:-$AUTOGRADER/venv/bin/coursepack}}
mkdir -p "$AUTOGRADER/results"
exec $COURSEPACK grade --gradescope --kit "$AUTOGRADER/source/kit.json" --sandbox {sandbox} {options}\\
    --gradescope-visibility {visibility} \\
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


def roster_csv(path: Path, locales: list[str]) -> bytes:
    """The roster as the container needs it: ids, aliases, languages (no names, no emails: students'
    code runs in that container)."""
    from generator.grade.roster import read_roster

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "locale", "aliases"])
    for student in read_roster(path, locales):
        writer.writerow([student.id, student.locale, ";".join(student.aliases)])
    return out.getvalue().encode()


def autograder_zip(
    content: Path,
    lesson_id: str,
    sandbox: str,
    timeout: float | None,
    locale: str | None,
    visibility: str = "visible",
    roster: Path | None = None,
) -> bytes:
    from generator.grade.lesson import GradeError, kit_json, load_lesson

    lesson = load_lesson(content, lesson_id)
    locales = list(lesson.languages)
    if locale is not None and locale not in locales:
        raise GradeError(
            f"--locale {locale}: not one of the course's languages ({', '.join(locales)})"
        )
    if len(locales) > 1 and locale is None and roster is None:
        raise GradeError(
            f"the course has several languages ({', '.join(locales)}): say which one results are in, "
            "--locale L (every result) or --roster ROSTER (each student's); otherwise a submission "
            f"whose language does not show would be reported in {lesson.source_locale}, the source "
            "language"
        )
    options = (f"--timeout {timeout:g} " if timeout else "") + (
        f"--locale {locale} " if locale else ""
    )
    options += '--roster "$AUTOGRADER/source/roster.csv" ' if roster else ""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", setup_sh().encode(), executable=True)
        _add(
            archive,
            "run_autograder",
            RUN.format(sandbox=sandbox, options=options, visibility=visibility).encode(),
            executable=True,
        )
        _add(archive, "kit.json", kit_json(lesson).encode())
        if roster:
            _add(archive, "roster.csv", roster_csv(roster, locales))
        files = [REPO / "pyproject.toml", REPO / "README.md"]
        for folder in ("generator", "templates"):
            files += sorted(
                p
                for p in (REPO / folder).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts
            )
        for path in files:
            _add(archive, f"coursepack/{path.relative_to(REPO).as_posix()}", path.read_bytes())
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", required=True)
    parser.add_argument("--content", type=Path, default=REPO / "content")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--sandbox",
        choices=["auto", "on", "off"],
        default="auto",
        help="auto (default): the sandbox where the container allows it, else the container alone, "
        "said in every result; on: never grade without it; off: never use it",
    )
    parser.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default="visible",
        help="when students see the case tests (the rubric groups' are always visible)",
    )
    parser.add_argument("--timeout", type=float, help="seconds per case (default: the lesson's)")
    parser.add_argument("--locale", help="every result in this language")
    parser.add_argument(
        "--roster",
        type=Path,
        help="roster.csv: each student's language (id,name,email,locale,aliases)",
    )
    args = parser.parse_args(argv)
    from generator.errors import CoursepackError

    try:
        data = autograder_zip(
            args.content,
            args.lesson,
            args.sandbox,
            args.timeout,
            args.locale,
            args.visibility,
            args.roster,
        )
    except CoursepackError as exc:
        print(f"gradescope_autograder: error: {exc}", file=sys.stderr)
        return 1
    out = (
        args.out
        or args.content.resolve().parent / "build" / "gradescope" / f"{args.lesson}-autograder.zip"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(
        f"wrote {out}: upload it as the assignment's autograder (sandbox {args.sandbox}, case tests "
        f"{args.visibility})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
