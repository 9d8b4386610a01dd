"""On a real CUDA GPU: the packs verify with the cuda runner, and the GPU-only cases run.

The checkers run as `python check.py`, as a student runs them: this test process has asked torch
about the GPU, so children forked from it could not use it."""

import shutil
import sys

import pytest

from generator.pipeline.build import build
from generator.runners.local import Runner
from tests.conftest import REPO, check_json, filled, options_for, unzip

pytestmark = pytest.mark.cuda


@pytest.fixture(scope="module")
def gpu_packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu")
    shutil.copytree(REPO / "content", root / "content")
    shutil.copytree(REPO / "templates", root / "templates")
    build(options_for(root, runner="cuda", jobs=4), progress=print)
    into = root / "unzipped"
    return {z.stem: unzip(z, into) for z in (root / "build" / "dist").glob("*.zip")}


def test_answer_passes_every_case_on_the_gpu(gpu_packs):
    data = check_json(gpu_packs["lesson03_relu-en-answer"], process=True)
    assert data["status"] == "pass"
    assert not data["environment"]["interpreter"]
    assert {c["status"] for c in data["cases"]} == {"pass"}  # bfloat16 and the large case ran


@pytest.mark.parametrize("fill", ["tl.where(xv > 0.0, xv, 0.0)", "tl.maximum(xv, 0.0)"])
def test_nan_dropping_fills_fail_on_the_gpu(gpu_packs, fill, tmp_path):
    pack = gpu_packs["lesson03_relu-en-exercise"]
    data = check_json(pack, str(filled(pack, fill, tmp_path)), process=True)
    failed = {c["id"] for c in data["cases"] if c["status"] == "fail"}
    assert failed == {"special_f32", "special_f16", "special_bf16"}
    assert {c["reason"] for c in data["cases"] if c["status"] == "fail"} == {"nan_dropped"}


def test_a_kernel_that_faults_fails_only_its_own_cases(gpu_packs, tmp_path):
    """A read far outside the tensor leaves the process's CUDA context broken; each later case must
    still be judged on its own, in a fresh process, with the cause in the student's words."""
    pack = gpu_packs["lesson03_relu-en-exercise"]
    path = filled(pack, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)", tmp_path)
    path.write_text(
        path.read_text().replace(
            "xv = tl.load(x + offsets, mask=mask)",
            "xv = tl.load(x + offsets * 1000003 * 1000, mask=mask)",
            1,
        )
    )
    data = check_json(pack, str(path), process=True)
    by_id = {c["id"]: c["status"] for c in data["cases"]}
    assert (
        by_id["empty"] == "pass" and by_id["tail_1"] == "pass"
    )  # offset 0 only: nothing out of bounds
    assert {s for i, s in by_id.items() if i not in ("empty", "tail_1")} == {"fault"}, by_id


FAULT = """
import torch, triton, triton.language as tl

@triton.jit
def far_read(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets * 1000003 * 1000), mask=offsets < n)

x = torch.zeros(1024, device="cuda")
y = torch.empty_like(x)
far_read[(1,)](x, y, 1024, BLOCK=1024)
torch.cuda.synchronize()
print("no fault")
"""

KERNEL = """
import torch, triton, triton.language as tl

@triton.jit
def twice(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y + offsets, tl.load(x + offsets, mask=mask) * 2, mask=mask)

x = torch.arange(5000, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)
twice[(triton.cdiv(5000, 1024),)](x, y, 5000, BLOCK=1024)
assert torch.equal(y, x * 2)
print("ok", torch.cuda.get_device_name(0))
"""


def test_a_cuda_fault_in_one_task_leaves_the_warm_server_working(tmp_path):
    """The cuda runner's task server forks a child per task from a parent that imported torch but
    never touched CUDA: an illegal address in one task is that task's failure, and the next task,
    on the same server, compiles and runs a kernel on the GPU."""
    runner = Runner("cuda", sys.executable, cache_dir=tmp_path / "triton-cache")
    runner.warm_up()
    (tmp_path / "fault.py").write_text(FAULT, encoding="utf-8")
    (tmp_path / "kernel.py").write_text(KERNEL, encoding="utf-8")
    server = runner._server(runner._env())
    assert server is not None and server.alive
    faulted = runner.run(["fault.py"], tmp_path, timeout=120)
    assert faulted.returncode != 0 and "no fault" not in faulted.stdout
    assert "CUDA error" in faulted.stderr, faulted.stderr[-2000:]
    after = runner.run(["kernel.py"], tmp_path, timeout=120)
    assert after.returncode == 0 and after.stdout.startswith("ok"), after.stderr[-2000:]
    assert runner._server(runner._env()) is server  # the same warm server served both


def test_cuda_context_bench_smoke():
    """bench/cuda_context_bench.py (how many CUDA contexts one GPU starts per second) prints its rows."""
    import re
    import subprocess

    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "cuda_context_bench.py"), "1", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        len(re.findall(r" n=\s*\d+  per process: median \d+\.\d+ s.*contexts/s", result.stdout))
        == 2
    ), result.stdout
    for mode in (
        ["--driver"],
        [],
    ):  # whole lives, the context's end included: the bare driver, then torch
        result = subprocess.run(
            [
                sys.executable,
                str(REPO / "bench" / "cuda_context_bench.py"),
                "--steady",
                "1",
                *mode,
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert re.search(
            r" n=  2  \d+ lives in \d+\.\d+ s -> \d+\.\d+ contexts/s  \(to a context", result.stdout
        ), result.stdout


# --- check.py --bench on the GPU: the trusted side's timing and refusals (generator/checker/untrusted/bench.py) ---


@pytest.fixture(scope="module")
def bench_gpu_pack(tmp_path_factory):
    """Lesson 3's exercise pack (English), built without verification."""
    root = tmp_path_factory.mktemp("gpu-bench")
    shutil.copytree(REPO / "content", root / "content")
    shutil.copytree(REPO / "templates", root / "templates")
    build(
        options_for(root, verify=False, lessons=("lesson03_relu",), locales=("en",)),
        progress=lambda _: None,
    )
    return unzip(root / "build" / "dist" / "lesson03_relu-en-exercise.zip", root / "unzipped")


def gpu_bench(pack, name, tmp_path, body=None):
    """`python check.py FILE --bench` on a corpus file (tests/adversarial/_kernel.py above it, or
    body in its place), the lesson's bench.py at 2^26 elements; the output is kept in BENCH_LOG
    when that is set."""
    import os
    import subprocess

    corpus = REPO / "tests" / "adversarial"
    path = tmp_path / "relu.py"
    path.write_text(
        (corpus / "_kernel.py").read_text(encoding="utf-8")
        + "\n\n"
        + (body or (corpus / name).read_text(encoding="utf-8")),
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, str(pack / "check.py"), str(path), "--bench"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, COURSEPACK_BENCH_LOG2="26"),
    )
    if os.environ.get("BENCH_LOG"):
        with open(os.environ["BENCH_LOG"], "a", encoding="utf-8") as log:
            log.write(
                f"\n=== check.py --bench with {name} (exit {result.returncode})\n"
                + result.stdout
                + result.stderr[-3000:]
            )
    return result


def test_check_bench_times_an_honest_kernel_itself(bench_gpu_pack, tmp_path):
    """The right kernel: no row refused, and check.py's own time is plausible (at most the device
    copy's bandwidth, at least a tenth of it)."""
    import re

    result = gpu_bench(
        bench_gpu_pack,
        "the right kernel",
        tmp_path,
        body="def relu(x, BLOCK=1024):\n    return right(x, BLOCK)\n",
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "refused" not in result.stdout
    found = re.search(
        r"timed by check\.py itself: [\d.]+ ms per call, \d+ GB/s \(([\d.]+) of the device copy\)",
        result.stdout,
    )
    assert found and 0.1 <= float(found.group(1)) <= 1.10, result.stdout


@pytest.mark.parametrize("name", ["tm_memo_by_pointer.py", "tm_side_stream.py", "tm_bench_json.py"])
def test_check_bench_refuses_impossible_numbers(bench_gpu_pack, tmp_path, name):
    """Issue 36 §7: a kernel that memoizes by input address, one that works on a side stream, one
    that writes the bench's JSON itself. bench.py's rows (timed in the kernel file's own process)
    faster than the device copy are refused; check.py's own timing gives the memo no time at all
    (its outputs on new inputs are wrong), and the side stream an honest one."""
    import re

    result = gpu_bench(bench_gpu_pack, name, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert "refused: " in result.stdout, result.stdout
    if name == "tm_memo_by_pointer.py":
        assert "its outputs were wrong there" in result.stdout, result.stdout
    else:
        found = re.search(
            r"timed by check\.py itself: [\d.]+ ms per call, \d+ GB/s \(([\d.]+) of the device copy\)",
            result.stdout,
        )
        assert found and float(found.group(1)) <= 1.10, result.stdout
