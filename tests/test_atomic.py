"""A build killed by a real signal at any moment leaves a whole build/dist: the old one or the new."""

import hashlib
import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from generator.cli import main
from tests.conftest import REPO

pytestmark = pytest.mark.slow


def dist_state(dist):
    """Each zip's sha256 by name; every zip whole."""
    state = {}
    for path in sorted(dist.iterdir()):
        with zipfile.ZipFile(path) as archive:
            assert archive.testzip() is None
        state[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def test_kill_at_many_moments_never_leaves_a_half_written_dist(tmp_path):
    """Every build has new text to write (two versions of one sentence, in turn), so each one writes
    its zips and swaps them in; killed at any moment, it leaves the old dist whole or the new one."""
    root = tmp_path
    assert main(["init", str(root)]) == 0  # a small course: the swap is the same for any size
    text = root / "content" / "lessons" / "lesson01_scale" / "text.en.yaml"
    versions = [text.read_text(encoding="utf-8")]
    versions.append(versions[0].replace("After this lesson", "Once this lesson is done", 1))
    assert versions[1] != versions[0]
    command = [
        sys.executable,
        "-m",
        "generator",
        "build",
        "--content",
        "content",
        "--out",
        "build",
        "--no-verify",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    dist = root / "build" / "dist"
    states, durations = [], []
    for version in versions:
        text.write_text(version, encoding="utf-8")
        start = time.monotonic()
        subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
        durations.append(time.monotonic() - start)
        states.append(dist_state(dist))
    assert states[0] != states[1] and sorted(states[0]) == sorted(states[1]) and len(states[0]) >= 2
    # the moments run from the build's loading to its last tenth of the time a warm build took; a
    # build that ends before its moment is no kill: the next aims earlier, until each moment killed one
    scale, steps, kills, attempts = min(durations), 6, 0, 0
    while kills < steps and attempts < 4 * steps:
        text.write_text(versions[attempts % 2], encoding="utf-8")
        attempts += 1
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(scale * (0.3 + 0.6 * kills / (steps - 1)))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        else:
            scale *= 0.7
        process.wait()
        assert dist.is_dir(), f"build/dist missing after attempt {attempts}"
        assert dist_state(dist) in states, f"a mixed build/dist after attempt {attempts}"
    assert kills == steps, (
        f"only {kills} of {attempts} builds were still running when the signal came"
    )
