"""Smoke tests of the benchmarks (bench/build_bench.py, bench/check_bench.py): a benchmark that can rot silently needs one.
It asserts that the synthetic course builds and that numbers are printed, never a time. Then
`check.py --bench`'s own timing and its refusals (the GPU side in tests/test_gpu.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, options_for, small_lesson_copy, unzip

ROW = re.compile(r"^\s*1\s+4(\s+\d+\.\d+){3}\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\.\d+\s*$", re.M)


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "bench" / "build_bench.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_bench_builds_one_synthetic_lesson_and_prints_numbers():
    result = bench("1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert ROW.search(result.stdout), (
        result.stdout
    )  # lessons, packs, build s, ms/pack, CPU s, peak MiB, all MiB,
    # bundle MB, no-op s


def test_bench_repeated_prints_the_median_and_the_slowest_build():
    result = bench("--repeat", "2", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    header, row = result.stdout.splitlines()[1:3]
    assert header.split()[-2:] == ["s", "slowest"] or header.rstrip().endswith("slowest s"), (
        result.stdout
    )
    values = row.split()
    assert float(values[-1]) >= float(values[2]) > 0, (
        result.stdout
    )  # the slowest of two, the median of two


def test_bench_refuses_a_bad_n_with_a_usage_message():
    result = bench("0")
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr


def test_check_bench_smoke_times_a_students_run(built):
    """bench/check_bench.py (a student's `python check.py` next to `import torch`) prints its table."""
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "check_bench.py"), str(built / "dist"), "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "import torch alone: median" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("lesson0"))
    assert "interpreter (CPU)" in row and len(row.split()) >= 10, result.stdout


def test_grade_bench_smoke_times_grading_against_xargs():
    """bench/grade_bench.py --smoke (a lesson-3 submission of each kind, in the interpreter) prints
    its table, the ratio and where the time went."""
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "grade_bench.py"),
            "--smoke",
            *(["--sandbox", "off"] if _no_sandbox() else []),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("lesson03_relu"))
    assert len(row.split()) >= 9 and re.search(r"\d+ (graded|timed out|crashed)", row), (
        result.stdout
    )
    assert re.search(r"^ratio: \d+\.\d+ \(seconds per submission", result.stdout, re.M), (
        result.stdout
    )
    phases = result.stdout.split("where the time went", 1)[1].splitlines()[1].split()
    assert phases[0] == "lesson03_relu" and all(float(v) >= 0 for v in phases[1:3]), result.stdout
    timeline = result.stdout.split("\ntimeline", 1)[1].splitlines()[1].split()
    # grade's whole time holds its start-up, its checks' span and what came after
    grade_s, before, span, at_once, after = map(float, timeline[1:6])
    assert timeline[0] == "lesson03_relu" and 0 < at_once <= 2.05, result.stdout
    assert abs(before + span + after - grade_s) < 0.5 and min(before, span, after) >= 0, (
        result.stdout
    )


def _no_sandbox() -> bool:
    from generator.checker.shared.sandbox import sandbox_problem

    return sandbox_problem() is not None


def test_sandbox_bench_smoke_times_submissions_with_and_without_the_sandbox(built):
    """bench/sandbox_bench.py --smoke (two different submissions each way) prints both rows and the cost."""
    import pytest

    if _no_sandbox():
        pytest.skip("the sandbox cannot run here (bubblewrap or user namespaces missing)")
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "sandbox_bench.py"), str(built / "dist"), "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {
        line.split()[0]: line.split()
        for line in result.stdout.splitlines()
        if line.startswith("  plain") or line.startswith("  sandbox")
    }
    assert set(rows) == {"plain", "sandbox"} and rows["plain"][5] == rows["sandbox"][5] == "pass", (
        result.stdout
    )
    assert rows["sandbox"][6] == "bubblewrap", result.stdout
    assert re.search(r"^sandbox cost per submission: [+-]\d+\.\d+ s", result.stdout, re.M), (
        result.stdout
    )


def test_similarity_bench_smoke_prints_recall_and_false_positives():
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "similarity_bench.py"), "--students", "30"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(
        r"^students 30  answers 90  planted \d+  found \d+  recall \d\.\d{3}  false positives \d+  "
        r"seconds \d+\.\d+$",
        result.stdout,
        re.M,
    ), result.stdout


# --- check.py --bench: the trusted side's own timing and its refusals (generator/checker/untrusted/bench.py) ---


def test_rows_beyond_the_device_copy_or_cublas_are_refused():
    """A row's GB/s past the device copy's (10 % headroom) or TFLOP/s past cuBLAS's (25 %) cannot
    come from a kernel: refused by name; plausible rows, and rows without numbers, are not."""
    from generator.checker.untrusted.bench import refused_rows

    ceiling = {"copy_gbps": 4000.0, "tflops": 800.0}
    result = {
        "tables": {
            "blocks": [
                {"name": "device copy", "gbps": 4100.0},
                {"name": "relu.py, BLOCK=1024", "gbps": 4399.0},
                {"name": "memoized", "gbps": 56000.0},
                {"name": "no number", "gbps": "fast"},
            ],
            "matmul": [{"name": "cuBLAS", "tflops": 790.0}, {"name": "forged", "tflops": 1001.0}],
            "bad": "x",
        }
    }
    refused = refused_rows(result, ceiling)
    assert refused == ["memoized (56000 GB/s)", "forged (1001 TFLOP/s)"]
    assert refused_rows({"tables": None}, ceiling) == []


@pytest.fixture(scope="module")
def bench_pack(tmp_path_factory) -> Path:
    """Lesson 3's exercise pack with five of its cases (as the adversarial corpus has), built without
    verification."""
    from generator.pipeline.build import build

    root = tmp_path_factory.mktemp("bench")
    small_lesson_copy(root, ["seed", "tail_257", "random_f16", "empty", "special_f32"])
    build(
        options_for(root, verify=False, lessons=("lesson03_relu",), locales=("en",)),
        progress=lambda _: None,
    )
    unzip(root / "build" / "dist" / "lesson03_relu-en-exercise.zip", root / "packs")
    return root / "packs" / "lesson03_relu-en-exercise"


def corpus_file(name: str, into: Path) -> Path:
    """An adversarial file as the corpus runs it (tests/adversarial/_kernel.py above it)."""
    corpus = REPO / "tests" / "adversarial"
    path = into / "relu.py"
    path.write_text(
        (corpus / "_kernel.py").read_text(encoding="utf-8")
        + "\n\n"
        + (corpus / name).read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    return path


def bench_check(pack: Path, kernel: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(pack / "check.py"), str(kernel), "--bench", *args],
        cwd=kernel.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_check_bench_times_the_kernel_itself_in_the_interpreter(bench_pack, tmp_path):
    """`--bench --interpreter`: the lesson's bench.py smoke run, then check.py's own timing of the
    entry (memory it owns, new inputs each round, outputs read back here), labelled as no GPU
    measurement."""
    result = bench_check(bench_pack, corpus_file("tm_side_stream.py", tmp_path), "--interpreter")
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(
        line for line in result.stdout.splitlines() if line.startswith("timed by check.py itself")
    )
    assert re.search(
        r"\d+\.\d{3} ms per call, \d+ GB/s \(- of the device copy\), 4096 elements; 2 rounds of 2 calls",
        line,
    ), line
    assert "not a GPU measurement" in result.stdout and "Traceback" not in result.stderr


def test_check_bench_refuses_a_kernel_that_memoizes_by_input_address(bench_pack, tmp_path):
    """The same buffers, new numbers in each round: outputs kept by address are wrong, and check.py
    gives no time (exit status 1)."""
    result = bench_check(
        bench_pack, corpus_file("tm_memo_by_pointer.py", tmp_path), "--interpreter"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "its outputs were wrong there" in result.stdout
        and "timed by check.py itself" not in result.stdout
    )


def test_the_timed_case_is_the_bench_literal_read_never_run(tmp_path, monkeypatch):
    """TRUSTED_CASE is read from bench.py's text (a file that would fail if run); without it, or on
    the CPU for a GPU-only one, the lesson's largest case that runs here."""
    from generator.checker.untrusted import bench

    (tmp_path / "bench.py").write_text(
        'raise SystemExit("never run")\nTRUSTED_CASE = {"dims": {"N": 64}, "gpu_only": True}\n',
        encoding="utf-8",
    )
    lesson = {
        "bench": "bench.py",
        "cases": [
            {"id": "small", "dims": {"N": 5}},
            {"id": "big", "dims": {"N": 300}},
            {"id": "huge", "dims": {"N": 9000}, "gpu_only": True},
        ],
    }
    monkeypatch.setattr(bench, "HERE", tmp_path)
    monkeypatch.setattr(bench, "LESSON", lesson)
    monkeypatch.setattr("generator.checker.trusted.cases.LESSON", lesson)
    assert bench.timed_case(True) == {
        "id": "trusted_bench",
        "dims": {"N": 64},
        "gpu_only": True,
        "group": "bench",
    }
    assert bench.timed_case(False)["id"] == "big"
    (tmp_path / "bench.py").write_text("TRUSTED_CASE = make()\n", encoding="utf-8")
    assert bench.timed_case(True)["id"] == "huge"


def test_the_trusted_row_itself_is_refused_beyond_the_copy(monkeypatch):
    """check.py's own time cannot beat the device copy; should it (caches, a broken clock), it is
    refused like any row, and a failed timing says why."""
    from generator.checker.untrusted import bench

    messages = {
        "bench_trusted": "{ms} {gbps} {vs_copy} {n} {calls} {rounds}",
        "bench_refused": "refused: {rows}",
        "bench_trusted_failed": "failed: {text}",
        "bench_trusted_wrong": "wrong",
        "bench_trusted_interpreter": "interpreter",
    }
    monkeypatch.setattr("generator.checker.shared.common.LESSON", {"messages": messages})
    ceiling = {"copy_gbps": 4000.0, "tflops": 800.0}
    timed = {"ms": 0.1, "gbps": 5000.0, "elements": 8, "calls": 8, "rounds": 5}
    lines = bench.describe_timing(timed, ceiling, False)
    assert (
        lines[0] == "0.100 5000 1.25 8 8 5"
        and lines[1] == "refused: check.py (5000 GB/s)"
        and timed["refused"]
    )
    assert bench.describe_timing(
        {"ms": 0.1, "gbps": 3000.0, "elements": 8, "calls": 8, "rounds": 5}, ceiling, False
    ) == ["0.100 3000 0.75 8 8 5"]
    assert bench.describe_timing({"problem": "wrong"}, ceiling, False) == ["wrong"]
    assert bench.describe_timing({"problem": "no case"}, None, True) == ["failed: no case"]
