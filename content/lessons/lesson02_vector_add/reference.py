import torch


def reference(x, y):
    """x + y in float64 (exact for these operands), rounded once to the inputs' dtype."""
    return (x.double() + y.double()).to(x.dtype)


def classify(inputs, expected, got, bad):
    """The most telling reason among the differing elements, or None for the generic reasons.
    (check.py reports poison left in the output as `unwritten` before it asks this function.)"""
    x, y = inputs["x"], inputs["y"]
    if _strides_ignored(x, y, got, bad):
        return "strides_ignored"
    for other in (x - y, y - x, x * y, x + x, y + y, x, y):
        if bool(_close(got[bad], other[bad]).all()):
            return "wrong_operation"
    return None


def _strides_ignored(x, y, got, bad):
    """A kernel that steps by 1 through a view of stride 2 reads, at every even index i, the
    view's element i // 2 (the odd indices fall in the gaps between its elements)."""
    n = got.numel()
    even = torch.zeros(n, dtype=torch.bool)
    even[::2] = True
    where = bad & even
    if not bool(where.any()):
        return False
    half = torch.arange(n) // 2
    for read_x, read_y in ((True, False), (False, True), (True, True)):
        xs = x[half] if read_x else x
        ys = y[half] if read_y else y
        if bool(_close(got[where], (xs + ys)[where]).all()):
            return True
    return False


def _close(a, b):
    """Equal up to the rounding of a 16-bit dtype (NaN equals NaN): enough to tell operations apart."""
    tolerance = 1e-2 * b.abs().clamp(min=1.0)
    return (a == b) | ((a - b).abs() <= tolerance) | (torch.isnan(a) & torch.isnan(b))
