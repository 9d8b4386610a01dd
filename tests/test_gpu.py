"""On a real CUDA GPU: the packs verify with the cuda runner, and the GPU-only cases run."""

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
    data = check_json(gpu_packs["lesson03_relu-en-answer"])
    assert data["status"] == "pass"
    assert not data["environment"]["interpreter"]
    assert {c["status"] for c in data["cases"]} == {"pass"}   # bfloat16 and the large case ran


@pytest.mark.parametrize("fill", ["tl.where(xv > 0.0, xv, 0.0)", "tl.maximum(xv, 0.0)"])
def test_nan_dropping_fills_fail_on_the_gpu(gpu_packs, fill, tmp_path):
    pack = gpu_packs["lesson03_relu-en-exercise"]
    data = check_json(pack, str(filled(pack, fill, tmp_path)))
    failed = {c["id"] for c in data["cases"] if c["status"] == "fail"}
    assert failed == {"special_f32", "special_f16", "special_bf16"}
    assert {c["reason"] for c in data["cases"] if c["status"] == "fail"} == {"nan_dropped"}
