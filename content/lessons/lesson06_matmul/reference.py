"""What lesson 6's kernel computes, in torch, and how to tell its typical mistakes apart."""
import torch


def reference(a, b):
    """a @ b in float64, rounded once to the inputs' dtype."""
    return (a.double() @ b.double()).to(a.dtype)


def error_scale(a, b):
    """The natural scale of a dot product's rounding errors: sum over k of |a[m, k] * b[k, n]|.
    Any order of the additions, TF32 inputs or a float32 accumulator err by a fraction of it,
    for every K; |a @ b| can be far smaller (the terms cancel)."""
    return a.double().abs() @ b.double().abs()


BLOCK_K_GUESSES = (16, 32, 64, 128)   # the slab widths a hypothesis below tries
CLOSE = 2.0 ** -5   # error, as a fraction of error_scale, of values right but for their precision


def classify(inputs, expected, got, bad, views=None):
    """The most telling mistake among the differing elements (None: the checker's generic reason).

    inputs: a (M, K) and b (K, N) as they are (float64; they do not broadcast to the output);
    expected, got: float64 (M, N); bad: True where they differ; views: name -> (the input's whole
    storage, flat, in float64; its strides; its storage offset). A reason is given when its
    hypothesis, computed here from a and b (for some slab width BLOCK_K, or a factor read at the
    wrong addresses), reproduces at least half of the differing elements; NaN and infinities are
    never reproduced. Values right but for their precision come last."""
    a, b = inputs["a"], inputs["b"]
    if a is None or b is None or a.dim() != 2 or b.dim() != 2 or not bad.any():
        return None
    K = a.shape[1]
    scale = a.abs() @ b.abs()
    need = (int(bad.sum()) + 1) // 2

    def explains(hypothesis):
        """Within TF32's error of got, and not of the right result, on half the differing elements."""
        margin = 2.0 ** -8 * (scale + hypothesis.abs()) + 1e-30
        close = ((hypothesis - got).abs() <= margin) & ((hypothesis - expected).abs() > margin)
        return int((close & bad).sum()) >= need

    views = views or {}
    for name, misread in (("a", _misread(a, views.get("a"), 1)), ("b", _misread(b, views.get("b"), 0))):
        for value in misread:
            if explains(value @ b if name == "a" else a @ value):
                return f"{name}_misread"
    for block_k in BLOCK_K_GUESSES:
        if K <= block_k:
            continue   # one slab: these mistakes change nothing
        last = (K - 1) // block_k * block_k
        # the accumulator overwritten in every step: only the last slab's product survives
        if explains(a[:, last:] @ b[last:, :]):
            return "last_slab_only"
        # the pointers never advanced: every step multiplies the first slab again, as wide as
        # the step's mask allows (min(BLOCK_K, K - k) columns)
        repeated = sum(a[:, :min(block_k, K - k)] @ b[:min(block_k, K - k), :] for k in range(0, K, block_k))
        if explains(repeated):
            return "first_slab_repeated"
    # close to a @ b, but further than float32 accumulation errs: a narrower accumulator
    e, g, s = expected[bad], got[bad], scale[bad]
    if bool((torch.isfinite(g) & torch.isfinite(e)).all()) and bool(((g - e).abs() <= CLOSE * s).all()):
        return "imprecise"
    return None


def _misread(value, view, k_dim):
    """The factor a kernel reads from this input's storage at the wrong addresses: as if it were
    contiguous, or with its strides swapped, either everywhere or within each slab of K only
    (the pointers advanced by the input's true K stride, for each BLOCK_K guessed); only reads
    that stay inside the storage and differ from the input's own (a read outside it is the
    checker's generic read past the end). k_dim: the input's K dimension (1 for a, 0 for b)."""
    if view is None:
        return
    flat, (s0, s1), offset = view
    rows, cols = value.shape
    i = torch.arange(rows, device=value.device)[:, None]
    j = torch.arange(cols, device=value.device)[None, :]
    k = (j if k_dim == 1 else i)
    for r, c in dict.fromkeys(((cols, 1), (s1, s0))):
        if (r, c) == (s0, s1):
            continue
        indices = [offset + i * r + j * c]
        for block_k in BLOCK_K_GUESSES:
            start = k // block_k * block_k
            within = k - start
            indices.append(offset + (i * r + start * s1 + within * c if k_dim == 1 else start * s0 + within * r + j * c))
        for index in indices:
            if bool((index < flat.numel()).all()):
                yield flat[index]
