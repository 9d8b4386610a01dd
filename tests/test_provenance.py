"""What the trusted side establishes from a file's text alone (issue 36): the fill-the-blank
grammar against every lesson's real answer and declared mistakes and against Python in the blank,
the edit review that fails closed (tokenize errors, newlines, coding cookies), the torch
computations named in host code; and what it accepts from a worker: frames of bounded depth that
follow a schema. In process, no kernel runs here."""

from __future__ import annotations

import types
from functools import lru_cache
from pathlib import Path

import pytest

from generator.checker import join

REPO = Path(__file__).resolve().parent.parent


def checker(data: dict | None = None):
    """The joined checker as a module, with a lesson's data (a real one by default: lesson 3)."""
    module = types.ModuleType("cp_provenance")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    module.LESSON.update(data or lesson_data("lesson03_relu"))
    return module


@lru_cache(maxsize=None)
def _lessons():
    from generator.content.loader import load_content

    return load_content(REPO / "content")


def lesson_data(lesson_id: str) -> dict:
    from generator.render.render import LessonContext, checker_data

    content = _lessons()
    return checker_data(LessonContext(content, content.lessons[lesson_id], "en", "exercise"))


def lesson_codes(lesson_id: str) -> tuple[str, list[str], list[str]]:
    """(the answer file, the files of its declared fill mistakes, of its declared edit mistakes)."""
    from generator.render.render import LessonContext, mistake_code

    content = _lessons()
    ctx = LessonContext(content, content.lessons[lesson_id], "en", "exercise")
    mistakes = content.lessons[lesson_id].spec.checks.mistakes
    return (
        ctx.code(answer=True),
        [mistake_code(ctx, m) for m in mistakes if m.fill is not None],
        [mistake_code(ctx, m) for m in mistakes if m.fill is None],
    )


LESSONS = (
    "lesson02_vector_add",
    "lesson03_relu",
    "lesson04_add_bias",
    "lesson05_softmax",
    "lesson06_matmul",
    "lesson07_cross_entropy",
)


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_every_answer_and_declared_fill_is_provably_triton(lesson_id):
    """The declared mistakes are Triton: they are judged by their outputs, never flagged."""
    rt = checker(lesson_data(lesson_id))
    answer, fills, edits = lesson_codes(lesson_id)
    for code in [answer, *fills]:
        found = rt.review(code)
        assert found["proven"] and found["edits"] == [] and found["fill_not_triton"] is None, (
            code,
            found,
        )
        assert found["torch_computes"] == []
    for code in edits:  # an edit outside the blank: the code is not the exercise with a fill
        found = rt.review(code)
        assert not found["proven"] and found["edits"], found


def filled(rt, fill: str) -> str:
    return "\n".join(rt.LESSON["template"]).replace("______", fill, 1) + "\n"


@pytest.mark.parametrize(
    "fill",
    [
        '__import__("os")',
        "torch.relu(xv)",
        "xv.handle.data",
        "[v for v in xv]",
        "(lambda: xv)()",
        "(y := xv)",
        "xv.__class__",
        "tl.core.inspect.stack()",
        'f"{xv}"',
        "print(xv)",
        "tl.maximum(xv, 0.0) + len(x)",
        "globals()",
        "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL) if __debug__ else xv",
        "xv.type.to_ir",
        'tl.core.tensor(type(xv.handle)(__import__("numpy").maximum(xv.handle.data, 0), xv.handle.dtype), xv.type)',
        "{1: xv}[1]",
        "*xv",
        "tl.__dict__",
    ],
)
def test_python_in_the_blank_is_not_triton(fill):
    rt = checker()
    found = rt.review(filled(rt, fill))
    assert found["fill_not_triton"] and not found["proven"], (fill, found)
    assert found["edits"] == [] and not found["unreviewed"]


@pytest.mark.parametrize(
    "fill",
    [
        "0.0, mask=mask); print(1); tl.store(out + offsets, xv",
        "xv, 0.0",
        "xv, mask=mask)\n    print(1)\n    tl.store(out + offsets, xv",
    ],
)
def test_a_fill_that_breaks_out_of_the_blank_changes_the_code(fill):
    rt = checker()
    found = rt.review(filled(rt, fill))
    assert found["code_differs"] and found["edits"] and not found["proven"], (fill, found)


def test_a_fill_over_several_lines_is_found_in_the_syntax_tree():
    rt = checker()
    fill = "tl.maximum(\n        xv, 0.0,\n        propagate_nan=tl.PropagateNan.ALL,\n    )"
    found = rt.review(filled(rt, fill))
    assert (
        found["proven"]
        and found["fill"] == "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"
    ), found
    found = rt.review(filled(rt, "tl.maximum(\n        xv, __import__('os'))"))
    assert found["fill_not_triton"] and not found["proven"]


def test_code_too_deep_to_review_is_unreviewed_not_a_traceback():
    rt = checker()
    found = rt.review(filled(rt, "+".join(["xv"] * 20000)))
    assert found["unreviewed"] and not found["proven"]
    assert rt.kernels_defined("x = " + "+".join(["a"] * 20000)) == []


@pytest.mark.parametrize(
    "fill",
    [
        "xv",
        "tl.where(xv > 0, xv, 0)",
        "(xv + 1.0) * 2 - xv",
        "xv.to(tl.float32)",
        "tl.maximum(xv, tl.zeros_like(xv))",
        "-xv if True else xv",
        "xv.T",
        "tl.math.exp(xv)",
        "x.dtype.element_ty.primitive_bitwidth * 0 + xv",
    ],
)
def test_triton_expressions_in_the_blank_are_accepted(fill):
    rt = checker()
    found = rt.review(filled(rt, fill))
    assert found["proven"], (fill, found)


def test_an_indentation_change_is_an_edit_though_every_line_matches():
    rt = checker(lesson_data("lesson06_matmul"))
    answer = lesson_codes("lesson06_matmul")[0]
    moved = answer.replace(
        "        b_ptrs += BLOCK_K * stride_bk", "    b_ptrs += BLOCK_K * stride_bk"
    )
    assert moved != answer
    found = rt.review(moved)
    assert found["code_differs"] and found["edits"] and not found["proven"]


def test_layout_and_comments_are_no_edit():
    rt = checker()
    answer = lesson_codes("lesson03_relu")[0]
    text = "# -*- coding: utf-8 -*-\n\n" + answer.replace(
        "    mask = offsets < n", "    mask = (offsets\n            < n)  # mine"
    )
    found = rt.review(text)
    assert found["proven"] and found["fill"] is not None


def test_the_review_fails_closed():
    rt = checker()
    answer = lesson_codes("lesson03_relu")[0]
    edited = answer.replace("    return out", "    return torch.relu(x)")
    broken = edited.rstrip("\n") + "\n \\\n# the end"  # compiles; tokenize raises IndentationError
    compile(broken, "f", "exec")
    found = rt.review(broken)
    assert (
        found["unreviewed"]
        and not found["proven"]
        and "torch.relu (line" in found["torch_computes"][0]
    )
    assert rt.review("def (:\n")["unreviewed"]
    assert rt.review(answer, undecodable="SyntaxError: unknown encoding")["unreviewed"]
    rows = rt.review(edited)
    assert rows["edits"] and rows["code_differs"] and not rows["proven"]


def test_a_file_is_reviewed_as_python_decodes_it():
    rt = checker()
    edited = lesson_codes("lesson03_relu")[0].replace("    return out", "    return torch.relu(x)")
    want = rt.review(edited)
    for data in (
        edited.replace("\n", "\r").encode(),
        edited.replace("\n", "\r\n").encode(),
        b"\xef\xbb\xbf" + edited.encode(),
        ("# coding: latin-1\n# caf\xe9\n" + edited).encode("latin-1"),
    ):
        text, why = rt.python_text(data)
        assert why is None
        found = rt.review(text)
        assert found["edits"] and found["code_differs"] and found["torch_computes"], found
        if "latin" not in text:
            assert found == want
    text, why = rt.python_text(b"# coding: no-such-codec\nx = 1\n")
    assert why and "x = 1" in text
    text, why = rt.python_text(b"x = '\xff'\n")
    assert why and rt.syntax_error(text, why)["kind"] == "syntax"


def test_the_text_goes_into_the_sandbox_in_the_codec_python_reads_it_back_with():
    rt = checker()
    for text in (
        "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n",
        "s = 'caf\xe9 \u4e2d'\n",
        "# coding: cp1252\nx = 1\n",
    ):
        encoding = rt.source_encoding(text)
        assert rt.python_text(text.encode(encoding)) == (text, None)


def test_grading_reviews_the_text_the_job_runs(tmp_path):
    """Grading's own text keeps a lone CR; the job writes it as UTF-8 and check.py reads it with
    universal newlines: the review is of that text."""
    rt = checker()
    edited = lesson_codes("lesson03_relu")[0].replace("    return out", "    return torch.relu(x)")
    cr = edited.replace("\n", "\r")
    assert rt.review_edits(rt.python_text(cr.encode())[0])[0] == rt.review_edits(edited)[0] != []


def test_torch_computations_come_from_the_reference():
    rt = checker()
    code = (
        "import torch\nimport torch.nn.functional as F\n@triton.jit\ndef k(x):\n    torch.relu(x)\n"
        "def relu(x):\n    a = torch.relu(x)\n    b = F.relu(x)\n    c = x.clamp(min=0)\n    return a @ b\n"
        "if __name__ == '__main__':\n    torch.relu(x)\n"
    )
    import ast

    found = rt.torch_computations(ast.parse(code), rt.reference_operations(rt.LESSON["reference"]))
    assert found == ["torch.relu (line 7)", "F.relu (line 8)", "x.clamp (line 9)"]
    matmul = rt.reference_operations(
        "def reference(a, b):\n    return (a.double() @ b.double()).to(a.dtype)\n"
    )
    assert "@" in matmul and "mm" in matmul and "to" not in matmul
    assert rt.torch_computations(ast.parse(code), matmul) == ["@ (line 10)"]
    add = rt.reference_operations(
        "def reference(x, y):\n    return (x.double() + y.double()).to(x.dtype)\n"
    )
    host = ast.parse(
        "def vector_add(x, y):\n    n = x.numel() + 1\n    return torch.add(x, y) if n else x.add(y)\n"
    )
    assert rt.torch_computations(host, add) == ["torch.add (line 3)", "x.add (line 3)"]
    guarded = ast.parse(
        "def relu(x):\n    if __name__ != '__main__':\n        return torch.relu(x)\n"
        "if '__main__' == __name__ or True:\n    torch.relu(x)\n"
    )
    assert rt.torch_computations(guarded, rt.reference_operations(rt.LESSON["reference"])) == [
        "torch.relu (line 3)",
        "torch.relu (line 5)",
    ]  # only the module's own main test hides its demo


def test_frames_are_refused_past_a_depth_before_they_are_decoded():
    import io
    import struct

    rt = checker()
    deep = b"[" * 400000 + b"]" * 400000
    channel = rt.Channel(io.BytesIO(struct.pack(">I", len(deep)) + deep), io.BytesIO())
    with pytest.raises(rt.ProtocolError, match="nested"):
        channel.recv()
    assert rt.nesting(b'{"a": [1, [2, "[[[\\" ["]]}') == 3 and rt.nesting(b'"[[[["') == 0
    ok = b'{"case": "seed", "events": [{"kind": "file"}]}'
    channel = rt.Channel(io.BytesIO(struct.pack(">I", len(ok)) + ok), io.BytesIO())
    assert channel.recv()[0]["case"] == "seed"


@pytest.mark.parametrize(
    "header, kind",
    [
        ({"loaded_s": 0.1, "patched": 1}, "loaded"),
        ({"loaded_s": 0.1, "patched": [1]}, "loaded"),
        ({"loaded_s": 0.1, "events": [["x"]]}, "loaded"),
        ({"loaded_s": "0.1"}, "loaded"),
        ({"loaded_s": 0.1, "verdict": "pass"}, "loaded"),
        ({"load_error": {"kind": "timeout", "seconds": 999}}, "load_error"),
        ({"load_error": {"kind": "import", "text": 5}}, "load_error"),
        ({"hello": {"torch": "2", "triton": "3", "python": "3.11"}}, "hello"),
        ({"hello": {"torch": "2", "triton": "3", "python": "3.11", "interpreter": False}}, "hello"),
        (
            {
                "hello": {
                    "torch": "2",
                    "triton": "3",
                    "python": "3.11",
                    "interpreter": True,
                    "x": [1],
                }
            },
            "hello",
        ),
        ({"case": "seed", "status": "pass"}, "case"),
        (
            {
                "case": "seed",
                "status": "returned",
                "outputs": [{"output": {"dtype": "float32", "shape": "5"}}],
            },
            "case",
        ),
        ({"case": "seed", "status": "returned", "guard": {"elements": True, "span": 5}}, "case"),
        ({"case": "seed", "status": "returned", "inputs_crc": 7}, "case"),
        ({"status": "returned"}, "case"),
    ],
)
def test_frames_that_break_their_schema_are_refused(header, kind):
    rt = checker()
    with pytest.raises(rt.ProtocolError):
        rt.check_frame(header, kind)


def test_the_workers_own_frames_follow_the_schema():
    rt = checker()
    rt.check_frame(
        {
            "hello": {"torch": "2", "triton": "3", "python": "3.11", "interpreter": True},
            "startup_s": 1.0,
            "startup_cpu_s": 0.5,
            "isolated_s": 0.0,
        },
        "hello",
    )
    rt.check_frame(
        {
            "loaded_s": 0.1,
            "loaded_cpu_s": 0.1,
            "patched": ["relu"],
            "events": [{"kind": "file", "event": "open", "line": 3, "detail": "/etc/passwd (r)"}],
        },
        "loaded",
    )
    rt.check_frame(
        {
            "load_error": {"kind": "syntax", "line": 3, "column": None, "text": "invalid syntax"},
            "events": [],
        },
        "load_error",
    )
    rt.check_frame(
        {
            "case": "seed",
            "status": "returned",
            "seconds": 0.1,
            "outputs": [
                {
                    "output": {"dtype": "float32", "shape": [5]},
                    "guard": {"elements": 4096, "span": 5},
                    "nbytes": 32788,
                },
                {"inplace": True, "nbytes": 0},
            ],
            "inputs_crc": [12, None],
            "launched": ["relu_kernel"],
            "events": [],
            "cpu_s": 0.1,
        },
        "case",
    )
    with pytest.raises(rt.ProtocolError):  # an output entry with a field it does not have
        rt.check_frame(
            {"case": "seed", "status": "returned", "outputs": [{"output": None, "band": 1.0}]},
            "case",
        )
    rt.check_frame(
        {
            "case": "seed",
            "status": "error",
            "line": None,
            "text": "ValueError: x",
            "launched": [],
            "events": [],
            "cpu_s": 0.0,
        },
        "case",
    )


class FakeWorker:
    """A worker seen from the trusted side whose frames are given in advance."""

    sock = None  # no socket for shared memory (memory.offer_descriptors)

    def __init__(self, frames):
        self.frames, self.sent, self.exit_code = list(frames), [], 0

    def next(self, timeout):
        return self.frames.pop(0) if self.frames else ("timeout", None, None)

    def send(self, header, payload=b"", max_reply=0):
        self.sent.append(header)
        return True

    def kill(self):
        pass

    def stderr_tail(self, lines=6):
        return ""


def _supervisor(rt, text="def relu(x):\n    return x\n"):
    class Factory:
        setup = {"use_gpu": False}

    target = rt.Target(Path("/nonexistent/relu.py"), "relu.py", text)
    return rt.Supervisor(Factory(), {}, target, timeout=1, start_margin=0)


HELLO = (
    "frame",
    {"hello": {"torch": "2", "triton": "3", "python": "3.11", "interpreter": True}},
    b"",
)


@pytest.mark.parametrize(
    "claim, shown",
    [
        ({"loaded_s": 0.1, "patched": 1}, "protocol"),
        ({"load_error": {"kind": "timeout", "seconds": 999}}, "protocol"),
        ({"load_error": {"kind": "syntax", "line": 1, "text": "invalid syntax"}}, "protocol"),
        (
            {"load_error": {"kind": "import", "line": None, "text": "RuntimeError: no driver"}},
            "import",
        ),
    ],
)
def test_a_workers_claims_at_load_are_checked_or_reported_as_its_own(claim, shown):
    rt = checker()
    sup = _supervisor(rt)
    assert sup._load(FakeWorker([HELLO, ("frame", claim, b"")])) is False
    if shown == "protocol":
        assert sup.load_error["code"] == "protocol" and sup.seen["protocol"]
    else:
        assert sup.load_error == {
            "kind": "import",
            "reported": True,
            "line": None,
            "text": "RuntimeError: no driver",
        }
        line = rt.load_error_line(sup.target, sup.load_error)
        assert "reported" in line and "RuntimeError: no driver" in line


def test_a_syntax_error_is_established_by_the_trusted_side():
    rt = checker()
    sup = _supervisor(rt, "def relu(x):\n    return (x\n")
    claim = (
        "frame",
        {"load_error": {"kind": "syntax", "line": 99, "text": "the worker's words"}},
        b"",
    )
    assert sup._load(FakeWorker([HELLO, claim])) is False
    assert (
        sup.load_error["kind"] == "syntax"
        and sup.load_error["line"] == 2
        and "worker" not in sup.load_error["text"]
    )


def test_withheld_points_are_shown_and_zero_in_the_json():
    rt = checker()
    rt.LESSON["cases"] = [{"id": "seed", "group": "normal"}, {"id": "tail", "group": "boundary"}]
    rt.LESSON["case_names"] = {"seed": "seed", "tail": "tail"}
    text = filled(rt, "torch.relu(xv)")
    found = rt.review(text)
    target = rt.Target(Path("relu.py"), "relu.py", text)
    ev = rt.Evaluation(
        target,
        found["edits"],
        found["fill"],
        [],
        {"torch": "2", "triton": "3", "interpreter": True},
        {"seed": {"status": "pass"}, "tail": {"status": "pass"}},
        flags={},
        review=found,
    )
    lines, status = rt.render_report(ev)
    data = rt.json_result(ev, status)
    assert status == "pass" and data["score"]["normal"] == data["score"]["boundary"] == 0
    assert data["score"]["withheld"] == {"normal": 2, "boundary": 1} and data["score"]["why"] == [
        "fill_not_triton"
    ]
    assert data["flags"]["fill_not_triton"] and any("withheld" in line for line in lines)
    assert lines[-1] == rt.msg("next_withheld")
    honest = rt.review(filled(rt, "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"))
    ev = rt.Evaluation(
        target,
        [],
        honest["fill"],
        [],
        None,
        {"seed": {"status": "pass"}, "tail": {"status": "pass"}},
        flags={},
        review=honest,
    )
    assert rt.json_result(ev, "pass")["score"] == {"normal": 2, "boundary": 1}


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_a_file_from_another_languages_pack_is_the_same_code(lesson_id):
    """Grading checks every file with the source language's checker: the packs differ in their
    comments only, so an English pack's answer is provably the exercise with a Triton fill there."""
    from generator.render.render import LessonContext, checker_data

    content = _lessons()
    source = content.course.source_locale
    rt = checker(
        checker_data(LessonContext(content, content.lessons[lesson_id], source, "exercise"))
    )
    for locale in content.course.locales:
        answer = LessonContext(content, content.lessons[lesson_id], locale, "exercise").code(
            answer=True
        )
        assert rt.review(answer)["proven"], locale


def test_files_and_notebook_cells_are_read_as_python_reads_them(tmp_path):
    import json

    rt = checker()
    answer = lesson_codes("lesson03_relu")[0]
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n# caf\xe9\n" + answer).encode("latin-1"))
    target = rt.read_target(latin, "latin.py")
    assert target.undecodable is None and target.cell is None and "caf\xe9" in target.text
    assert rt.review(target.text, undecodable=target.undecodable)["proven"]
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = '\xff'\n")
    assert rt.load_target(str(bad), tmp_path).undecodable
    notebook = tmp_path / "lesson.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {"tags": ["exercise"]},
                        "source": answer.replace("\n", "\r\n"),
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    cell = rt.load_target(str(notebook), tmp_path)
    assert cell.cell == 1 and cell.undecodable is None and "\r" not in cell.text


def test_the_static_review_before_a_check_imports_no_triton(tmp_path):
    """TRITON_INTERPRET is decided before triton is imported (environment.prepare): check.py's
    first look at a file, and grading's review of edits, must not import it."""
    import json
    import subprocess
    import sys

    data = lesson_data("lesson03_relu")
    path = tmp_path / "relu.py"
    path.write_text(filled(checker(data), "torch.relu(xv)"), encoding="utf-8")
    script = (
        f"import json, sys, types\nsys.path.insert(0, {str(REPO)!r})\nfrom generator.checker import join\n"
        "m = types.ModuleType('c')\nm.__file__ = str(join.HERE / 'check.py')\n"
        "exec(compile(join.joined(), 'check.py', 'exec'), m.__dict__)\n"
        "m.LESSON.update(json.loads(sys.stdin.read()))\n"
        f"ev = m.evaluate_static(m.read_target({str(path)!r}, 'relu.py'))\n"
        f"edits, fill = m.review_edits(open({str(path)!r}).read())\n"
        "print(ev.fill, fill, 'triton' in sys.modules, 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["torch.relu(xv)", "torch.relu(xv)", "False", "False"]


def test_grading_rows_show_withheld_points():
    from generator.grade.rows import checker_flags

    data = {
        "status": "pass",
        "edits_outside_blank": [],
        "score": {"normal": 0, "boundary": 0, "withheld": {"normal": 2, "boundary": 1}},
        "flags": {
            "withheld": ["fill_not_triton"],
            "fill_not_triton": "a call of `print`",
            "no_triton": True,
            "unreviewed": None,
            "torch_computes": [],
        },
    }
    assert checker_flags(data) == ["no_triton", "withheld", "fill_not_triton"]


def test_a_syntax_error_is_said_once():
    rt = checker()
    text = "def relu(x):\n    return (x\n"
    found = rt.review(text)
    assert found["unreviewed"]
    target = rt.Target(Path("relu.py"), "relu.py", text)
    ev = rt.Evaluation(
        target, [], None, [], None, {}, rt.syntax_error(text), flags={}, review=found
    )
    lines, status = rt.render_report(ev)
    assert status == "load_error" and not any("could not review" in line for line in lines), lines
