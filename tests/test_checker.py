"""Every message path of check.py, run as a subprocess the way a student runs it, in both languages."""

import re
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import check_json, filled, has_cuda, lesson_data, load_checker, run_check

pytestmark = pytest.mark.slow
LOCALES = ["zh-CN", "en"]


def line_of(path, text):
    """1-based number of the first line of a file that holds text."""
    return 1 + next(i for i, line in enumerate(path.read_text().splitlines()) if text in line)


def exercise(packs, locale):
    return packs[f"lesson03_relu-{locale}-exercise"]


def texts(pack):
    return lesson_data((pack / "check.py").read_bytes())


@pytest.mark.parametrize("locale", LOCALES)
def test_where_fill_fails_special_values_with_the_reason_and_the_report(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    messages = texts(pack)["messages"]
    report = tmp_path / "submission.md"
    result = run_check(
        pack, str(filled(pack, "tl.where(xv > 0.0, xv, 0.0)", tmp_path)), "--report", str(report)
    )
    data = texts(pack)
    assert result.returncode == 1
    assert data["reasons"]["nan_dropped"] in result.stdout
    assert data["messages"]["interpreter_banner"].strip() in result.stdout
    lines = [l for l in result.stdout.splitlines() if l.strip().startswith("FAIL")]
    assert len(lines) == 2  # float32 and float16; bfloat16 is skipped in the interpreter
    assert "2/3" in result.stdout
    text = report.read_text(encoding="utf-8")
    assert messages["report_interpreter"] in text and "tl.where(xv > 0.0, xv, 0.0)" in text
    assert text.count(messages["report_explain_here"]) == 2
    static = tmp_path / "static.md"
    run_check(pack, "--report", str(static))  # the untouched blank: nothing ran
    assert messages["report_static"] in static.read_text(encoding="utf-8")
    gpu_line = re.compile(
        ".+?".join(re.escape(part) for part in re.split(r"\{[^}]*\}", messages["report_gpu"]))
    )
    assert not gpu_line.search(
        static.read_text(encoding="utf-8")
    )  # the whole line, not a prefix like "在 "


@pytest.mark.parametrize("locale", LOCALES)
def test_correct_fill_passes(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    result = run_check(pack, str(path))
    assert result.returncode == 0, result.stdout
    assert "3/3" in result.stdout


def test_json_output(packs, tmp_path):
    pack = exercise(packs, "en")
    data = check_json(pack, str(filled(pack, "tl.abs(xv)", tmp_path)))
    assert data["status"] == "fail" and data["fill"] == "tl.abs(xv)"
    by_id = {c["id"]: c for c in data["cases"]}
    assert (
        by_id["seed"]["reason"] == "negatives_flipped"
        and by_id["seed"]["inputs"] == {"x": "-2.0"}
        and by_id["seed"]["position"] == [0]
    )
    assert by_id["empty"]["status"] == "pass" and by_id["random_bf16"]["status"] == "skip"
    assert data["score"] == {"normal": 0, "boundary": 0}


@pytest.mark.parametrize("locale", LOCALES)
def test_syntax_error_is_located(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    result = run_check(pack, str(filled(pack, "tl.maximum(xv, 0.0", tmp_path)))
    assert result.returncode == 2
    assert "relu.py:" in result.stdout and "Traceback" not in result.stdout + result.stderr
    assert texts(pack)["messages"]["syntax_error"].split("{")[0] in result.stdout


def test_import_error_is_located(packs, tmp_path):
    pack = exercise(packs, "en")
    path = filled(pack, "xv", tmp_path)
    path.write_text(
        path.read_text().replace("import triton\n", "import triton\nimport no_such_module\n", 1)
    )
    result = run_check(pack, str(path))
    assert result.returncode == 2
    # the worker's word (the code under check ran in its process), shown as what it reported
    assert (
        "the process running it reported" in result.stdout
        and "No module named 'no_such_module'" in result.stdout
    )
    assert "relu.py:3" in result.stdout


@pytest.mark.parametrize("locale", ["zh-CN"])  # isolation is the same in every language
def test_hang_times_out_and_check_ends(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace(
            "    out = torch.empty_like(x)\n",
            "    while x.numel() == 255:\n        import time; time.sleep(1)\n    out = torch.empty_like(x)\n",
            1,
        )
    )
    result = run_check(
        pack, str(path), "--timeout", "2.5"
    )  # one case hangs (asleep: no core spent): tail_255
    assert result.returncode == 1
    assert result.stdout.count(texts(pack)["messages"]["timed_out"].format(seconds=2.5)) == 1
    statuses = [
        line.split()[0]
        for line in result.stdout.splitlines()
        if line.startswith(("  PASS", "  FAIL"))
    ]
    assert statuses.count("FAIL") == 1 and statuses.count("PASS") >= 10, (
        result.stdout
    )  # the others still ran


@pytest.mark.parametrize("locale", ["en"])  # isolation is the same in every language
def test_crash_fails_that_case_only(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace(
            "    out = torch.empty_like(x)\n",
            "    if x.numel() == 255:\n        import os; os.abort()\n"
            "    out = torch.empty_like(x)\n",
            1,
        )
    )
    data = check_json(pack, str(path))
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["tail_255"]["status"] == "crash" and by_id["tail_255"]["code"] == "SIGABRT"
    assert by_id["tail_257"]["status"] == "pass"
    inserted = line_of(path, "if x.numel() == 255:")
    assert data["edits_outside_blank"] == [inserted, inserted + 1]  # the two inserted lines


@pytest.mark.parametrize("locale", LOCALES)
def test_write_past_the_end_is_caught(packs, locale, tmp_path):
    pack = exercise(packs, locale)
    messages = texts(pack)["messages"]
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace(
            "propagate_nan=tl.PropagateNan.ALL), mask=mask)",
            "propagate_nan=tl.PropagateNan.ALL))",
            1,
        )
    )
    result = run_check(pack, str(path))
    assert result.returncode == 1
    assert messages["wrote_past_end_detail"].format(index=5, n=5) in result.stdout
    assert (
        messages["edits_outside"].format(lines=str(line_of(path, "tl.store("))).split("{")[0][:12]
        in result.stdout
    )
    assert texts(pack)["reasons"]["wrote_past_end"] in result.stdout


def test_version_warning_when_the_student_versions_differ(packs, tmp_path):
    import shutil

    pack = tmp_path / "pack"
    shutil.copytree(packs["lesson03_relu-en-answer"], pack)
    manifest = json.loads((pack / "manifest.json").read_text())
    manifest["verification"]["torch"] = "9.9.9"
    (pack / "manifest.json").write_text(json.dumps(manifest))
    result = run_check(pack)
    assert "verified with torch 9.9.9" in result.stdout and result.returncode == 0


def test_notebook_path_checks_the_exercise_cell(packs):
    pack = exercise(packs, "en")
    result = run_check(pack, "lesson.ipynb")
    assert result.returncode == 2
    assert "lesson.ipynb, cell" in result.stdout and "fill in the blank" in result.stdout
    answer = packs["lesson03_relu-en-answer"]
    assert run_check(answer, "lesson.ipynb").returncode == 0


def test_notebook_check_cell_gives_the_same_output(packs, capsys):
    """The check cell's function, called on a module defined the way a notebook cell defines it:
    its source known only to linecache, under a name that is not a file."""
    import linecache

    pack = packs["lesson03_relu-en-answer"]
    src = (pack / "relu.py").read_text().replace("if __name__", "if False and __name__")
    cell = f"<cell-{os.getpid()}>"
    linecache.cache[cell] = (len(src), None, src.splitlines(True), cell)
    namespace = {"__name__": "__main__"}
    exec(compile(src, cell, "exec"), namespace)
    cwd = os.getcwd()
    os.chdir(pack)
    try:
        load_checker(pack).check_notebook(namespace["relu"])
    finally:
        os.chdir(cwd)
        linecache.cache.pop(cell, None)
    out = capsys.readouterr().out
    assert "file: this notebook's code cell" in out and "3/3" in out


@pytest.mark.parametrize("locale", LOCALES)
def test_hints(packs, locale):
    ex, ans = exercise(packs, locale), packs[f"lesson03_relu-{locale}-answer"]
    data = texts(ans)
    for level in (1, 2, 3):
        result = run_check(ex, "--hint", str(level))
        assert result.returncode == 0 and data["hints"][level - 1] in result.stdout
    locked = run_check(ex, "--hint", "4")
    assert locked.returncode == 2 and data["hints"][3] not in locked.stdout
    assert data["hints"][3] in run_check(ans, "--hint", "4").stdout


@pytest.mark.skipif(has_cuda(), reason="a CUDA GPU is visible: --bench runs the bench here")
def test_bench_without_gpu_says_so(packs):
    """The cases still run (in the interpreter); then --bench says it needs a GPU, without starting bench.py."""
    result = run_check(packs["lesson03_relu-en-answer"], "--bench")
    assert (
        result.returncode == 2 and "needs a CUDA GPU" in result.stdout and "PASS" in result.stdout
    )


def test_too_much_memory_fails_the_case_with_a_reason(packs, tmp_path):
    pack = exercise(packs, "en")
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace(
            "    out = torch.empty_like(x)\n",
            "    if x.numel() == 5:\n        torch.empty(1 << 46)\n    out = torch.empty_like(x)\n",
            1,
        )
    )
    result = run_check(pack, str(path))
    assert result.returncode == 1
    seed_line = next(i for i, l in enumerate(result.stdout.splitlines()) if "seed example" in l)
    detail = result.stdout.splitlines()[seed_line + 1]
    assert (
        "raised RuntimeError" in detail
        and f"(at line {line_of(path, 'torch.empty(1 << 46)')})" in detail
    ), result.stdout


STICKY_FAULT = '''
class AcceleratorError(RuntimeError):
    """What torch raises after a kernel touched memory it must not: the process stays broken."""


BROKEN = []


def relu(x, BLOCK=256):
    if x.numel() == 5 or BROKEN:
        BROKEN.append(True)
        raise AcceleratorError("CUDA error: an illegal memory access was encountered")
    return _relu(x, BLOCK)
'''


@pytest.mark.parametrize("locale", ["zh-CN"])  # isolation is the same in every language
def test_a_sticky_gpu_fault_fails_only_its_own_case(packs, locale, tmp_path):
    """A CUDA error is sticky for its process: the case that caused it fails with the cause in the
    student's words, and a fresh process runs every later case (simulated here on the CPU)."""
    pack = exercise(packs, locale)
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace("def relu(", "def _relu(", 1).split("if __name__ ==")[0]
        + STICKY_FAULT
    )
    result = run_check(pack, str(path))
    shown = [
        line.split()[0]
        for line in result.stdout.splitlines()
        if line.startswith(("  PASS", "  FAIL", "  SKIP"))
    ]
    by_id = dict(
        zip([case["id"] for case in texts(pack)["cases"]], shown, strict=True)
    )  # in the lesson's order
    assert by_id.pop("seed") == by_id.pop("tail_5") == "FAIL" and set(by_id.values()) <= {
        "PASS",
        "SKIP",
    }
    assert (
        result.stdout.count(texts(pack)["messages"]["gpu_fault"]) == 2
        and "Traceback" not in result.stdout
    )


@pytest.mark.parametrize("locale", LOCALES)
def test_bench_on_the_untouched_exercise_asks_for_the_blank(packs, locale):
    result = run_check(exercise(packs, locale), "--bench")
    assert result.returncode == 2 and "______" in result.stdout
    assert (
        "Traceback" not in result.stdout + result.stderr and "CompilationError" not in result.stdout
    )


def test_bench_refuses_a_kernel_that_fails_its_cases_and_the_report_names_the_environment_once(
    packs, tmp_path
):
    pack = exercise(packs, "en")
    report = tmp_path / "submission.md"
    result = run_check(pack, str(filled(pack, "xv", tmp_path)), "--bench", "--report", str(report))
    assert (
        result.returncode == 1 and texts(pack)["messages"]["bench_after_failures"] in result.stdout
    )
    line = next(l for l in report.read_text().splitlines() if l.startswith("- environment"))
    assert line.count("environment") == 1, line


def test_without_triton_the_checker_says_where_to_look(packs, tmp_path):
    """A machine where triton cannot be installed (macOS, say): exit 2, the platform, no traceback."""
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    hide = "import sys, importlib.util as u; f = u.find_spec; u.find_spec = lambda n, *a: None if n == 'triton' else f(n, *a)"
    pack = exercise(packs, "en")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{hide}; import runpy, sys; sys.argv = ['check.py']; "
            "runpy.run_path('check.py', run_name='__main__')",
        ],
        cwd=pack,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    data = texts(pack)
    assert data["platform_section"] in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_exit_codes_of_the_script_as_a_student_runs_it(packs):
    """check.py leaves through os._exit (Python's clean-up with torch loaded takes most of a second):
    the exit code and the output must still be what they were."""
    pack = packs["lesson03_relu-en-exercise"]
    missing = run_check(pack, "missing.py", process=True)
    assert missing.returncode == 1 and "missing.py" in missing.stderr
    wrong = run_check(pack, "--no-such-option", process=True)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr
    blank = run_check(pack, process=True)
    assert blank.returncode == 2 and "______" in blank.stdout


def test_every_language_has_the_isolation_messages(packs):
    """The hang, crash and fault tests run in one language each; the others format the same way."""
    for name, pack in packs.items():
        if not (pack / "check.py").exists():
            continue  # a course bundle: its lessons' packs are checked under their own names
        messages = texts(pack)["messages"]
        assert "3.0" in messages["timed_out"].format(seconds=3.0), name
        assert "SIGABRT" in messages["crashed"].format(code="SIGABRT"), name
        assert messages["gpu_fault"].strip() and "boom" in messages["raised"].format(text="boom"), (
            name
        )
