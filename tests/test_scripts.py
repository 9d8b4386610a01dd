"""The shell scripts parse, and the GPU re-run script refuses, with its reason, a machine without a GPU."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, has_cuda

SCRIPTS = sorted((REPO / "scripts").glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script):
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert os.access(script, os.X_OK), f"{script.name} is not executable"


@pytest.mark.skipif(
    has_cuda(), reason="a CUDA GPU is visible: the script would run the whole GPU re-run"
)
def test_gpu_rerun_without_a_gpu_says_why_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [str(REPO / "scripts" / "gpu_rerun.sh"), str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHON=sys.executable, WHEELS=str(tmp_path / "no-wheels")),
        timeout=120,
    )
    assert result.returncode == 2
    assert "sees no CUDA GPU" in result.stderr or "cannot be imported" in result.stderr
    assert not out.exists()
