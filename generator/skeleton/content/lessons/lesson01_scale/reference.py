"""What the kernel computes, in torch: out = alpha * x + y."""


def reference(x, y, alpha):
    return (alpha * x.double() + y.double()).to(x.dtype)


def classify(inputs, expected, got, bad):
    """A kernel that forgot alpha computes x + y."""
    if bool((got[bad] == (inputs["x"][bad] + inputs["y"][bad])).all()):
        return "alpha_missing"
    return None
