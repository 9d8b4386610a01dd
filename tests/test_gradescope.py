"""The Gradescope autograder (scripts/gradescope_autograder.py) on the images Gradescope builds on,
and what its results.json says:

- setup.sh's pins resolve for the Python of Ubuntu 22.04 (3.10, Gradescope's default) and 24.04
  (3.12) (network: the package index), and setup.sh picks them by the image's python3 (run here
  with fake apt-get, python3 and pip);
- where bubblewrap's user namespaces are refused (a fake `bwrap` that fails as bwrap does under
  Docker's default seccomp profile), the real run_autograder still writes a results.json: graded
  without the sandbox and saying so, or, built with --sandbox on, saying why nothing was graded;
- the case tests' visibility, the groups' tests always visible; a file that did not import is said
  to, not "0 of 0 cases passed"; messages in --locale, else the roster's language."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from generator.grade.collect import submission_of
from generator.grade.feedback import check_lines
from generator.grade.gradescope import results_json, sandbox_in_container
from generator.grade.lesson import GradeError
from generator.grade.roster import Student
from generator.grade.rows import make_row
from tests.conftest import REPO, small_lesson_copy

sys.path.insert(0, str(REPO / "scripts"))
import gradescope_autograder as autograder  # noqa: E402

KEEP = ["seed", "tail_257", "special_f32"]
ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"
IMAGES = {
    "3.10": "x86_64-manylinux_2_35",
    "3.12": "x86_64-manylinux_2_39",
}  # Ubuntu 22.04 and 24.04's glibc
BWRAP_REFUSED = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from generator.grade.lesson import load_lesson

    content = small_lesson_copy(tmp_path_factory.mktemp("gradescope-course"), KEEP)
    return content, load_lesson(content, "lesson03_relu")


def kernel(lesson, fill: str) -> str:
    return "\n".join(lesson.languages["en"].data["template"]).replace("______", fill, 1) + "\n"


def setup_pins(python: str) -> dict[str, str]:
    """The pins the generated setup.sh installs for an image whose python3 is `python`."""
    line = re.search(rf"^  {re.escape(python)}\) (.*) ;;$", autograder.setup_sh(), re.M).group(1)
    return {name.lower(): version for name, version in re.findall(r"(\w+)=(\S+)", line)}


# ---- setup.sh ---------------------------------------------------------------------------------


def compile_for(
    python: str, lines: list[str], tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess:
    from tests.test_platforms import uv

    path = tmp_path / f"requirements-{python}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run(
        [
            uv(),
            "pip",
            "compile",
            str(path),
            "--python-version",
            python,
            "--python-platform",
            IMAGES[python],
            "--no-header",
            "--no-annotate",
            "--no-build",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=dict(os.environ, UV_PYTHON_DOWNLOADS="never", NO_COLOR="1"),
    )


def coursepack_requirements() -> list[str]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]


@pytest.mark.network
@pytest.mark.parametrize("python", sorted(IMAGES))
def test_setup_pins_resolve_for_the_images_python(python, tmp_path):
    """triton, numpy and coursepack's own requirements resolved together for the image's Python;
    torch's version has wheels for it on PyPI (its CPU index: the next test)."""
    from tests.test_platforms import skip_if_offline

    pins = setup_pins(python)
    rest = compile_for(
        python,
        [f"triton=={pins['triton']}", f"numpy=={pins['numpy']}", *coursepack_requirements()],
        tmp_path,
    )
    skip_if_offline(rest)
    assert rest.returncode == 0, rest.stderr
    assert f"triton=={pins['triton']}" in rest.stdout and f"numpy=={pins['numpy']}" in rest.stdout
    torch = compile_for(python, [f"torch=={pins['torch']}"], tmp_path, "--no-deps")
    assert torch.returncode == 0, torch.stderr


@pytest.mark.network
@pytest.mark.parametrize("python", sorted(IMAGES))
def test_setup_torch_resolves_on_its_cpu_index(python, tmp_path):
    pins = setup_pins(python)
    cpu = compile_for(
        python, [f"torch=={pins['torch']}"], tmp_path, "--index-url", autograder.TORCH_INDEX
    )
    if cpu.returncode != 0 and re.search(
        r"dns error|failed to lookup|Could not connect|error sending request", cpu.stderr, re.I
    ):
        # PyTorch's own index is not PyPI: COURSEPACK_REQUIRE_NETWORK (PyPI must answer) does not cover it
        pytest.skip(
            f"torch's CPU index {autograder.TORCH_INDEX} cannot be reached from here (PyPI's "
            f"torch=={pins['torch']} has wheels for {python}: the test before this one)"
        )
    assert cpu.returncode == 0 and f"torch=={pins['torch']}+cpu" in cpu.stdout, cpu.stderr


@pytest.mark.network
def test_the_locks_pins_have_no_python_310_wheels(tmp_path):
    """Why 3.10 has pins of its own: the lock's triton does not resolve for it."""
    from tests.test_platforms import skip_if_offline

    lock = autograder.lock_pins()
    result = compile_for("3.10", [f"triton=={lock['triton']}"], tmp_path)
    skip_if_offline(result)
    assert result.returncode != 0 and "cp310" in result.stderr, result.stdout


def fake_tools(folder: Path, python: str) -> Path:
    """apt-get, python3 (reports `python`; -m venv makes a venv whose pip logs its arguments)."""
    folder.mkdir()
    (folder / "apt-get").write_text('#!/bin/sh\necho apt-get "$@" >> "$LOG"\n', encoding="utf-8")
    (folder / "python3").write_text(
        f"""#!/bin/sh
if [ "$1" = "-c" ]; then echo {python}; exit 0; fi
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"; printf '#!/bin/sh\\necho pip "$@" >> "$LOG"\\n' > "$3/bin/pip"; chmod +x "$3/bin/pip"
fi
""",
        encoding="utf-8",
    )
    for tool in ("apt-get", "python3"):
        (folder / tool).chmod(0o755)
    return folder


@pytest.mark.parametrize("python", ["3.10", "3.12"])
def test_setup_sh_installs_the_pins_of_the_images_python(python, tmp_path):
    tools = fake_tools(tmp_path / "bin", python)
    (tmp_path / "setup.sh").write_text(autograder.setup_sh(), encoding="utf-8")
    log = tmp_path / "log"
    done = subprocess.run(
        ["bash", str(tmp_path / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(
            os.environ, PATH=f"{tools}:/usr/bin:/bin", LOG=str(log), AUTOGRADER=str(tmp_path / "ag")
        ),
    )
    assert done.returncode == 0, done.stderr
    pins = autograder.pins(python)
    installed = log.read_text(encoding="utf-8")
    assert (
        "bubblewrap" in installed
        and f"--index-url {autograder.TORCH_INDEX} torch=={pins['torch']}" in installed
    )
    assert f"triton=={pins['triton']} numpy=={pins['numpy']}" in installed
    assert (pins["triton"], pins["numpy"]) == (
        ("3.8.0", "2.2.6") if python == "3.10" else ("3.9.0", "2.4.6")
    )


def test_setup_sh_stops_with_the_reason_on_an_older_image(tmp_path):
    tools = fake_tools(tmp_path / "bin", "3.8")
    (tmp_path / "setup.sh").write_text(autograder.setup_sh(), encoding="utf-8")
    done = subprocess.run(
        ["bash", str(tmp_path / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(
            os.environ,
            PATH=f"{tools}:/usr/bin:/bin",
            LOG=str(tmp_path / "log"),
            AUTOGRADER=str(tmp_path / "ag"),
        ),
    )
    assert (
        done.returncode == 1 and "python3 is 3.8" in done.stderr and "Ubuntu 22.04" in done.stderr
    )


# ---- run_autograder where bubblewrap is refused ------------------------------------------------


@pytest.fixture
def refusing_bwrap():
    """A folder with a bwrap that fails as bubblewrap does where user namespaces are refused. Not
    under tmp_path: as root the sandbox starts bwrap as nobody, who must find this one first on
    PATH (a folder nobody cannot enter is skipped, and a real bwrap further on would be found)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="coursepack-fake-bwrap-"))
    folder.chmod(0o755)
    (folder / "bwrap").write_text(
        f'#!/bin/sh\necho "{BWRAP_REFUSED}" >&2\nexit 1\n', encoding="utf-8"
    )
    (folder / "bwrap").chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def run_autograder(
    course, tmp_path: Path, bwrap: Path, fill: str, **build
) -> tuple[subprocess.CompletedProcess, dict]:
    content, lesson = course
    data = autograder.autograder_zip(
        content,
        "lesson03_relu",
        build.pop("sandbox", "auto"),
        4,
        build.pop("locale", "en"),
        **build,
    )
    root = tmp_path / "autograder"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "relu.py").write_text(kernel(lesson, fill), encoding="utf-8")
    (root / "submission_metadata.json").write_text(
        json.dumps({"users": [{"sid": "s042", "name": "Ada"}]}), encoding="utf-8"
    )
    path = f"{bwrap}:{os.environ['PATH']}"
    env = dict(
        os.environ,
        AUTOGRADER=str(root),
        COURSEPACK=f"{sys.executable} -m generator",
        PYTHONPATH=str(REPO),
        COURSEPACK_CACHE=str(tmp_path / "cache"),
        PATH=path,
    )
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = root / "results" / "results.json"
    return done, json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}


def test_refused_namespaces_grade_without_the_sandbox_and_every_result_says_so(
    course, tmp_path, refusing_bwrap
):
    done, result = run_autograder(course, tmp_path, refusing_bwrap, ANSWER)
    assert done.returncode == 0 and result, done.stderr
    assert result["score"] == 3 and result["extra_data"]["status"] == "graded", result
    assert (
        result["extra_data"]["sandbox"] == "container"
        and "sandbox_off" in result["extra_data"]["flags"]
    )
    assert "refuses the user namespaces bubblewrap needs" in result["output"], result["output"]
    assert "the sandbox cannot run in this container" in done.stderr


def test_refused_namespaces_with_sandbox_on_write_why_nothing_was_graded(
    course, tmp_path, refusing_bwrap
):
    done, result = run_autograder(course, tmp_path, refusing_bwrap, ANSWER, sandbox="on")
    assert done.returncode == 0 and result, done.stderr
    assert (result["score"], result["tests"], result["extra_data"]["status"]) == (
        0,
        [],
        "not graded",
    )
    assert (
        "--sandbox on" in result["output"]
        and "No permissions to creating new namespace" in result["output"]
    )
    assert "None of your code ran" in result["output"]


def test_a_multilingual_course_needs_a_language_for_its_autograder(course):
    content, _ = course
    with pytest.raises(GradeError, match="--locale L .* or --roster ROSTER"):
        autograder.autograder_zip(content, "lesson03_relu", "auto", 4, None)


# ---- results.json ------------------------------------------------------------------------------


def result_of(
    lesson,
    tmp_path,
    code: str,
    data: dict | None,
    locale: str | None = "en",
    visibility="visible",
    reason_files: dict | None = None,
):
    files = reason_files if reason_files is not None else {"relu.py": code.encode()}
    submission = submission_of("s1", "gradescope", "", files, lesson)
    row = make_row(
        lesson, Student("s1"), submission, True, data, None if data else "no result", locale, "on"
    )
    return results_json(
        lesson, row, check_lines(lesson, row, tmp_path / "modules"), "on", visibility
    )


def case_data(lesson, statuses: dict, **extra) -> dict:
    from tests.test_grade import data_of

    return data_of(lesson, statuses, **extra)


def test_case_tests_take_the_visibility_the_groups_stay_visible(course, tmp_path):
    _, lesson = course
    data = case_data(lesson, {"special_f32": "fail"})
    for visibility in ("hidden", "after_due_date", "after_published", "visible"):
        result = result_of(lesson, tmp_path, kernel(lesson, "xv"), data, visibility=visibility)
        groups, cases = result["tests"][:2], result["tests"][2:]
        assert [t["visibility"] for t in groups] == ["visible", "visible"] and cases
        assert {t["visibility"] for t in cases} == {visibility}
        case_line = "why: NaN became 0.0"
        assert (case_line in result["output"]) == (visibility == "visible"), (
            visibility
        )  # not shown before the cases


def test_a_file_that_did_not_import_says_so_in_each_group(course, tmp_path):
    _, lesson = course
    broken = case_data(
        lesson,
        {},
        status="load_error",
        cases=[],
        score={"normal": 0, "boundary": 0},
        load_error={"kind": "syntax", "line": 3, "text": "invalid syntax"},
    )
    result = result_of(lesson, tmp_path, kernel(lesson, "xv"), broken)
    outputs = [t["output"] for t in result["tests"][:2]]
    assert outputs == ["no case ran: the file could not be imported or loaded"] * 2, outputs
    hang = case_data(
        lesson,
        {},
        status="load_error",
        cases=[],
        score={"normal": 0, "boundary": 0},
        load_error={"kind": "timeout", "seconds": 4},
    )
    assert (
        "ran past its time limit"
        in result_of(lesson, tmp_path, kernel(lesson, "xv"), hang)["tests"][0]["output"]
    )
    assert "0 of 0" not in json.dumps(result)


def test_messages_in_the_autograders_language_when_nothing_was_found(course, tmp_path):
    _, lesson = course
    for files in (
        {},
        {"notes.txt": b"hello"},
        {"lesson.ipynb": json.dumps({"cells": []}).encode()},
    ):
        result = result_of(lesson, tmp_path, "", None, locale="en", reason_files=files)
        assert not re.search(r"[\u4e00-\u9fff]", result["output"] + json.dumps(result["tests"])), (
            result
        )
        assert result["tests"][0]["output"].startswith("no case ran: "), result["tests"][0]


def test_the_container_chooses_its_sandbox():
    assert sandbox_in_container("auto", None) == ("on", None)
    assert sandbox_in_container("auto", "refused") == ("container", None)
    assert sandbox_in_container("on", "refused") == ("on", "refused")
    assert sandbox_in_container("off", "refused") == ("off", None)


def test_the_roster_gives_each_students_language_in_the_container(course, tmp_path):
    """Built with --roster and no --locale: nothing found for s1 (roster: en) and s2 (zh-CN), each
    told in their language; the zip's roster holds ids, aliases and languages, no names or emails."""
    from generator.grade.lesson import kit_json
    from generator.grade.run import GradeOptions, grade_in_container

    content, lesson = course
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,name,email,locale,aliases\ns1,Ada,ada@x.edu,en,\ns2,Wang Fang,wang@x.edu,zh-CN,4711\n",
        encoding="utf-8",
    )
    with zipfile.ZipFile(
        io.BytesIO(
            autograder.autograder_zip(content, "lesson03_relu", "off", 4, None, roster=roster)
        )
    ) as archive:
        shipped = archive.read("roster.csv").decode()
        assert '--roster "$AUTOGRADER/source/roster.csv"' in archive.read("run_autograder").decode()
    assert shipped == "id,locale,aliases\ns1,en,\ns2,zh-CN,4711\n"
    (tmp_path / "kit.json").write_text(kit_json(lesson), encoding="utf-8")
    (tmp_path / "roster-shipped.csv").write_text(shipped, encoding="utf-8")
    said = {}
    for sid in ("s1", "4711"):
        folder = tmp_path / sid
        (folder / "submission").mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"users": [{"sid": sid}]}), encoding="utf-8")
        options = GradeOptions(
            kit=tmp_path / "kit.json",
            build=tmp_path / "build",
            sandbox="off",
            jobs=1,
            roster=tmp_path / "roster-shipped.csv",
            gradescope_submission=folder / "submission",
            gradescope_metadata=folder / "meta.json",
            gradescope_results=folder / "results.json",
        )
        grade_in_container(options, progress=lambda line: None)
        said[sid] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert (
        said["s1"]["extra_data"]["locale"] == "en"
        and "nothing was handed in" in said["s1"]["output"]
    )
    assert (
        said["4711"]["extra_data"]["student"] == "s2"
        and said["4711"]["extra_data"]["locale"] == "zh-CN"
    )
    assert "没有提交任何内容" in said["4711"]["output"]
