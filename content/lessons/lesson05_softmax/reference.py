"""What lesson 5's kernel computes, in torch, and how to tell its typical mistakes apart."""
import math

import torch


# torch's other ways to compute what reference() does (generator/checker/provenance.py)
TORCH_EQUIVALENTS = ("softmax", "log_softmax", "_softmax", "special_softmax")


def reference(x):
    """softmax over each row, as torch defines it (a row of only -inf, or with NaN or +inf, is
    NaN throughout), computed in float64 and rounded once to the input's dtype."""
    return torch.softmax(x.double(), dim=1).to(x.dtype)


SAMPLE_ROWS = 64   # rows looked at, at most: the first ones that differ, and as many that do not
CLOSE = 2.0 ** -6      # relative error of values that are right but for their precision
TINY = 2.0 ** -127     # below the tolerances' atol (2^-126 in float32 and bfloat16): 0 and 1e-37 differ


def classify(inputs, expected, got, bad, views=None):
    """The most telling mistake among the differing elements (None: the checker's generic reason).

    inputs: x as float64 of the output's shape; expected, got: float64 (got may hold the poison:
    this runs before the checker's own poison test); bad: True where they differ; views: name ->
    (the input's whole storage, flat, in float64; its strides; its storage offset).

    A reason is given only when its hypothesis, computed here from x, reproduces the values: got
    equals it, where it differs from the right result, on at least three quarters of the elements
    of the sampled rows where got or it differs from the right result (NaN equals NaN only where
    the hypothesis computes NaN, never for a factor). A row factor explains only finite values,
    three quarters of a row's differing ones (rounding noise fits a factor in part only); values
    right but for their precision come last."""
    x = inputs["x"]
    if x is None or x.dim() != 2 or not x.numel():
        return None
    loose, floor = _tolerance(expected)
    if _out_misaddressed(expected, got, bad, loose, floor):
        return "out_strides"
    rows = _sample(bad)
    xs, gs, es, bs = x[rows], got[rows], expected[rows], bad[rows]

    def reproduces(hypothesis):
        return _reproduces(hypothesis, es, gs, bs, loose, floor)

    for hypothesis in _misreads(x, (views or {}).get("x"), rows):
        if reproduces(hypothesis):
            return "x_misread"
    # NaN from -inf - (-inf): a lane whose running maximum is still -inf (padding lanes hold -inf),
    # or NaN read from outside x (the checker surrounds x with NaN): both, and the cause is unknown
    from_inf = reproduces(_nan_where_inf(xs, es))
    outside = (views or {}).get("x") is not None and reproduces(_unmasked(x, views["x"], rows))
    if from_inf or outside:
        return "wrong_value" if from_inf and outside else "nan_from_inf" if from_inf else "read_past_end"
    # exp(x) without the row's maximum subtracted, in float32 as the kernel computes: large
    # values overflow to inf, and inf / inf is NaN
    plain = torch.exp(xs.float())
    if bool(torch.isinf(plain).any()) and reproduces((plain / plain.sum(dim=1, keepdim=True)).double()):
        return "overflow"
    # tl.exp2 instead of tl.exp: 2^z = e^(z ln 2), the softmax of x * ln 2
    if reproduces(torch.softmax(xs * math.log(2.0), dim=1)):
        return "wrong_base"
    # every value of a row off by one common factor: the numerators are right, the denominator
    # (the row's sum) is not
    if _explained_finite(es * _row_factor(es, gs, bs), es, gs, bs, loose, floor):
        return "bad_normalizer"
    if _close_but_imprecise(es, gs, bs):
        return "imprecise"
    # NaN that no hypothesis reproduces: this lesson's arithmetic makes NaN from finite inputs too
    # (e^z overflows for a wrong shift, inf / inf), so it proves no read past the end
    if bool((bad & torch.isnan(got) & ~torch.isnan(expected)).any()):
        return "wrong_value"
    return None


def _sample(bad):
    """The first SAMPLE_ROWS rows with a differing element and the first SAMPLE_ROWS without one:
    a hypothesis that changes right rows must be seen doing so."""
    differ = bad.any(dim=1)
    return torch.cat([differ.nonzero().flatten()[:SAMPLE_ROWS], (~differ).nonzero().flatten()[:SAMPLE_ROWS]])


def _same(hypothesis, got, loose, floor):
    return (torch.isnan(hypothesis) & torch.isnan(got)) | ((hypothesis - got).abs() <= loose * hypothesis.abs() + floor)


def _reproduces(hypothesis, expected, got, bad, loose, floor):
    """got equals the hypothesis on at least three quarters of the elements where either differs
    from the right result (a hypothesis explains only where it differs from the right result)."""
    differs = ~_same(hypothesis, expected, loose, floor)
    scope = bad | differs
    total = int(scope.sum())
    return total > 0 and 4 * int((differs & _same(hypothesis, got, loose, floor)).sum()) >= 3 * total


def _explained_finite(hypothesis, expected, got, bad, loose, floor):
    """Rows whose differing elements equal the (finite) hypothesis, three quarters of them at
    least (a common factor explains a whole row, rounding noise only part of it), hold at least
    half of the differing elements; a non-finite value is never explained."""
    finite = torch.isfinite(hypothesis) & torch.isfinite(got)
    close = (finite & ((hypothesis - got).abs() <= loose * hypothesis.abs() + floor) & bad).sum(dim=1)
    per_row = bad.sum(dim=1)
    rows = (per_row > 0) & (4 * close >= 3 * per_row)
    return 2 * int(per_row[rows].sum()) >= max(int(bad.sum()), 1)


def _close_but_imprecise(expected, got, bad):
    """Every differing element finite and within CLOSE of the right value (relative), or within
    float16's smallest normal number of it (absolute: a value too small for a 16-bit type): a
    rounding error larger than float32 arithmetic makes, no mistake in the formula."""
    e, g = expected[bad], got[bad]
    return bool(e.numel()) and bool((torch.isfinite(e) & torch.isfinite(g)).all()) and \
        bool(((g - e).abs() <= CLOSE * e.abs() + 2.0 ** -14).all())


def _nan_where_inf(x, expected):
    """NaN throughout every row that holds -inf, or every row if its length leaves padding lanes
    (-inf) in a block of a power of two; the right result elsewhere."""
    n = x.shape[1]
    padded = n & (n - 1) != 0
    rows = torch.full((x.shape[0],), padded, dtype=torch.bool, device=x.device) | (x == -math.inf).any(dim=1)
    return torch.where(rows[:, None], torch.full_like(expected, math.nan), expected)


def _read(flat, index):
    """flat[index] where index lies inside flat (NaN elsewhere: the checker's guard bands)."""
    known = (index >= 0) & (index < flat.numel())
    return torch.where(known, flat[index.clamp(0, max(flat.numel() - 1, 0))], torch.full_like(index, math.nan, dtype=flat.dtype))


def _misreads(x, view, rows):
    """The softmax a kernel computes for these rows from x read at the wrong addresses: as if
    contiguous, with its strides swapped, without its column stride (the tutorial's kernel); only
    those that read other addresses than x's own, all inside x's storage (a read outside it is
    read_past_end's)."""
    if view is None:
        return
    flat, (sm, sn), offset = view
    cols = x.shape[1]
    m = rows[:, None]
    n = torch.arange(cols, device=x.device)[None, :]
    for am, an in dict.fromkeys(((cols, 1), (sn, sm), (sm, 1))):
        index = offset + m * am + n * an
        if (am, an) != (sm, sn) and bool((index < flat.numel()).all()):
            yield torch.softmax(flat[index], dim=1)


def _unmasked(x, view, rows):
    """The softmax of these rows loaded without a mask, over a block of the next power of two: the
    padding lanes read what follows the row (NaN past the end of x's storage); out stays masked."""
    flat, (sm, sn), offset = view
    cols = x.shape[1]
    block = 1 << max(cols - 1, 0).bit_length()
    m = rows[:, None]
    n = torch.arange(block, device=x.device)[None, :]
    return torch.softmax(_read(flat, offset + m * sm + n * sn), dim=1)[:, :cols]


def _out_misaddressed(expected, got, bad, loose, floor):
    """Whether the store ignored out's strides: got holds the right values (up to rounding) in
    another order (a permutation: out written as if contiguous), or out is a column-major tensor (as
    empty_like makes for a transposed x) and exactly the elements a store without its column
    stride reaches (storage elements row + column) were written."""
    if not bool(bad.any()):
        return False
    e, g = expected.flatten(), got.flatten()
    nans = torch.isnan(e)
    far = ~((got - expected).abs() <= CLOSE * expected.abs())   # not rounding noise, which sorts away
    if 4 * int((far & bad).sum()) >= 3 * int(bad.sum()) and int(nans.sum()) == int(torch.isnan(g).sum()):
        # sorting keeps each value within rounding of its partner (if a pairing within it exists)
        se, sg = torch.sort(e[~nans]).values, torch.sort(g[~torch.isnan(g)]).values
        if bool(((se - sg).abs() <= loose * se.abs() + floor).all()):
            return True
    rows, cols = expected.shape
    if rows < 2 or cols < 2:
        return False
    storage = torch.arange(rows, device=got.device)[:, None] + rows * torch.arange(cols, device=got.device)[None, :]
    written = storage <= rows + cols - 2
    return bool(((got < 0) == ~written).all())   # a softmax is never negative: the poison


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
            return 2 * ulp, 3 * spacing + TINY
    return 2.0 ** -12, TINY


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
