"""What lesson 5's kernel computes, in torch, and how to tell its typical mistakes apart."""
import math

import torch


def reference(x):
    """softmax over each row, as torch defines it (a row of only -inf, or with NaN or +inf, is
    NaN throughout), computed in float64 and rounded once to the input's dtype."""
    return torch.softmax(x.double(), dim=1).to(x.dtype)


SAMPLE_ROWS = 64   # differing rows looked at, at most (the first ones)


def classify(inputs, expected, got, bad):
    """The most telling mistake among the differing elements (None: the checker's generic reason).

    inputs: x as float64 of the output's shape; expected, got: float64; bad: True where they
    differ. A reason is given when its hypothesis, computed here from x, reproduces at least half
    of the differing elements of the sampled rows (NaN where the hypothesis has NaN)."""
    x = inputs["x"]
    if x is None or x.dim() != 2 or not x.numel():
        return None
    rows = bad.any(dim=1).nonzero().flatten()[:SAMPLE_ROWS]
    xs, gs, es, bs = x[rows], got[rows], expected[rows], bad[rows]
    loose, floor = _tolerance(expected)
    need = (int(bs.sum()) + 1) // 2

    def explains(hypothesis):
        same = (torch.isnan(hypothesis) & torch.isnan(gs)) | ((hypothesis - gs).abs() <= loose * hypothesis.abs() + floor)
        return int((same & bs).sum()) >= need

    # exp(x) without the row's maximum subtracted, in float32 as the kernel computes: large
    # values overflow to inf, and inf / inf is NaN
    plain = torch.exp(xs.float())
    if bool(torch.isinf(plain).any()) and explains((plain / plain.sum(dim=1, keepdim=True)).double()):
        return "overflow"
    # tl.exp2 instead of tl.exp: 2^z = e^(z ln 2), the softmax of x * ln 2
    if explains(torch.softmax(xs * math.log(2.0), dim=1)):
        return "wrong_base"
    # every value of a row off by one common factor: the numerators are right, the denominator
    # (the row's sum) is not
    if explains(es * _row_factor(es, gs, bs)):
        return "bad_normalizer"
    return None


def _tolerance(expected):
    """(relative, absolute) closeness that tells hypotheses apart through the output's rounding:
    a few units in the last place of the output's dtype, recovered from its values (float16 and
    bfloat16 outputs hold values exact in that type; random float32 values almost never are).
    The absolute part is for float16's subnormals (below 2^-14, spaced 2^-24): a long row's
    probabilities, about 1/N, are there once N passes 16384. A hypothesis built from the rounded
    expected value times a row factor f is off by f / 2 spacings, the kernel's own rounding by half
    of one: 3 spacings cover f up to 5."""
    finite = expected[torch.isfinite(expected)]
    for dtype, ulp, spacing in ((torch.bfloat16, 2.0 ** -7, 0.0), (torch.float16, 2.0 ** -10, 2.0 ** -24)):
        if bool((finite.to(dtype).double() == finite).all()):
            return 2 * ulp, 3 * spacing + 1e-30
    return 2.0 ** -12, 1e-30


def _row_factor(expected, got, bad):
    """Per row, the median of got / expected over the differing elements where both are finite
    and the expected value is not tiny (NaN where a row has none): a common factor, if any."""
    ratio = got / expected
    usable = bad & torch.isfinite(ratio) & (expected.abs() > 1e-6)
    factors = []
    for r in range(expected.shape[0]):
        values = ratio[r][usable[r]]
        factors.append(values.median() if values.numel() else torch.tensor(float("nan"), dtype=ratio.dtype, device=ratio.device))
    return torch.stack(factors).to(expected)[:, None] if factors else expected[:, :0]
