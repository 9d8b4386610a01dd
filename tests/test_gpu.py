"""On a real CUDA GPU: the packs verify with the cuda runner, and the GPU-only cases run.

The checkers run as `python check.py`, as a student runs them: this test process has asked torch
about the GPU, so children forked from it could not use it."""

import shutil

import pytest

from generator.build import build
from tests.conftest import REPO, check_json, filled, options_for, unzip

pytestmark = pytest.mark.cuda


@pytest.fixture(scope="module")
def gpu_packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu")
    shutil.copytree(REPO / "content", root / "content")
    shutil.copytree(REPO / "generator" / "templates", root / "templates")
    build(options_for(root, runner="cuda", jobs=4), progress=print)
    into = root / "unzipped"
    return {z.stem: unzip(z, into) for z in (root / "build" / "dist").glob("*.zip")}


def test_answer_passes_every_case_on_the_gpu(gpu_packs):
    data = check_json(gpu_packs["lesson03_relu-en-answer"], process=True)
    assert data["status"] == "pass"
    assert not data["environment"]["interpreter"]
    assert {c["status"] for c in data["cases"]} == {"pass"}   # bfloat16 and the large case ran


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
    path.write_text(path.read_text().replace("xv = tl.load(x + offsets, mask=mask)",
                                             "xv = tl.load(x + offsets * 1000003 * 1000, mask=mask)", 1))
    data = check_json(pack, str(path), process=True)
    by_id = {c["id"]: c["status"] for c in data["cases"]}
    assert by_id["empty"] == "pass" and by_id["tail_1"] == "pass"   # offset 0 only: nothing out of bounds
    assert {s for i, s in by_id.items() if i not in ("empty", "tail_1")} == {"fault"}, by_id
