"""The installed product, not the checkout: the wheel built from these sources, installed into a
fresh virtual environment, run from outside the checkout (no PYTHONPATH) as a new user runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "generator", "templates")


def _run(argv: list, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the sources (setuptools writes its build/ beside them)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(
            REPO / name,
            src / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir() else {}),
        )
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            ".",
            "-w",
            out,
        ],
        src,
    )
    return next(out.glob("coursepack-*.whl"))


def test_the_wheel_holds_every_module_of_the_checkout(wheel):
    with zipfile.ZipFile(wheel) as archive:
        held = {name for name in archive.namelist() if name.endswith(".py")}
    modules = {
        str(p.relative_to(REPO))
        for p in (REPO / "generator").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert modules <= held, sorted(modules - held)
    templates = {
        "generator/" + str(p.relative_to(REPO))
        for p in (REPO / "templates").rglob("*")
        if p.is_file()
    }
    with zipfile.ZipFile(wheel) as archive:
        assert templates <= set(archive.namelist()), sorted(templates - set(archive.namelist()))


def test_the_installed_cli_inits_and_builds_a_course(wheel, tmp_path):
    """pip install of the wheel (not editable) into a fresh venv; the dependencies come from the test
    environment's site-packages through a .pth line (its own .pth files, the checkout's editable
    install among them, are not read), so the generator package can only come from the wheel."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path)
    python = venv / "bin" / "python"
    purelib = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path
        ).stdout.strip()
    )
    (purelib / "test_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], tmp_path)
    where = _run([python, "-c", "import generator; print(generator.__file__)"], tmp_path).stdout
    assert where.startswith(str(purelib)), where
    cli = venv / "bin" / "coursepack"
    assert "build" in _run([cli, "--help"], tmp_path).stdout
    _run([cli, "init", "mycourse"], tmp_path)
    done = _run([cli, "build", "--no-verify"], tmp_path / "mycourse")
    zips = sorted(p.name for p in (tmp_path / "mycourse" / "build" / "dist").glob("*.zip"))
    assert any(name.endswith("-exercise.zip") for name in zips), (zips, done.stderr)
    assert any(name.endswith("-answer.zip") for name in zips), zips
