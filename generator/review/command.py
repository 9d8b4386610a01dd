"""`coursepack review`: the review page's server, the sheet, the exports. Called by generator/cli.py
with the words after `review`; a first word that is not one of the actions is the grading folder
to serve."""

from __future__ import annotations

import argparse
import getpass
import secrets
import sys
from pathlib import Path

from generator.review.store import Gradebook, ReviewError
from generator.review.sync import sync

ACTIONS = ("serve", "export", "export-sheet", "import-sheet")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="coursepack review",
        description="grade the manual parts of a graded "
        "lesson, and export the grades (docs/review.md)",
    )
    sub = top.add_subparsers(dest="action", required=True)
    s = sub.add_parser("serve", help="the review page on a local web server (the default action)")
    _folder(s)
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only)",
    )
    s.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    s.add_argument("--grader", default=None, help="your name in the log (default: the login name)")
    s.add_argument("--locale", help="the page's language (default: the course's source language)")
    s.add_argument(
        "--anonymous", action="store_true", help="hide names and ids: students are numbered"
    )
    s.add_argument(
        "--shuffle", type=int, metavar="SEED", help="a shuffled order (the same for the same seed)"
    )
    e = sub.add_parser(
        "export", help="a file for an LMS or a tool: canvas, moodle, otter, nbgrader"
    )
    _folder(e)
    e.add_argument("--format", required=True, choices=("canvas", "moodle", "otter", "nbgrader"))
    e.add_argument("-o", "--out", type=Path, required=True)
    e.add_argument(
        "--assignment",
        help="canvas: the assignment's column, as Canvas names it ('Lesson 3 (1234)' "
        "matches its id; default: the lesson id)",
    )
    e.add_argument("--per-part", action="store_true", help="canvas: one column per rubric part")
    e.add_argument(
        "--canvas-export",
        type=Path,
        help="canvas: a gradebook exported from the course (its user ids, names and sections)",
    )
    e.add_argument(
        "--moodle-worksheet",
        type=Path,
        help="moodle: the grading worksheet downloaded from the assignment (its participant ids)",
    )
    e.add_argument(
        "--roster",
        type=Path,
        help="roster.csv (coursepack grade's): an alias of digits is the Canvas "
        "user id, an alias 'Participant <n>' the Moodle participant",
    )
    x = sub.add_parser(
        "export-sheet", help="one row per student and manual part, to grade in a spreadsheet"
    )
    _folder(x)
    x.add_argument("-o", "--out", type=Path, required=True)
    i = sub.add_parser(
        "import-sheet",
        help="the sheet's points and comments back (refused whole if any row is wrong)",
    )
    _folder(i)
    i.add_argument("sheet", type=Path)
    i.add_argument("--grader", default=None, help="your name in the log (default: the login name)")
    return top


def _folder(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "folder",
        type=Path,
        nargs="?",
        default=None,
        help="the grading folder (default: the only one under build/grades/)",
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ACTIONS + ("-h", "--help"):
        argv = ["serve", *argv]
    args = parser().parse_args(argv)
    folder = _grading_folder(args.folder)
    if args.action == "serve":
        return serve(folder, args)
    from generator.review import exports, sheet

    if args.action == "export":
        n = exports.export(
            folder,
            args.format,
            args.out,
            args.assignment,
            args.per_part,
            args.canvas_export,
            args.moodle_worksheet,
            args.roster,
        )
        print(f"wrote {args.out} ({args.format}, {n} row(s))")
    elif args.action == "export-sheet":
        print(f"wrote {args.out} ({sheet.export_sheet(folder, args.out)} row(s))")
    else:
        n = sheet.import_sheet(folder, args.sheet, args.grader or _login())
        print(
            f"imported {args.sheet}: {n} score(s) changed; grades.csv rewritten"
            if n
            else f"imported {args.sheet}: nothing changed"
        )
    return 0


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "grader"


def _grading_folder(folder: Path | None) -> Path:
    if folder is None:
        found = sorted(p.parent for p in Path("build/grades").glob("*/grades.csv"))
        if len(found) != 1:
            raise ReviewError(
                "say which grading folder: coursepack review build/grades/<lesson> "
                f"({len(found)} found under build/grades/)"
            )
        folder = found[0]
    if not (folder / "grades.csv").is_file():
        raise ReviewError(
            f"{folder}: not a grading folder (no grades.csv; coursepack grade writes one)"
        )
    if not Gradebook(folder).exists():
        sync(folder)  # a folder graded before the review existed: its gradebook from its files
    return folder


def serve(folder: Path, args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server
    from generator.review.app import Settings, create_app
    from generator.review.texts import languages

    if args.locale and args.locale not in languages():
        raise ReviewError(
            f"--locale {args.locale}: the page has words for {', '.join(languages())}"
        )
    token = secrets.token_urlsafe(24)
    app = create_app(
        Settings(
            folder,
            token,
            args.grader or _login(),
            args.locale,
            args.anonymous,
            args.shuffle,
            refresh=True,
        )
    )
    try:
        server = make_server(args.host, args.port, app, threaded=True)
    except (
        OSError,
        SystemExit,
    ) as exc:  # Werkzeug prints why (a port taken, an address not of this machine) and exits
        raise ReviewError(f"cannot listen on {args.host}:{args.port}") from exc
    host = f"[{args.host}]" if ":" in args.host else args.host
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: listening on {args.host}: other machines can reach the page (the token still guards it; "
            "the traffic is not encrypted)",
            file=sys.stderr,
        )
    print(
        f"review of {folder}: http://{host}:{server.server_port}/?token={token}\n"
        "(open it in a browser; Ctrl+C stops the server: every score the page said was saved is kept)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("review stopped", file=sys.stderr)
    return 0
