"""What lesson.yaml's schema cannot see about the entry's arguments and results: dtypes and the
values, draws and scalars written for them; outputs, in-place inputs and repeated calls."""
from __future__ import annotations

import re
from typing import Any, Callable

INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "bool")
FLOAT_NUMBER = re.compile(r"^[+-]?(nan|inf|(\d+\.?\d*|\.\d+)(e[+-]?\d+)?)$")
INTEGER_NUMBER = re.compile(r"^([+-]?\d+|min|max|true|false)$")
INTEGER_RANGES = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
                  "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
                  "uint8": (0, 255), "bool": (0, 1)}

Add = Callable[..., None]


def is_integer(dtype: str | None) -> bool:
    return dtype in INTEGER_DTYPES


def value_problem(text: str, dtype: str | None) -> str | None:
    """Why a planted value or scalar written as text does not fit its input's dtype, or None."""
    text = text.strip()
    if not is_integer(dtype):
        if FLOAT_NUMBER.fullmatch(text):
            return None
        return f"'{text}' is not a number (write nan, inf, -inf, -0.0 or a decimal number)"
    if not INTEGER_NUMBER.fullmatch(text):
        return f"'{text}' is not an integer of {dtype} (write a whole number, min or max)"
    if text in ("min", "max", "true", "false"):
        return None if text in ("min", "max") or dtype == "bool" else f"'{text}' is a bool: write 0 or 1"
    low, high = INTEGER_RANGES[dtype]
    return None if low <= int(text) <= high else f"{text} is outside {dtype}'s range [{low}, {high}]"


def check_io(checks: Any, defined: frozenset[str], add: Add) -> None:
    """Every problem of the inputs, outputs, in-place names and calls, reported through add."""
    inputs = {item.name: item for item in checks.inputs}
    for index, item in enumerate(checks.inputs):
        _check_input(item, index, add)
    _check_outputs(checks, inputs, defined, add)
    for index, case in enumerate(checks.cases):
        _check_case_io(case, index, checks, inputs, add)


def _check_input(item: Any, index: int, add: Add) -> None:
    if item.scalar is not None:
        if item.dtype is not None and item.dtype not in ("float32", "int64", "int32"):
            add("a scalar is a Python float (no dtype, or float32) or int (int64 or int32)", "inputs", index, "dtype")
        problem = value_problem(item.scalar, item.dtype)
        if problem:
            add(problem, "inputs", index, "scalar")
        if item.draw is not None:
            add("a scalar input has no draw", "inputs", index, "draw")
        return
    if item.draw is not None:
        _check_draw(item.draw, item.dtype, add, "inputs", index, "draw")


def _check_draw(draw: Any, dtype: str | None, add: Add, *keypath: Any) -> None:
    for bound in ("low", "high"):
        value = getattr(draw, bound)
        if isinstance(value, str) and not is_integer(dtype):
            add(f"a dimension name as a bound draws integers: give the input an integer dtype "
                f"(it has {dtype or 'the case dtype'})", *keypath, bound)
        if is_integer(dtype) and isinstance(value, float) and value != int(value):
            add(f"{value} is not a whole number (an integer input draws integers)", *keypath, bound)
    if is_integer(dtype) and draw.alternate_signs:
        add("alternate_signs is for floating inputs", *keypath, "alternate_signs")


def _check_outputs(checks: Any, inputs: dict, defined: frozenset[str], add: Add) -> None:
    names = [output.name for output in checks.outputs]
    if len(set(names)) != len(names):
        add("output names must be unique", "outputs")
    for index, name in enumerate(checks.inplace):
        item = inputs.get(name)
        if item is None or item.scalar is not None:
            add(f"'{name}' is not a tensor input ({', '.join(n for n, i in inputs.items() if i.scalar is None)})",
                "inplace", index)
        elif name not in names:
            add(f"an in-place input is judged as an output: add {{name: {name}}} to outputs", "inplace", index)
    for index, output in enumerate(checks.outputs):
        if output.name in inputs and output.name not in checks.inplace:
            add(f"'{output.name}' is an input: name it in `inplace` if the entry writes into it, or name the "
                "output otherwise", "outputs", index, "name")
        if is_integer(output.dtype) and output.compare:
            add(f"an {output.dtype} output compares exactly: remove its tolerance", "outputs", index, "compare")
        if is_integer(output.dtype) and output.poison is not None:
            low, high = INTEGER_RANGES[output.dtype]
            if output.poison != int(output.poison) or not low <= output.poison <= high:
                add(f"the poison {output.poison} is not a value of {output.dtype}", "outputs", index, "poison")
        if output.check == "property" and "check" not in defined:
            add("an output judged by property needs reference.py to define check(inputs, got)",
                "outputs", index, "check")
        if output.poison is not None and (output.poison != output.poison or abs(output.poison) == float("inf")):
            add("the poison value must be a finite number", "outputs", index, "poison")


def _check_case_io(case: Any, index: int, checks: Any, inputs: dict, add: Add) -> None:
    for name, draw in case.draw.items():
        if name in inputs:
            _check_draw(draw, inputs[name].dtype, add, "cases", index, "draw", name)
    for name, item in inputs.items():
        draw = case.draw.get(name) or item.draw
        for bound in ("low", "high") if draw is not None and item.scalar is None else ():
            dim = getattr(draw, bound)
            if isinstance(dim, str) and case.dims and dim not in case.dims:
                add(f"dims lacks '{dim}' (the draw of input '{name}')", "cases", index, "dims")
    for output_index, output in enumerate(checks.outputs):
        for dim in output.shape or []:
            if isinstance(dim, str) and case.dims and dim not in case.dims:
                add(f"dims lacks '{dim}' (the shape of output '{output.name}')", "cases", index, "dims")
    if case.calls and checks.inplace:
        add("an in-place entry cannot be called again on the same inputs: declare another case", "cases", index,
            "calls")
    for call_index, call in enumerate(case.calls):
        for name, text in call.items():
            item = inputs.get(name)
            if item is None or item.scalar is None:
                add(f"'{name}' is not a scalar input: a further call changes only scalars", "cases", index, "calls",
                    call_index, name)
                continue
            problem = value_problem(text, item.dtype)
            if problem:
                add(problem, "cases", index, "calls", call_index, name)
