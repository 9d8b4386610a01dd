"""Cold verification of lesson 3 (English) against otter-grader's `otter assign` on an equivalent lesson.

    .venv/bin/python bench/otter_compare.py [--rounds N] [--otter-mistakes] [--wait-idle S] [--keep]
    .venv/bin/python bench/otter_compare.py --smoke

Issue 12 asks that on the 2-core machine the cold verification of one lesson in one language take at
most otter assign's wall time for an equivalent lesson, measured alternately in one run. This script
does that measurement:

  otter side      its own virtual environment, build/otter-venv (made once, reused): otter-grader 7.0.0
                  with the project's torch, triton and numpy (requirements/lock.txt) and the project's
                  ipykernel, which runs the notebook. Never the project's .venv.
  the notebook    an otter assign master notebook equivalent to content/lessons/lesson03_relu: the same
                  ReLU kernel with the same one blank; one test per case of lesson.yaml that the Triton
                  interpreter can run (the cases coursepack's checker runs there: seed, whole blocks,
                  tails, empty input, NaN/±inf/±0 in float32 and float16), each checked as coursepack's
                  checker checks it (inputs drawn the same way, outputs poisoned inside guard bands,
                  NaN equal to NaN), TRITON_INTERPRET=1 set before the kernel is defined. Otter's
                  defaults otherwise: `otter assign` builds the student and autograder notebooks and the
                  autograder zip, then grades the solution notebook against every test.
  --otter-mistakes  also measures a second notebook that adds one hidden test per declared mistake of
                  lesson.yaml (the wrong kernel must fail exactly the declared cases), which is the rest
                  of the checking coursepack's gate does and otter has no feature for.
  coursepack side `bench/verify_bench.py --lesson lesson03_relu --locale en --cold-only` with this
                  Python: answer, mistakes, exercise and notebook, from empty caches.

Every round runs each side once, cold (a fresh folder and a fresh TRITON_CACHE_DIR each time); the order
alternates between rounds. Wall time is the whole command; CPU time is user + system of the command and
all its descendants (getrusage(RUSAGE_CHILDREN) deltas; this process is made a child subreaper, so that
descendants left behind are reaped and counted too). Prints numbers; never fails on time.

--smoke installs nothing: it checks that the notebooks it writes are valid nbformat in otter's format,
runs the default notebook's code (solution and every test) with this Python under the Triton
interpreter, and runs `verify_bench.py --smoke`.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LESSON = REPO / "content" / "lessons" / "lesson03_relu"
VENV = REPO / "build" / "otter-venv"
OTTER = "otter-grader==7.0.0"
# from requirements/lock.txt: the numbers the notebook computes with, and the kernel that runs it
SAME_AS_PROJECT = ("torch", "triton", "numpy", "ipykernel")
ANSWER = "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)"
NOTEBOOK_NAME = "relu.ipynb"
GUARD = 4096  # as generator/checker/runtime.py


# ---------------------------------------------------------------------------------------------
# otter's environment
# ---------------------------------------------------------------------------------------------


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements" / "lock.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def requirements() -> list[str]:
    pins = lock_pins()
    return [OTTER] + [f"{name}=={pins[name]}" for name in SAME_AS_PROJECT]


def ensure_venv(log=print) -> Path:
    """build/otter-venv with otter-grader and the project's pins; made once, reused while the pins hold."""
    python = VENV / "bin" / "python"
    marker = VENV / ".installed"
    wanted = "\n".join(requirements()) + "\n"
    if python.exists() and marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return python
    log(
        f"setting up {VENV.relative_to(REPO)}: {' '.join(requirements())} (once; this takes minutes)"
    )
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    # torch pinned: the CPU build on local disk, not a multi-GB CUDA build
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements()], check=True)
    marker.write_text(wanted, encoding="utf-8")
    return python


# ---------------------------------------------------------------------------------------------
# the lesson, read from lesson.yaml and solution.py
# ---------------------------------------------------------------------------------------------


def load_lesson() -> dict:
    from ruamel.yaml import YAML

    spec = YAML(typ="safe").load((LESSON / "lesson.yaml").read_text(encoding="utf-8"))
    checks = spec["checks"]
    runnable = [
        c
        for c in checks["cases"]
        if not c.get("gpu_only") and c.get("dtype", "float32") != "bfloat16"
    ]  # as the checker skips
    ids = [c["id"] for c in runnable]
    mistakes = []
    for m in checks.get("mistakes", []):
        fails = m["fails"]
        expected = (
            [i for i in ids if i not in fails["all_except"]]
            if isinstance(fails, dict)
            else [i for i in fails if i in ids]
        )
        mistakes.append(
            {"id": m["id"], "fill": m.get("fill"), "replace": m.get("replace"), "fails": expected}
        )
    (draw,) = [i.get("draw", {}) for i in checks["inputs"]]
    return {
        "cases": runnable,
        "draw": draw,
        "poison": float(checks["poison"]),
        "mistakes": mistakes,
        "groups": {
            part["id"]: part["points"] for part in spec["rubric"]["parts"] if part["kind"] == "auto"
        },
    }


def kernel_source() -> str:
    """solution.py without its text anchors, blank marker and demo: the code coursepack verifies."""
    lines = []
    for line in (LESSON / "solution.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("if __name__"):
            break
        if line.strip().startswith("# @text:"):
            continue
        if "# @blank" in line:
            line = line.split("# @blank")[0].rstrip()
            if ANSWER not in line:
                raise SystemExit(
                    f"the blank line of solution.py no longer holds {ANSWER}: {line.strip()}"
                )
        lines.append(line)
    return "\n".join(lines).rstrip() + "\n"


def mistake_source(mistake: dict) -> str:
    code = kernel_source()
    if mistake["fill"] is not None:
        return code.replace(ANSWER, mistake["fill"], 1)
    old, new = mistake["replace"]["old"], mistake["replace"]["new"]
    if old not in code:
        raise SystemExit(f"mistake {mistake['id']}: {old!r} is not in solution.py")
    return code.replace(old, new, 1)


# ---------------------------------------------------------------------------------------------
# the otter assign master notebook
# ---------------------------------------------------------------------------------------------

CHECKER_CELL = '''\
# The lesson's checker (coursepack ships the same cases to students in check.py): inputs drawn as
# the checker draws them, outputs poisoned inside guard bands, NaN equal to NaN, +0 equal to -0.
import importlib.util, tempfile, zlib

CASES = {cases!r}
DRAW = {draw!r}
POISON, GUARD = {poison!r}, {guard!r}


def make_input(case):
    n, values = case.get("dims", {{}}).get("N"), [float(v) for v in case.get("values", {{}}).get("x", [])]
    if n is None:
        x = torch.tensor(values, dtype=torch.float64)
    else:
        generator = torch.Generator().manual_seed(zlib.crc32(f"{{case['id']}}/x".encode()))
        x = torch.rand((n,), generator=generator, dtype=torch.float64) * (DRAW["high"] - DRAW["low"]) + DRAW["low"]
        if DRAW.get("alternate_signs"):
            x[0::2], x[1::2] = -x[0::2].abs(), x[1::2].abs()
        step = max(n // len(values), 1) if values and n else 0
        for i, value in enumerate(values if n else []):
            x[min(i * step, n - 1) if i < len(values) - 1 else n - 1] = value
    return x.to(getattr(torch, case.get("dtype", "float32")))


def run_case(fn, case):
    """True when fn(x) equals torch.relu(x) everywhere and writes nothing outside its output."""
    x = make_input(case)
    expected = torch.relu(x)
    plain_empty_like, buffers = torch.empty_like, []

    def poisoned_empty_like(t, *args, **kwargs):
        plain = plain_empty_like(t, *args, **kwargs)
        if args or not plain.numel() or not plain.is_floating_point():
            return plain
        buffer = torch.full((plain.numel() + 2 * GUARD,), POISON, dtype=plain.dtype, device=plain.device)
        buffers.append(buffer)
        return buffer[GUARD:GUARD + plain.numel()].view(plain.shape)

    torch.empty_like = poisoned_empty_like
    try:
        out = fn(x)
    finally:
        torch.empty_like = plain_empty_like
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape or out.dtype != expected.dtype:
        return False
    for buffer in buffers:
        if out.numel() and out.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr():
            guards = torch.cat([buffer[:GUARD], buffer[GUARD + out.numel():]])
            if bool((guards != POISON).any()):
                return False
    got, want = out.double(), expected.double()
    return bool(((got == want) | (torch.isnan(got) & torch.isnan(want))).all())


def check_case(case_id):
    (case,) = [c for c in CASES if c["id"] == case_id]
    return run_case(relu, case)
'''

MISTAKE_HELPER = '''\


def fails_exactly(source, expected):
    """True when the kernel module `source` fails exactly the cases `expected` (an exception is a failure)."""
    path = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False).name
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("mistake_" + str(zlib.crc32(source.encode())), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed = []
    for case in CASES:
        try:
            passed = run_case(module.relu, case)
        except Exception:
            passed = False
        if not passed:
            failed.append(case["id"])
    return sorted(failed) == sorted(expected)
'''


def master_notebook(mistakes: bool = False):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

    lesson = load_lesson()
    kernel = kernel_source()
    blank_line = next(line for line in kernel.splitlines() if ANSWER in line)
    indent = blank_line[: len(blank_line) - len(blank_line.lstrip())]
    solution = kernel.replace(
        blank_line,
        f"{indent}relu_x = {ANSWER}  # SOLUTION\n" + blank_line.replace(ANSWER, "relu_x"),
    )
    checker = CHECKER_CELL.format(
        cases=lesson["cases"], draw=lesson["draw"], poison=lesson["poison"], guard=GUARD
    )
    if mistakes:
        checker += MISTAKE_HELPER

    def test(code: str, config: dict):
        head = (
            '""" # BEGIN TEST CONFIG\n'
            + "".join(f"{k}: {v}\n" for k, v in config.items())
            + '""" # END TEST CONFIG\n'
        )
        # otter's OK-format tests expect the output the cell had in the saved master notebook
        return new_code_cell(
            head + code,
            execution_count=1,
            outputs=[new_output("execute_result", {"text/plain": "True"}, execution_count=1)],
        )

    normal = [c for c in lesson["cases"] if c["group"] == "normal"]
    boundary = [c for c in lesson["cases"] if c["group"] == "boundary"]
    tests = [
        test(
            f"check_case({c['id']!r})",
            {"points": round(lesson["groups"]["normal"] / len(normal), 4)},
        )
        for c in normal
    ]
    tests += [
        test(
            f"check_case({c['id']!r})",
            {"points": round(lesson["groups"]["boundary"] / len(boundary), 4)},
        )
        for c in boundary
    ]
    if mistakes:
        tests += [
            test(
                f"fails_exactly({mistake_source(m)!r}, {m['fails']!r})",
                {"hidden": "true", "points": 1},
            )
            for m in lesson["mistakes"]
        ]

    cells = [
        new_raw_cell("# ASSIGNMENT CONFIG\nname: lesson03_relu\n"),
        new_markdown_cell(
            "# Lesson 3 · ReLU in Triton\n\nThe same kernel and the same one blank as coursepack's "
            "lesson03_relu; the tests are the cases of its lesson.yaml that the Triton interpreter "
            "runs."
        ),
        new_code_cell(
            'import os\nos.environ["TRITON_INTERPRET"] = "1"   # before any kernel is defined\n'
            "import torch\nimport triton\nimport triton.language as tl"
        ),
        new_code_cell(checker),
        new_raw_cell("# BEGIN QUESTION\nname: q1\n"),
        new_markdown_cell(
            "**Question 1.** Complete the per-lane ReLU: `relu_x` must equal `torch.relu` on every "
            "element, NaN included."
        ),
        new_raw_cell("# BEGIN SOLUTION"),
        new_code_cell(solution.rstrip("\n")),
        new_raw_cell("# END SOLUTION"),
        new_raw_cell("# BEGIN TESTS"),
        *tests,
        new_raw_cell("# END TESTS"),
        new_raw_cell("# END QUESTION"),
    ]
    nb = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(nb)
    return nb


def write_notebook(folder: Path, mistakes: bool) -> Path:
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NOTEBOOK_NAME
    nbformat.write(master_notebook(mistakes), str(path))
    return path


def notebook_as_script(path: Path) -> str:
    """The master notebook's code run as otter grades it: every code cell, then each test's expression
    compared with its saved output."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    parts, in_tests = [], False
    for cell in nb.cells:
        text = cell.source
        if cell.cell_type == "raw":
            in_tests = text.startswith("# BEGIN TESTS") or (
                in_tests and not text.startswith("# END TESTS")
            )
        elif cell.cell_type == "code" and not in_tests:
            parts.append(text.replace("  # SOLUTION", ""))
        elif cell.cell_type == "code":
            expression = text.split('""" # END TEST CONFIG\n', 1)[-1]
            want = cell.outputs[0]["data"]["text/plain"]
            parts.append(
                f"assert repr({expression}) == {want!r}, {expression!r}\nprint('passed', {expression!r})"
            )
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def become_subreaper() -> bool:
    """Orphaned descendants (a kernel left running, say) come back to this process, which reaps them,
    so that their CPU time is counted in RUSAGE_CHILDREN."""
    try:
        return (
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
        )  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def my_children() -> list[int]:
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.append(int(entry.name))
    return found


def reap_orphans(grace_s: float = 60.0) -> int:
    """Wait for descendants that outlived the command (killing, by pid, any still there after grace_s)."""
    reaped, deadline = 0, time.monotonic() + grace_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
            continue
        if time.monotonic() > deadline:
            for pid in my_children():
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.05)


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_busy() -> float | None:
    """CPU seconds the whole machine has spent busy (all processes, all cores), from /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_idle(limit_s: float, busy_below: float = 0.25) -> float:
    """Wait (at most limit_s) until the machine is busy less than busy_below of one core over a second;
    returns the seconds waited. Other users can still start work during the measurement: see `others`."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        before = machine_busy()
        time.sleep(1.0)
        after = machine_busy()
        if before is None or after is None or after - before < busy_below:
            break
    return time.monotonic() - start


def measure(argv: list[str], cwd: Path, env: dict) -> dict:
    """Wall and CPU time of one command; `others` is the CPU time the rest of the machine took meanwhile."""
    load1 = os.getloadavg()[0]
    busy0, mine0 = machine_busy(), cpu_self()
    cpu0, start = cpu_children(), time.monotonic()
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    wall = time.monotonic() - start
    busy1, mine1 = machine_busy(), cpu_self()
    orphans = reap_orphans()
    cpu = cpu_children() - cpu0
    others = (
        max(0.0, busy1 - busy0 - cpu - (mine1 - mine0))
        if busy0 is not None and busy1 is not None
        else None
    )
    return {
        "wall": wall,
        "cpu": cpu,
        "others": others,
        "load1": load1,
        "orphans": orphans,
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
    }


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(extra)
    return env


def run_otter(work: Path, mistakes: bool) -> dict:
    folder = work / ("otter-mistakes" if mistakes else "otter")
    master = write_notebook(
        folder, mistakes
    )  # writing it is not timed: the author's notebook exists
    cache = folder / "triton-cache"
    cache.mkdir()
    env = clean_env(
        TRITON_CACHE_DIR=str(cache),
        PATH=f"{VENV / 'bin'}:{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(VENV),
    )
    env.pop("PYTHONPATH", None)
    result = measure(
        [str(VENV / "bin" / "otter"), "assign", "-v", master.name, "dist"], folder, env
    )
    # -v only makes otter log what it did, so that a run that skipped its tests shows
    zips = list((folder / "dist" / "autograder").glob("*.zip"))
    result["ok"] = (
        result["returncode"] == 0
        and bool(zips)
        and "All autograder tests passed" in (result["stdout"] + result["stderr"])
    )
    return result


COLD = re.compile(r"^\s+cold\s+([\d.]+) s\s*$", re.M)


def run_coursepack(work: Path, smoke: bool = False) -> dict:
    folder = work / "coursepack"
    folder.mkdir(parents=True, exist_ok=True)
    args = ["--smoke"] if smoke else ["--lesson", "lesson03_relu", "--locale", "en", "--cold-only"]
    env = clean_env(
        TRITON_CACHE_DIR=str(folder / "triton-cache")
    )  # verify_bench uses its own, fresh
    result = measure([sys.executable, str(REPO / "bench" / "verify_bench.py"), *args], folder, env)
    found = COLD.search(result["stdout"])
    result["inner"] = float(found.group(1)) if found else None
    result["ok"] = result["returncode"] == 0 and found is not None
    return result


VERSION_SCRIPT = """
import importlib.metadata as m, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = m.version(name)
    except m.PackageNotFoundError:
        found[name] = "absent"
print(json.dumps(found))
"""


def versions(python: str, names: list[str]) -> dict:
    done = subprocess.run([python, "-c", VERSION_SCRIPT, *names], capture_output=True, text=True)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {}


def machine() -> dict:
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def failure(name: str, result: dict) -> str:
    return f"{name} failed (exit status {result['returncode']}):\n" + textwrap.indent(
        (result["stdout"] + result["stderr"]).strip()[-4000:], "    "
    )


# ---------------------------------------------------------------------------------------------
# modes
# ---------------------------------------------------------------------------------------------


def smoke() -> int:
    work = Path(tempfile.mkdtemp(prefix="coursepack-otter-smoke-"))
    try:
        import nbformat

        for mistakes in (False, True):
            path = write_notebook(work / f"nb-{int(mistakes)}", mistakes)
            nb = nbformat.read(str(path), as_version=4)
            nbformat.validate(nb)
            raws = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "raw"]
            assert raws[0] == "# ASSIGNMENT CONFIG", raws
            assert raws[1:] == [
                "# BEGIN QUESTION",
                "# BEGIN SOLUTION",
                "# END SOLUTION",
                "# BEGIN TESTS",
                "# END TESTS",
                "# END QUESTION",
            ], raws
            print(
                f"notebook ok: {path.name}{' (with mistakes)' if mistakes else ''}, {len(nb.cells)} cells, "
                f"valid nbformat {nb.nbformat}.{nb.nbformat_minor}"
            )
        script = notebook_as_script(work / "nb-0" / NOTEBOOK_NAME)
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=work,
            capture_output=True,
            text=True,
            env=clean_env(TRITON_CACHE_DIR=str(work / "triton-cache")),
            timeout=600,
        )
        if done.returncode != 0:
            print(f"the notebook's solution fails its own tests:\n{done.stdout}{done.stderr}")
            return 1
        print(
            f"notebook code ok: {done.stdout.count('passed')} tests pass on the solution (Triton interpreter)"
        )
        result = run_coursepack(work, smoke=True)
        if not result["ok"]:
            print(failure("verify_bench.py --smoke", result))
            return 1
        print(
            f"verify_bench.py --smoke ok: cold {result['inner']:.2f} s (wall {result['wall']:.2f} s)"
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def compare(rounds: int, mistakes: bool, keep: bool, wait_idle: float) -> int:
    python = ensure_venv()
    subreaper = become_subreaper()
    start = machine()
    sides = ["otter", "coursepack"] + (["otter+mistakes"] if mistakes else [])
    rows = {side: [] for side in sides}
    work = Path(tempfile.mkdtemp(prefix="coursepack-otter-compare-"))
    try:
        for i in range(1, rounds + 1):
            order = sides if i % 2 else list(reversed(sides))
            for side in order:
                folder = work / f"round{i}"
                if wait_idle:
                    waited = wait_for_idle(wait_idle)
                    if waited > 1.5:
                        print(f"  (waited {waited:.0f} s for the machine to go idle)", flush=True)
                result = (
                    run_coursepack(folder)
                    if side == "coursepack"
                    else run_otter(folder, mistakes=side == "otter+mistakes")
                )
                if not result["ok"]:
                    print(failure(side, result))
                    return 1
                rows[side].append(result)
                print(
                    f"  round {i}: {side:15} {result['wall']:6.2f} s wall, {result['cpu']:6.2f} s CPU "
                    f"(load {result['load1']:.2f})",
                    flush=True,
                )
                if not keep:
                    shutil.rmtree(folder, ignore_errors=True)
        end = machine()
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    ours = versions(sys.executable, ["torch", "triton", "numpy", "nbclient", "ipykernel"])
    theirs = versions(
        str(python),
        ["otter-grader", "torch", "triton", "numpy", "nbconvert", "nbclient", "ipykernel"],
    )
    print()
    print(
        f"otter assign vs coursepack cold verification · lesson03_relu, en · {rounds} rounds, alternating"
        + (
            f" · each command after up to {wait_idle:.0f} s waiting for an idle machine"
            if wait_idle
            else ""
        )
    )
    print(
        f"  machine: nproc {start['nproc']} (os.cpu_count {start['cpus']}), {start['system']}, "
        f"Python {start['python']}"
    )
    print(
        f"  {start['date']}; load average at start {' '.join(f'{x:.2f}' for x in start['load'])}, "
        f"at end {' '.join(f'{x:.2f}' for x in end['load'])}"
    )
    print(f"  coursepack env: {', '.join(f'{k} {v}' for k, v in ours.items())}")
    print(f"  otter env:      {', '.join(f'{k} {v}' for k, v in theirs.items())}")
    print(
        f"  CPU = user + system of the command and all its descendants"
        f"{'' if subreaper else ' (not a subreaper here: orphans uncounted)'}"
    )
    print()
    labels = {
        "otter": "otter assign",
        "coursepack": "coursepack verify_bench cold",
        "otter+mistakes": "otter assign + mistakes as hidden tests",
    }
    print(
        f"  {'round':>6}  {'':40} {'wall s':>7} {'CPU s':>7} {'inner s':>8} {'load1':>6} {'others':>7}"
    )
    for i in range(rounds):
        for side in sides:
            r = rows[side][i]
            inner = f"{r['inner']:8.2f}" if r.get("inner") is not None else " " * 8
            others = f"{r['others']:7.2f}" if r.get("others") is not None else " " * 7
            orphans = f"  ({r['orphans']} orphan(s) reaped)" if r["orphans"] else ""
            print(
                f"  {i + 1:>6}  {labels[side]:40} {r['wall']:7.2f} {r['cpu']:7.2f} {inner} {r['load1']:6.2f} "
                f"{others}{orphans}"
            )
    for side in sides:
        inner = median(rows[side], "inner")
        inner_text = f"{inner:8.2f}" if inner is not None else " " * 8
        print(
            f"  {'median':>6}  {labels[side]:40} {median(rows[side], 'wall'):7.2f} "
            f"{median(rows[side], 'cpu'):7.2f} {inner_text}"
        )
    ours_wall, otter_wall = median(rows["coursepack"], "wall"), median(rows["otter"], "wall")
    print(
        f"\n  coursepack / otter assign, median wall: {ours_wall / otter_wall:.2f} "
        f"(inner cold figure / otter wall: {median(rows['coursepack'], 'inner') / otter_wall:.2f}); "
        f"median CPU: {median(rows['coursepack'], 'cpu') / median(rows['otter'], 'cpu'):.2f}"
    )
    print(
        "  inner s: verify_bench's own 'cold' figure (the build alone, without starting Python and "
        "importing the generator)"
    )
    print(
        f"  load1: 1-minute load average just before the command; others: CPU seconds the rest of the "
        f"machine used during the command (out of wall x {start['nproc']} cores)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of each side, alternating (default 3)"
    )
    parser.add_argument(
        "--otter-mistakes",
        action="store_true",
        help="also otter assign with the declared mistakes as hidden tests",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work folders (printed at the end)"
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="S",
        help="before each command wait up to S seconds for a second in which the machine is "
        "less than a quarter of a core busy (a shared machine; default: no wait)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="no otter install: notebooks valid, their tests pass, verify_bench --smoke runs",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return (
        smoke()
        if args.smoke
        else compare(args.rounds, args.otter_mistakes, args.keep, args.wait_idle)
    )


if __name__ == "__main__":
    sys.exit(main())
