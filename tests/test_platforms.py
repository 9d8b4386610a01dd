"""Issue 15: students on Linux, Windows and macOS.

Every pack's requirements.txt installs Triton on Linux (the triton project) and on Windows (the
community triton-windows build), and on macOS stops at a Triton line with the reason in a comment
right above it. The pack README says which route fits which machine, before the install step.

The `network` tests resolve the requirements with uv for each target platform; they skip, with the
reason, where the package index cannot be reached, unless COURSEPACK_REQUIRE_NETWORK=1 (CI sets it),
where an unreachable index fails them."""

from __future__ import annotations

import os
import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.golden_update import current_packs, golden_names, real_course

PACKS = golden_names()  # the lesson packs; rendered on first use, not when a test process collects


@functools.lru_cache(maxsize=1)
def packs() -> dict[str, dict[str, bytes]]:
    return current_packs()


def content():
    return real_course()[0]


MIN_TRITON = Version("3.6")

PLATFORMS = {  # uv's --python-platform, and the marker values pip would see there
    "linux": (
        "x86_64-manylinux_2_28",
        {
            "sys_platform": "linux",
            "platform_system": "Linux",
            "platform_machine": "x86_64",
            "os_name": "posix",
        },
    ),
    "windows": (
        "x86_64-pc-windows-msvc",
        {
            "sys_platform": "win32",
            "platform_system": "Windows",
            "platform_machine": "AMD64",
            "os_name": "nt",
        },
    ),
    "macos": (
        "aarch64-apple-darwin",
        {
            "sys_platform": "darwin",
            "platform_system": "Darwin",
            "platform_machine": "arm64",
            "os_name": "posix",
        },
    ),
}


def requirement_lines(text: str) -> list[tuple[int, str]]:
    """(line number, requirement) for every line that is not a comment or blank."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def applicable(text: str, platform: str) -> dict[str, tuple[int, Requirement]]:
    environment = dict(
        default_environment(),
        python_version="3.12",
        python_full_version="3.12.0",
        **PLATFORMS[platform][1],
    )
    found = {}
    for number, line in requirement_lines(text):
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            assert requirement.name not in found, (
                f"two {requirement.name} lines apply on {platform}"
            )
            found[requirement.name] = (number, requirement)
    return found


def requirements_of_every_pack() -> dict[str, str]:
    return {
        name: files["requirements.txt"].decode("utf-8") for name, files in sorted(packs().items())
    }


@pytest.mark.parametrize("name", PACKS)
def test_markers_pick_triton_per_platform(name):
    text = requirements_of_every_pack()[name]
    linux, windows, macos = (applicable(text, p) for p in ("linux", "windows", "macos"))
    assert set(linux) == {"torch", "triton", "numpy", "jupyterlab"}
    assert set(windows) == {"torch", "triton-windows", "numpy", "jupyterlab"}
    assert set(macos) == {"torch", "triton", "numpy", "jupyterlab"}
    for found, triton in ((linux, "triton"), (windows, "triton-windows"), (macos, "triton")):
        specifier: SpecifierSet = found[triton][1].specifier  # what the checker supports
        assert MIN_TRITON in specifier and Version("3.8.0.post29") in specifier
        assert Version("3.5.1") not in specifier
    # macOS: the line pip stops at is the darwin-only triton line, and the comment right above says why
    lines = text.splitlines()
    number = macos["triton"][0]
    assert 'sys_platform == "darwin"' in lines[number - 1]
    comment = []
    for line in reversed(lines[: number - 1]):
        if not line.startswith("#"):
            break
        comment.insert(0, line)
    explanation = " ".join(comment)
    assert "macOS" in explanation and "no Triton" in explanation and "README.md" in explanation, (
        explanation
    )


@pytest.mark.parametrize("name", PACKS)
def test_readme_says_which_route_fits_which_machine_before_the_install_step(name):
    locale = re.search(r"-(zh-CN|en)-", name).group(1)
    ui = content().locales[locale]
    readme = packs()[name]["README.md"].decode("utf-8")
    section = readme.index(f"## {ui.pack.readme_machine_title}\n")
    install = readme.index("pip install -r requirements.txt")
    assert section < install
    body = readme[section : readme.index("\n## ", section + 1)]
    for needle in (
        "Linux",
        "NVIDIA",
        "Windows",
        "triton-windows",
        "WSL2",
        "wsl --install",
        "macOS",
        "docker run",
        "download.pytorch.org/whl/cpu",
    ):
        assert needle in body, f"{needle} missing from the section"


def test_checker_message_when_triton_cannot_be_imported():
    for code, ui in content().locales.items():
        message = ui.checker["no_triton"]
        assert set(re.findall(r"\{(\w+)\}", message)) == {"platform", "section"}, code
        text = message.format(platform="macOS (arm64)", section=ui.pack.readme_machine_title)
        assert "macOS (arm64)" in text and ui.pack.readme_machine_title in text


# ---- resolving for real, per target platform (needs the package index) -----------------------

NETWORK_ERROR = re.compile(
    r"dns error|error sending request|Connect|timed out|Failed to fetch|"
    r"network|offline|Could not connect",
    re.I,
)


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.fail(
            "uv is not installed: it is pinned in requirements/lock.txt (make test installs it)"
        )
    return found


OFFLINE: list[str] = []  # the reason, once one resolution found the index unreachable


def resolve(requirements: str, platform: str, tmp_path: Path) -> subprocess.CompletedProcess:
    if OFFLINE:
        skip_or_fail(OFFLINE[0])
    path = tmp_path / "requirements.txt"
    path.write_text(requirements, encoding="utf-8")
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", NO_COLOR="1")
    return subprocess.run(
        [
            uv(),
            "pip",
            "compile",
            str(path),
            "--python-platform",
            PLATFORMS[platform][0],
            "--python-version",
            "3.12",
            "--no-header",
            "--no-annotate",
            "--no-build",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )


def skip_if_offline(result: subprocess.CompletedProcess) -> None:
    if (
        result.returncode != 0
        and NETWORK_ERROR.search(result.stderr)
        and "No solution found" not in result.stderr
    ):
        OFFLINE.append(
            "the package index cannot be reached: " + result.stderr.strip().splitlines()[-1].strip()
        )
        skip_or_fail(OFFLINE[0])


def skip_or_fail(reason: str) -> None:
    if os.environ.get("COURSEPACK_REQUIRE_NETWORK") == "1":
        pytest.fail(reason + " (COURSEPACK_REQUIRE_NETWORK=1)")
    pytest.skip(reason)


def distinct_requirements() -> list[str]:
    """Packs differ only in the heading comment: resolve each distinct set of requirement lines once."""
    seen = {}
    for text in requirements_of_every_pack().values():
        seen.setdefault(tuple(line for _, line in requirement_lines(text)), text)
    return list(seen.values())


def pins(output: str) -> dict[str, Version]:
    return {
        m.group(1).lower(): Version(m.group(2))
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)$", output, re.M)
    }


@pytest.mark.network
@pytest.mark.parametrize("platform", ["linux", "windows"])
def test_requirements_resolve_on_linux_and_windows(platform, tmp_path):
    for requirements in distinct_requirements():
        result = resolve(requirements, platform, tmp_path)
        skip_if_offline(result)
        assert result.returncode == 0, result.stderr
        got = pins(result.stdout)
        triton = "triton" if platform == "linux" else "triton-windows"
        other = "triton-windows" if platform == "linux" else "triton"
        assert got[triton] >= MIN_TRITON and other not in got, result.stdout
        assert {"torch", "numpy", "jupyterlab"} <= set(got)


@pytest.mark.network
def test_requirements_stop_on_macos_at_the_commented_triton_line(tmp_path):
    for requirements in distinct_requirements():
        result = resolve(requirements, "macos", tmp_path)
        skip_if_offline(result)
        assert result.returncode != 0, result.stdout
        assert "triton" in result.stderr and "darwin" in result.stderr, result.stderr
        assert "no wheels with a matching platform tag" in " ".join(result.stderr.split()), (
            result.stderr
        )  # uv wraps
