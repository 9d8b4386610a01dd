"""Smoke test of bench/otter_compare.py, the otter assign comparison (issue 12): a benchmark that can rot
silently needs one. Its --smoke mode installs nothing: the otter master notebooks it writes are valid
nbformat in otter's format, the notebook's solution passes the notebook's tests under the Triton
interpreter, and verify_bench.py --smoke runs. It asserts that, never a time."""

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_otter_compare_smoke_writes_valid_notebooks_and_runs_verify_bench():
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "otter_compare.py"), "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.count("notebook ok:") == 2, result.stdout
    assert re.search(r"notebook code ok: [1-9]\d* tests pass", result.stdout), result.stdout
    assert "verify_bench.py --smoke ok" in result.stdout, result.stdout


def test_otter_compare_refuses_zero_rounds_with_a_usage_message():
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "otter_compare.py"), "--rounds", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr
