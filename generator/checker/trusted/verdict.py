"""A case's verdict from the data a worker handed back: shape, dtype, stray writes, values compared
with the trusted reference, and the most telling reason. Runs only in the trusted process."""
import ast
import inspect

from ..shared.common import LESSON, outputs
from .cases import input_fill, reference_namespace, returned
from ..shared.protocol import DTYPES, ProtocolError, filled, read_tensor

MAX_NAME = 80   # a worker's free text (a type's name, an error) is cut to a length


def judge(torch, case, made, expected, scale, report, payload, spec=None, band=None):
    """The result of one output of a case: report is the worker's header for it, payload its
    bytes; spec the output's declaration (outputs(), the first when None); band what its
    memory held before the call (None: what the worker's own poisoned buffers hold)."""
    return judge_output(torch, case, made, expected, scale, report, payload, spec, band)[0]


def judge_output(torch, case, made, expected, scale, report, payload, spec=None, band=None):
    """(result, the output as read, or None): see judge."""
    spec = spec or outputs()[0]
    if band is None:
        band = worker_poison(torch, expected.dtype)
    output = report.get("output")
    if output is None:
        got_type = str(report.get("got_type", "?"))[:MAX_NAME]
        return {"status": "fail", "reason": "not_tensor", "got_type": got_type}, None
    dtype = output.get("dtype") if isinstance(output, dict) else None
    size = _size(output)
    guard = report.get("guard")
    guard_elements = guard.get("elements", 0) if isinstance(guard, dict) else 0
    if not isinstance(guard_elements, int) or not 0 <= guard_elements <= 1 << 16 or dtype not in DTYPES:
        raise ProtocolError(f"an output described as {output!r} with guard {guard!r}")
    got = read_tensor(torch, output, payload[:size])
    if tuple(got.shape) != tuple(expected.shape):
        return {"status": "fail", "reason": "wrong_shape", "expected": list(expected.shape), "got": list(got.shape)}, None
    if got.dtype != expected.dtype:
        return {"status": "fail", "reason": "wrong_dtype", "expected": str(expected.dtype), "got": str(got.dtype)}, None
    if guard_elements:
        stray = _stray_write(torch, guard, payload[size:], got.dtype, got.numel(), band)
        if stray is not None:
            return {"status": "fail", "reason": "wrote_past_end", "index": stray, "n": got.numel()}, None
    if spec.get("check") == "property":   # its values are judged by the lesson's check(), once all are written
        return _written(torch, got, band), got
    integral = not expected.dtype.is_floating_point
    got = got.to(expected.device)
    if expected.dtype == torch.bool:   # its bytes: 0xFF (unwritten) is neither False nor True
        got, expected = got.view(torch.uint8), expected.to(torch.uint8)
    if not expected.dtype.is_floating_point:
        bad = got.long() != expected.long()   # integers: exact, in their own range
        got, want = got.double(), expected.double()
    else:
        got, want = got.double(), expected.double()
        bad = compare(torch, want, got, case.get("dtype", "float32"), scale, tolerance_of(spec, case))
    count = int(bad.sum())
    if not count:
        return {"status": "pass", "n": got.numel()}, got
    first = tuple(int(i) for i in bad.nonzero()[0])
    inputs = broadcast_inputs(torch, made, got.shape, want.device)
    # classify sees an input that does not broadcast to the output (a matrix factor) as it is
    seen = {name: view.double().to(want.device) if inputs[name] is None else inputs[name] for name, _, view in made}
    reason = classify(torch, seen, want, got, bad, lambda: storage_views(torch, made, want.device),
                      output=spec["name"], poison=band)
    return {"status": "fail", "reason": reason, "position": list(first),
            "inputs": {name: _shown(value, first, integral) if value is not None
                       else "×".join(map(str, seen[name].shape))
                       for (name, value), integral in zip(inputs.items(), _integral(made))},
            "expected": _shown(want, first, integral), "got": _shown(got, first, integral), "count": count,
            "n": got.numel()}, None


def _written(torch, got, poison):
    """A property output's result before check(): a pass, or unwritten where an element still holds
    what its area held before the call (the poison, or this side's random bytes)."""
    if poison is None or not got.numel():
        return {"status": "pass", "n": got.numel()}
    held = poison.reshape(got.shape).to(got.device) if hasattr(poison, "shape") else poison
    seen = got.view(torch.uint8) if got.dtype == torch.bool else got
    left = seen.double() == held
    if not bool(left.any()):
        return {"status": "pass", "n": got.numel()}
    first = tuple(int(i) for i in left.nonzero()[0])
    return {"status": "fail", "reason": "unwritten", "property": True, "count": int(left.sum()),
            "detail": f"{', '.join(map(str, first))}: {fmt(seen.double()[first])} ({int(left.sum())}/{got.numel()})"}


def case_result(torch, prepared, results, names, got_by_call):
    """The case's result from its outputs', then the lesson's property check on what was read."""
    result = combine(prepared.case, results, names)
    if result["status"] == "pass":
        result = property_failure(torch, prepared.made, got_by_call) or result
    return result


def judge_reported(torch, prepared, report, payload):
    """The case's result from the worker's own report of its outputs (no region was shared): its
    word alone, which the trusted side's other evidence can only make worse."""
    entries, pieces = split_outputs(report, payload, len(prepared.expected))
    results, names, got_by_call = [], [], []
    for call, expected_outputs in enumerate(prepared.expected):
        got_by_call.append({})
        for index, expected in enumerate(expected_outputs):
            spec = outputs()[index]
            band = input_fill(torch, expected.dtype) if not returned(index) else None
            result, got = judge_output(torch, prepared.case, prepared.made, expected, prepared.scale[call][index],
                                       entries[call][index], pieces[call][index], spec, band)
            results.append(result)
            names.append((call, spec["name"]))
            if got is not None:
                got_by_call[-1][spec["name"]] = got
    return case_result(torch, prepared, results, names, got_by_call)


def split_outputs(report, payload, calls):
    """The worker's entries, one per call and output ([[entry]]), and the bytes each sent."""
    entries = report.get("outputs")
    count = len(outputs())
    if not isinstance(entries, list) or len(entries) != calls * count:
        raise ProtocolError(f"a case report with {len(entries) if isinstance(entries, list) else 'no'} outputs "
                            f"for {calls} calls of {count}")
    pieces, at = [], 0
    for entry in entries:
        size = entry.get("nbytes", 0) if isinstance(entry, dict) else 0
        pieces.append(payload[at:at + size])
        at += size
    if at != len(payload):
        raise ProtocolError(f"{len(payload)} bytes for outputs that describe {at}")
    return ([entries[c * count:(c + 1) * count] for c in range(calls)],
            [pieces[c * count:(c + 1) * count] for c in range(calls)])


def poison_value(torch, spec, dtype):
    """What an output's area holds before the kernel runs: the output's poison or the lesson's, as
    a value of dtype (for a dtype that cannot hold it: an integer's minimum, a float8's most
    negative value; bool: True)."""
    poison = spec.get("poison")
    poison = float(LESSON["poison"] if poison is None else poison)
    if dtype == torch.bool:
        return 1
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return int(poison) if poison == int(poison) and info.min <= poison <= info.max else info.min
    held = float(torch.tensor(poison, dtype=torch.float64).to(dtype).double())
    return held if held == poison else -float(torch.finfo(dtype).max)


def random_poison(torch, spec, dtype):
    """Whether an output's area is poisoned with random bytes instead of one value: an integer, bool
    or float8 output that declares no poison of its own (every value of such a dtype may be a right
    result; bool: bytes 0xFF, neither False nor True)."""
    if spec.get("poison") is not None and dtype != torch.bool:
        return False
    return dtype == torch.bool or not dtype.is_floating_point or dtype.itemsize == 1


def worker_poison(torch, dtype):
    """What the worker's own poisoned buffers hold (floating outputs; the lesson's poison in the
    dtype, NaN where the dtype cannot hold it)."""
    if not dtype.is_floating_point:
        return None
    return float(filled(torch, 1, float(LESSON["poison"]), dtype, "cpu").double())


def tolerance_of(spec, case):
    """The output's tolerance for the case's dtype: its own, else the lesson's."""
    compare_by_dtype = spec.get("compare")
    if compare_by_dtype is None:
        compare_by_dtype = LESSON.get("compare") or {}
    return compare_by_dtype.get(case.get("dtype", "float32"))


def combine(case, results, names):
    """A case's result from its outputs' (one per call and output, in order): the first failure,
    named, or a pass. names: (call, output name) per result."""
    labelled = LESSON.get("named_outputs") or len(outputs()) > 1
    for result, (call, name) in zip(results, names):
        if result["status"] != "pass":
            extra = {"output": name} if labelled else {}
            if call:
                extra.update(call=call, call_values=dict(case["calls"][call - 1]))
            return dict(result, **extra)
    return {"status": "pass", "n": sum(result.get("n", 0) for result in results)}


def property_failure(torch, made, got_by_call):
    """The first failure the lesson's check(inputs, got) finds (a result), or None. Its failures are
    dicts {"output", "reason", "detail"}; a reason the lesson did not declare is wrong_value."""
    lesson_check = reference_namespace().get("check")
    if lesson_check is None:
        return None
    inputs = {name: view for name, _, view in made}
    try:
        found = lesson_check(inputs, got_by_call)
    except Exception as exc:   # the lesson's check could not judge these values: they do not pass
        found = [{"reason": "wrong_value", "detail": f"{type(exc).__name__}: {exc}"}]
    if not found:
        return None
    first = found[0] if isinstance(found[0], dict) else {"detail": str(found[0])}
    reason = first.get("reason")
    reason = reason if reason in LESSON["lesson_reasons"] or reason in LESSON_MAY_GIVE else "wrong_value"
    result = {"status": "fail", "reason": reason, "property": True, "detail": str(first.get("detail", ""))[:300],
              "count": len(found)}
    if first.get("output") is not None:
        result["output"] = str(first["output"])[:MAX_NAME]
    return result


def _size(output):
    if not isinstance(output, dict) or output.get("dtype") not in DTYPES or not isinstance(output.get("shape"), list):
        raise ProtocolError(f"an output described as {output!r}")
    numel = 1
    for d in output["shape"]:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise ProtocolError(f"an output of shape {output['shape']!r}")
        numel *= d
    return numel * DTYPES[output["dtype"]]


def _stray_write(torch, guard, data, dtype, numel, poison):
    """Offset (in elements, from the output's first) of a write into the guard bands (which hold
    poison; NaN: an in-place input's), or None."""
    elements, span = guard.get("elements"), guard.get("span")
    itemsize = DTYPES[str(dtype).replace("torch.", "")]
    if not isinstance(span, int) or isinstance(span, bool) or span < numel or len(data) != 2 * elements * itemsize:
        raise ProtocolError(f"guard bands described as {guard!r} with {len(data)} bytes")
    bands = torch.frombuffer(data, dtype=dtype).double() if data else torch.empty(0, dtype=torch.float64)
    changed = ~torch.isnan(bands) if poison != poison else bands != poison
    before, after = changed[:elements], changed[elements:]
    if bool(after.any()):
        return span + int(after.nonzero()[0])
    if bool(before.any()):
        return int(before.nonzero()[-1]) - elements
    return None


def compare(torch, expected, got, dtype, scale=None, tolerance=None):
    """Bool tensor: True where got differs from expected (NaN equals NaN, +0 equals -0); with a
    tolerance (the lesson's for dtype, unless one is given), |got - expected| <= atol + rtol *
    scale (scale: |expected| unless the lesson's error_scale gives another) counts as equal for
    finite values."""
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    if tolerance is None:
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
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "output" for p in params) >= 5


def _takes_output(fn):
    """Whether the lesson's classify takes the keyword output (the failing output's name)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "output" or p.kind is p.VAR_KEYWORD for p in params)


def classify(torch, inputs, expected, got, bad, views=None, output=None, poison=None):
    """The most telling reason among the differing elements: the lesson's own classifier first
    (its hypotheses reproduce values, poison included: a store at the wrong addresses leaves
    poison too), then poison left behind, then a read past the end of an input, then a plain wrong
    value. views: a function giving storage_views, called only for a lesson classify that takes
    them. A lesson classify that returns "wrong_value" has ruled the other reasons out."""
    reason = _lesson_reason(inputs, expected, got, bad, views, output)
    if reason is not None:
        return reason
    poison = float(LESSON["poison"]) if poison is None else poison
    if hasattr(poison, "shape"):   # random bytes per element: compared where they lie
        poison = poison.reshape(got.shape).to(got.device)
    if bool(((got == poison) & (expected != poison) & bad).any()):
        return "unwritten"
    if read_past_end(torch, inputs, expected, got, bad):
        return "read_past_end"
    return "wrong_value"


# Generic reasons a lesson's classify may give itself: a read past the end that its own hypothesis
# reproduces, or the plain reason where it knows the generic test for such a read would be wrong.
LESSON_MAY_GIVE = ("read_past_end", "wrong_value")


def _lesson_reason(inputs, expected, got, bad, views, output=None):
    lesson_classify = reference_namespace().get("classify")
    if lesson_classify is None:
        return None
    named = {"output": output} if _takes_output(lesson_classify) else {}
    try:
        if views is not None and _takes_views(lesson_classify):
            reason = lesson_classify(inputs, expected, got, bad, views(), **named)
        else:
            reason = lesson_classify(inputs, expected, got, bad, **named)
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


def _integral(made):
    """Per argument: whether it holds integers (an integer tensor, a Python int)."""
    return [(not view.dtype.is_floating_point) if hasattr(view, "dtype") else isinstance(view, int)
            for _, _, view in made]


def _shown(value, first, integral):
    value = value[first] if hasattr(value, "shape") else value
    return str(int(value)) if integral and float(value) == float(value) else fmt(value)


def fmt(value):
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)
