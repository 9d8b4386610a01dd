"""The reason a student reads must be the right one: near variants of each lesson's declared
mistakes (the same mistake on another input, mistakes that share a symptom) and whole kernels
written as students write them (the Triton tutorial's softmax, an online softmax, float16
arithmetic, a matmul without its K mask, bfloat16 tiles, a float16 accumulator) through the
lesson's own checker, in the interpreter, each told its own reason or the generic one, never
another mistake's, in both languages; and the gate fails a declared mistake whose checker shows
another reason than it names."""

import os

import pytest

from generator.cli import main
from generator.content.loader import load_content
from generator.render.render import LessonContext, checker_source
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
L5_LOAD = 'xv = tl.load(x + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)'
L5_NUM = "num = tl.exp(xv - tl.max(xv, axis=0))"
L5_STORE = "out + row * stride_om + cols * stride_on"
L6_DOT = "acc = tl.dot(av, bv, acc, input_precision=PRECISION)"
L6_ACC = "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"
L6_LOAD_A = "av = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)"
L6_LOAD_B = "bv = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)"

# The Triton tutorial's fused softmax (02-fused-softmax), whole: x's and out's column strides are
# taken to be 1.
TUTORIAL_SOFTMAX = """import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
    numerator = tl.exp(row - tl.max(row, axis=0))
    softmax_output = numerator / tl.sum(numerator, axis=0)
    tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output, mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y
"""

# An online softmax that keeps a running maximum and sum per lane, without the guard for a lane
# whose maximum is still -inf: the padding lanes' exp(-inf - (-inf)) is NaN.
ONLINE_SOFTMAX = """import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x, out, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    d = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        v = tl.load(x + row * stride_xm + (start + cols) * stride_xn, mask=start + cols < N,
                    other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, v)
        d = d * tl.exp(m - new_m) + tl.exp(v - new_m)
        m = new_m
    row_max = tl.max(m, axis=0)
    den = tl.sum(d * tl.exp(m - row_max), axis=0)
    for start in range(0, N, BLOCK):
        v = tl.load(x + row * stride_xm + (start + cols) * stride_xn, mask=start + cols < N,
                    other=-float("inf")).to(tl.float32)
        tl.store(out + row * stride_om + (start + cols) * stride_on, tl.exp(v - row_max) / den, mask=start + cols < N)


def softmax(x):
    M, N = x.shape
    out = torch.empty_like(x)
    if M == 0 or N == 0:
        return out
    softmax_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                         BLOCK=min(triton.next_power_of_2(N), 1024))
    return out
"""

LESSONS = {
    "lesson02_vector_add": {
        "cases": ["seed", "sliced_x", "sliced_y", "special_f32"],
        "variants": {
            "both strides taken as 1": (
                [(L2_SUM, "tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask)")],
                {"sliced_x": "strides_ignored", "sliced_y": "strides_ignored"},
            ),
            "y's stride taken as 1": (
                [(L2_LOAD_Y, "tl.load(y + offsets, mask=mask)")],
                {"sliced_y": "strides_ignored"},
            ),
            "y - x": ([(L2_SUM, f"{L2_LOAD_Y} - {L2_LOAD_X}")], "wrong_operation"),
            "x * y": ([(L2_SUM, f"{L2_LOAD_X} * {L2_LOAD_Y}")], "wrong_operation"),
            "y read twice": ([(L2_SUM, f"{L2_LOAD_Y} + {L2_LOAD_Y}")], "input_not_read"),
            "x alone": ([(L2_SUM, L2_LOAD_X)], "input_not_read"),
            # x read one element further: the last element reads the NaN after x (the special
            # values hold NaN and infinities themselves: NaN there proves nothing).
            "x one element further": (
                [(L2_LOAD_X, "tl.load(x + (offsets + 1) * stride_x, mask=mask)")],
                {
                    "seed": "read_past_end",
                    "sliced_x": "read_past_end",
                    "sliced_y": "read_past_end",
                    "special_f32": "wrong_value",
                },
            ),
            # Two mistakes at once: no single hypothesis reproduces the strided case.
            "x twice, without its stride": (
                [(L2_SUM, "tl.load(x + offsets, mask=mask) + tl.load(x + offsets, mask=mask)")],
                {
                    "seed": "input_not_read",
                    "sliced_x": "wrong_value",
                    "sliced_y": "input_not_read",
                    "special_f32": "input_not_read",
                },
            ),
        },
    },
    "lesson03_relu": {
        "cases": ["seed", "block_1", "tail_1", "special_f32"],
        "variants": {
            "tl.where(x >= 0)": (
                [(L3_MAX, "tl.where(xv >= 0.0, xv, 0.0)")],
                {"special_f32": "nan_dropped"},
            ),
            # min for max, in each of its forms; one negative element cannot tell it from no clamp.
            "tl.minimum": (
                [(L3_MAX, "tl.minimum(xv, 0.0)")],
                {
                    "seed": "min_for_max",
                    "block_1": "min_for_max",
                    "tail_1": "not_clamped",
                    "special_f32": "min_for_max",
                },
            ),
            "tl.where, branches swapped": (
                [(L3_MAX, "tl.where(xv > 0.0, 0.0, xv)")],
                {
                    "seed": "min_for_max",
                    "block_1": "min_for_max",
                    "tail_1": "not_clamped",
                    "special_f32": "min_for_max",
                },
            ),
            "identity": ([(L3_MAX, "xv")], "not_clamped"),
            # Negating is not ReLU's absolute value: half the wrong values are not |x|.
            "negated": (
                [(L3_MAX, "-xv")],
                {
                    "seed": "wrong_value",
                    "block_1": "wrong_value",
                    "tail_1": "negatives_flipped",
                    "special_f32": "wrong_value",
                },
            ),
            "zeros": (
                [(L3_MAX, "tl.zeros_like(xv)")],
                {
                    "seed": "positives_zeroed",
                    "block_1": "positives_zeroed",
                    "tail_1": None,
                    "special_f32": "positives_zeroed",
                },
            ),
            "-inf * 0": (
                [(L3_MAX, "tl.where(xv > 0.0, xv, xv * 0.0)")],
                {"special_f32": "inf_wrong"},
            ),
            "x one element further": (
                [
                    (
                        "xv = tl.load(x + offsets, mask=mask)",
                        "xv = tl.load(x + offsets + 1, mask=mask)",
                    )
                ],
                {
                    "seed": "read_past_end",
                    "block_1": "read_past_end",
                    "tail_1": "read_past_end",
                    "special_f32": "wrong_value",
                },
            ),
            # Clamped at 1, not 0: infinities are not what is wrong.
            "max(x, 1)": (
                [(L3_MAX, "tl.maximum(xv, 1.0, propagate_nan=tl.PropagateNan.ALL)")],
                "wrong_value",
            ),
        },
    },
    "lesson04_add_bias": {
        "cases": ["seed", "transposed", "sliced", "bias_sliced", "special_f32"],
        "variants": {
            "bias without its stride": (
                [("bias + cols * stride_b", "bias + cols")],
                {"bias_sliced": "bias_strides_ignored"},
            ),
            "bias along the rows": ([("xv + bv[None, :]", "xv + bv[:, None]")], "bias_wrong_axis"),
            "bias left out": ([("xv + bv[None, :]", "xv + 0.0 * bv[None, :]")], "wrong_value"),
            "x with out's strides": (
                [(L4_X, "rows[:, None] * stride_om + cols[None, :] * stride_on")],
                {"sliced": "x_misread"},
            ),
            "x without its column stride": (
                [(L4_X, "rows[:, None] * stride_xm + cols[None, :]")],
                {"transposed": "x_misread"},
            ),
            "out as if contiguous": (
                [(L4_STORE, "out + rows[:, None] * N + cols[None, :], ")],
                {"transposed": "misplaced"},
            ),
            "out without its column stride": (
                [(L4_STORE, "out + rows[:, None] * stride_om + cols[None, :], ")],
                {"transposed": "unwritten"},
            ),
            "grid axes swapped": (
                [
                    (
                        "grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))",
                        "grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, BLOCK_M))",
                    )
                ],
                {"transposed": "unwritten", "sliced": "unwritten", "bias_sliced": "unwritten"},
            ),
            # x read one row further down: the last row reads the NaN after x; the special values
            # hold NaN and infinities themselves, so NaN there proves nothing.
            "x one row down": (
                [(L4_X, "(rows[:, None] + 1) * stride_xm + cols[None, :] * stride_xn")],
                {
                    "seed": "read_past_end",
                    "transposed": "read_past_end",
                    "sliced": "read_past_end",
                    "bias_sliced": "read_past_end",
                    "special_f32": "wrong_value",
                },
            ),
        },
    },
    "lesson05_softmax": {
        "cases": [
            "seed",
            "random_f32",
            "random_f16",
            "tail_1025",
            "transposed",
            "sliced",
            "overflow_f32",
            "special_f32",
        ],
        "variants": {
            # x's and out's column strides both taken as 1: the store's pattern shows first.
            "the tutorial's kernel": (TUTORIAL_SOFTMAX, {"transposed": "out_strides"}),
            # NaN in every row with padding lanes (N = 1025 in blocks of 1024 has none left by the
            # second block); transposed: what a read past the end of x gives too, so generic.
            "online softmax without the -inf guard": (
                ONLINE_SOFTMAX,
                {
                    "seed": "nan_from_inf",
                    "random_f32": "nan_from_inf",
                    "random_f16": "nan_from_inf",
                    "transposed": "wrong_value",
                    "sliced": "nan_from_inf",
                    "overflow_f32": "nan_from_inf",
                    "special_f32": "nan_from_inf",
                },
            ),
            # float16 subtraction, exponential rounded to float16, float16 sum and division: values
            # off by a few units of float16 (or too small for it); where the sum's rounding
            # dominates, a common factor (whose text names a float16 sum too).
            "float16 arithmetic": (
                [
                    (L5_LOAD, L5_LOAD.replace("tl.float32)", "tl.float16)")),
                    (
                        L5_NUM,
                        "num = tl.exp((xv - tl.max(xv, axis=0)).to(tl.float32)).to(tl.float16)",
                    ),
                    ("den = tl.sum(num, axis=0)", "den = tl.sum(num, axis=0).to(tl.float16)"),
                ],
                {
                    "seed": "bad_normalizer",
                    "random_f32": "imprecise",
                    "random_f16": "bad_normalizer",
                    "tail_1025": "imprecise",
                    "transposed": "imprecise",
                    "sliced": "imprecise",
                    "overflow_f32": "imprecise",
                    "special_f32": "imprecise",
                },
            ),
            # The minimum subtracted (over the row's own lanes): e^(x - min) overflows where a row
            # spreads over more than 88.7, and inf / inf is NaN from finite inputs: no read past
            # the end, and no hypothesis of this lesson's reproduces it.
            "the row's minimum subtracted": (
                [(L5_NUM, 'num = tl.exp(xv - tl.min(tl.where(mask, xv, float("inf")), axis=0))')],
                {"overflow_f32": "wrong_value", "special_f32": "wrong_value"},
            ),
            "out as if contiguous": (
                [(L5_STORE, "out + row * N + cols")],
                {"transposed": "out_strides"},
            ),
            "x with out's strides": (
                [
                    (
                        "x + row * stride_xm + cols * stride_xn",
                        "x + row * stride_om + cols * stride_on",
                    )
                ],
                {"sliced": "x_misread"},
            ),
            "x without its column stride": (
                [("x + row * stride_xm + cols * stride_xn", "x + row * stride_xm + cols")],
                {"transposed": "x_misread"},
            ),
            # Every row reads past its end (into the next row, the last past x): NaN or other values.
            "load without its mask": (
                [(L5_LOAD, L5_LOAD.replace(', mask=mask, other=-float("inf"))', ")"))],
                {
                    "seed": "read_past_end",
                    "random_f32": "read_past_end",
                    "random_f16": "read_past_end",
                    "tail_1025": "read_past_end",
                    "transposed": "wrong_value",
                    "sliced": "read_past_end",
                    "overflow_f32": "read_past_end",
                    "special_f32": "read_past_end",
                },
            ),
        },
    },
    "lesson06_matmul": {
        "cases": [
            "seed",
            "random_f32",
            "random_f16",
            "tail_k",
            "k_small",
            "b_transposed",
            "a_sliced",
            "long_k",
        ],
        "variants": {
            # The K tail read past the end of A's rows and of B (NaN after the last row); the
            # transposed B reads its next column, so values there are wrong and its last column NaN.
            "no K mask": (
                [(L6_LOAD_A, "av = tl.load(a_ptrs)"), (L6_LOAD_B, "bv = tl.load(b_ptrs)")],
                {
                    "seed": "read_past_end",
                    "random_f32": "read_past_end",
                    "random_f16": "read_past_end",
                    "tail_k": "read_past_end",
                    "k_small": "read_past_end",
                    "b_transposed": "read_past_end",
                    "a_sliced": "read_past_end",
                },
            ),
            "A without its K mask": (
                [(L6_LOAD_A, "av = tl.load(a_ptrs)")],
                {
                    "seed": "read_past_end",
                    "random_f32": "read_past_end",
                    "random_f16": "read_past_end",
                    "tail_k": "read_past_end",
                    "k_small": "read_past_end",
                    "b_transposed": "read_past_end",
                    "a_sliced": "read_past_end",
                },
            ),
            # A float16 accumulator, as a student writes it: only long_k's sums grow large enough.
            "float16 accumulator": (
                [
                    (L6_ACC, L6_ACC.replace("tl.float32", "tl.float16")),
                    (L6_DOT, "acc += tl.dot(av, bv, input_precision=PRECISION).to(tl.float16)"),
                ],
                {"long_k": "imprecise"},
            ),
            # B's strides swapped: other elements of B where the reads stay inside it (the seed's
            # 3 x 2, the transposed B); past its end where K > N or the pointers advance by K's stride.
            "B with its strides swapped": (
                [
                    (
                        "rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn",
                        "rk[:, None] * stride_bn + (rn % N)[None, :] * stride_bk",
                    )
                ],
                {
                    "seed": "b_misread",
                    "random_f32": "read_past_end",
                    "random_f16": "read_past_end",
                    "tail_k": "read_past_end",
                    "k_small": "read_past_end",
                    "b_transposed": "b_misread",
                    "a_sliced": "read_past_end",
                    "long_k": "read_past_end",
                },
            ),
            "A as if contiguous": (
                [
                    (
                        "(rm % M)[:, None] * stride_am + rk[None, :] * stride_ak",
                        "(rm % M)[:, None] * K + rk[None, :]",
                    )
                ],
                {"a_sliced": "a_misread"},
            ),
        },
    },
}
# In the interpreter only: code that makes bfloat16 itself is told that the interpreter cannot judge it.
INTERPRETER_ONLY = {
    "lesson06_matmul": {
        "bfloat16 tiles": (
            [(L6_DOT, "acc = tl.dot(av.to(tl.bfloat16), bv.to(tl.bfloat16), acc)")],
            "bf16_interpreter",
        ),
    },
}


def answer_checker(tmp_path, lesson_id, locale="en"):
    """The lesson's answer-edition check.py alone, in tmp_path, loaded: (module, context)."""
    content = load_content(REPO / "content")
    lesson = next(item for item in content.published if item.spec.id == lesson_id)
    ctx = LessonContext(content, lesson, locale, "answer")
    pack = tmp_path / f"pack-{locale}"
    pack.mkdir()
    (pack / "check.py").write_text(checker_source(ctx), encoding="utf-8")
    return load_checker(pack), ctx


def run_variants(tmp_path, lesson_id, variants, cases, interpreter=True):
    """Each variant (edits of the answer code, or a whole file) through the lesson's own checker,
    on these cases: (checker, {variant name: {case id: reason shown, or the status}}, raw results)."""
    checker, ctx = answer_checker(tmp_path, lesson_id)
    pack = tmp_path / "pack-en"
    checker.LESSON["cases"] = [case for case in checker.LESSON["cases"] if case["id"] in cases]
    answer = ctx.code(answer=True)
    units = []
    for number, (edits, _) in enumerate(variants.values()):
        code = edits
        if not isinstance(edits, str):
            code = answer
            for old, new in edits:
                assert code.count(old) == 1, old
                code = code.replace(old, new)
        path = tmp_path / f"v{number}" / ctx.lesson.spec.kernel_file
        path.parent.mkdir()
        path.write_text(code, encoding="utf-8")
        units.append({"id": str(number), "path": str(path)})
    cwd = os.getcwd()
    os.chdir(pack)
    try:
        session = checker.Session(interpreter, checker=str(pack / "check.py"))
        try:
            results = checker.check_units(units, 2, 120, session)
        finally:
            session.close()
    finally:
        os.chdir(cwd)
    shown = {
        name: {
            case["id"]: case.get("reason") if case["status"] == "fail" else case["status"]
            for case in results[str(number)]["cases"]
        }
        for number, name in enumerate(variants)
    }
    return checker, shown, {name: results[str(number)] for number, name in enumerate(variants)}


def wrong_reasons(variants, cases, shown):
    wrong = []
    for name, (_, want) in variants.items():
        expected = {
            case: want.get(case, "pass") if isinstance(want, dict) else want for case in cases
        }
        expected = {case: "pass" if reason is None else reason for case, reason in expected.items()}
        if shown[name] != expected:
            wrong.append(f"{name}: shown {shown[name]}, expected {expected}")
    return wrong


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_near_variants_get_their_own_reason_or_the_generic_one(lesson_id, tmp_path):
    spec = LESSONS[lesson_id]
    variants = spec["variants"] | INTERPRETER_ONLY.get(lesson_id, {})
    checker, shown, results = run_variants(tmp_path, lesson_id, variants, spec["cases"])
    wrong = wrong_reasons(variants, spec["cases"], shown)
    assert not wrong, "\n".join(wrong)
    # What the student reads for each reason, in both languages: the why line of its own text.
    chinese, _ = answer_checker(tmp_path, lesson_id, "zh-CN")
    for result in results.values():
        for case in result["cases"]:
            if case["status"] != "fail" or case["reason"] in (
                "wrong_shape",
                "wrong_dtype",
                "not_tensor",
            ):
                continue
            for module in (checker, chinese):
                why = module.msg("why", text=module.LESSON["reasons"][case["reason"]])
                assert why in module.case_detail(case), (
                    case["id"],
                    case["reason"],
                    module.LESSON["locale"],
                )


@pytest.mark.cuda
@pytest.mark.parametrize("lesson_id", ["lesson05_softmax", "lesson06_matmul"])
def test_the_same_reasons_on_a_gpu(lesson_id, tmp_path):
    """On a GPU the inputs sit in the same NaN guard bands: every variant above shows the same
    reason there (and long_k fails a float16 accumulator, not the answer)."""
    spec = LESSONS[lesson_id]
    variants = {
        name: variant for name, variant in spec["variants"].items() if name not in GPU_ARITHMETIC
    }
    variants["the answer"] = ([], {})
    checker, shown, _ = run_variants(
        tmp_path, lesson_id, variants, spec["cases"], interpreter=False
    )
    for (name, case), allowed in GPU_MAY_DIFFER.items():
        if name in shown and shown[name].get(case) in allowed:
            shown[name][case] = variants[name][1].get(case, "pass")
    wrong = wrong_reasons(variants, spec["cases"], shown)
    assert not wrong, "\n".join(wrong)


# Float16 arithmetic rounds in another order on a GPU (its sums are trees over threads): how far its
# values land, and so which reason, is the hardware's. The tutorial's float16 row may compile (triton
# 3.9.0 for sm_90 does) or be refused by tl.exp, depending on the GPU's triton.
GPU_ARITHMETIC = ("float16 arithmetic",)
GPU_MAY_DIFFER = {("the tutorial's kernel", "random_f16"): ("pass", "error")}


def test_classify_gets_the_inputs_storage_only_when_it_asks(tmp_path):
    """A classify of 5 parameters gets views (each input's whole storage, strides, offset); one of
    4 keeps working without them."""
    import torch

    checker, _ = answer_checker(tmp_path, "lesson04_add_bias")
    case = next(c for c in checker.LESSON["cases"] if c["id"] == "bias_sliced")
    made = checker.make_inputs(torch, case)
    bias = dict((name, view) for name, _, view in made)["bias"]
    flat, strides, offset = checker.storage_views(torch, made, "cpu")["bias"]
    assert (
        strides == (2,)
        and offset == 0
        and flat.dtype == torch.float64
        and flat.numel() == 2 * bias.numel()
    )
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
    storage = lambda: checker.storage_views(torch, made, "cpu")  # noqa: E731
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
    lesson.write_text(
        text.replace("reason: wrote_past_end}", "reason: wrong_value}"), encoding="utf-8"
    )
    code = main(
        ["build", "--content", str(content), "--runner", "interpreter", "--no-notebook", "-j", "2"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "mistake:store_unmasked" in err
    for case in ("small", "tail"):
        assert (
            f"{case}: the checker shows 'wrote_past_end', the mistake declares 'wrong_value'" in err
        ), err


def test_lesson4_tells_the_wrong_axis_in_bfloat16_and_nothing_by_chance():
    """bfloat16 cases run on a GPU only (the interpreter skips them), so lesson 4's classify is
    called here on the outputs such kernels give: the bias along the rows is found in bfloat16 as
    in float32 (the lookup is judged against chance, not refused for a type with few values), and
    wrong values that no bias of another column explains get the generic reason."""
    import importlib.util
    import zlib

    import torch

    spec = importlib.util.spec_from_file_location(
        "lesson4_reference", REPO / "content" / "lessons" / "lesson04_add_bias" / "reference.py"
    )
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
        column = (n // block) * block + m % block  # the kernel's `xv + bv[:, None]`, 32 x 32 tiles
        along_rows = rounded(
            x + torch.where(column < cols, b[column.clamp(max=cols - 1)], torch.zeros(()))
        )
        inputs = {"x": x, "bias": b[None, :].expand(rows, cols)}
        assert (
            reference.classify(inputs, expected, along_rows, along_rows != expected)
            == "bias_wrong_axis"
        ), dtype
        for name, got in {
            "no bias": x,
            "bias twice": rounded(x + 2 * b[None, :]),
            "x twice": rounded(2 * x + b[None, :]),
            "x - bias": rounded(x - b[None, :]),
        }.items():
            assert reference.classify(inputs, expected, got, got != expected) is None, (dtype, name)


def test_bfloat16_made_by_the_code_is_told_apart_from_a_dtype_check(tmp_path):
    """The interpreter's reason for code that makes bfloat16: a conversion or an allocation counts,
    a comparison with the dtype (lesson 5's assertion) does not; only a failing case's value
    reason changes, and the case still fails."""
    checker, _ = answer_checker(tmp_path, "lesson06_matmul")
    makes = checker.makes_bfloat16
    assert makes("y = x.to(tl.bfloat16)") and makes("z = tl.zeros((4,), dtype=tl.bfloat16)")
    assert makes("a = a.to(torch.bfloat16)") and makes('a = a.to(dtype="bf16")')
    assert not makes("assert x.dtype in (torch.float32, torch.float16, torch.bfloat16)")
    assert not makes("# acc = acc.to(tl.bfloat16)\nacc = acc.to(tl.float32)") and not makes(
        "def (:"
    )
    code = "acc = tl.dot(av.to(tl.bfloat16), bv, acc)"
    failed = {"status": "fail", "reason": "wrong_value", "count": 4}
    assert checker.in_interpreter(failed, code) == dict(failed, reason="bf16_interpreter")
    assert (
        checker.in_interpreter(dict(failed, reason="last_slab_only"), code)["reason"]
        == "bf16_interpreter"
    )
    for kept in (
        {"status": "pass"},
        dict(failed, reason="unwritten"),
        dict(failed, reason="wrote_past_end"),
    ):
        assert checker.in_interpreter(kept, code) == kept
    assert checker.in_interpreter(failed, "acc = tl.dot(av, bv, acc)") == failed


def test_nan_is_never_explained_by_a_factor_and_proves_a_read_past_the_end_only_from_finite_inputs():
    """Lesson 5's classify on rows of NaN: no row factor explains them (bad_normalizer was given
    before, the factor of an all-NaN row being NaN), and since its own arithmetic can make NaN
    from finite inputs it rules the generic read past the end out (wrong_value); the generic test
    (lessons whose arithmetic cannot) calls NaN from finite inputs a read past the end, and says
    nothing when an input holds NaN or an infinity."""
    import importlib.util

    import torch
    from generator.checker.trusted import verdict

    spec = importlib.util.spec_from_file_location(
        "lesson5_reference", REPO / "content" / "lessons" / "lesson05_softmax" / "reference.py"
    )
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    x = torch.linspace(-3, 3, 8 * 16, dtype=torch.float64).reshape(
        8, 16
    )  # a power of two: no padding lanes
    expected = torch.softmax(x, dim=1)
    got = expected.clone()
    got[2:5] = float("nan")
    bad = got != expected
    assert reference.classify({"x": x}, expected, got, bad) == "wrong_value"
    assert verdict.read_past_end(torch, {"x": x}, expected, got, bad)
    with_inf = x.clone()
    with_inf[0, 0] = float("-inf")
    assert not verdict.read_past_end(torch, {"x": with_inf}, expected, got, bad)
    # the same rows off by a factor 0.9: a wrong denominator
    scaled = expected.clone()
    scaled[2:5] *= 0.9
    assert reference.classify({"x": x}, expected, scaled, scaled != expected) == "bad_normalizer"
