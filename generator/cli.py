"""The command line: a thin shell over the library. Only here are errors turned into exit codes."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from generator.pipeline.build import TEMPLATES, build, clean, render_all, verify_only
from generator.files.resources import default_out
from generator.pipeline.options import BuildOptions
from generator.files.memo import build_memo
from generator.skeleton import init_course
from generator.errors import CoursepackError
from generator.content.loader import load_content
from generator.runners.base import default_jobs

EXIT_OK, EXIT_ERROR = 0, 1
# --slurm-OPTION: (setting it overrides, metavar, example)
SLURM_OVERRIDES = {
    "partition": ("partition", "NAME", "gpu"),
    "account": ("account", "NAME", "cs101"),
    "qos": ("qos", "NAME", "normal"),
    "time": ("time_limit", "TIME", "00:20:00"),
    "gres": ("gres", "GRES", "gpu:a100:1, or '' for none"),
    "staging": ("staging", "DIR", "$SCRATCH/coursepack"),
    "max-retries": ("max_retries", "N", "2"),
    "pending-limit": ("pending_limit_s", "SECONDS", "1800"),
}


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--content", type=Path, default=Path("content"), help="content folder (default: ./content)"
    )
    parser.add_argument(
        "--templates",
        type=Path,
        default=TEMPLATES,
        help="templates folder (default: the built-in ones)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default: build/ beside the content folder)",
    )
    parser.add_argument(
        "--lesson", action="append", default=[], help="only this lesson id (repeatable)"
    )
    parser.add_argument(
        "--locale", action="append", default=[], help="only this locale (repeatable)"
    )


def _runner_args(
    parser: argparse.ArgumentParser, what: str = "verification", notebook: bool = True
) -> None:
    parser.add_argument(
        "--runner",
        default="auto",
        choices=["auto", "cuda", "interpreter", "command", "slurm"],
        help=f"where {what} runs (default: auto = cuda if a GPU is visible, else interpreter; "
        "slurm: one job array on a Slurm cluster)",
    )
    parser.add_argument(
        "--python",
        help="Python interpreter with torch and triton used to run packs "
        "(default: the one running coursepack)",
    )
    parser.add_argument(
        "--runner-command",
        help="for --runner command: a template with {cwd} and {cmd} or "
        "{shell_cmd}, e.g. 'ssh gpu01 {shell_cmd}' or "
        "'srun --gres=gpu:1 --chdir {cwd} {cmd}'",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=default_jobs(),
        help=f"{what} steps run at once"
        + (", and processes that zip the lessons" if notebook else "")
        + " (default: the CPU count, at most 8: %(default)s)",
    )
    if notebook:  # verification's own
        parser.add_argument(
            "--no-notebook",
            action="store_true",
            help="skip executing the answer notebook (needs IPython on the runner)",
        )
        parser.add_argument(
            "--sandbox",
            choices=("auto", "on", "off"),
            default="auto",
            help="run the answer and the declared mistakes in the checker's sandbox (bubblewrap): "
            "auto = where it can run on the runner (the report says which), on = fail without it",
        )
    slurm = parser.add_argument_group(
        "--runner slurm", "settings file (see examples/slurm.yaml) and overrides"
    )
    slurm.add_argument(
        "--slurm-config",
        type=Path,
        metavar="FILE",
        help="YAML settings: partition, account, qos, "
        "time_limit, gres, sbatch_args, setup_lines, python, staging, max_retries, pending_limit_s ...",
    )
    for option, (key, metavar, example) in SLURM_OVERRIDES.items():
        slurm.add_argument(
            f"--slurm-{option}",
            dest=f"slurm_{key}",
            metavar=metavar,
            help=f"overrides {key} (e.g. {example})",
        )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="coursepack", description="Build verified exercise and answer packs."
    )
    sub = top.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="load, render, verify and zip every pack into build/dist")
    _common(b)
    _runner_args(b)
    b.add_argument(
        "--no-verify",
        action="store_true",
        help="build without running anything; packs say NOT VERIFIED",
    )
    b.add_argument(
        "--draft",
        action="store_true",
        help="every translation as a draft: missing units, answers "
        "too, fall back to the source language, marked",
    )
    v = sub.add_parser("verify", help="run the verification gate only (no zips)")
    _common(v)
    _runner_args(v)
    _grade_parser(sub)
    r = sub.add_parser(
        "review",
        add_help=False,
        help="grade the manual parts on a local page; export-sheet, "
        "import-sheet; export for Canvas, Moodle, otter, nbgrader "
        "(docs/review.md; coursepack review --help)",
    )
    r.add_argument("rest", nargs=argparse.REMAINDER)
    c = sub.add_parser(
        "check",
        help="load and validate the content, render in memory, scan for leaks; write nothing",
    )
    _common(c)
    c.add_argument(
        "--draft", action="store_true", help="every translation as a draft (as build --draft)"
    )
    cl = sub.add_parser("clean", help="remove build outputs (keeps the verification cache)")
    cl.add_argument(
        "--content", type=Path, default=Path("content"), help="content folder (default: ./content)"
    )
    cl.add_argument(
        "--out", type=Path, help="output folder (default: build/ beside the content folder)"
    )
    it = sub.add_parser(
        "init",
        help="start a new course in DIR: content/ with one example lesson that builds as it is",
    )
    it.add_argument("dir", type=Path)
    i18n = sub.add_parser(
        "i18n", help="translators' tools: status, bless, new, export, import, migrate-stamps"
    )
    isub = i18n.add_subparsers(dest="i18n_command", required=True)
    st = isub.add_parser(
        "status",
        help="units ok, missing, stale (with source diffs) or extra; exit 1 if any need work",
    )
    st.add_argument("locale", nargs="?")
    st.add_argument("--json", action="store_true")
    st.add_argument("--content", type=Path, default=Path("content"))
    bl = isub.add_parser(
        "bless", help="stamp reviewed units with the current source hash (keeps the file's layout)"
    )
    bl.add_argument("locale")
    bl.add_argument(
        "--unit", action="append", default=[], help="unit id, e.g. questions.q1.answer (repeatable)"
    )
    bl.add_argument(
        "--all-stale", action="store_true", help="stamp every stale unit that has a translation"
    )
    bl.add_argument("--lesson", help="only this lesson's text file")
    bl.add_argument("--content", type=Path, default=Path("content"))
    mg = isub.add_parser(
        "migrate-stamps",
        help="re-stamp units stamped on the old reading of folded text "
        "(before issue 10.1); other stale units stay stale",
    )
    mg.add_argument("--content", type=Path, default=Path("content"))
    nw = isub.add_parser("new", help="skeleton files for a new language, added to course.yaml")
    nw.add_argument("locale")
    nw.add_argument("--content", type=Path, default=Path("content"))
    ex = isub.add_parser(
        "export",
        help="PO files for translators' tools (Poedit, Weblate, Crowdin): one per "
        "content file; --pot for templates of a language not started",
    )
    ex.add_argument("locale", nargs="?")
    ex.add_argument("--pot", action="store_true", help="templates (.pot): every msgstr empty")
    ex.add_argument("--format", choices=["po"], default="po")
    ex.add_argument(
        "--lesson", action="append", default=[], help="only this lesson's text (repeatable)"
    )
    ex.add_argument("--out", type=Path, required=True, help="folder the PO files are written into")
    ex.add_argument("--content", type=Path, default=Path("content"))
    im = isub.add_parser(
        "import",
        help="translations from PO files into the locale's YAML (keeps comments and "
        "layout); refuses an invalid PO with file.po:line and writes nothing",
    )
    im.add_argument("locale")
    im.add_argument("po", type=Path, nargs="+", help="PO files, or folders of them")
    im.add_argument("--content", type=Path, default=Path("content"))
    return top


def _grade_parser(sub) -> None:
    g = sub.add_parser(
        "grade",
        help="grade a class's submissions of one lesson: gradebook, feedback, Gradescope "
        "results, class summary (docs/instructors.md: Grading a class)",
    )
    g.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="a folder (or .zip) of submissions, in one of the "
        "layouts of docs/instructors.md's Grading section, or one submission file",
    )
    g.add_argument("--lesson", help="the lesson's id (its folder under content/lessons/)")
    g.add_argument(
        "--locale",
        help="every feedback in this language (default: the roster's, else the language of "
        "the student's own pack where it shows, else the course's source language)",
    )
    g.add_argument("--roster", type=Path, help="roster.csv: id,name,email,locale,aliases")
    g.add_argument(
        "--content", type=Path, default=Path("content"), help="content folder (default: ./content)"
    )
    g.add_argument(
        "--templates",
        type=Path,
        default=TEMPLATES,
        help="templates folder (default: the built-in ones)",
    )
    g.add_argument(
        "--out", type=Path, help="output folder, replaced whole (default: build/grades/<lesson>/)"
    )
    g.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="the results cache and job folders (default: build/ beside the content folder)",
    )
    _runner_args(g, "grading", notebook=False)
    g.add_argument(
        "--chunk",
        type=int,
        help="submissions per runner task (default: all in one on this machine, "
        "50 per Slurm array element or command)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        help="seconds allowed for each case (default: the lesson's timeout_s)",
    )
    g.add_argument(
        "--sandbox",
        choices=["on", "off", "auto"],
        default="on",
        help="on (default): every submission runs in the sandbox, and grading refuses to start where "
        "it cannot; off: run them unconfined (every output says so); auto (with --gradescope "
        "only): the sandbox where the container allows it, else the container alone, said in "
        "every result",
    )
    g.add_argument(
        "--gradescope",
        action="store_true",
        help="inside a Gradescope autograder container: grade /autograder/submission in the Triton "
        "interpreter and write /autograder/results/results.json",
    )
    for name, default in (
        ("submission", "/autograder/submission"),
        ("results", "/autograder/results/results.json"),
        ("metadata", "/autograder/submission_metadata.json"),
    ):
        g.add_argument(
            f"--gradescope-{name}", type=Path, default=Path(default), help=f"(default: {default})"
        )
    g.add_argument(
        "--gradescope-visibility",
        choices=["hidden", "after_due_date", "after_published", "visible"],
        default="visible",
        help="with --gradescope: when students see the case tests (default: visible; "
        "the rubric groups' tests are always visible)",
    )
    g.add_argument(
        "--kit",
        type=Path,
        help="with --gradescope: a grading kit (scripts/gradescope_autograder.py) "
        "instead of --content and --lesson",
    )
    _similarity_args(g)


def _similarity_args(g) -> None:
    from generator.grade.similarity import Settings

    default = Settings()
    g.add_argument(
        "--similarity",
        type=_share,
        default=default.threshold,
        metavar="SHARE",
        help="copy detection: the share of the smaller text's fingerprints two texts must share to be "
        f"listed in similarity.md (default {default.threshold}; see docs/instructors.md)",
    )
    g.add_argument(
        "--similarity-min-shared",
        type=int,
        default=default.min_shared,
        metavar="N",
        help=f"copy detection: fewer shared fingerprints are never a match (default {default.min_shared})",
    )
    g.add_argument(
        "--compare-with",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="an earlier term's grading folder (its similarity.json) to compare this class with "
        "(repeatable)",
    )


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: a share between 0 and 1")
    return value


def _grade(args: argparse.Namespace) -> int:
    from generator.grade.run import GradeOptions, grade, grade_in_container
    from generator.grade.similarity import Settings

    options = GradeOptions(
        submissions=args.submissions,
        lesson=args.lesson,
        content=args.content,
        templates=args.templates,
        out=args.out,
        build=args.cache,
        locale=args.locale,
        roster=args.roster,
        runner=args.runner,
        python=args.python,
        runner_command=args.runner_command,
        slurm=slurm_settings(args) if args.runner == "slurm" else None,
        jobs=args.jobs,
        chunk=args.chunk,
        timeout=args.timeout,
        sandbox=args.sandbox,
        gradescope_submission=args.gradescope_submission,
        gradescope_results=args.gradescope_results,
        gradescope_metadata=args.gradescope_metadata,
        gradescope_visibility=args.gradescope_visibility,
        kit=args.kit,
        similarity=Settings(threshold=args.similarity, min_shared=args.similarity_min_shared),
        compare_with=args.compare_with,
    )
    if not args.lesson and not (args.gradescope and args.kit):
        raise CoursepackError("say which lesson: --lesson ID (or, with --gradescope, a --kit)")
    if args.gradescope:
        grade_in_container(options)
        return EXIT_OK
    if args.submissions is None:
        raise CoursepackError(
            "say where the submissions are: coursepack grade SUBMISSIONS --lesson ID"
        )
    outcome = grade(options)
    counts = {}
    for row in outcome.rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    print(
        f"graded {len(outcome.rows)} student(s) in {outcome.seconds:.1f} s ("
        + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        + f"); wrote {outcome.out}"
    )
    if outcome.problems:
        print(
            "some submissions have no result (their rows say crashed; run again to retry them):\n  "
            + "\n  ".join(outcome.problems),
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def _options(args: argparse.Namespace, verify: bool) -> BuildOptions:
    return BuildOptions(
        content=args.content,
        templates=args.templates,
        out=args.out,
        verify=verify,
        runner=getattr(args, "runner", "auto"),
        python=getattr(args, "python", None),
        runner_command=getattr(args, "runner_command", None),
        jobs=getattr(args, "jobs", None) or default_jobs(),
        notebook=not getattr(args, "no_notebook", False),
        sandbox=getattr(args, "sandbox", "auto"),
        lessons=tuple(args.lesson),
        locales=tuple(args.locale),
        draft=getattr(args, "draft", False),
        slurm=slurm_settings(args) if getattr(args, "runner", None) == "slurm" else None,
    )


def slurm_settings(args: argparse.Namespace):
    """The SlurmSettings of --runner slurm: the --slurm-config file, then the --slurm-* overrides
    (--python, when given, is the Python on the nodes)."""
    from generator.runners.slurm import load_settings

    overrides = {key: getattr(args, f"slurm_{key}") for key, _, _ in SLURM_OVERRIDES.values()}
    overrides["python"] = getattr(args, "python", None)
    options = {key: f"--slurm-{option}" for option, (key, _, _) in SLURM_OVERRIDES.items()}
    return load_settings(args.slurm_config, overrides, {**options, "python": "--python"})


def _i18n(args: argparse.Namespace) -> int:
    from generator.content import translate

    if args.i18n_command == "status":
        report = translate.status(args.content, args.locale)
        print(
            json.dumps(report, ensure_ascii=False, indent=1)
            if args.json
            else translate.render_status(report)
        )
        return EXIT_OK if report["clean"] else EXIT_ERROR
    if args.i18n_command == "bless":
        if not args.unit and not args.all_stale:
            raise CoursepackError("say which units to stamp: --unit ID (repeatable) or --all-stale")
        stamped = translate.bless(args.content, args.locale, args.unit, args.all_stale, args.lesson)
        print("\n".join(f"stamped {line}" for line in stamped) or "nothing to stamp")
        return EXIT_OK
    if args.i18n_command == "migrate-stamps":
        migrated = translate.migrate_stamps(args.content)
        print(
            "\n".join(f"re-stamped {line}" for line in migrated)
            or "no stamps from the old reading; nothing to do"
        )
        return EXIT_OK
    if args.i18n_command in ("export", "import"):
        return _po(args)
    created = translate.new_locale(args.content, args.locale)
    print("\n".join(f"wrote {path}" for path in created))
    return EXIT_OK


def _po(args: argparse.Namespace) -> int:
    from generator.content import translate_po

    if args.i18n_command == "export":
        if (args.locale is None) != args.pot:
            raise CoursepackError("say what to export: a LOCALE, or --pot for templates")
        for path in translate_po.export(args.content, args.locale, args.out, args.lesson or None):
            print(f"wrote {path}")
        return EXIT_OK
    result = translate_po.import_po(args.content, args.locale, args.po)
    print(translate_po.render_import(result))
    return EXIT_ERROR if result.refused else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # a command line: a build allocates millions of small objects and frees few;
        gc.set_threshold(100_000, 50, 100)  # fewer collection passes save ~6% of its time
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["review"]:  # its own parser (generator/review/command.py), --help included
        args = argparse.Namespace(command="review", rest=words[1:])
    else:
        args = parser().parse_args(argv)
    try:
        if args.command == "build":
            build(_options(args, verify=not args.no_verify))
        elif args.command == "verify":
            data = verify_only(_options(args, verify=True))
            print(
                f"verification {'passed' if data['passed'] else 'FAILED'}; report: {data['report']}"
            )
            if not data["passed"]:
                return EXIT_ERROR
        elif args.command == "check":
            options = _options(args, verify=False)
            content = load_content(options.content, options.draft)
            render_all(content, options)
            from generator.content.translate import draft_summary

            print(
                "\n".join(
                    draft_summary(content)
                    + ["content is valid; every pack renders; no answer leaks"]
                )
            )
        elif args.command == "clean":
            clean(args.out if args.out is not None else default_out(args.content))
        elif args.command == "init":
            for path in init_course(args.dir):
                print(f"wrote {path}")
            print(
                f"next: cd {args.dir} && coursepack build   (or: coursepack build --content {args.dir / 'content'})"
            )
        elif args.command == "i18n":
            with build_memo():  # a run's memo (generator.files.memo), dropped when it ends
                return _i18n(args)
        elif args.command == "grade":
            with build_memo():
                return _grade(args)
        elif args.command == "review":
            from generator.review.command import main as review

            return review(args.rest)
    except CoursepackError as exc:
        print(f"coursepack: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(
            "coursepack: interrupted; "
            + (
                "the results finished so far are kept, and the same command resumes; "
                "the output folder was left as it was"
                if args.command == "grade"
                else "build/dist was left as it was"
            ),
            file=sys.stderr,
        )
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
