"""Shared fixtures: copies of the real content, built packs, and a way to run check.py."""

from __future__ import annotations

import fcntl
import functools
import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from generator.pipeline.build import build
from generator.pipeline.options import BuildOptions
from generator.files.memo import build_memo

REPO = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=1)
def has_cuda() -> bool:
    """Whether torch sees a CUDA GPU. Imports torch on first use, in the processes that run tests
    (pytest-xdist's controller, which only hands files out, never does) and as check.py and the
    task server do: no collection passes meanwhile, none over it later."""
    gc.disable()
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is in the lock file
        return False
    finally:
        gc.freeze()
        gc.enable()


# The order in which pytest-xdist hands out test files (`make test` passes --no-loadscope-reorder,
# which keeps it): the longest first, so that none starts last and ends last. The first three go
# to the three processes at once: the Slurm file (mostly waiting on the scheduler), the browser file
# (it builds the shared course), a long file that needs no build; the fourth waits behind the Slurm
# file, so it is short. Files not named keep their order, after these.
FIRST = (
    "test_slurm.py",
    "test_html_browser.py",
    "test_i18n.py",
    "test_golden.py",
    "test_checker.py",
    "test_grade_e2e.py",
    "test_bad_inputs.py",
    "test_build_e2e.py",
    "test_atomic.py",
    "test_platforms.py",
    "test_task_server.py",
    "test_new_kinds.py",
    "test_bench.py",
    "test_otter_compare.py",
    "test_fuzz.py",
)


def pytest_configure(config):
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        has_cuda()  # torch first, before the test files' imports: a process that runs tests
        gc.set_threshold(100_000, 50, 100)  # as the command line does (generator/cli.py)


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none is visible to torch here")
    for item in items:
        if "cuda" in item.keywords and not has_cuda():
            item.add_marker(skip)
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(
        key=lambda item: rank.get(item.path.name, len(FIRST))
    )  # stable: the rest keep their order


@pytest.fixture(autouse=True)
def _memo():
    """Each test runs as a build does, with a memo of its own (generator.files.memo), dropped after it."""
    with build_memo():
        yield


def copy_course(source: Path, into: Path, **kw) -> None:
    """shutil.copytree, but the translators' snapshots (content/.i18n/snapshots: hundreds of files,
    each written once under the hash of its text, never changed) are hard links, not copies."""

    def link_or_copy(src: str, dst: str) -> None:
        if Path(src).parent.name == "snapshots" and Path(src).parent.parent.name == ".i18n":
            try:
                os.link(src, dst)
                return
            except OSError:  # another file system
                pass
        shutil.copy2(src, dst)

    shutil.copytree(source, into, copy_function=link_or_copy, **kw)


def copy_content(root: Path) -> Path:
    """This repository's content/ and templates/ into root; returns root."""
    copy_course(REPO / "content", root / "content")
    shutil.copytree(REPO / "templates", root / "templates")
    return root


@pytest.fixture
def content_copy(tmp_path: Path) -> Path:
    """A private copy of content/ and templates/ that a test may break."""
    return copy_content(tmp_path)


def small_lesson_copy(root: Path, keep: list[str], lesson: str = "lesson03_relu") -> Path:
    """This repository's content/ and templates/ in root, with one lesson cut to the cases in keep
    (its declared mistakes and case names cut to match): a fast lesson in the interpreter.
    Returns root / "content"."""
    from ruamel.yaml import YAML

    shutil.copytree(REPO / "content", root / "content", ignore=shutil.ignore_patterns(".i18n"))
    shutil.copytree(REPO / "templates", root / "templates")
    path = root / "content" / "lessons" / lesson / "lesson.yaml"
    yaml = YAML()
    spec = yaml.load(path.read_text(encoding="utf-8"))
    checks = spec["checks"]
    checks["cases"] = [case for case in checks["cases"] if case["id"] in keep]
    mistakes = []
    for mistake in checks["mistakes"]:
        fails = mistake["fails"]
        if isinstance(fails, list):
            fails = [case for case in fails if case in keep]
            if not fails:
                continue
        else:
            fails = {"all_except": [case for case in fails["all_except"] if case in keep]}
        mistake["fails"] = fails
        if "reasons" in mistake:
            mistake["reasons"] = {
                case: reason for case, reason in mistake["reasons"].items() if case in keep
            }
        mistakes.append(mistake)
    checks["mistakes"] = mistakes
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump(spec, handle)
    for text in path.parent.glob("text.*.yaml"):  # the cases' names, and their translation stamps
        data = yaml.load(text.read_text(encoding="utf-8"))
        for case in [c for c in data["checker"]["cases"] if c not in keep]:
            del data["checker"]["cases"][case]
            data.get("source_hashes", {}).pop(f"checker.cases.{case}", None)
        with open(text, "w", encoding="utf-8") as handle:
            yaml.dump(data, handle)
    return root / "content"


def options_for(root: Path, **kw) -> BuildOptions:
    return BuildOptions(
        content=root / "content", templates=root / "templates", out=root / "build", **kw
    )


def add_fixture_lessons(content: Path, fixtures: Path, lessons: list[str]) -> None:
    """Fixture lesson folders (fixtures/<id>/: lesson.yaml, solution.py, reference.py, text.en.yaml)
    into a course made by `coursepack init`, each with its line in course.yaml and its title."""
    course, locale = content / "course.yaml", content / "locales" / "en.yaml"
    for number, lesson in enumerate(lessons, start=2):
        shutil.copytree(fixtures / lesson, content / "lessons" / lesson)
        course.write_text(
            course.read_text() + f"  - {{id: {lesson}, number: {number}, status: published}}\n"
        )
        title = lesson.split("_", 1)[1].replace("_", " ")
        locale.write_text(
            locale.read_text().replace(
                "lesson_titles:\n", f"lesson_titles:\n  {lesson}: {title}\n", 1
            )
        )


def unzip(path: Path, into: Path) -> Path:
    with zipfile.ZipFile(path) as archive:
        archive.extractall(into)
    return into / path.stem


def shared_dir(tmp_path_factory, name: str, make) -> Path:
    """A folder made once per test run, also when pytest-xdist runs the tests in several processes:
    the first to come makes it (make(folder)) under a lock, the others wait and use it. Read only."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / f"shared-{name}"
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def _build_course(root: Path) -> None:
    copy_content(root)
    build(options_for(root, runner="interpreter", jobs=2, notebook=False), progress=lambda _: None)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """One verified build of the whole course (Triton interpreter) shared by the end-to-end tests;
    returns build/. Read only: a test that builds again or edits content takes own_build.
    Notebooks are executed elsewhere (tests/test_course.py), once."""
    return shared_dir(tmp_path_factory, "built", _build_course) / "build"


@pytest.fixture
def own_build(built: Path, tmp_path: Path) -> Path:
    """A private copy of the shared build (content, templates, build/ with its caches, not its job
    folders: a build makes its own); returns build/."""

    def skip(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == ".made" or (Path(folder) == built and n == "work")]

    copy_course(built.parent, tmp_path / "course", ignore=skip)
    return tmp_path / "course" / "build"


@pytest.fixture(scope="session")
def packs(built: Path, tmp_path_factory) -> dict[str, Path]:
    """Every built zip (lesson packs and course bundles), unzipped once per test run, by pack
    name. Read only: a test that changes a pack copies it first."""
    zips = sorted((built / "dist").glob("*.zip"))
    into = shared_dir(tmp_path_factory, "unzipped", lambda folder: [unzip(z, folder) for z in zips])
    return {z.stem: into / z.stem for z in zips}


def run_check(
    pack: Path, *args: str, timeout: float = 180, process: bool = False
) -> subprocess.CompletedProcess:
    """Run a pack's check.py the way a student does. In this process by default: the pack's checker
    still runs every kernel in forked children (that is what isolates them), and the test saves
    starting Python and importing torch again. process=True runs `python check.py` as a student does."""
    if process:
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        return subprocess.run(
            [sys.executable, "check.py", *args],
            cwd=pack,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    import contextlib
    import io

    checker = load_checker(pack)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(pack)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = checker.main(list(args))
            except SystemExit as exc:  # load_target's "no such file" and argparse
                code = exc.code if isinstance(exc.code, int) else (print(exc.code) or 2)
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(["check.py", *args], code, out.getvalue(), err.getvalue())


def load_checker(pack: Path):
    """A pack's check.py as a module of its own (its LESSON data differs per pack)."""
    import importlib.util

    name = "check_" + hashlib.sha256(str(pack.resolve()).encode()).hexdigest()[:12]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, pack / "check.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def check_json(pack: Path, *args: str, process: bool = False) -> dict:
    result = run_check(pack, "--json", *args, process=process)
    return json.loads(result.stdout)


def lesson_data(source: bytes | str) -> dict:
    """The LESSON data block of a generated check.py."""
    import json
    import re

    text = source.decode("utf-8") if isinstance(source, bytes) else source
    return json.loads(
        re.search(r'^LESSON = json\.loads\(r"""(.*?)"""\)$', text, re.S | re.M).group(1)
    )


def filled(pack: Path, fill: str, tmp: Path, kernel: str = "relu.py") -> Path:
    """The exercise kernel with the blank filled in, in a folder of its own."""
    code = (pack / kernel).read_text(encoding="utf-8")
    path = tmp / kernel
    path.write_text(code.replace("______", fill, 1), encoding="utf-8")
    return path
