"""The sandbox by allow-list (generator/checker/shared/sandbox.py): what its mount plan binds, what a
worker sees from inside (a real bubblewrap where one runs here), that every process a worker
starts ends with it, that workers share no /tmp or /dev/shm; file events at any depth; and that
grading caches no result that a submission's escape attempt may have touched (grade/tasks.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.checker.shared import sandbox
from generator.grade.tasks import ResultStore, collect_results, harvest, plan, uncacheable, Unit
from generator.runners.base import TaskResult

REPO = Path(__file__).resolve().parent.parent


def binds(plan_steps):
    return [(step[1], step[2]) for step in plan_steps if step[0] == "bind"]


def test_the_plan_binds_system_software_python_and_the_checker_file_only(tmp_path):
    checker = tmp_path / "job" / "check.py"
    checker.parent.mkdir()
    checker.write_text("# checker\n")
    (tmp_path / "job" / "units").mkdir()  # other students' files beside the checker
    files, folders = sandbox.python_paths(sys.executable)
    steps = sandbox.sandbox_plan(sys.executable, str(checker), [str(tmp_path / "course")])
    sources = [source for source, _ in binds(steps)]
    allowed = (
        set(sandbox.SYSTEM)
        | set(sandbox.SYSTEM_FILES)
        | set(files)
        | set(folders)
        | {str(checker.resolve())}
    )
    assert set(sources) <= allowed | set(sandbox.SYSTEM_LINKS), set(sources) - allowed
    assert "/usr" in sources and sys.executable in sources
    assert (str(checker.resolve()), f"{sandbox.SANDBOX_CHECKER}/check.py") in binds(steps)
    assert not any(
        source == str(checker.parent.resolve()) for source in sources
    )  # never its folder
    for folder in (
        "/",
        "/home",
        "/root",
        "/work",
        "/srv",
        "/opt",
        "/mnt",
        "/var",
        "/etc",
        os.path.expanduser("~"),
        os.getcwd(),
        str(REPO),
    ):
        assert os.path.realpath(folder) not in sources, folder
    assert not any(step[0] == "device" for step in steps)  # no GPU asked: no device node


def test_a_python_folder_that_holds_a_protected_one_is_left_out_and_one_inside_is_bound(
    tmp_path, monkeypatch
):
    """A sys.path folder holding an imported module: the checkout itself (it holds the course) is
    never bound; a venv's site-packages inside a protected folder is, exactly."""
    checkout = tmp_path / "checkout"
    site = checkout / ".venv" / "lib" / "site-packages"
    (site / "fakedep").mkdir(parents=True)
    (site / "fakedep" / "__init__.py").write_text("")
    (checkout / "fakemodule.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(checkout))
    import importlib

    importlib.invalidate_caches()
    importlib.import_module("fakedep")
    importlib.import_module("fakemodule")
    try:
        steps = sandbox.sandbox_plan(sys.executable, str(tmp_path / "check.py"), [str(checkout)])
    finally:
        sys.modules.pop("fakedep", None)
        sys.modules.pop("fakemodule", None)
    sources = [source for source, _ in binds(steps)]
    assert str(site.resolve()) in sources
    assert str(checkout.resolve()) not in sources


def test_a_protected_folder_inside_system_software_is_covered(monkeypatch):
    steps = sandbox.sandbox_plan(sys.executable, "/nonexistent/check.py", ["/usr/share"])
    assert ("tmpfs", "/usr/share") in steps
    assert steps.index(("tmpfs", "/usr/share")) > steps.index(("bind", "/usr", "/usr"))


def test_modules_with_a_relative_file_name_add_no_folder(monkeypatch, tmp_path):
    """torch.ops and torch.classes have __file__ "_ops.py": resolved against the current folder it
    would bind the current folder."""
    monkeypatch.chdir(tmp_path)
    fake = type(sys)("cp_fake_relative")
    fake.__file__ = "_ops.py"
    monkeypatch.setitem(sys.modules, "cp_fake_relative", fake)
    monkeypatch.syspath_prepend(str(tmp_path))
    _, folders = sandbox.python_paths(sys.executable)
    assert str(tmp_path.resolve()) not in folders


def test_the_command_line_as_root_stages_every_bind_in_order(tmp_path):
    argv = sandbox.sandbox_command(
        sys.executable, str(tmp_path / "check.py"), (), False, None, str(tmp_path / "st")
    )
    assert argv[:3] == ["unshare", "--mount", "--propagation"]
    script = argv[argv.index("-c") + 1]
    inner = argv[argv.index("bwrap") :]
    staged = [inner[i + 1] for i, arg in enumerate(inner) if arg == "--ro-bind"]
    assert staged == [str(tmp_path / "st" / str(i)) for i in range(len(staged))]
    assert script.count("mount --bind -o ro") == len(staged)
    assert "--remount-ro" in inner and inner[inner.index("--remount-ro") + 1] == "/"


def test_file_events_are_reported_at_any_depth_except_the_installations_own_reads(tmp_path):
    own = str(tmp_path / "relu.py")
    report = sandbox.reported_file_event
    assert report("open", ("/work/course/solution.py", "r", 0), 7, own, "/tmp")
    assert report("os.scandir", ("/work",), 3, own, "/tmp")
    assert report("open", ("/etc/passwd", "r", 0), 1, own, None)
    assert not report("open", (own, "r", 0), 5, own, None)  # linecache reading its own file
    assert not report("open", ("/tmp/triton/x.so", "wb", 0), 4, own, "/tmp")  # its scratch
    torch_file = os.path.join(sandbox.quiet_folders()["read"][0], "x.py")
    assert not report("open", (torch_file, "r", 0), 3, own, "/tmp")  # Python's own read, deep
    assert report("open", (torch_file, "r", 0), 1, own, "/tmp")  # the same read by the code itself
    assert report("open", (torch_file, "w", 0), 3, own, "/tmp")  # a write, at any depth


def result(clock, events=()):
    return {
        "status": "pass",
        "clock": list(clock),
        "flags": {"events": list(events), "protocol": []},
    }


def test_no_result_is_cached_that_tried_to_escape_or_ran_beside_one():
    results = {
        "escaper": result((10, 20), [{"kind": "file"}]),
        "beside": result((15, 25)),
        "before": result((0, 9)),
        "after": result((21, 30)),
        "clockless": {"status": "pass"},
    }
    assert uncacheable(results) == {"escaper", "beside", "clockless"}
    assert (
        uncacheable({"a": result((0, 1)), "b": {"status": "pass"}}) == set()
    )  # no escape: everything is cached


def write_result(folder: Path, key: str, data: dict) -> None:
    (folder / "results").mkdir(parents=True, exist_ok=True)
    (folder / "results" / f"{key}.json").write_text(
        json.dumps({"id": key, "data": data}), encoding="utf-8"
    )


def test_grading_uses_an_uncached_result_for_this_run_only(tmp_path):
    units = [Unit(k, f"code {k}", None, "relu.py") for k in ("escaper", "beside", "alone")]
    chunks = plan(units, tmp_path / "work", "# check.py\n", 3, 2, 10, "on", True, 3)
    folder = chunks[0].task.folder
    write_result(folder, "escaper", result((10, 20), [{"kind": "process"}]))
    write_result(folder, "beside", result((19, 22)))
    write_result(folder, "alone", result((30, 31)))
    store = ResultStore(tmp_path / "store")
    finished = collect_results(
        chunks, [TaskResult(c.task.name, "COMPLETED", 0, "", "", 0.0) for c in chunks], store
    )
    assert finished.missing == {}
    assert all(
        store.data(k)["status"] == "pass" for k in ("escaper", "beside", "alone")
    )  # this run has all three
    later = ResultStore(tmp_path / "store")
    assert (
        later.data("alone") is not None
        and later.data("escaper") is None
        and later.data("beside") is None
    )
    assert (
        harvest(tmp_path / "work", ResultStore(tmp_path / "other")) == 1
    )  # a killed run's: only "alone" is kept


needs_bwrap = pytest.mark.skipif(
    sandbox.sandbox_problem() is not None, reason=f"no sandbox here: {sandbox.sandbox_problem()}"
)


def inside(code: str, folders=(), timeout=120, gpu=False) -> subprocess.CompletedProcess:
    """Python code run as the worker factory is run (sandbox_command's bubblewrap, with this module
    as the checker file); WORKER's worker() runs a function in a worker isolated as the checker's."""
    staging = sandbox.sandbox_staging()
    try:
        argv = sandbox.sandbox_command(
            sys.executable, sandbox.__file__, list(folders), gpu, None, staging
        )
        start = argv.index("--zygote") - 1
        argv[start : start + 2] = [
            "-c",
            "import sys; sys.path.insert(0, '/.coursepack/checker'); import sandbox\n" + code,
        ]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    finally:
        if staging:
            subprocess.run(["rm", "-rf", staging], check=False)


WORKER = """
import os, json
def worker(body):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.setpgid(0, 0)
        sandbox.isolate({"scratch_mib": 16, "shm_mib": 8}, OWN)
        answer = body()
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data or b"null")
OWN = sandbox.own_pids_work(GPU)
"""


@needs_bwrap
def test_a_worker_sees_no_course_no_home_and_only_its_own_processes(tmp_path):
    course = tmp_path / "course"
    (course / "lessons").mkdir(parents=True)
    (course / "lessons" / "solution.py").write_text("ANSWER = 1\n")
    done = inside(
        WORKER.replace("GPU", "False")
        + """
def look():
    return {"root": sorted(os.listdir("/")), "course": os.path.exists(COURSE), "repo": os.path.exists(REPO),
            "pids": [p for p in os.listdir("/proc") if p.isdigit()], "home": os.path.exists(HOME)}
print(json.dumps(dict(worker(look), own=OWN)))
""".replace("COURSE", repr(str(course)))
        .replace("REPO", repr(str(REPO / "content")))
        .replace("HOME", repr(os.path.expanduser("~/.bash_history"))),
        [str(course)],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert not seen["course"] and not seen["repo"] and not seen["home"]
    system = {
        ".coursepack",
        "bin",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "sbin",
        "tmp",
        "usr",
    }
    python = {
        Path(p).parts[1]
        for p in sandbox.python_paths(sys.executable)[1] + sandbox.python_paths(sys.executable)[0]
    }
    assert set(seen["root"]) <= system | python, set(seen["root"]) - system - python
    if seen["own"]:
        assert seen["pids"] == ["1", "2"]  # its init and itself


@needs_bwrap
def test_every_process_a_worker_starts_ends_with_it_and_workers_share_no_tmp():
    """A worker leaves a file in /tmp and /dev/shm and a child in a new session that would sleep
    30 s holding the worker's answer pipe open: the next worker sees neither file, and the pipe
    closes when the worker ends (the child ended with it)."""
    done = inside(
        WORKER.replace("GPU", "False")
        + """
import time
def leave_behind():
    open("/tmp/cp-drop", "w").write("x"); open("/dev/shm/cp-drop", "w").write("x")
    if os.fork() == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
    return True

def look():
    return [os.path.exists("/tmp/cp-drop"), os.path.exists("/dev/shm/cp-drop")]

started = time.monotonic()
if OWN:
    worker(leave_behind)
else:
    worker(lambda: open("/tmp/cp-drop", "w").write("x") and open("/dev/shm/cp-drop", "w").write("x"))
print(json.dumps({"own": OWN, "took": time.monotonic() - started, "seen": worker(look)}))
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["seen"] == [False, False]  # the next worker has its own /tmp and /dev/shm
    if not seen["own"]:
        pytest.skip(
            "no PID namespace per worker here: a process in a new session outlives its worker"
        )
    assert seen["took"] < 10  # not the child's 30 s


@needs_bwrap
def test_the_view_script_lists_a_workers_disk(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "solution.py").write_text("x\n")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "sandbox_view.py"), str(tmp_path / "course")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    listing = json.loads(done.stdout[done.stdout.index("{") :])
    assert listing[str(tmp_path / "course")] == "(No such file or directory)"
    assert listing["/tmp"] == ["triton"] and listing["/dev/shm"] == []


@pytest.mark.cuda
@needs_bwrap
def test_a_gpu_worker_runs_cuda_in_its_own_pid_namespace():
    """On a GPU host: the factory's probe finds that a worker may have its own PID namespace (cuInit
    in one), and a worker isolated so runs a CUDA kernel of torch's and sees only its own processes."""
    from tests.conftest import has_cuda

    if not has_cuda():
        pytest.skip("needs a CUDA GPU; none is visible to torch here")
    subprocess.run(
        [sys.executable, "-c", "import torch; torch.cuda.init()"], check=True, timeout=300
    )  # /dev/nvidia-uvm
    done = inside(
        WORKER.replace("GPU", "True")
        + """
def run():
    import torch
    value = float((torch.arange(4, device="cuda", dtype=torch.float32) * 2).sum())
    return {"value": value, "pids": [p for p in os.listdir("/proc") if p.isdigit()], "root": sorted(os.listdir("/"))}
print(json.dumps(dict(worker(run), own=OWN)))
""",
        gpu=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["own"], (
        "no PID namespace per worker with CUDA here: every result says so (sandbox_label)"
    )
    assert seen["value"] == 12.0 and seen["pids"] == ["1", "2"], seen


CGROUP_WORKER = """
import os, json
def run(body, limits):
    folders = sandbox.make_worker_cgroups(7, limits)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        sandbox.join_cgroups(folders)
        sandbox.isolate({"scratch_mib": 16, "shm_mib": 8}, True)
        os._exit(body())
    _, status = os.waitpid(pid, 0)
    for folder in folders:
        sandbox.remove_cgroup(folder)
    return [len(folders), os.waitstatus_to_exitcode(status)]

def allocate():
    block = bytearray(256 << 20)
    block[::4096] = b"x" * len(block[::4096])
    return 0

def fork_many():
    started = 0
    for _ in range(40):
        try:
            if os.fork() == 0:
                import time
                time.sleep(5)
                os._exit(0)
            started += 1
        except OSError:
            break
    return started
"""


@needs_bwrap
def test_a_worker_cgroup_bounds_its_memory_and_processes_where_cgroups_can_be_made():
    """Where the trusted side may make cgroups (root with cgroup v1's memory and pids controllers),
    a worker's memory (here 64 MiB) and its processes (here 8, its own included) are bounded by its
    cgroup: 256 MiB ends it (the kernel's OOM killer), the ninth process is refused."""
    done = inside(
        CGROUP_WORKER
        + """
own = sandbox.own_pids_work(False)
if not (own and os.environ.get("COURSEPACK_CGROUPS")):
    print(json.dumps(None))
else:
    print(json.dumps([run(allocate, {"memory_mib": 64}), run(fork_many, {"processes": 8})]))
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    if seen is None:
        pytest.skip("no cgroup per worker here (every result says so)")
    (memory_cgroups, memory_exit), (pid_cgroups, started) = seen
    assert (
        memory_cgroups == 2 and memory_exit == 128 + 9
    )  # killed, as the outer process hands it on
    assert pid_cgroups == 2 and started < 8
