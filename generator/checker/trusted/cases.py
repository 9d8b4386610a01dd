"""A case's inputs, drawn from the lesson's declarations, and its expected output from the
lesson's reference: computed by the trusted process, in which no submission was ever imported.
(A worker draws a GPU-only case's large inputs itself, with the same code and seed: a worker that
drew other numbers only gets its own output compared with the right reference.)"""
import zlib

from ..shared.common import INTEGER_DTYPES, LESSON, inplace, outputs

INTEGER_DEFAULTS = {"uint8": (0, 8), "bool": (0, 2)}   # other integers: the floats' (-8, 8)

REFERENCE = {}   # the lesson's reference.py, run once in the trusted process


def reference_namespace():
    if not REFERENCE:
        namespace = {"__name__": "lesson_reference"}
        exec(compile(LESSON["reference"], "reference.py", "exec"), namespace)
        REFERENCE.update(namespace)
    return REFERENCE


def _bound(value, dims):
    return int(dims[value]) if isinstance(value, str) else value


def _draw(torch, spec, shape, seed, device="cpu", dims=None):
    """The input's values in float64 (floating inputs) or int64 (integer ones), uniform in the
    draw's [low, high)."""
    draw = spec.get("draw") or {}
    dtype = spec.get("dtype")
    generator = torch.Generator(device=device).manual_seed(seed)
    if dtype in INTEGER_DTYPES:
        default = INTEGER_DEFAULTS.get(dtype, (-8, 8))
        low, high = (int(_bound(draw.get(k, d), dims or {})) for k, d in zip(("low", "high"), default))
        if high <= low:   # an empty range (a dimension of 0): nothing can be drawn, nothing is read
            return torch.full(shape, low, dtype=torch.int64, device=device)
        return torch.randint(low, high, shape, generator=generator, dtype=torch.int64, device=device)
    low, high = float(draw.get("low", -8.0)), float(draw.get("high", 8.0))
    values = torch.rand(shape, generator=generator, dtype=torch.float64, device=device) * (high - low) + low
    if draw.get("alternate_signs"):
        flat = values.view(-1)
        flat[0::2] = -flat[0::2].abs()
        flat[1::2] = flat[1::2].abs()
    return values


def parse_value(torch, text, dtype):
    """A planted value or a scalar written as text: a float, or an int for an integer dtype (min
    and max: the dtype's extremes)."""
    text = str(text).strip()
    if dtype not in INTEGER_DTYPES:
        return float(text)
    if text in ("min", "max"):
        info = torch.iinfo(torch.uint8 if dtype == "bool" else getattr(torch, dtype))
        return 1 if dtype == "bool" and text == "max" else 0 if dtype == "bool" else getattr(info, text)
    return {"true": 1, "false": 0}.get(text, None) if text in ("true", "false") else int(text)


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
            storage = torch.empty((2 * n,), dtype=logical.dtype, device=logical.device)
            storage.copy_(filler.expand(2 * n))
            storage[0::2] = logical
            return storage, lambda s: s[0::2]
        rows, cols = logical.shape
        storage = _draw(torch, {}, (rows, cols + 7), seed + 1, logical.device.type).to(logical.dtype)
        storage[:, :cols] = logical
        return storage, lambda s: s[:, :cols]
    return logical.contiguous(), lambda s: s


def input_dtype(torch, spec, case):
    """The torch dtype of a tensor input: its own, or the case's (the floating inputs')."""
    return getattr(torch, spec.get("dtype") or case.get("dtype", "float32"))


def make_inputs(torch, case, home="cpu", call=None):
    """The case's arguments, in declared order: (name, storage, view) triples; a scalar is
    (name, value, value). Drawn on `home` (the CPU, the same on every machine; a GPU-only case's
    large inputs on the GPU itself, where its reference runs too). call: a further call's
    scalars, which replace the case's."""
    dims = case.get("dims") or {}
    values = dict(case.get("values") or {}, **(call or {}))
    layouts = case.get("layout") or {}
    draws = case.get("draw") or {}   # a case's own draw for an input, in place of the input's
    made = []
    for spec in LESSON["inputs"]:
        name = spec["name"]
        seed = zlib.crc32(f"{case['id']}/{name}".encode())
        if "scalar" in spec:
            value = parse_value(torch, values.get(name, spec["scalar"]), spec.get("dtype"))
            made.append((name, value, value))
            continue
        dtype = input_dtype(torch, spec, case)
        wide = torch.int64 if spec.get("dtype") in INTEGER_DTYPES else torch.float64
        planted = [parse_value(torch, v, spec.get("dtype")) for v in values.get(name, [])]
        if not dims and planted:
            logical = torch.tensor(planted, dtype=wide, device=home)
        else:
            shape = tuple(int(dims[d]) if isinstance(d, str) else int(d) for d in spec["shape"])
            drawn = {**spec, "draw": draws[name]} if name in draws else spec
            logical = _draw(torch, drawn, shape, seed, home, dims)
            if planted:
                _plant(logical, planted)
        storage, view = _layout(torch, logical.to(dtype), layouts.get(name, "contiguous"), seed)
        made.append((name, storage, view(storage)))
    return made


def call_inputs(torch, case, made):
    """Each call's arguments: the case's own first, then one per further call (`calls`), with the
    same tensors and the call's scalars."""
    calls = [made]
    for call in case.get("calls") or []:
        scalars = {spec["name"]: parse_value(torch, call[spec["name"]], spec.get("dtype"))
                   for spec in LESSON["inputs"] if spec["name"] in call}
        calls.append([(name, scalars[name], scalars[name]) if name in scalars else (name, storage, view)
                      for name, storage, view in made])
    return calls


def expected_output(torch, made):
    """The reference's outputs for these inputs, a list in the order of outputs()
    (computed from copies of the trusted views: an in-place reference cannot change them)."""
    arguments = {name: view.clone() if hasattr(view, "shape") else view for name, _, view in made}
    found = reference_namespace()["reference"](**arguments)
    found = list(found) if isinstance(found, (tuple, list)) else [found]
    if len(found) != len(outputs()):
        raise ValueError(f"reference() returned {len(found)} outputs; lesson.yaml declares {len(outputs())}")
    return found


def error_scale(torch, made):
    """What each output's rtol multiplies: the lesson's error_scale(**inputs) (for a dot product,
    the sum of |a_ik * b_kj|; a tuple for several outputs), None for |expected|: a list."""
    scale = reference_namespace().get("error_scale")
    count = len(outputs())
    if scale is None:
        return [None] * count
    found = scale(**{name: view for name, _, view in made})
    found = list(found) if isinstance(found, (tuple, list)) else [found]
    return found + [None] * (count - len(found))


FLOAT8 = ("float8_e4m3fn", "float8_e5m2")


def uses_float8(case):
    """Whether a case has a float8 input or output."""
    dtypes = {case.get("dtype")} | {spec.get("dtype") for spec in LESSON.get("inputs", []) if "scalar" not in spec} \
        | {spec.get("dtype") for spec in outputs()}
    return bool(dtypes & set(FLOAT8))


def skip_reason(case, use_gpu):
    if case.get("gpu_only") and not use_gpu:
        return "needs_gpu"
    if case.get("dtype") == "bfloat16" and not use_gpu:
        return "bf16_interpreter"
    if uses_float8(case) and not use_gpu:
        return "fp8_interpreter"
    return None


def returned(index):
    """Whether output index comes from the entry's return value (not an in-place input)."""
    return outputs()[index]["name"] not in inplace()


def input_fill(torch, dtype):
    """What an input's guard bands hold: NaN, or the largest value of an integer dtype."""
    if dtype == torch.bool:
        return True
    return float("nan") if dtype.is_floating_point else torch.iinfo(dtype).max
