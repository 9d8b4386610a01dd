"""What lesson 4's kernel computes, in torch, and how to tell its typical mistakes apart."""
import torch


def reference(x, bias):
    """out[m, n] = x[m, n] + bias[n], rounded once from the exact sum (float64 holds the sum of two
    float32, float16 or bfloat16 values closely enough that rounding it again is exact)."""
    return (x.double() + bias.double()[None, :]).to(x.dtype)


SAMPLE = 256   # differing elements looked at by a lookup, at most (the first ones, row by row)
# A pool of at most this many values is too sparse in its type for a chance match to matter (about
# 1/16 of a sign and 8 binades); a larger one is judged against chance (_beyond_chance).
POOL_LIMIT = {torch.bfloat16: 1 << 7, torch.float16: 1 << 10, torch.float32: 1 << 23}


def classify(inputs, expected, got, bad, views=None):
    """The most telling mistake among the differing elements (None: the checker's generic reason).

    inputs: float64 tensors of the output's shape (bias broadcast over the rows); expected, got:
    float64; bad: True where they differ; views: name -> (the input's whole storage, flat, in
    float64; its strides; its storage offset), to compute what a read at the wrong address gets.

    A reason is given only when its hypothesis reproduces the wrong values: at least three
    quarters of the elements where the kernel's output or the hypothesis differs from the right
    result (a read at the wrong address, computed exactly), or of the sampled differing elements
    (the bias of another column, looked up)."""
    x, b = inputs["x"], inputs["bias"]
    if x is None or b is None or x.dim() != 2 or not x.numel():
        return None
    dtype = _dtype_of(expected)
    # The right values at the wrong places: the store ignored out's own strides.
    if _same_values(expected, got):
        return "misplaced"
    # A read at the wrong address, computed from the input's storage: the bias read without its
    # stride, x read with strides it does not have.
    for reason, value, known in _misreads(x, b, views or {}):
        if _reproduces(value.to(dtype).double(), known, expected, got, bad):
            return reason
    # x[m, n] plus the bias of another column: the bias went along the wrong axis. Looked up, since
    # which column depends on the tile; a zero bias cannot be told from no bias, and an infinite
    # x[m, n] gives the same sum with any bias, so neither counts.
    places = bad.nonzero()[:SAMPLE]
    m, n = places[:, 0], places[:, 1]
    g, addend = got[m, n], x[m, n]
    keep = ~torch.isnan(g) & torch.isfinite(addend)
    g, addend = g[keep], addend[keep]
    pool = b[0][~torch.isnan(b[0]) & (b[0] != 0)]
    if len(g) > 1 and _beyond_chance(pool, g, addend, dtype):
        return "bias_wrong_axis"
    return None


def _beyond_chance(pool, g, addend, dtype):
    """Whether got - x[m, n] is a bias value for at least three quarters of the sampled elements,
    beyond what chance explains. A value looked up among many others is found by chance when the
    type has few values near it (bfloat16 has 128 per binade, and many sums round to the same
    result): a pool small for its type (POOL_LIMIT) is trusted as it is; a larger one counts only
    at a rate at least one half above chance's, measured with each element's x paired with another
    element's got (the sample rolled by one, where the two x differ), where no bias explains
    anything."""
    found = float(_found(pool, g, addend, dtype).double().mean())
    if 4 * found < 3:
        return False
    if torch.unique(pool).numel() <= POOL_LIMIT[dtype]:
        return True
    other = addend.roll(1)
    differ = other != addend
    by_chance = float(_found(pool, g[differ], other[differ], dtype).double().mean()) if bool(differ.any()) else 0.0
    return 2 * (found - by_chance) >= 1


def _same_values(expected, got):
    """Whether got holds exactly the values of expected, in another order (NaN equals NaN)."""
    e, g = expected.flatten(), got.flatten()
    if int(torch.isnan(e).sum()) != int(torch.isnan(g).sum()):
        return False
    return bool((torch.sort(e[~torch.isnan(e)]).values == torch.sort(g[~torch.isnan(g)]).values).all())


def _misreads(x, b, views):
    """(reason, what the kernel would compute, where that is known) for each read at a wrong address
    a kernel of this lesson is likely to make: the bias read as if its stride were 1; x read as if
    contiguous, with its strides swapped, or without one of them. Reads outside an input's storage
    are unknown."""
    rows, cols = x.shape
    m = torch.arange(rows, device=x.device)[:, None]
    n = torch.arange(cols, device=x.device)[None, :]
    if "bias" in views:
        flat, (stride,), offset = views["bias"]
        if stride != 1:
            value, known = _read(flat, offset + n + 0 * m)
            yield "bias_strides_ignored", x + value, known
    if "x" in views:
        flat, (sm, sn), offset = views["x"]
        for am, an in dict.fromkeys(((cols, 1), (sn, sm), (sm, 1), (cols, sn))):
            if (am, an) != (sm, sn):
                value, known = _read(flat, offset + m * am + n * an)
                yield "x_misread", value + b, known


def _read(flat, index):
    """flat[index] where index lies inside flat (NaN elsewhere), and where it does."""
    known = (index >= 0) & (index < flat.numel())
    return torch.where(known, flat[index.clamp(0, max(flat.numel() - 1, 0))], torch.nan), known


def _reproduces(value, known, expected, got, bad):
    """At least three quarters of the elements where got or value differs from expected have
    got == value (NaN equals NaN, +0 equals -0)."""
    def same(a, c):
        return (a == c) | (torch.isnan(a) & torch.isnan(c))
    scope = bad | (known & ~same(value, expected))
    total = int(scope.sum())
    return total > 0 and 4 * int((scope & known & same(value, got)).sum()) >= 3 * total


def _dtype_of(expected):
    """The output's dtype, recovered from its values: every finite value of a bfloat16 (or
    float16) output is exact in that type, which random float32 values almost never are."""
    finite = expected[torch.isfinite(expected)]
    for dtype in (torch.bfloat16, torch.float16):
        if bool((finite.to(dtype).double() == finite).all()):
            return dtype
    return torch.float32


def _found(pool, got, addend, dtype):
    """True where some value v of pool gives got == (v + addend) rounded to dtype. Rounding is
    monotonic, so only the pool values nearest to got - addend can match."""
    pool = torch.unique(pool)   # sorted
    if not pool.numel():
        return torch.zeros_like(got, dtype=torch.bool)
    index = torch.searchsorted(pool, (got - addend).nan_to_num(0.0))
    hit = torch.zeros_like(got, dtype=torch.bool)
    for shift in (-2, -1, 0, 1):
        near = pool[(index + shift).clamp(0, pool.numel() - 1)]
        hit |= (near + addend).to(dtype).double() == got
    return hit
