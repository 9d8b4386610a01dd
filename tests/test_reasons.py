"""The reason a student reads must be the right one: lessons 2-4's near variants of their declared
mistakes (the same mistake on another input, mistakes that share a symptom) through the lesson's
own checker, in the interpreter, each told its own reason or the generic one, never another
mistake's; and the gate fails a declared mistake whose checker shows another reason than it names."""

import os

import pytest

from generator.cli import main
from generator.loader import load_content
from generator.render import LessonContext, checker_source
from tests.conftest import REPO, load_checker

pytestmark = pytest.mark.slow

# Each variant: edits (old, new) of the answer code, and the reason shown per case (None: passes).
# Only cases where the variant reads nothing out of bounds, so that every runner shows the same.
L2_LOAD_X = "tl.load(x + offsets * stride_x, mask=mask)"
L2_LOAD_Y = "tl.load(y + offsets * stride_y, mask=mask)"
L2_SUM = f"{L2_LOAD_X} + {L2_LOAD_Y}"
L3_MAX = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"
L4_STORE = "out + rows[:, None] * stride_om + cols[None, :] * stride_on, "
L4_X = "rows[:, None] * stride_xm + cols[None, :] * stride_xn"

LESSONS = {
    "lesson02_vector_add": {
        "cases": ["seed", "sliced_x", "sliced_y", "special_f32"],
        "variants": {
            "both strides taken as 1": (
                [(L2_SUM, "tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask)")],
                {"sliced_x": "strides_ignored", "sliced_y": "strides_ignored"}),
            "y's stride taken as 1": (
                [(L2_LOAD_Y, "tl.load(y + offsets, mask=mask)")], {"sliced_y": "strides_ignored"}),
            "y - x": ([(L2_SUM, f"{L2_LOAD_Y} - {L2_LOAD_X}")], "wrong_operation"),
            "x * y": ([(L2_SUM, f"{L2_LOAD_X} * {L2_LOAD_Y}")], "wrong_operation"),
            "y read twice": ([(L2_SUM, f"{L2_LOAD_Y} + {L2_LOAD_Y}")], "input_not_read"),
            "x alone": ([(L2_SUM, L2_LOAD_X)], "input_not_read"),
            # Two mistakes at once: no single hypothesis reproduces the strided case.
            "x twice, without its stride": (
                [(L2_SUM, "tl.load(x + offsets, mask=mask) + tl.load(x + offsets, mask=mask)")],
                {"seed": "input_not_read", "sliced_x": "wrong_value", "sliced_y": "input_not_read",
                 "special_f32": "input_not_read"}),
        },
    },
    "lesson03_relu": {
        "cases": ["seed", "block_1", "tail_1", "special_f32"],
        "variants": {
            "tl.where(x >= 0)": ([(L3_MAX, "tl.where(xv >= 0.0, xv, 0.0)")], {"special_f32": "nan_dropped"}),
            # min for max, in each of its forms; one negative element cannot tell it from no clamp.
            "tl.minimum": ([(L3_MAX, "tl.minimum(xv, 0.0)")],
                           {"seed": "min_for_max", "block_1": "min_for_max", "tail_1": "not_clamped",
                            "special_f32": "min_for_max"}),
            "tl.where, branches swapped": ([(L3_MAX, "tl.where(xv > 0.0, 0.0, xv)")],
                                           {"seed": "min_for_max", "block_1": "min_for_max",
                                            "tail_1": "not_clamped", "special_f32": "min_for_max"}),
            "identity": ([(L3_MAX, "xv")], "not_clamped"),
            # Negating is not ReLU's absolute value: half the wrong values are not |x|.
            "negated": ([(L3_MAX, "-xv")], {"seed": "wrong_value", "block_1": "wrong_value",
                                            "tail_1": "negatives_flipped", "special_f32": "wrong_value"}),
            "zeros": ([(L3_MAX, "tl.zeros_like(xv)")], {"seed": "positives_zeroed", "block_1": "positives_zeroed",
                                                        "tail_1": None, "special_f32": "positives_zeroed"}),
            "-inf * 0": ([(L3_MAX, "tl.where(xv > 0.0, xv, xv * 0.0)")], {"special_f32": "inf_wrong"}),
            # Clamped at 1, not 0: infinities are not what is wrong.
            "max(x, 1)": ([(L3_MAX, "tl.maximum(xv, 1.0, propagate_nan=tl.PropagateNan.ALL)")], "wrong_value"),
        },
    },
    "lesson04_add_bias": {
        "cases": ["seed", "transposed", "sliced", "bias_sliced", "special_f32"],
        "variants": {
            "bias without its stride": ([("bias + cols * stride_b", "bias + cols")], {"bias_sliced": "bias_strides_ignored"}),
            "bias along the rows": ([("xv + bv[None, :]", "xv + bv[:, None]")], "bias_wrong_axis"),
            "bias left out": ([("xv + bv[None, :]", "xv + 0.0 * bv[None, :]")], "wrong_value"),
            "x with out's strides": ([(L4_X, "rows[:, None] * stride_om + cols[None, :] * stride_on")],
                                     {"sliced": "x_misread"}),
            "x without its column stride": ([(L4_X, "rows[:, None] * stride_xm + cols[None, :]")],
                                            {"transposed": "x_misread"}),
            "out as if contiguous": ([(L4_STORE, "out + rows[:, None] * N + cols[None, :], ")], {"transposed": "misplaced"}),
            "out without its column stride": ([(L4_STORE, "out + rows[:, None] * stride_om + cols[None, :], ")],
                                              {"transposed": "unwritten"}),
            "grid axes swapped": ([("grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))",
                                    "grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, BLOCK_M))")],
                                  {"transposed": "unwritten", "sliced": "unwritten", "bias_sliced": "unwritten"}),
        },
    },
}


def answer_checker(tmp_path, lesson_id):
    """The lesson's English answer-edition check.py alone, in tmp_path, loaded: (module, context)."""
    content = load_content(REPO / "content")
    lesson = next(item for item in content.published if item.spec.id == lesson_id)
    ctx = LessonContext(content, lesson, "en", "answer")
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "check.py").write_text(checker_source(ctx), encoding="utf-8")
    return load_checker(pack), ctx


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_near_variants_get_their_own_reason_or_the_generic_one(lesson_id, tmp_path):
    spec = LESSONS[lesson_id]
    checker, ctx = answer_checker(tmp_path, lesson_id)
    lesson = ctx.lesson
    pack = tmp_path / "pack"
    checker.LESSON["cases"] = [case for case in checker.LESSON["cases"] if case["id"] in spec["cases"]]
    answer = ctx.code(answer=True)
    units = []
    for number, (edits, _) in enumerate(spec["variants"].values()):
        code = answer
        for old, new in edits:
            assert code.count(old) == 1, old
            code = code.replace(old, new)
        path = tmp_path / f"v{number}" / lesson.spec.kernel_file
        path.parent.mkdir()
        path.write_text(code, encoding="utf-8")
        units.append({"id": str(number), "path": str(path)})
    cwd = os.getcwd()
    os.chdir(pack)
    try:
        session = checker.Session(True, checker=str(pack / "check.py"))
        try:
            results = checker.check_units(units, 2, 120, session)
        finally:
            session.close()
    finally:
        os.chdir(cwd)
    wrong = []
    for number, (name, (_, want)) in enumerate(spec["variants"].items()):
        shown = {case["id"]: case.get("reason") if case["status"] == "fail" else case["status"]
                 for case in results[str(number)]["cases"]}
        expected = {case: want.get(case, "pass") if isinstance(want, dict) else want for case in spec["cases"]}
        expected = {case: "pass" if reason is None else reason for case, reason in expected.items()}
        if shown != expected:
            wrong.append(f"{name}: shown {shown}, expected {expected}")
    assert not wrong, "\n".join(wrong)


def test_classify_gets_the_inputs_storage_only_when_it_asks(tmp_path):
    """A classify of 5 parameters gets views (each input's whole storage, strides, offset); one of
    4 keeps working without them."""
    import torch
    checker, _ = answer_checker(tmp_path, "lesson04_add_bias")
    case = next(c for c in checker.LESSON["cases"] if c["id"] == "bias_sliced")
    made = checker.make_inputs(torch, case)
    bias = dict((name, view) for name, _, view in made)["bias"]
    flat, strides, offset = checker.storage_views(torch, made, "cpu")["bias"]
    assert strides == (2,) and offset == 0 and flat.dtype == torch.float64 and flat.numel() == 2 * bias.numel()
    assert torch.equal(flat[::2], bias.double())
    seen = []

    def four(inputs, expected, got, bad):
        seen.append(4)
        return "misplaced"

    def five(inputs, expected, got, bad, views):
        seen.append(sorted(views))
        return "x_misread"

    expected, got = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    bad = got != expected
    storage = lambda: checker.storage_views(torch, made, "cpu")   # noqa: E731
    try:
        for classify, reason in ((four, "misplaced"), (five, "x_misread")):
            checker.REFERENCE.clear()
            checker.REFERENCE["classify"] = classify
            assert checker.classify(torch, {}, expected, got, bad, storage) == reason
    finally:
        checker.REFERENCE.clear()
    assert seen == [4, ["bias", "x"]]


def test_the_gate_fails_a_mistake_whose_reason_is_not_the_one_shown(tmp_path, capsys):
    """The example course of `coursepack init`, its store_unmasked mistake declared with the wrong
    reason: verification fails and says which case, what the checker shows and what was declared."""
    assert main(["init", str(tmp_path / "course")]) == 0
    content = tmp_path / "course" / "content"
    lesson = content / "lessons" / "lesson01_scale" / "lesson.yaml"
    text = lesson.read_text(encoding="utf-8")
    assert text.count("reason: wrote_past_end}") == 1
    lesson.write_text(text.replace("reason: wrote_past_end}", "reason: wrong_value}"), encoding="utf-8")
    code = main(["build", "--content", str(content), "--runner", "interpreter", "--no-notebook", "-j", "2"])
    err = capsys.readouterr().err
    assert code == 1
    assert "mistake:store_unmasked" in err
    for case in ("small", "tail"):
        assert f"{case}: the checker shows 'wrote_past_end', the mistake declares 'wrong_value'" in err, err


def test_lesson4_tells_the_wrong_axis_in_bfloat16_and_nothing_by_chance():
    """bfloat16 cases run on a GPU only (the interpreter skips them), so lesson 4's classify is
    called here on the outputs such kernels give: the bias along the rows is found in bfloat16 as
    in float32 (the lookup is judged against chance, not refused for a type with few values), and
    wrong values that no bias of another column explains get the generic reason."""
    import importlib.util
    import zlib

    import torch
    spec = importlib.util.spec_from_file_location(
        "lesson4_reference", REPO / "content" / "lessons" / "lesson04_add_bias" / "reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)

    def draw(shape, name):
        generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        return torch.rand(shape, generator=generator, dtype=torch.float64) * 16 - 8

    rows, cols, block = 100, 200, 32
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x, b = draw((rows, cols), "x").to(dtype).double(), draw((cols,), "bias").to(dtype).double()

        def rounded(values):
            return values.to(dtype).double()

        expected = rounded(x + b[None, :])
        m, n = torch.arange(rows)[:, None], torch.arange(cols)[None, :]
        column = (n // block) * block + m % block    # the kernel's `xv + bv[:, None]`, 32 x 32 tiles
        along_rows = rounded(x + torch.where(column < cols, b[column.clamp(max=cols - 1)], torch.zeros(())))
        inputs = {"x": x, "bias": b[None, :].expand(rows, cols)}
        assert reference.classify(inputs, expected, along_rows, along_rows != expected) == "bias_wrong_axis", dtype
        for name, got in {"no bias": x, "bias twice": rounded(x + 2 * b[None, :]), "x twice": rounded(2 * x + b[None, :]),
                          "x - bias": rounded(x - b[None, :])}.items():
            assert reference.classify(inputs, expected, got, got != expected) is None, (dtype, name)
