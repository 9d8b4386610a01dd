"""The command line: a thin shell over the library. Only here are errors turned into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from generator.build import REPO, BuildOptions, build, clean, render_all, verify_only
from generator.errors import CoursepackError
from generator.loader import load_content

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--content", type=Path, default=REPO / "content", help="content folder (default: %(default)s)")
    parser.add_argument("--templates", type=Path, default=REPO / "templates", help="templates folder")
    parser.add_argument("--out", type=Path, default=REPO / "build", help="output folder (default: %(default)s)")
    parser.add_argument("--lesson", action="append", default=[], help="only this lesson id (repeatable)")
    parser.add_argument("--locale", action="append", default=[], help="only this locale (repeatable)")


def _runner_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runner", default="auto", choices=["auto", "cuda", "interpreter", "command"],
                        help="where verification runs (default: auto = cuda if a GPU is visible, else interpreter)")
    parser.add_argument("--python", help="Python interpreter with torch and triton used to run packs "
                                         "(default: the one running coursepack)")
    parser.add_argument("--runner-command", help="for --runner command: a template with {cwd} and {cmd} or "
                                                 "{shell_cmd}, e.g. 'ssh gpu01 {shell_cmd}' or "
                                                 "'srun --gres=gpu:1 --chdir {cwd} {cmd}'")
    parser.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 2),
                        help="verification steps run at once (default: the CPU count, at most 8: %(default)s)")
    parser.add_argument("--no-notebook", action="store_true",
                        help="skip executing the answer notebook (needs nbclient and ipykernel on the runner)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="coursepack", description="Build verified exercise and answer packs.")
    sub = top.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="load, render, verify and zip every pack into build/dist")
    _common(b)
    _runner_args(b)
    b.add_argument("--no-verify", action="store_true", help="build without running anything; packs say NOT VERIFIED")
    v = sub.add_parser("verify", help="run the verification gate only (no zips)")
    _common(v)
    _runner_args(v)
    c = sub.add_parser("check", help="load and validate the content, render in memory, scan for leaks; write nothing")
    _common(c)
    sub.add_parser("clean", help="remove build outputs (keeps the verification cache)")
    return top


def _options(args: argparse.Namespace, verify: bool) -> BuildOptions:
    return BuildOptions(content=args.content, templates=args.templates, out=args.out, verify=verify,
                        runner=getattr(args, "runner", "auto"), python=getattr(args, "python", None),
                        runner_command=getattr(args, "runner_command", None),
                        jobs=getattr(args, "jobs", None) or min(8, os.cpu_count() or 2),
                        notebook=not getattr(args, "no_notebook", False),
                        lessons=tuple(args.lesson), locales=tuple(args.locale))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "build":
            build(_options(args, verify=not args.no_verify))
        elif args.command == "verify":
            data = verify_only(_options(args, verify=True))
            print(f"verification {'passed' if data['passed'] else 'FAILED'}; report: {args.out / 'report.md'}")
            if not data["passed"]:
                return EXIT_ERROR
        elif args.command == "check":
            options = _options(args, verify=False)
            render_all(load_content(options.content), options)
            print("content is valid; every pack renders; no answer leaks")
        elif args.command == "clean":
            clean(BuildOptions())
    except CoursepackError as exc:
        print(f"coursepack: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("coursepack: interrupted; build/dist was left as it was", file=sys.stderr)
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
