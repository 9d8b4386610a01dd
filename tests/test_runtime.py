"""The generic checker's pieces, in process: inputs from declarations, layouts, poisoned outputs
with guard bands, comparison, positions and reasons. No kernel runs here."""

import importlib.util

import pytest
import torch

from tests.conftest import REPO


@pytest.fixture()
def rt():
    spec = importlib.util.spec_from_file_location("cp_runtime", REPO / "generator" / "checker" / "runtime.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.LESSON = {
        "inputs": [{"name": "x", "shape": ["M", "N"]}, {"name": "bias", "shape": ["N"], "draw": {"low": 1, "high": 2}},
                   {"name": "alpha", "scalar": "0.5"}],
        "poison": -1024.0, "compare": {"float16": {"rtol": 0.01, "atol": 0.0}}, "lesson_reasons": ["flipped"],
        "messages": {"position_2d": "row {row}, column {column}"},
    }
    return module


def case(**kw):
    return {"id": "c", "group": "normal", **kw}


def test_inputs_follow_shapes_dims_and_draws(rt):
    made = rt.make_inputs(torch, case(dims={"M": 3, "N": 5}, values={"alpha": "2.0"}), "cpu")
    (xn, x, xc), (bn, b, _), (an, a, ac) = made
    assert (xn, bn, an) == ("x", "bias", "alpha")
    assert x.shape == (3, 5) and b.shape == (5,) and x.is_contiguous()
    assert bool(((b >= 1) & (b < 2)).all()) and a == ac == 2.0
    again = rt.make_inputs(torch, case(dims={"M": 3, "N": 5}), "cpu")
    assert torch.equal(again[0][1], x)   # the same case draws the same values every time


def test_layouts_give_views_with_real_strides(rt):
    logical = rt.make_inputs(torch, case(dims={"M": 4, "N": 6}), "cpu")[0][1]
    transposed = rt.make_inputs(torch, case(dims={"M": 4, "N": 6}, layout={"x": "transposed"}), "cpu")[0][1]
    sliced = rt.make_inputs(torch, case(dims={"M": 4, "N": 6}, layout={"x": "sliced"}), "cpu")[0][1]
    assert torch.equal(transposed, logical) and torch.equal(sliced, logical)
    assert transposed.stride() == (1, 4) and sliced.stride() == (13, 1)
    rt.LESSON["inputs"] = [{"name": "x", "shape": ["N"]}]
    one = rt.make_inputs(torch, case(dims={"N": 7}, layout={"x": "sliced"}), "cpu")[0][1]
    assert one.stride() == (2,) and one.shape == (7,)
    base = one.as_strided((14,), (1,), one.storage_offset())
    assert not torch.equal(base[1::2], one)   # the slack holds other numbers, never the right ones


def test_values_without_dims_and_planted_values(rt):
    rt.LESSON["inputs"] = [{"name": "x", "shape": ["N"]}]
    exact = rt.make_inputs(torch, case(values={"x": ["1.0", "nan", "-0.0"]}), "cpu")[0][1]
    assert exact.shape == (3,) and torch.isnan(exact[1]) and str(float(exact[2])) == "-0.0"
    planted = rt.make_inputs(torch, case(dims={"N": 100}, values={"x": ["inf", "nan"]}), "cpu")[0][1]
    assert torch.isinf(planted).sum() == 1 and torch.isnan(planted[-1])


def test_poisoned_outputs_keep_strides_and_catch_stray_writes(rt):
    x = torch.zeros(6, 4).t()   # shape (4, 6), transposed strides
    poison = rt.PoisonedOutputs(torch, -1024.0)
    with poison:
        out = torch.empty_like(x)
        flat = torch.empty(10)
    assert out.stride() == x.stride() and bool((out == -1024.0).all()) and bool((flat == -1024.0).all())
    assert torch.empty_like is not None and poison.stray_write(out) is None
    out.as_strided((1,), (1,), out.storage_offset() + 24)[0] = 1.0   # one element past the end
    assert poison.stray_write(out) == 24


def test_compare_exact_and_with_tolerance(rt):
    expected = torch.tensor([float("nan"), 0.0, 1.0, float("inf")], dtype=torch.float64)
    got = torch.tensor([float("nan"), -0.0, 1.0, float("inf")], dtype=torch.float64)
    assert not rt.compare(torch, expected, got, "float32").any()
    near = torch.tensor([float("nan"), 0.0, 1.005, float("inf")], dtype=torch.float64)
    assert rt.compare(torch, expected, near, "float32").tolist() == [False, False, True, False]
    assert not rt.compare(torch, expected, near, "float16").any()
    assert rt.compare(torch, expected, -got, "float16")[3]   # -inf is never close to inf


def test_positions_and_reasons(rt):
    assert rt.position_text([3, 17]) == "row 3, column 17" and rt.position_text([5]) == "5"
    rt.REFERENCE = {"classify": lambda inputs, expected, got, bad: "flipped"}
    expected = torch.tensor([1.0, 2.0], dtype=torch.float64)
    bad = torch.tensor([True, True])
    assert rt.classify(torch, {}, expected, torch.tensor([-1024.0, 2.5], dtype=torch.float64), bad) == "unwritten"
    assert rt.classify(torch, {}, expected, torch.tensor([-1.0, -2.0], dtype=torch.float64), bad) == "flipped"
    rt.REFERENCE = {"classify": lambda *a: "not_declared"}
    assert rt.classify(torch, {}, expected, torch.tensor([0.0, 0.0], dtype=torch.float64), bad) == "wrong_value"


def test_gpu_faults_are_recognised_by_type_and_words(rt):
    class AcceleratorError(RuntimeError):
        pass
    assert rt.is_gpu_fault(torch, AcceleratorError("boom"), "cpu")
    assert rt.is_gpu_fault(torch, RuntimeError("CUDA error: an illegal memory access was encountered"), "cpu")
    assert not rt.is_gpu_fault(torch, ValueError("shapes differ"), "cpu")


def test_lean_interpreter_skips_only_the_overflow_work_the_interpreter_throws_away(rt, monkeypatch):
    """Without debug the interpreter's device_assert drops the overflow check it was handed, so the
    checker turns the 64-bit recomputation off: the same results, int32 wrap-around included."""
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    monkeypatch.setenv("TRITON_INTERPRET", "1")   # read when @triton.jit decorates

    @triton.jit
    def wrap(x, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        v = tl.load(x + offsets, mask=mask)
        tl.store(out + offsets, v * 65536 * 65536 + v - 7, mask=mask)

    x = torch.tensor([1, -3, 2**30, 12345, 0], dtype=torch.int32)
    builder = interpreter.interpreter_builder
    monkeypatch.setattr(builder, "options", builder.options)   # restored after the test
    assert builder.options.sanitize_overflow and not builder.options.debug
    results = []
    for lean in (False, True):
        if lean:
            rt.lean_interpreter()
        out = torch.empty_like(x)
        wrap[(2,)](x, out, x.numel(), BLOCK=4)
        results.append(out)
    assert not builder.options.sanitize_overflow
    assert torch.equal(results[0], results[1])
    assert torch.equal(results[1], x * 65536 * 65536 + x - 7)
