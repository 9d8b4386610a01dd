"""What the kernel computes, in torch: out = alpha * x + y."""


def reference(x, y, alpha):
    return (alpha * x.double() + y.double()).to(x.dtype)


def classify(inputs, expected, got, bad):
    """A kernel that forgot alpha computes x + y (rounded to the output's dtype: within half a
    float16 unit, 2^-11 relative, of the exact sum)."""
    import torch
    without_alpha = inputs["x"][bad] + inputs["y"][bad]
    if bool(torch.isclose(got[bad], without_alpha, rtol=2 ** -10, atol=0.0).all()):
        return "alpha_missing"
    return None
