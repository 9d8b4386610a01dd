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


def classify(inputs, expected, got, bad):
    """The most telling mistake among the differing elements (None: the checker's generic reason).

    inputs: a (M, K) and b (K, N) as they are (float64; they do not broadcast to the output);
    expected, got: float64 (M, N); bad: True where they differ. A reason is given when its
    hypothesis, computed here from a and b for some slab width BLOCK_K, reproduces at least half
    of the differing elements."""
    a, b = inputs["a"], inputs["b"]
    if a is None or b is None or a.dim() != 2 or b.dim() != 2 or not bad.any():
        return None
    K = a.shape[1]
    scale = a.abs() @ b.abs()
    need = (int(bad.sum()) + 1) // 2

    def explains(hypothesis):
        close = (hypothesis - got).abs() <= 2.0 ** -6 * (scale + hypothesis.abs()) + 1e-30
        return int((close & bad).sum()) >= need

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
    return None
