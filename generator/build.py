"""The pipeline: load -> render -> leak scan -> verify -> zip -> swap build/dist -> report.

Nothing under build/dist changes unless every step succeeded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from generator.archive import recover_dir, replace_dir, zip_pack
from generator.errors import CoursepackError, VerificationError
from generator.translate import release_gate
from generator.leaks import LeakError, fingerprints, scan_files, scan_zip
from generator.loader import CourseContent, load_content
from generator.pack import EDITIONS, Pack
from generator.pairing import edition_drift
from generator.render import LessonContext, checker_data, finalize_pack, jinja_env, mistake_code, render_pack
from generator.report import report_data, write_reports
from generator import verify as V
from generator.bundle import bundle_pack
from generator.quarto import project_leaks, quarto_projects
from generator.cache import BuildCache, read_json, write_json
from generator.runners import make_runner
from generator.resources import TEMPLATES   # built in; --templates overrides

REPO = Path(__file__).resolve().parent.parent


@dataclass
class BuildOptions:
    content: Path = Path("content")
    templates: Path = TEMPLATES
    out: Path = Path("build")
    verify: bool = True
    runner: str = "auto"
    python: str | None = None
    runner_command: str | None = None
    jobs: int = min(8, os.cpu_count() or 2)
    notebook: bool = True
    sandbox: str = "auto"   # auto | on | off: the checker's sandbox for the answer and the mistakes
    lessons: tuple[str, ...] = ()
    locales: tuple[str, ...] = ()
    slurm: Any = None   # SlurmSettings, for runner "slurm"


@dataclass
class BuildResult:
    zips: dict[str, str] = field(default_factory=dict)          # name -> sha256
    verification: dict[str, dict] = field(default_factory=dict)  # lesson/locale -> record
    disagreements: dict[str, list] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)
    fallbacks: list[dict] = field(default_factory=list)
    tasks: list[dict] = field(default_factory=list)   # the runner's tasks (lesson, state, job id, seconds)
    job_ids: list[str] = field(default_factory=list)  # every Slurm job a build used (the probe's too)


Progress = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def render_all(content: CourseContent, options: BuildOptions) -> dict[tuple[str, str], dict[str, tuple[LessonContext, Pack]]]:
    """Every pack in memory, grouped by (lesson, locale); leak-scanned."""
    env = jinja_env(options.templates)
    groups = {}
    leaks = []
    for lesson in content.published:
        if options.lessons and lesson.spec.id not in options.lessons:
            continue
        for locale in content.course.locales:
            if options.locales and locale not in options.locales:
                continue
            editions = {}
            for edition in EDITIONS:
                ctx = LessonContext(content, lesson, locale, edition)
                editions[edition] = (ctx, render_pack(ctx, env))
            exercise, answer = editions["exercise"][1], editions["answer"][1]
            leaks += scan_files(exercise.files, fingerprints(lesson, locale), exercise.name)
            leaks += edition_drift(exercise, answer, lesson, content.locales[locale], locale,
                                   [(e.id, e.number) for e in content.course.lessons],
                                   (checker_data(editions["exercise"][0]), checker_data(editions["answer"][0])))
            groups[(lesson.spec.id, locale)] = editions
    if leaks:
        raise LeakError("answer material found in exercise packs, or editions that drifted apart:\n"
                        + "\n".join(leaks))
    if not groups:
        raise CoursepackError("nothing to build: no published lesson matches the --lesson/--locale filters")
    return groups


def inputs_digest(options: BuildOptions, runner_stamp: str) -> str:
    """Everything a build's output depends on: content, templates, the generator, the options.
    Not the translators' snapshots (content/.i18n: old source texts for `i18n status`'s word
    diffs; no build reads them, and there are hundreds)."""
    digest = hashlib.sha256()
    for folder in (options.content, options.templates, Path(__file__).resolve().parent):
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                           and ".i18n" not in p.relative_to(folder).parts):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + _file_hash(path) + b"\0")
    settings = {k: v for k, v in vars(options).items() if k not in ("out", "jobs")}
    digest.update(json.dumps(settings, default=str, sort_keys=True).encode() + runner_stamp.encode())
    return digest.hexdigest()


_HASHED: dict[tuple, bytes] = {}


def _file_hash(path: Path) -> bytes:
    """sha256 of a file, kept in this process by its stat (a process that builds again, the
    generator's 3.5 MB of mermaid among them). As git does against racy edits, a file changed
    in the last two seconds is always read: a same-size edit within one timestamp tick."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    if key in _HASHED:
        return _HASHED[key]
    value = hashlib.sha256(path.read_bytes()).digest()
    if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > 2_000_000_000:
        if len(_HASHED) > 50_000:
            _HASHED.clear()
        _HASHED[key] = value
    return value


def _up_to_date(options: BuildOptions, digest: str) -> dict | None:
    """The last build's record if it had these exact inputs and its zips are still there, unchanged."""
    last = read_json(BuildCache(options.out).last_build)
    if not isinstance(last, dict) or last.get("digest") != digest:
        return None
    dist = options.out / "dist"
    for name, sha in last["zips"].items():
        path = dist / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            return None
    if sorted(p.name for p in dist.iterdir()) != sorted(last["zips"]):
        return None
    return last


def build(options: BuildOptions, progress: Progress = _stderr) -> BuildResult:
    started = time.monotonic()
    options.out.mkdir(parents=True, exist_ok=True)
    recover_dir(options.out / "dist")
    stamp = _runner_stamp(options) if options.verify else "no-verify"
    digest = inputs_digest(options, stamp)
    last = _up_to_date(options, digest)
    if last is not None:
        progress(f"up to date: nothing changed since the last build ({len(last['zips'])} zips in {options.out / 'dist'})")
        return BuildResult(zips=last["zips"], cached={k: True for k in last["verified"]},
                           seconds=time.monotonic() - started)
    result = _build(options, progress, started)
    write_json(BuildCache(options.out).last_build,
               {"digest": digest, "zips": result.zips, "verified": sorted(result.verification)})
    return result


def _runner_stamp(options: BuildOptions) -> str:
    probes = BuildCache(options.out).probes
    runner = make_runner(options.runner, options.python, options.runner_command, None, probes / "auto.json",
                         options.slurm)
    if runner.kind in ("command", "slurm"):
        return f"{runner.identity()}@{time.time()}"   # a remote runner can change at any time: never skip
    return runner.identity() + json.dumps(runner.probe(options.out, probes / f"{runner.kind}.json"), sort_keys=True)


def _build(options: BuildOptions, progress: Progress, started: float) -> BuildResult:
    result = BuildResult()
    runner = _runner(options, progress) if options.verify else None   # torch imports while we render
    progress("load   content")
    content = load_content(options.content)
    result.fallbacks = release_gate(content)
    for item in result.fallbacks:
        progress(f"note   {item['file']}: {item['unit']} is {item['kind']}; shown with a marker")
    groups = render_all(content, options)
    progress(f"render {sum(len(g) for g in groups.values())} packs ({len(groups)} lesson x locale)")
    out = options.out
    records = _verify_groups(groups, runner, options, out, result, progress) if runner else {}
    staging = out / "dist.new"
    V.clear(staging)
    staging.mkdir()
    env = jinja_env(options.templates)
    leaks = []
    finals = []
    for (lesson_id, locale), editions in groups.items():
        for edition, (ctx, pack) in editions.items():
            finals.append((ctx, finalize_pack(ctx, env, pack, records.get((lesson_id, locale)))))
    if not options.lessons:   # a course bundle holds every published lesson, so only a full build makes one
        finals += _bundles(content, groups, records, env)
        finals += [(None, project) for project in quarto_projects(content, groups, records, env)]
    for ctx, final in finals:
        data = zip_pack(final)
        if final.edition == "exercise":
            leaks += _scan_exercise(content, ctx, final, data)
        elif final.edition == "quarto":   # holds both editions: its exercise profile is scanned
            leaks += project_leaks(content, final.locale, data, final.name + ".zip")
        (staging / f"{final.name}.zip").write_bytes(data)
        result.zips[f"{final.name}.zip"] = hashlib.sha256(data).hexdigest()
    if leaks:
        V.clear(staging)
        raise LeakError("answer material found in exercise zips:\n" + "\n".join(leaks))
    result.seconds = time.monotonic() - started
    if result.failed:
        V.clear(staging)
        write_reports(out, options, result)
        raise VerificationError("verification failed; build/dist was left as it was:\n" + "\n".join(result.failed))
    replace_dir(staging, out / "dist")
    write_reports(out, options, result)
    progress(f"done   {len(result.zips)} zips in {out / 'dist'} ({result.seconds:.1f} s); report: {out / 'report.md'}")
    return result


def _scan_exercise(content: CourseContent, ctx: LessonContext | None, final: Pack, data: bytes) -> list[str]:
    """A lesson's exercise files against that lesson's answer material (a bundle: each folder against
    its own lesson's; another lesson's answer may share a phrase with this one's prose)."""
    if ctx is not None:
        return scan_zip(data, fingerprints(ctx.lesson, final.locale), final.name + ".zip")
    found = []
    for lesson in content.published:
        prints = fingerprints(lesson, final.locale)
        prefix = lesson.spec.id + "/"
        files = {name: body for name, body in final.files.items() if name.startswith(prefix) or "/" not in name}
        found += scan_files(files, prints, final.name + ".zip")
    return found


def _bundles(content: CourseContent, groups, records: dict, env) -> list[tuple[None, Pack]]:
    """Per locale and edition, every published lesson rendered with working links between them."""
    bundles = []
    locales = sorted({locale for _, locale in groups}, key=list(content.course.locales).index)
    for locale in locales:
        for edition in EDITIONS:
            lessons, verified = {}, {}
            for lesson in content.published:
                ctx = LessonContext(content, lesson, locale, edition, bundle=True)
                record = records.get((lesson.spec.id, locale))
                lessons[lesson.spec.id] = finalize_pack(ctx, env, render_pack(ctx, env), record)
                verified[lesson.spec.id] = "verified" if record else "NOT VERIFIED"
            bundles.append((None, bundle_pack(content, locale, edition, lessons, env, verified)))
    return bundles


def _runner(options: BuildOptions, progress: Progress):
    """The build's runner, already starting its warm task process where it has one."""
    runner = make_runner(options.runner, options.python, options.runner_command, options.out / "triton-cache",
                         BuildCache(options.out).probes / "auto.json", options.slurm, progress)
    runner.warm_up()
    return runner


def _verify_groups(groups, runner, options: BuildOptions, out: Path, result: BuildResult, progress: Progress) -> dict:
    cache = BuildCache(out)
    info = runner.probe(out, cache.probes / f"{runner.kind}.json")
    runner.check_usable(info)
    progress(f"verify on {runner.label}: {info['device']} · torch {info['torch']} · triton {info['triton']}")
    pairs = []
    for (lesson_id, locale), editions in groups.items():
        ctx = editions["answer"][0]
        mistakes = [(m, mistake_code(ctx, m)) for m in ctx.lesson.spec.checks.mistakes]
        pairs.append(V.PackPair(lesson_id, locale, ctx.lesson.spec, editions["exercise"][1], editions["answer"][1],
                                mistakes, options.notebook))
    outcome = V.verify_all(pairs, runner, info, cache, out / "work", options.jobs, progress, options.sandbox)
    result.verification = {f"{k[0]}/{k[1]}": r for k, r in outcome.records.items()}
    result.cached, result.disagreements = outcome.cached, outcome.disagreements
    result.failed += outcome.failed
    result.tasks = outcome.tasks
    result.job_ids = list(getattr(runner, "job_ids", []))
    return outcome.records


def clean(options: BuildOptions) -> None:
    for name in ("dist", "dist.new", "dist.old", "work", "report.json", "report.md"):
        path = options.out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def verify_only(options: BuildOptions, progress: Progress = _stderr) -> dict:
    """The gate alone: render and verify every pack, write the reports, zip nothing."""
    started = time.monotonic()
    result = BuildResult()
    options.out.mkdir(parents=True, exist_ok=True)
    runner = _runner(options, progress)
    content = load_content(options.content)
    groups = render_all(content, options)
    _verify_groups(groups, runner, options, options.out, result, progress)
    result.seconds = time.monotonic() - started
    write_reports(options.out, options, result)
    return report_data(options, result) | {"report": str(options.out / "report.md")}
