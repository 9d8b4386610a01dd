"""A case's inputs, drawn from the lesson's declarations, and its expected output from the
lesson's reference: computed by the trusted process, in which no submission was ever imported.
(A worker draws a GPU-only case's large inputs itself, with the same code and seed: a worker that
drew other numbers only gets its own output compared with the right reference.)"""
import zlib

from ..shared.common import LESSON

REFERENCE = {}   # the lesson's reference.py, run once in the trusted process


def reference_namespace():
    if not REFERENCE:
        namespace = {"__name__": "lesson_reference"}
        exec(compile(LESSON["reference"], "reference.py", "exec"), namespace)
        REFERENCE.update(namespace)
    return REFERENCE


def _draw(torch, spec, shape, seed, device="cpu"):
    draw = spec.get("draw") or {}
    low, high = float(draw.get("low", -8.0)), float(draw.get("high", 8.0))
    generator = torch.Generator(device=device).manual_seed(seed)
    values = torch.rand(shape, generator=generator, dtype=torch.float64, device=device) * (high - low) + low
    if draw.get("alternate_signs"):
        flat = values.view(-1)
        flat[0::2] = -flat[0::2].abs()
        flat[1::2] = flat[1::2].abs()
    return values


def _plant(values, planted):
    flat = values.view(-1)
    size = flat.numel()
    if not size:
        return
    step = max(size // len(planted), 1)
    for i, value in enumerate(planted):
        flat[min(i * step, size - 1) if i < len(planted) - 1 else size - 1] = value


def _layout(torch, logical, layout, seed):
    """(storage, view): the tensor the kernel sees is view(storage), with the declared layout."""
    if layout == "transposed":
        if logical.dim() != 2:
            raise ValueError("layout 'transposed' needs a 2-D input")
        return logical.t().contiguous(), lambda s: s.t()
    if layout == "sliced":
        filler = _draw(torch, {}, (), seed)   # the slack holds other numbers, never the right ones
        if logical.dim() == 1:
            n = logical.shape[0]
            storage = torch.full((2 * n,), float(filler), dtype=logical.dtype, device=logical.device)
            storage[0::2] = logical
            return storage, lambda s: s[0::2]
        rows, cols = logical.shape
        storage = _draw(torch, {}, (rows, cols + 7), seed + 1, logical.device.type).to(logical.dtype)
        storage[:, :cols] = logical
        return storage, lambda s: s[:, :cols]
    return logical.contiguous(), lambda s: s


def make_inputs(torch, case, home="cpu"):
    """The case's arguments, in declared order: (name, storage, view) triples; a scalar is
    (name, value, value). Drawn on `home` (the CPU, the same on every machine; a GPU-only case's
    large inputs on the GPU itself, where its reference runs too)."""
    dtype = getattr(torch, case.get("dtype", "float32"))
    dims = case.get("dims") or {}
    values = case.get("values") or {}
    layouts = case.get("layout") or {}
    draws = case.get("draw") or {}   # a case's own draw for an input, in place of the input's
    made = []
    for spec in LESSON["inputs"]:
        name = spec["name"]
        seed = zlib.crc32(f"{case['id']}/{name}".encode())
        if "scalar" in spec:
            value = float(values.get(name, spec["scalar"]))
            made.append((name, value, value))
            continue
        planted = [float(v) for v in values.get(name, [])]
        if not dims and planted:
            logical = torch.tensor(planted, dtype=torch.float64, device=home)
        else:
            shape = tuple(int(dims[d]) if isinstance(d, str) else int(d) for d in spec["shape"])
            drawn = {**spec, "draw": draws[name]} if name in draws else spec
            logical = _draw(torch, drawn, shape, seed, home)
            if planted:
                _plant(logical, planted)
        storage, view = _layout(torch, logical.to(dtype), layouts.get(name, "contiguous"), seed)
        made.append((name, storage, view(storage)))
    return made


def expected_output(torch, made):
    """The reference's output for these inputs (computed from views of the trusted copies)."""
    return reference_namespace()["reference"](**{name: view for name, _, view in made})


def error_scale(torch, made):
    """What a tolerance's rtol multiplies: the lesson's error_scale(**inputs) (for a dot product,
    the sum of |a_ik * b_kj|), or None for |expected|."""
    scale = reference_namespace().get("error_scale")
    return None if scale is None else scale(**{name: view for name, _, view in made})


def skip_reason(case, use_gpu):
    if case.get("gpu_only") and not use_gpu:
        return "needs_gpu"
    if case.get("dtype") == "bfloat16" and not use_gpu:
        return "bf16_interpreter"
    return None
