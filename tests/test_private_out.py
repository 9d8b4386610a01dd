"""`--out` in a private folder (mode 0700, as `mktemp -d` makes it), inside the course's folder and
outside it, as root and as an ordinary user: the build verifies in the sandbox and releases, or
is refused before it starts, never a build whose every step fails with a sandbox message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO, small_lesson_copy

KEEP = ["seed", "tail_257", "empty", "special_f32"]
NOBODY = 65534
pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and os.environ.get("CI") != "true",
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A small copy of the course in a folder every user can read (pytest's own are root's)."""
    root = Path(tempfile.mkdtemp(prefix="coursepack-private-out-"))
    os.chmod(root, 0o755)
    small_lesson_copy(root, KEEP)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _private(parent: Path, owner: int | None = None) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=parent))  # mode 0700
    if owner is not None:
        os.chown(folder, owner, owner)
    return folder


def _python_for(user: int | None) -> tuple[str, str]:
    """The Python to run as user, and its PYTHONPATH: this one, or (where this one lives in a folder
    only root can reach, as pyenv's under /root) the system's Python of the same version with this
    environment's packages."""
    if user is None or _reachable(sys.executable):
        return sys.executable, str(REPO)
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    same = system and subprocess.run(
        [system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
    ).stdout.strip() == str(sys.version_info[:2])
    if not same:
        pytest.skip(
            f"{sys.executable} is not reachable by an ordinary user, and no system Python "
            f"{sys.version_info[0]}.{sys.version_info[1]} is"
        )
    return system, os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])


def _reachable(path: str) -> bool:
    real = Path(os.path.realpath(path))
    return all(os.stat(folder).st_mode & 0o001 for folder in real.parents)


def _build(course: Path, out: Path, user: int | None = None) -> subprocess.CompletedProcess:
    python, path = _python_for(user)
    argv = [
        python,
        "-m",
        "generator",
        "build",
        "--content",
        str(course / "content"),
        "--templates",
        str(course / "templates"),
        "--out",
        str(out),
        "--lesson",
        "lesson03_relu",
        "--locale",
        "en",
        "--runner",
        "interpreter",
        "-j",
        "2",
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path, "LANG": "C.UTF-8"}
    if user is not None:
        home = _private(Path(tempfile.gettempdir()), user)
        env["HOME"] = str(home)
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--", *argv]
    return subprocess.run(argv, cwd=course, env=env, capture_output=True, text=True, timeout=600)


def _released(done: subprocess.CompletedProcess, out: Path) -> None:
    assert "bwrap" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "dist" / "lesson03_relu-en-answer.zip").is_file(), sorted(os.listdir(out))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_private_out_as_root(course, where):
    if os.geteuid() != 0:
        pytest.skip("runs as root (CI does)")
    # inside: the checkout's build/ (the sandbox shows the checkout's parents); outside: /tmp
    parent = REPO / "build" if where == "inside" else Path(tempfile.gettempdir())
    out = _private(parent)
    try:
        _released(_build(course, out), out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
def test_a_private_out_as_an_ordinary_user(course):
    if os.geteuid() != 0:
        pytest.skip("needs root to become an ordinary user (setpriv)")
    if not _reachable(str(REPO / "generator" / "cli.py")):
        pytest.skip(f"{REPO} is not readable by an ordinary user")
    (course / "build").mkdir(exist_ok=True)
    os.chmod(course / "build", 0o777)
    out = _private(course / "build", NOBODY)
    try:
        _released(_build(course, out, NOBODY), out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
