"""What lesson 7's kernel computes, in torch, and how to tell its typical mistakes apart."""
import math

import torch
import torch.nn.functional as F


# torch's other ways to compute what reference() does (generator/checker/provenance.py)
TORCH_EQUIVALENTS = ("cross_entropy", "nll_loss", "log_softmax", "logsumexp", "_log_softmax", "special_logsumexp",
                     "CrossEntropyLoss", "NLLLoss")

IGNORE_INDEX = -100   # PyTorch's default: a row whose target is this gets loss 0
MAX_BLOCK = 8192      # the lesson's kernel walks a row in chunks of min(next_power_of_2(V), MAX_BLOCK)


def reference(logits, target):
    """(loss, lse), both float32 of shape [M]: torch.nn.functional.cross_entropy(reduction="none")
    and torch.logsumexp over each row, computed in float64 and rounded once. A row whose target is
    IGNORE_INDEX has loss 0 (its lse is still the row's); a row of only -inf has lse -inf and loss
    NaN, as PyTorch defines them."""
    x = logits.double()
    loss = F.cross_entropy(x, target, reduction="none", ignore_index=IGNORE_INDEX)
    return loss.float(), torch.logsumexp(x, dim=1).float()


def error_scale(logits, target):
    """The tolerance's scale per output (lesson.yaml derives the rtol it multiplies): the
    float32 additions that make the result round on the magnitudes of their operands, not of the
    result, so loss = lse - x_t is as precise as |lse| + |x_t| allows, however much they cancel."""
    x = logits.double()
    top = x.amax(dim=1) if x.shape[1] else x.new_zeros(x.shape[0])
    lse = torch.logsumexp(x, dim=1)
    picked = _picked(x, target.long())
    base = _finite(top.abs()) + _finite(lse.abs())
    return base + _finite(picked.abs()), base


def _finite(t):
    return torch.where(torch.isfinite(t), t, torch.zeros_like(t))


def _picked(x, t):
    """x[row, t[row]] where t is a class index, 0 where it is not (ignored rows)."""
    valid = (t >= 0) & (t < x.shape[1])
    index = torch.where(valid, t, torch.zeros_like(t))[:, None]
    return torch.where(valid, x.gather(1, index)[:, 0] if x.shape[1] else x.new_zeros(t.shape), x.new_zeros(t.shape))


# A hypothesis computed in float64 matches a float32 kernel's result within the comparison's own
# tolerance (lesson.yaml: atol 2^-15 and 8 units in the last place of the operands); a mistake's
# effect is larger (the no_rescale error of a random 50257-column row is about 1e-4).
CLOSE_RTOL = 2.0 ** -20
CLOSE_ATOL = 2.0 ** -15


def classify(inputs, expected, got, bad, views=None, output=None):
    """The most telling mistake for the failing output (loss or lse), or None.

    inputs: logits as float64 [M, V] (it does not broadcast to [M]), target as float64 [M];
    expected, got: float64 [M]; views: name -> (flat storage, strides, storage offset).

    Each hypothesis is the (loss, lse) a mistake computes, from the inputs alone; its reason is
    given only when got equals it on three quarters of the rows where got or it differs from the
    right result (NaN equals NaN only where the hypothesis computes NaN)."""
    x, tf = inputs.get("logits"), inputs.get("target")
    if x is None or tf is None or x.dim() != 2 or not x.shape[0] or not x.shape[1]:
        return None
    t = tf.long()
    index = 1 if output == "lse" else 0
    scale = error_scale(x, t)[index].to(expected)
    found = [reason for reason, hypothesis in _hypotheses(x, t, expected, output, views or {})
             if hypothesis is not None and _reproduces(hypothesis[index], expected, got, bad, scale)]
    # two mistakes that compute the same values here (a single class: m + log e^x - x = lse) cannot
    # be told apart: neither is named
    return found[0] if len(found) == 1 else "wrong_value" if found else None


def _hypotheses(x, t, expected, output, views):
    """(reason, (loss, lse) or None) for each mistake's hypothesis; computed lazily."""
    right_lse = torch.logsumexp(x, dim=1)
    yield "logits_misread", _misread(x, t, views.get("logits"))
    yield "nan_from_inf", _with_loss(_nan_first_chunk(x, right_lse), x, t)
    yield "not_shifted", _with_loss(_not_shifted(x), x, t)
    yield "no_rescale", _with_loss(_no_rescale(x), x, t)
    yield "padding_counted", _with_loss(_padded(x), x, t)
    yield "ignored_counted", (torch.where(t == IGNORE_INDEX, right_lse, _loss(right_lse, x, t)), right_lse)
    first = torch.full_like(t, int(t[0]))
    yield "target_misread", (_loss(right_lse, x, first), right_lse)
    yield "loss_negated", (-_loss(right_lse, x, t), right_lse)
    yield "target_not_subtracted", (torch.where(t == IGNORE_INDEX, torch.zeros_like(right_lse), right_lse), right_lse)


def _loss(lse, x, t):
    return torch.where(t == IGNORE_INDEX, torch.zeros_like(lse), lse - _picked(x, t))


def _with_loss(lse, x, t):
    return None if lse is None else (_loss(lse, x, t), lse)


def _block(v):
    return min(1 << max(v - 1, 0).bit_length(), MAX_BLOCK)


def _nan_first_chunk(x, right_lse):
    """No guard for a running maximum still -inf: exp(-inf - (-inf)) is NaN, in every row whose
    first chunk holds only -inf."""
    first = x[:, :_block(x.shape[1])]
    dead = (first == -math.inf).all(dim=1)
    return torch.where(dead, torch.full_like(right_lse, math.nan), right_lse)


def _not_shifted(x):
    """s summed from e^x itself, in float32 as the kernel computes (e^x is inf above 88.7, 0
    below -103), and the maximum still added: m + log(sum e^x)."""
    top = x.amax(dim=1)
    s = torch.exp(x.float()).sum(dim=1).double()
    return top + torch.log(s)


def _no_rescale(x):
    """The online sum without its factor exp(m_old - m_new): each chunk's terms stay relative to
    the maximum reached by that chunk; lse = m_final + log(s)."""
    block = _block(x.shape[1])
    m = torch.full((x.shape[0],), -math.inf, dtype=x.dtype, device=x.device)
    s = torch.zeros_like(m)
    for start in range(0, x.shape[1], block):
        part = x[:, start:start + block]
        m = torch.maximum(m, part.amax(dim=1))
        shift = torch.where(m == -math.inf, torch.zeros_like(m), m)
        s = s + torch.exp(part - shift[:, None]).sum(dim=1)
    return m + torch.log(s)


def _padded(x):
    """The padding lanes of the last chunk loaded as 0 instead of -inf: the logsumexp of the row
    and as many zeros."""
    v = x.shape[1]
    block = _block(v)
    pad = -(-v // block) * block - v
    if not pad:
        return None
    return torch.logsumexp(torch.cat([x, x.new_zeros(x.shape[0], pad)], dim=1), dim=1)


def _misread(x, t, view):
    """logits read as if contiguous (strides V and 1): the row's values and its target's logit
    from storage elements row * V + column, when those differ from the view's own and lie inside
    its storage."""
    if view is None:
        return None
    flat, strides, offset = view
    rows, cols = x.shape
    if tuple(strides) == (cols, 1):
        return None
    index = offset + torch.arange(rows, device=x.device)[:, None] * cols + torch.arange(cols, device=x.device)[None, :]
    if not bool((index < flat.numel()).all()):
        return None
    read = flat[index]
    lse = torch.logsumexp(read, dim=1)
    return _loss(lse, read, t), lse


def _same(a, b, scale):
    """Equal as results: both NaN, equal (infinities too), or close for finite values."""
    close = (a - b).abs() <= CLOSE_ATOL + CLOSE_RTOL * (scale + a.abs())
    return (torch.isnan(a) & torch.isnan(b)) | (a == b) | (torch.isfinite(a) & torch.isfinite(b) & close)


def _reproduces(hypothesis, expected, got, bad, scale):
    """got equals the hypothesis on at least three quarters of the rows where either differs
    from the right result (a hypothesis explains only where it differs from the right result)."""
    hypothesis = hypothesis.to(expected)
    differs = ~_same(hypothesis, expected, scale)
    scope = bad | differs
    total = int(scope.sum())
    return total > 0 and 4 * int((differs & _same(hypothesis, got, scale)).sum()) >= 3 * total
