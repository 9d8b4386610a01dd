"""Lesson 7 (cross-entropy forward): its reference keeps PyTorch's semantics, and its classify
names each declared mistake's reason from that mistake's values alone (pure torch, no Triton:
verification proves the same through the packs)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

LESSON = Path(__file__).resolve().parent.parent / "content" / "lessons" / "lesson07_cross_entropy"
CHUNK = 8192  # the kernel's longest chunk (reference.MAX_BLOCK)


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("lesson7_reference", LESSON / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(v=300):
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(12, v, generator=gen, dtype=torch.float64) * 8 - 4
    t = torch.randint(0, v, (12,), generator=gen)
    t[3] = t[7] = -100
    if v > CHUNK:
        x[:, -1] = 5.0  # each row's maximum rises in its last chunk
    return x, t


def test_reference_is_pytorchs_cross_entropy_and_logsumexp(ref):
    """Ignored rows 0 (lse still computed), a row of only -inf: lse -inf and loss NaN, a target on
    -inf: loss +inf; both outputs float32."""
    inf = float("inf")
    x = torch.tensor([[1.0, 2.0, 3.0], [-inf, -inf, -inf], [0.0, -inf, 0.0], [5.0, 4.0, 3.0]])
    t = torch.tensor([2, 0, 1, -100])
    loss, lse = ref.reference(x, t)
    assert loss.dtype == lse.dtype == torch.float32
    assert torch.equal(lse, torch.logsumexp(x.double(), dim=1).float())
    assert (
        loss[0] == pytest.approx(0.40760596)
        and torch.isnan(loss[1])
        and loss[2] == inf
        and loss[3] == 0
    )
    empty_loss, empty_lse = ref.reference(torch.empty(0, 5), torch.empty(0, dtype=torch.long))
    assert empty_loss.shape == empty_lse.shape == (0,)


@pytest.mark.parametrize(
    "reason,v",
    [
        ("no_rescale", 9000),
        ("padding_counted", 300),
        ("ignored_counted", 300),
        ("target_misread", 300),
        ("loss_negated", 300),
        ("target_not_subtracted", 300),
        ("not_shifted", 300),
    ],
)
def test_classify_names_the_mistake_whose_values_the_output_holds(ref, reason, v):
    x, t = inputs(v)
    loss, lse = (v.double() for v in ref.reference(x, t))
    hypotheses = dict(ref._hypotheses(x, t, loss, "loss", {}))
    got = hypotheses[reason][0].float().double()  # as a float32 kernel stores it
    named = ref.classify({"logits": x, "target": t.double()}, loss, got, got != loss, output="loss")
    assert named == reason


def test_a_wrong_value_no_mistake_computes_gets_no_reason(ref):
    x, t = inputs()
    loss, _ = (v.double() for v in ref.reference(x, t))
    got = loss + 0.01  # off by a constant: no declared mistake does that
    assert (
        ref.classify({"logits": x, "target": t.double()}, loss, got, got != loss, output="loss")
        is None
    )


def test_a_single_class_names_no_mistake(ref):
    """V = 1: m + log e^x - x equals lse; not_shifted and target_not_subtracted compute the same."""
    x = torch.linspace(-2, 3, 10, dtype=torch.float64)[:, None]
    t = torch.zeros(10, dtype=torch.long)
    loss, lse = (v.double() for v in ref.reference(x, t))
    got = lse.clone()
    assert (
        ref.classify({"logits": x, "target": t.double()}, loss, got, got != loss, output="loss")
        == "wrong_value"
    )
