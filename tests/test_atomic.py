"""A build killed by a real signal at any moment leaves a whole build/dist: the old one or the new."""

import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def dist_state(dist):
    names = sorted(p.name for p in dist.iterdir())
    for name in names:
        with zipfile.ZipFile(dist / name) as archive:
            assert archive.testzip() is None
    return names


def test_kill_at_many_moments_never_leaves_a_half_written_dist(content_copy):
    root = content_copy
    command = [sys.executable, "-m", "generator", "build", "--content", "content", "--templates", "templates",
               "--out", "build", "--no-verify", "--lesson", "lesson03_relu"]   # the swap is the same for any size
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    dist = root / "build" / "dist"
    complete = dist_state(dist)
    assert len(complete) >= 2 and all(name.endswith(".zip") for name in complete)
    start = time.monotonic()
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    duration = time.monotonic() - start
    kills = 0
    steps = 10
    for step in range(steps):
        process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(duration * (0.3 + 0.75 * step / steps))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
        assert dist.is_dir(), f"build/dist missing after a kill at step {step}"
        assert dist_state(dist) == complete
    assert kills >= 3   # most builds are still running when the signal comes
    print(f"killed {kills} of {steps} builds at moments spread over a {duration:.2f} s build; dist stayed whole")
