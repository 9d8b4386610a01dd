"""The joined checker's pieces, in process: inputs from declarations, layouts, the worker's poisoned
outputs with guard bands, the trusted side's verdict from a worker's data (stray writes, comparison,
reasons), the protocol's limits, and the joining itself. No kernel runs here (but the last test)."""

import dataclasses
import os
import io
import types

import pytest
import torch

from generator.checker import join


@pytest.fixture()
def rt():
    module = types.ModuleType("cp_checker")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    module.LESSON.update(
        {
            "inputs": [
                {"name": "x", "shape": ["M", "N"]},
                {"name": "bias", "shape": ["N"], "draw": {"low": 1, "high": 2}},
                {"name": "alpha", "scalar": "0.5"},
            ],
            "poison": -1024.0,
            "compare": {"float16": {"rtol": 0.01, "atol": 0.0}},
            "lesson_reasons": ["flipped"],
            "messages": {"position_2d": "row {row}, column {column}"},
            "reference": "def reference(x): return x\n",
        }
    )
    return module


def case(**kw):
    return {"id": "c", "group": "normal", **kw}


def test_inputs_follow_shapes_dims_and_draws(rt):
    made = rt.make_inputs(torch, case(dims={"M": 3, "N": 5}, values={"alpha": "2.0"}), "cpu")
    (xn, _, x), (bn, _, b), (an, a, ac) = made
    assert (xn, bn, an) == ("x", "bias", "alpha")
    assert x.shape == (3, 5) and b.shape == (5,) and x.is_contiguous()
    assert bool(((b >= 1) & (b < 2)).all()) and a == ac == 2.0
    again = rt.make_inputs(torch, case(dims={"M": 3, "N": 5}), "cpu")
    assert torch.equal(again[0][2], x)  # the same case draws the same values every time


def test_integer_inputs_draw_in_their_range_and_keep_exact_extremes(rt):
    rt.LESSON["inputs"] = [
        {"name": "x", "shape": ["M", "V"]},
        {"name": "t", "shape": ["M"], "dtype": "int64", "draw": {"low": 0, "high": "V"}},
        {"name": "flags", "shape": ["M"], "dtype": "bool"},
        {"name": "seed", "scalar": "7", "dtype": "int64"},
    ]
    (_, _, x), (_, _, t), (_, _, flags), (_, seed, _) = rt.make_inputs(
        torch, case(dims={"M": 500, "V": 3}, dtype="float16"), "cpu"
    )
    assert (
        x.dtype == torch.float16 and t.dtype == torch.int64 and flags.dtype == torch.bool
    )  # a case's dtype: floats only
    assert set(t.tolist()) == {0, 1, 2} and set(flags.tolist()) == {False, True}
    assert seed == 7 and isinstance(seed, int)
    planted = rt.make_inputs(
        torch, case(dims={"M": 4, "V": 3}, values={"t": ["max", "min", "-100", "0"]}), "cpu"
    )[1][2]
    assert planted.tolist() == [2**63 - 1, -(2**63), -100, 0]  # exact, not through a float
    calls = rt.call_inputs(
        torch,
        case(dims={"M": 2, "V": 3}, calls=[{"seed": "8"}]),
        rt.make_inputs(torch, case(dims={"M": 2, "V": 3}), "cpu"),
    )
    assert [c[3][1] for c in calls] == [7, 8] and calls[1][1][2] is calls[0][1][
        2
    ]  # the same tensors


def test_float8_cases_are_skipped_in_the_interpreter_with_their_reason(rt):
    rt.LESSON["inputs"] = [{"name": "x", "shape": ["N"]}]
    rt.LESSON["outputs"] = [{"name": "q", "dtype": "float8_e4m3fn"}]
    assert rt.skip_reason(case(dims={"N": 4}), use_gpu=False) == "fp8_interpreter"
    assert rt.skip_reason(case(dims={"N": 4}), use_gpu=True) is None
    assert (
        rt.poison_value(torch, {"name": "q"}, torch.float8_e4m3fn) == -448.0
    )  # -1024 does not fit: its most negative
    assert rt.poison_value(torch, {"name": "q", "poison": -384.0}, torch.float8_e4m3fn) == -384.0
    assert (
        rt.poison_value(torch, {"name": "i"}, torch.int8) == -128
        and rt.poison_value(torch, {"name": "i"}, torch.int16) == -1024
    )


def test_several_outputs_are_judged_each_and_the_first_failure_is_named(rt):
    rt.LESSON["outputs"] = [{"name": "loss", "check": "values"}, {"name": "lse", "check": "values"}]
    right = {"status": "pass", "n": 4}
    wrong = {"status": "fail", "reason": "wrong_value", "position": [1]}
    assert rt.combine(case(), [right, right], [(0, "loss"), (0, "lse")]) == {
        "status": "pass",
        "n": 8,
    }
    assert rt.combine(case(), [right, wrong], [(0, "loss"), (0, "lse")])["output"] == "lse"
    named = rt.combine(
        case(calls=[{"alpha": "3.0"}]),
        [right, right, wrong, right],
        [(0, "loss"), (0, "lse"), (1, "loss"), (1, "lse")],
    )
    assert (named["output"], named["call"], named["call_values"]) == ("loss", 1, {"alpha": "3.0"})


def test_layouts_give_views_with_real_strides(rt):
    logical = rt.make_inputs(torch, case(dims={"M": 4, "N": 6}), "cpu")[0][2]
    transposed = rt.make_inputs(
        torch, case(dims={"M": 4, "N": 6}, layout={"x": "transposed"}), "cpu"
    )[0][2]
    sliced = rt.make_inputs(torch, case(dims={"M": 4, "N": 6}, layout={"x": "sliced"}), "cpu")[0][2]
    assert torch.equal(transposed, logical) and torch.equal(sliced, logical)
    assert transposed.stride() == (1, 4) and sliced.stride() == (13, 1)
    rt.LESSON["inputs"] = [{"name": "x", "shape": ["N"]}]
    storage, one = rt.make_inputs(torch, case(dims={"N": 7}, layout={"x": "sliced"}), "cpu")[0][1:]
    assert one.stride() == (2,) and one.shape == (7,) and storage.numel() == 14
    assert not torch.equal(
        storage[1::2], one
    )  # the slack holds other numbers, never the right ones


def test_values_without_dims_and_planted_values(rt):
    rt.LESSON["inputs"] = [{"name": "x", "shape": ["N"]}]
    exact = rt.make_inputs(torch, case(values={"x": ["1.0", "nan", "-0.0"]}), "cpu")[0][2]
    assert exact.shape == (3,) and torch.isnan(exact[1]) and str(float(exact[2])) == "-0.0"
    planted = rt.make_inputs(torch, case(dims={"N": 100}, values={"x": ["inf", "nan"]}), "cpu")[0][
        2
    ]
    assert torch.isinf(planted).sum() == 1 and torch.isnan(planted[-1])


def test_poisoned_outputs_keep_strides_and_a_stray_write_is_judged(rt, tmp_path):
    """The worker's allocator poisons before the code under check is imported; the trusted side
    finds a write past the end in the guard bands it is handed."""
    x = torch.zeros(6, 4).t()  # shape (4, 6), transposed strides
    harness = rt.Harness(
        torch, str(tmp_path / "k.py"), -1024.0
    )  # not installed: no audit hook here
    out = harness._poisoned(torch.empty_like(x))
    flat = harness._poisoned(torch.empty(10))
    assert (
        out.stride() == x.stride()
        and bool((out == -1024.0).all())
        and bool((flat == -1024.0).all())
    )
    out.as_strided((1,), (1,), out.storage_offset() + 24)[0] = 1.0  # one element past the end
    span, bands = harness.guard_of(out)
    report = {
        "output": {"dtype": "float32", "shape": [4, 6]},
        "guard": {"elements": rt.GUARD, "span": span},
    }
    payload = bytearray(rt.tensor_bytes(torch, out) + bands)
    made = [("x", x, x)]
    result = rt.judge(torch, case(), made, torch.full((4, 6), -1024.0), None, report, payload)
    assert result == {"status": "fail", "reason": "wrote_past_end", "index": 24, "n": 24}


def test_the_trusted_side_refuses_data_it_did_not_ask_for(rt):
    expected = torch.zeros(3)
    good = {"output": {"dtype": "float32", "shape": [3]}}
    assert rt.judge(torch, case(), [], expected, None, good, bytearray(12))["status"] == "pass"
    for report, size in (
        ({"output": {"dtype": "object", "shape": [3]}}, 12),
        ({"output": {"dtype": "float32", "shape": [4]}}, 12),
        ({"output": {"dtype": "float32", "shape": [-3]}}, 12),
        ({"output": {"dtype": "float32", "shape": [3]}, "guard": {"elements": 5, "span": 1}}, 12),
    ):
        with pytest.raises(rt.ProtocolError):
            rt.judge(torch, case(), [], expected, None, report, bytearray(size))
    wrong = {"output": {"dtype": "float64", "shape": [3]}}
    assert (
        rt.judge(torch, case(), [], expected, None, wrong, bytearray(24))["reason"] == "wrong_dtype"
    )
    assert (
        rt.judge(torch, case(), [], expected, None, {"output": None, "got_type": "x" * 500}, b"")[
            "got_type"
        ]
        == "x" * 80
    )


def test_frames_have_limits(rt):
    buffer = io.BytesIO()
    channel = rt.Channel(None, buffer)
    channel.send({"case": "c"}, b"\0" * 16)
    channel.send({"done": True})
    reader = rt.Channel(io.BytesIO(buffer.getvalue()), None)
    with pytest.raises(rt.ProtocolError):
        reader.recv(max_payload=8)  # more bytes than the trusted side expects
    reader = rt.Channel(io.BytesIO(buffer.getvalue()), None)
    assert reader.recv(max_payload=lambda: 16) == ({"case": "c", "nbytes": 16}, bytearray(16))
    assert reader.recv()[0] == {"done": True} and reader.recv() is None
    for bad in (b"\xff\xff\xff\xff", b"\0\0\0\x02[]", b"\0\0\0\x05{{{{{"):
        with pytest.raises(rt.ProtocolError):
            rt.Channel(io.BytesIO(bad + b"\0" * 8), None).recv()


def test_compare_exact_and_with_tolerance(rt):
    expected = torch.tensor([float("nan"), 0.0, 1.0, float("inf")], dtype=torch.float64)
    got = torch.tensor([float("nan"), -0.0, 1.0, float("inf")], dtype=torch.float64)
    assert not rt.compare(torch, expected, got, "float32").any()
    near = torch.tensor([float("nan"), 0.0, 1.005, float("inf")], dtype=torch.float64)
    assert rt.compare(torch, expected, near, "float32").tolist() == [False, False, True, False]
    assert not rt.compare(torch, expected, near, "float16").any()
    assert rt.compare(torch, expected, -got, "float16")[3]  # -inf is never close to inf
    scale = torch.tensor([0.0, 0.0, 0.1, 0.0], dtype=torch.float64)  # a lesson's error_scale
    assert rt.compare(torch, expected, near, "float16", scale).tolist() == [
        False,
        False,
        True,
        False,
    ]


def test_positions_and_reasons(rt):
    assert rt.position_text([3, 17]) == "row 3, column 17" and rt.position_text([5]) == "5"
    # the lesson's own hypothesis is asked first (issue 37): here it explains only negated values
    rt.REFERENCE.update(
        {
            "classify": lambda inputs, expected, got, bad: (
                "flipped" if bool((got == -expected).all()) else None
            )
        }
    )
    expected = torch.tensor([1.0, 2.0], dtype=torch.float64)
    bad = torch.tensor([True, True])
    assert (
        rt.classify(torch, {}, expected, torch.tensor([-1024.0, 2.5], dtype=torch.float64), bad)
        == "unwritten"
    )
    assert (
        rt.classify(torch, {}, expected, torch.tensor([-1.0, -2.0], dtype=torch.float64), bad)
        == "flipped"
    )
    rt.REFERENCE.update({"classify": lambda *a: "not_declared"})
    assert (
        rt.classify(torch, {}, expected, torch.tensor([0.0, 0.0], dtype=torch.float64), bad)
        == "wrong_value"
    )


def test_gpu_faults_are_recognised_by_type_and_words(rt):
    class AcceleratorError(RuntimeError):
        pass

    assert rt.is_gpu_fault(torch, AcceleratorError("boom"), "cpu")
    assert rt.is_gpu_fault(
        torch, RuntimeError("CUDA error: an illegal memory access was encountered"), "cpu"
    )
    assert not rt.is_gpu_fault(torch, ValueError("shapes differ"), "cpu")


def test_static_review_finds_the_kernels_a_file_defines(rt):
    text = (
        "import triton\n@triton.jit\ndef k(x):\n    pass\n@triton.autotune(configs=[])\n@triton.jit()\ndef t(x):\n"
        "    pass\ndef host(x):\n    return x\n"
    )
    assert rt.kernels_defined(text) == ["k", "t"] and rt.kernels_defined("def (") == []


def test_the_joined_checker_refuses_a_name_defined_twice(monkeypatch, tmp_path):
    for name in join.ORDER:
        (tmp_path / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.py").write_text(
            (join.HERE / f"{name}.py").read_text(encoding="utf-8"), encoding="utf-8"
        )
    bench = tmp_path / "untrusted" / "bench.py"
    bench.write_text(bench.read_text(encoding="utf-8") + "\n\ndef msg(key):\n    pass\n")
    monkeypatch.setattr(join, "HERE", tmp_path)
    join.joined.cache_clear()
    try:
        with pytest.raises(join.JoinError, match="'msg' is also defined in shared/common.py"):
            join.joined()
    finally:
        join.joined.cache_clear()


def test_lean_interpreter_skips_only_the_overflow_work_the_interpreter_throws_away(rt, monkeypatch):
    """Without debug the interpreter's device_assert drops the overflow check it was handed, so the
    checker turns the 64-bit recomputation off: the same results, int32 wrap-around included."""
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when @triton.jit decorates

    @triton.jit
    def wrap(x, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        v = tl.load(x + offsets, mask=mask)
        tl.store(out + offsets, v * 65536 * 65536 + v - 7, mask=mask)

    x = torch.tensor([1, -3, 2**30, 12345, 0], dtype=torch.int32)
    builder = interpreter.interpreter_builder
    # as a fresh process has them (a check that ran earlier in this process turned it off); restored after
    monkeypatch.setattr(
        builder, "options", dataclasses.replace(builder.options, sanitize_overflow=True)
    )
    assert builder.options.sanitize_overflow and not builder.options.debug
    results = []
    for lean in (False, True):
        if lean:
            rt.lean_interpreter()
        out = torch.empty_like(x)
        wrap[(2,)](x, out, x.numel(), BLOCK=4)
        results.append(out)
    assert not builder.options.sanitize_overflow
    assert torch.equal(results[0], results[1])
    assert torch.equal(results[1], x * 65536 * 65536 + x - 7)


def test_check_py_starts_without_posix_only_modules(monkeypatch):
    """Windows has no resource, fcntl or pwd module: check.py must import there (its spawn path)."""
    import sys

    for name in ("resource", "fcntl", "pwd", "grp", "termios"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    module = types.ModuleType("cp_checker_windows")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    assert callable(module.main)


def test_the_sandbox_seed_holds_launchers_only(rt, tmp_path, monkeypatch):
    """The sandbox mounts a staged copy of Triton's cache holding compiled C modules only: a cache
    entry of a compiled kernel (the answer's, after the instructor's build) never reaches it."""
    cache = tmp_path / "cache"
    for entry, names in {
        "launcher": ["__triton_launcher.so"],
        "utils": ["cuda_utils.so"],
        "kernel": [
            "relu_kernel.cubin",
            "relu_kernel.ttir",
            "relu_kernel.json",
            "__grp__relu_kernel.json",
        ],
        "kernel_with_so": ["k.so", "k.ttir"],
        "empty": [],
    }.items():
        (cache / entry).mkdir(parents=True)
        for name in names:
            (cache / entry / name).write_bytes(b"x")
    seed = rt.stage_launcher_seed(str(cache))
    try:
        assert sorted(os.listdir(seed)) == ["launcher", "utils"]
        assert os.listdir(os.path.join(seed, "launcher")) == ["__triton_launcher.so"]
        # a worker's own cache starts as a copy of the seed the sandbox mounts
        monkeypatch.setattr(rt, "SANDBOX_SEED", seed)
        monkeypatch.setattr(rt, "SCRATCH_ROOT", str(tmp_path / "w"))
        monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
        rt._seed_triton_cache()
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "w" / "triton")
        assert sorted(os.listdir(tmp_path / "w" / "triton")) == ["launcher", "utils"]
    finally:
        import shutil

        shutil.rmtree(seed)
    assert rt.stage_launcher_seed(str(tmp_path / "missing")) is None


def _losing_supervisor(rt, outcomes):
    """A supervisor whose workers each run one case: outcomes[case_id] is its status ("crash" for
    a case that takes its worker down); the order the cases were tried in is kept."""
    ids = [c["id"] for c in rt.LESSON["cases"]]
    sup = rt.Supervisor(
        types.SimpleNamespace(setup={"use_gpu": False}), dict.fromkeys(ids, object()), None, 1
    )
    tried = []

    def one_worker(pending):
        for case_id in pending:
            tried.append(case_id)
            sup.results[case_id] = {"status": outcomes.get(case_id, "pass"), "code": "SIGABRT"}
            if sup.results[case_id]["status"] == "crash":
                return

    sup._one_worker = one_worker
    return sup, ids, tried


def test_a_file_that_loses_every_worker_is_given_up_after_three_cases_and_every_group(rt):
    rt.LESSON["cases"] = [case(id=f"n{i}") for i in range(5)] + [
        case(id=f"b{i}", group="boundary") for i in range(2)
    ]
    sup, ids, tried = _losing_supervisor(
        rt, dict.fromkeys(["n0", "n1", "n2", "n3", "n4", "b0", "b1"], "crash")
    )
    results = sup.run(ids)
    assert tried == ["n0", "n1", "n2", "b0"]  # the boundary group had its chance before giving up
    assert [results[c]["status"] for c in ids] == ["crash"] * 3 + ["not_run"] * 2 + [
        "crash",
        "not_run",
    ]
    assert results["n3"] == {"status": "not_run", "lost": 4}


def test_a_file_that_loses_its_worker_on_some_inputs_runs_every_case(rt):
    rt.LESSON["cases"] = [case(id=f"n{i}") for i in range(5)] + [case(id="b0", group="boundary")]
    sup, ids, tried = _losing_supervisor(rt, dict.fromkeys(["n0", "n1", "n2", "n3"], "crash"))
    results = sup.run(ids)
    assert tried == ["n0", "n1", "n2", "b0", "n3", "n4"]  # b0 passes: no giving up, every case runs
    assert "not_run" not in {r["status"] for r in results.values()}
    sup, ids, tried = _losing_supervisor(rt, dict.fromkeys(["n1", "n2", "n3", "n4", "b0"], "crash"))
    assert (
        "not_run" not in {r["status"] for r in sup.run(ids).values()} and tried == ids
    )  # n0 passed


def test_a_lesson_with_one_question_names_q1_alone(rt):
    rt.LESSON["messages"]["question_span"] = "Q1-Q{count}"
    assert rt.question_names(1, rt.msg) == "Q1" and rt.question_names(3, rt.msg) == "Q1-Q3"


def test_the_same_attempt_from_the_same_line_is_one_note(rt):
    rt.LESSON["messages"].update(
        {
            "flag_event": "tried {kind} (line {line}: {detail})",
            "event_process": "a process",
            "event_times": " (×{count})",
        }
    )
    fork = {"kind": "process", "event": "os.fork", "line": "7", "detail": "os.fork()"}
    kill = {"kind": "signal", "event": "os.kill", "line": "9", "detail": ""}
    lines = rt.flag_lines({"events": [fork] * 49 + [kill]})
    assert lines == [
        "",
        "tried a process (line 7: os.fork()) (×49)",
        "tried signal (line 9: os.kill)",
    ]


def test_import_lines_are_cut_as_ast_cuts_them():
    import ast

    from generator.checker.join import source_segment

    source = "import os  # noqa\nfrom a import (b,\n    c)  # note\nimport é as f; x = 1\n"
    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        assert source_segment(lines, node) == ast.get_source_segment(source, node)


def test_a_session_keeps_its_spare_workers_started_and_replaces_each_one_taken(rt):
    """Grading: a worker waits ready (CUDA started) for each check running at once; each one taken
    is replaced at once, never handed out twice, and those left at the end are stopped."""
    started, killed = [], []

    class FakeFactory:
        def start(self):
            worker = types.SimpleNamespace(n=len(started), kill=lambda: killed.append(worker.n))
            started.append(worker)
            return worker

    session = rt.Session.__new__(rt.Session)
    session.factory = FakeFactory()
    session.spares, session.spare_lock, session.closed, session.starting = (
        [],
        rt.threading.Lock(),
        False,
        0,
    )
    session.wanted_spares, session.hold = 1, False  # as check.py's session starts: one worker ahead
    session._refill()
    assert [session.take_worker().n, session.take_worker().n] == [0, 1] and len(
        started
    ) == 2  # none replaced
    session.hold_spares(3)  # grading
    assert len(started) == 5 and [w.n for w in session.spares] == [2, 3, 4]
    taken = [session.take_worker().n for _ in range(4)]
    assert taken == [2, 3, 4, 5] and len(session.spares) == 3 and len(started) == 9
    session.close()
    assert sorted(killed) == [6, 7, 8] and session.spares == []
    assert (
        session.take_worker().n == 9 and len(started) == 10
    )  # after the end: no spare kept, none wasted


def test_the_factory_warms_tritons_compiler_without_cuda_and_leaves_nothing(tmp_path):
    """warm_compiler compiles a kernel of ours for the GPU NVML names (here: said to be 90), starts
    no thread and no CUDA, and leaves Triton's cache setting as it was."""
    import subprocess
    import sys

    script = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); import torch, triton\n"
        "from generator.checker.shared import environment as e\n"
        "e.nvml_capability = lambda: 90\n"
        "threads = e.thread_count(); os.environ['TRITON_CACHE_DIR'] = sys.argv[2]\n"
        "print(e.warm_compiler(), e.thread_count() == threads, os.environ['TRITON_CACHE_DIR'] == sys.argv[2],\n"
        "      torch.cuda.is_initialized(), os.listdir(sys.argv[2]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(join.HERE.parents[1]), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.split("\n")[0] == "True True True False []", (
        done.stdout + done.stderr[-2000:]
    )


def test_a_sandboxed_worker_acts_on_no_other_process():
    """The worker's seccomp filter (sandbox._refuse_other_processes), in a forked child with no
    bubblewrap: on itself, limits, priority, affinity and signals work; on another process of the
    same user (a stand-in for another student's worker) each fails with EPERM, as does any call
    that names the whole user. Without the filter every one of those would succeed."""
    import json
    import platform
    import resource
    import signal
    import subprocess
    import sys
    from generator.checker.shared import sandbox

    if platform.machine() not in sandbox.PROCESS_CALLS or not sys.platform.startswith("linux"):
        pytest.skip(f"the filter is for Linux on {sorted(sandbox.PROCESS_CALLS)}")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        outcome = {}
        try:
            os.setpgid(0, 0)  # as a worker: its own group
            sandbox._call("prctl", sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            sandbox._refuse_other_processes(os.getpid(), os.getpgrp())
            me, them = os.getpid(), other.pid
            cores = os.sched_getaffinity(0)
            acts = {
                "limit self": lambda: resource.prlimit(0, resource.RLIMIT_NOFILE),
                "limit self by pid": lambda: resource.prlimit(me, resource.RLIMIT_CORE, (0, 0)),
                "nice self": lambda: os.nice(1),
                "priority of own group": lambda: os.setpriority(os.PRIO_PGRP, 0, 2),
                "affinity self": lambda: os.sched_setaffinity(0, cores),
                "signal self": lambda: os.kill(me, 0),
                "limit other": lambda: resource.prlimit(them, resource.RLIMIT_CPU, (0, 0)),
                "read other's limit": lambda: resource.prlimit(them, resource.RLIMIT_CPU),
                "priority of other": lambda: os.setpriority(os.PRIO_PROCESS, them, 19),
                "priority of user": lambda: os.setpriority(os.PRIO_USER, 0, 19),
                "affinity of other": lambda: os.sched_setaffinity(them, {min(cores)}),
                "scheduler of other": lambda: os.sched_setscheduler(
                    them, os.SCHED_IDLE, os.sched_param(0)
                ),
                "signal other": lambda: os.kill(them, signal.SIGKILL),
            }
            for name, act in acts.items():
                try:
                    act()
                    outcome[name] = "ok"
                except OSError as exc:
                    outcome[name] = exc.errno
        finally:
            os.write(write_end, json.dumps(outcome).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        outcome = json.loads(pipe.read() or b"{}")
    os.waitpid(pid, 0)
    try:
        assert other.poll() is None  # the other process lives on
        assert resource.prlimit(other.pid, resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY
        assert os.getpriority(os.PRIO_PROCESS, other.pid) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        other.kill()
        other.wait()
    import errno

    on_self = [
        "limit self",
        "limit self by pid",
        "nice self",
        "priority of own group",
        "affinity self",
        "signal self",
    ]
    assert {name: outcome.get(name) for name in on_self} == {name: "ok" for name in on_self}, (
        outcome
    )
    refused = [name for name in outcome if name not in on_self]
    assert {name: outcome[name] for name in refused} == {name: errno.EPERM for name in refused}, (
        outcome
    )


def test_open_session_follows_each_jobs_sandbox_policy(monkeypatch):
    """check.py's open_session, shared by verify_job.py ("fallback") and grade_job.py ("strict"):
    each policy's labels and refusals, as the two jobs had them."""
    from generator.checker import main

    opened = []

    class FakeSession:
        def __init__(self, interpreter, sandbox, checker=None, **options):
            if options.get("spares") == "refuse":
                raise main.Refused("refused here")
            if options.get("spares") == "break":
                raise RuntimeError("broke")
            opened.append((sandbox, options))

    monkeypatch.setattr(main, "Session", FakeSession)
    job = {"interpreter": True, "checker": "check.py"}

    def run(policy, sandbox, problem, **options):
        monkeypatch.setattr(main, "sandbox_problem", lambda: problem)
        session, label, why = main.open_session(dict(job, sandbox=sandbox), policy, **options)
        return session is not None, label, why

    assert run("fallback", "auto", None) == (True, "bubblewrap", "")
    assert run("fallback", "auto", "no bwrap") == (True, "none (no bwrap)", "")
    assert run("fallback", "off", None) == (True, "none (turned off)", "")
    assert run("fallback", "on", "no bwrap") == (
        False,
        "none (no bwrap)",
        "the sandbox was asked for and cannot run here: no bwrap",
    )
    ok, label, why = run("fallback", "auto", None, spares="break")
    assert (ok, label) == (False, "bubblewrap") and "RuntimeError: broke" in why
    assert run("strict", "on", None, spares=2) == (True, "bubblewrap", "")
    assert run("strict", "off", "no bwrap") == (True, "off", "")
    assert run("strict", "auto", "no bwrap") == (
        False,
        "none",
        "the sandbox cannot run on this runner: no bwrap",
    )
    assert run("strict", "on", None, spares="refuse") == (False, "none", "refused here")
    with pytest.raises(RuntimeError):
        run("strict", "on", None, spares="break")
    assert [s for s, _ in opened] == [True, False, False, True, False]
    assert opened[3][1] == {"spares": 2}
