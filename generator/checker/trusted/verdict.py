"""A case's verdict from the data a worker handed back: shape, dtype, stray writes, values compared
with the trusted reference, and the most telling reason. Runs only in the trusted process."""
import ast
import inspect

from ..shared.common import LESSON
from .cases import reference_namespace
from ..shared.protocol import DTYPES, ProtocolError, read_tensor

MAX_NAME = 80   # a worker's free text (a type's name, an error) is cut to a length


def judge(torch, case, made, expected, scale, report, payload):
    """The result of one case: report is the worker's header for it, payload its bytes."""
    output = report.get("output")
    if output is None:
        got_type = str(report.get("got_type", "?"))[:MAX_NAME]
        return {"status": "fail", "reason": "not_tensor", "got_type": got_type}
    dtype = output.get("dtype") if isinstance(output, dict) else None
    size = _size(output)
    guard = report.get("guard")
    guard_elements = guard.get("elements", 0) if isinstance(guard, dict) else 0
    if not isinstance(guard_elements, int) or not 0 <= guard_elements <= 1 << 16 or dtype not in DTYPES:
        raise ProtocolError(f"an output described as {output!r} with guard {guard!r}")
    got = read_tensor(torch, output, payload[:size])
    if tuple(got.shape) != tuple(expected.shape):
        return {"status": "fail", "reason": "wrong_shape", "expected": list(expected.shape), "got": list(got.shape)}
    if got.dtype != expected.dtype:
        return {"status": "fail", "reason": "wrong_dtype", "expected": str(expected.dtype), "got": str(got.dtype)}
    if guard_elements:
        stray = _stray_write(torch, guard, payload[size:], got.dtype, got.numel())
        if stray is not None:
            return {"status": "fail", "reason": "wrote_past_end", "index": stray, "n": got.numel()}
    got = got.to(expected.device).double()
    want = expected.double()
    bad = compare(torch, want, got, case.get("dtype", "float32"), scale)
    count = int(bad.sum())
    if not count:
        return {"status": "pass", "n": got.numel()}
    first = tuple(int(i) for i in bad.nonzero()[0])
    inputs = broadcast_inputs(torch, made, got.shape, want.device)
    # classify sees an input that does not broadcast to the output (a matrix factor) as it is
    seen = {name: view.double().to(want.device) if inputs[name] is None else inputs[name] for name, _, view in made}
    reason = classify(torch, seen, want, got, bad, lambda: storage_views(torch, made, want.device))
    return {"status": "fail", "reason": reason, "position": list(first),
            "inputs": {name: (fmt(value[first]) if hasattr(value, "shape") else fmt(value)) if value is not None
                       else "×".join(map(str, seen[name].shape)) for name, value in inputs.items()},
            "expected": fmt(want[first]), "got": fmt(got[first]), "count": count, "n": got.numel()}


def _size(output):
    if not isinstance(output, dict) or output.get("dtype") not in DTYPES or not isinstance(output.get("shape"), list):
        raise ProtocolError(f"an output described as {output!r}")
    numel = 1
    for d in output["shape"]:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise ProtocolError(f"an output of shape {output['shape']!r}")
        numel *= d
    return numel * DTYPES[output["dtype"]]


def _stray_write(torch, guard, data, dtype, numel):
    """Offset (in elements, from the output's first) of a write into the guard bands, or None."""
    elements, span = guard.get("elements"), guard.get("span")
    itemsize = DTYPES[str(dtype).replace("torch.", "")]
    if not isinstance(span, int) or isinstance(span, bool) or span < numel or len(data) != 2 * elements * itemsize:
        raise ProtocolError(f"guard bands described as {guard!r} with {len(data)} bytes")
    bands = torch.frombuffer(data, dtype=dtype).double() if data else torch.empty(0, dtype=torch.float64)
    poison = float(LESSON["poison"])
    before, after = bands[:elements] != poison, bands[elements:] != poison
    if bool(after.any()):
        return span + int(after.nonzero()[0])
    if bool(before.any()):
        return int(before.nonzero()[-1]) - elements
    return None


def compare(torch, expected, got, dtype, scale=None):
    """Bool tensor: True where got differs from expected (NaN equals NaN, +0 equals -0); with a
    tolerance for dtype, |got - expected| <= atol + rtol * scale (scale: |expected| unless the
    lesson's error_scale gives another) counts as equal for finite values."""
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    tolerance = (LESSON.get("compare") or {}).get(dtype)
    if tolerance:
        finite = torch.isfinite(got) & torch.isfinite(expected)
        magnitude = expected.abs() if scale is None else scale.double().to(expected.device)
        close = (got - expected).abs() <= tolerance.get("atol", 0.0) + tolerance.get("rtol", 0.0) * magnitude
        same |= finite & close
    return ~same


def broadcast_inputs(torch, made, shape, device):
    """Each input as float64 of the output's shape where it broadcasts to it (scalars stay floats)."""
    found = {}
    for name, _, view in made:
        if not hasattr(view, "shape"):
            found[name] = view
            continue
        try:
            found[name] = torch.broadcast_to(view.double().to(device), shape)
        except RuntimeError:
            found[name] = None
    return found


def storage_views(torch, made, device):
    """Each tensor input's whole storage as the kernel could address it: name -> (flat float64
    tensor of every element of its storage, the view's strides, the view's storage offset)."""
    found = {}
    for name, _, view in made:
        if hasattr(view, "shape"):
            size = view.untyped_storage().nbytes() // view.element_size()
            flat = view.as_strided((size,), (1,), 0)
            found[name] = (flat.double().to(device), tuple(view.stride()), view.storage_offset())
    return found


def _takes_views(fn):
    """Whether the lesson's classify takes a 5th argument (views); one of 4 never gets it."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) >= 5


def classify(torch, inputs, expected, got, bad, views=None):
    """The most telling reason among the differing elements: the lesson's own classifier first
    (its hypotheses reproduce values, poison included: a store at the wrong addresses leaves
    poison too), then poison left behind, then a read past the end of an input, then a plain wrong
    value. views: a function giving storage_views, called only for a lesson classify that takes
    them. A lesson classify that returns "wrong_value" has ruled the other reasons out."""
    reason = _lesson_reason(inputs, expected, got, bad, views)
    if reason is not None:
        return reason
    poison = float(LESSON["poison"])
    if bool(((got == poison) & (expected != poison) & bad).any()):
        return "unwritten"
    if read_past_end(torch, inputs, expected, got, bad):
        return "read_past_end"
    return "wrong_value"


# Generic reasons a lesson's classify may give itself: a read past the end that its own hypothesis
# reproduces, or the plain reason where it knows the generic test for such a read would be wrong.
LESSON_MAY_GIVE = ("read_past_end", "wrong_value")


def _lesson_reason(inputs, expected, got, bad, views):
    lesson_classify = reference_namespace().get("classify")
    if lesson_classify is None:
        return None
    try:
        if views is not None and _takes_views(lesson_classify):
            reason = lesson_classify(inputs, expected, got, bad, views())
        else:
            reason = lesson_classify(inputs, expected, got, bad)
    except Exception:   # the lesson's own code (a GPU case's tensors on another device...):
        return None     # the generic reasons; a mistake that declares another shows the bug
    return reason if reason in LESSON["lesson_reasons"] or reason in LESSON_MAY_GIVE else None


def read_past_end(torch, inputs, expected, got, bad):
    """Whether the output holds NaN where the right result has none while no input holds NaN or an
    infinity: arithmetic on finite inputs of these lessons makes no NaN, and every input reaches
    the kernel inside guard bands of NaN (a GPU-only case's large inputs excepted), so such a NaN
    was read from outside an input."""
    if not bool((bad & torch.isnan(got) & ~torch.isnan(expected)).any()):
        return False
    tensors = [value for value in inputs.values() if hasattr(value, "shape")]
    return all(bool(torch.isfinite(value).all()) for value in tensors)


# Reasons that come from values; in the interpreter, code that makes bfloat16 gets another.
VALUE_REASONS = ("wrong_value", "read_past_end")


def in_interpreter(result, text):
    """A failing case's result as the interpreter's check gives it: when the code under check makes
    bfloat16 values itself, a reason from its values becomes bf16_interpreter (the interpreter
    computes bfloat16 wrongly, see skip_reason: those values say nothing; a GPU must judge them).
    The case still fails: the text read here can only change what the student is told."""
    reason = result.get("reason")
    if result.get("status") == "fail" and (reason in VALUE_REASONS or reason in LESSON["lesson_reasons"]) \
            and makes_bfloat16(text):
        return dict(result, reason="bf16_interpreter")
    return result


def makes_bfloat16(text):
    """Whether the code passes bfloat16 to a call (`.to(tl.bfloat16)`, `dtype=torch.bfloat16`,
    `"bf16"`): a conversion or an allocation, not a comparison such as `x.dtype in (..., torch.bfloat16)`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for arg in list(node.args) + [keyword.value for keyword in node.keywords]:
                if isinstance(arg, ast.Attribute) and arg.attr == "bfloat16":
                    return True
                if isinstance(arg, ast.Constant) and arg.value in ("bf16", "bfloat16"):
                    return True
    return False


def fmt(value):
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def inputs_unchanged(report, sent):
    """False when the worker says the kernel wrote into its inputs (checksums of their storage)."""
    after = report.get("inputs_crc")
    return after is None or after == sent

