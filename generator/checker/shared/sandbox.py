"""The sandbox for code that is not the user's own (grading, `check.py --sandbox`, verification's
answer and declared mistakes), in two layers:

1. bubblewrap around the worker factory (zygote.py), by allow-list (sandbox_plan): an empty,
   read-only root into which only system software (/usr), the dynamic loader's /etc files, the
   Python installation that runs torch and triton, the checker file, the staged launchers and,
   with a GPU, /sys, the driver's libraries and the GPU device nodes are mounted, read-only; no
   network, a cleared environment, no capabilities, a new session, killed with its parent; as
   root, it runs as nobody (65534).
2. each worker, forked from that factory, in a process group and user, mount, network, IPC and
   PID namespaces of its own (every process it starts ends with it; it sees no other), its own
   /tmp (its scratch) and /dev/shm, no capabilities, no new privileges, not dumpable (no other
   process may read its memory), signals refused to any process outside its group (a seccomp
   filter), and resource limits (CPU time, data, file size, open files, processes). Stopping a
   worker stops its group; the whole sandbox ends with its parent. A memory and a pids cgroup
   per worker where the trusted side may make cgroups (worker_cgroups); elsewhere none, and
   sandbox_label says so in every result.

Where bubblewrap is missing or user namespaces are refused, `sandbox_problem()` names what is missing: a
grading run refuses rather than run unconfined."""
import ctypes
import glob
import os
import shutil
import subprocess
import sys

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
NOBODY = 65534
SCRATCH_ROOT = "/tmp"        # a worker's private /tmp (its own tmpfs, in its own mount namespace)
SHARED_MEMORY = "/dev/shm"   # each worker's own too
SANDBOX_ROOT = "/.coursepack"
SANDBOX_CHECKER, SANDBOX_SEED = f"{SANDBOX_ROOT}/checker", f"{SANDBOX_ROOT}/triton-seed"
SANDBOX_GPU_LIBRARIES = f"{SANDBOX_ROOT}/gpu"   # the GPU driver's library folders, mounted back
SANDBOX_CGROUPS = f"{SANDBOX_ROOT}/cgroup"     # the factory's cgroup folders (worker_cgroups), one per controller
CGROUP_V1 = "/sys/fs/cgroup"
LIMITS = {"cpu_s": 900, "data_gib": 16, "file_mib": 512, "files": 1024, "processes": 4096, "scratch_mib": 1024,
          "shm_mib": 64, "memory_mib": 24 << 10}
# What the sandbox shows of the disk (an allow-list; sandbox_plan): system software, whole; the
# top-level folders that merged-/usr systems make links into /usr (bound where they are folders);
# of /etc only what the dynamic loader and the compiler's links need.
SYSTEM = ("/usr",)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
OWN_PACKAGES = ("generator", "tests", "bench", "scripts")   # coursepack's own code: never mounted


def sandbox_problem():
    """None when the sandbox can run here; else what is missing, in words."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux (this is {sys.platform})"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        done = subprocess.run(_bwrap_base() + ["--ro-bind", "/", "/", "true"], capture_output=True, text=True,
                              timeout=30, **_as_nobody())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start ({exc})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return (f"bubblewrap cannot create its namespaces here ({why[0]}): user namespaces are refused "
                "(kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's "
                "kernel.apparmor_restrict_unprivileged_userns on Ubuntu 24.04)")
    return None


def sandbox_label(base, setup):
    """What a result says of its sandbox: `base` (how it runs) and what it lacks here. A worker's
    memory is bounded per process (RLIMIT_DATA) and by its tmpfs sizes, its processes by
    RLIMIT_NPROC: there is no cgroup per worker (memory.max, pids.max) yet (docs/checker.md)."""
    if base is None:
        return None
    missing = [] if setup.get("cgroups") else ["no memory or process cgroup per worker"]
    if setup.get("own_pids") is False:
        missing.insert(0, "no PID namespace per worker here (a process it starts in a new session may outlive it)")
    return f"{base}; {'; '.join(missing)}" if missing else f"{base}; a memory and process cgroup per worker"


def _bwrap_base():
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _as_nobody():
    """As root, the sandbox runs as nobody: no root-owned file is then readable or writable by owner,
    and the process limit (which root ignores) holds."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    return {}


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _own_checkouts():
    """The folders that hold coursepack's own code in this process (a checkout: it holds the course
    too), when the generator is imported here."""
    found = set()
    for name in OWN_PACKAGES:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if origin:
            found.add(os.path.dirname(os.path.dirname(os.path.realpath(origin))))
    return found


def python_paths(python):
    """(files, folders) of the Python that runs the sandbox, found from this (trusted) process:
    the executable as it is called and a venv's pyvenv.cfg; the base installation (sys.base_prefix:
    the standard library, its extension modules, the headers Triton's compiles include); sysconfig's
    library folders; and the sys.path folders that hold a module imported here, where they are
    installers' folders (site-packages) or hold torch, triton or numpy; never one of coursepack's
    own or the current folder's."""
    python = os.path.abspath(python)
    files = [python] + [cfg for cfg in (os.path.join(os.path.dirname(os.path.dirname(python)), "pyvenv.cfg"),
                                        os.path.join(os.path.dirname(python), "pyvenv.cfg")) if os.path.isfile(cfg)]
    import sysconfig
    folders = {os.path.realpath(sys.base_prefix)}
    folders |= {os.path.realpath(path) for name, path in sysconfig.get_paths().items()
                if name in ("stdlib", "platstdlib", "purelib", "platlib", "include", "platinclude")}
    roots = sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if (not isinstance(origin, str) or not os.path.isabs(origin) or name == "__main__"   # torch.ops: "_ops.py"
                or name.split(".")[0] in OWN_PACKAGES or name.startswith("coursepack")):
            continue
        origin = os.path.realpath(origin)
        root = next((r for r in roots if origin.startswith(r + os.sep)), None)
        if root is not None and (name.split(".")[0] in WORKER_PACKAGES or _installed_packages(root)):
            folders.add(root)
    return sorted(files), sorted(f for f in folders if os.path.isdir(f))


WORKER_PACKAGES = ("torch", "triton", "numpy")   # what a worker imports, wherever they were installed


def _installed_packages(root):
    """A folder that installers fill (site-packages, dist-packages), not one a program put on
    sys.path (a test's or a tool's temporary folder, which may hold anybody's files)."""
    return any(part in ("site-packages", "dist-packages") for part in root.split(os.sep))


def sandbox_plan(python, checker, protected=(), use_gpu=False, seed_cache=None):
    """What the sandbox shows of this machine, as steps in order: ("bind", source, destination)
    read-only, ("link", target, path), ("tmpfs", path), ("device", node). An allow-list: system
    software (/usr, and /bin, /lib ... where they are folders), the dynamic loader's /etc files, the
    Python installation (python_paths), the checker's folder (as SANDBOX_CHECKER), the staged
    launchers, with a GPU the driver's libraries, /sys and the GPU's device nodes; a fresh /dev,
    /proc and /tmp. Nothing else of the disk exists inside. `protected`: the folders that hold
    people's files (the course, the build, the submissions, the current folder, home): a bound
    folder never holds one (it is left out, or the folder is covered by an empty one inside)."""
    home = os.path.expanduser("~")
    protected = {os.path.realpath(p) for p in (*protected, os.getcwd(), home) if p and os.path.isdir(p)}
    protected |= _own_checkouts() | {os.path.dirname(os.path.realpath(checker))}
    steps, folders = [], []
    for path in SYSTEM_LINKS:
        if os.path.islink(path):
            steps.append(("link", os.readlink(path), path))
        elif os.path.isdir(path):
            folders.append(path)
    files, python_folders = python_paths(python)
    folders += [f for f in (*SYSTEM, *python_folders) if os.path.isdir(f)]
    if use_gpu and os.path.isdir("/sys"):
        folders.append("/sys")   # the driver reads the GPU's PCI and NUMA information there
    kept = _outermost([f for f in folders if not any(_inside(p, f) for p in protected) or f in SYSTEM])
    steps += [("bind", folder, folder) for folder in kept]
    steps += [("bind", path, path) for path in (*SYSTEM_FILES, *files) if os.path.exists(path)]
    steps += [("tmpfs", p) for p in sorted(protected) if any(_inside(p, f) for f in kept) and p not in kept]
    if use_gpu:   # mounted where the sandbox can make a mount point (a root-only folder may hold them)
        steps += [("bind", folder, f"{SANDBOX_GPU_LIBRARIES}/{index}") for index, folder in enumerate(gpu_library_dirs())]
        steps += [("device", node) for node in sorted(glob.glob("/dev/nvidia*")) if not os.path.isdir(node)]
    # the checker alone: its folder may hold other students' files (a grading job's units, results)
    steps.append(("bind", os.path.realpath(checker), f"{SANDBOX_CHECKER}/{os.path.basename(checker)}"))
    if seed_cache and os.path.isdir(seed_cache):
        steps.append(("bind", seed_cache, SANDBOX_SEED))
    return steps


def _outermost(folders):
    """The folders, without those inside another one of them."""
    found = []
    for folder in sorted({os.path.realpath(f) for f in folders}, key=len):
        if not any(_inside(folder, outer) for outer in found):
            found.append(folder)
    return sorted(found)


def gpu_library_dirs():
    """The folders of the GPU driver's libraries (LD_LIBRARY_PATH's, and where the loader's cache
    finds libcuda and NVML): mounted back, in case a hidden or private folder holds them."""
    found = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d and os.path.isdir(d)]
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    for line in listing.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.startswith(("libcuda.so", "libnvidia-ml.so")) and os.path.exists(path):
            found.append(os.path.dirname(os.path.realpath(path)))
    return sorted({os.path.realpath(d) for d in found})


def sandbox_command(python, checker, extra_hidden=(), use_gpu=False, seed_cache=None, staging=None, as_root=False,
                    cgroups=True):
    """The command line that starts the worker factory, `python checker --zygote`, in bubblewrap,
    showing what sandbox_plan allows and nothing else (`extra_hidden`: its protected folders).
    As root, bubblewrap runs as nobody, who cannot reach folders under a private one (/root): the
    folders to mount back are first bound, in a mount namespace of the command's own (util-linux's
    `unshare`), under `staging`, a folder nobody can reach, then bubblewrap starts (`setpriv`).
    as_root: it runs as root in its user namespace instead (a GPU driver only root may read).
    cgroups: the workers' cgroups where they can be made here (worker_cgroups), mounted writable."""
    plan = sandbox_plan(python, checker, extra_hidden, use_gpu, seed_cache)
    staged, index = staging is not None, 0
    made = worker_cgroups(NOBODY if staged and not as_root else None) if cgroups else {}
    plan += [("rw", folder, f"{SANDBOX_CGROUPS}/{controller}") for controller, folder in made.items()]
    args = _bwrap_base() + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    binds = [(step[1], step[2]) for step in plan if step[0] in ("bind", "rw")]
    for step in plan:
        if step[0] in ("bind", "rw"):
            args += ["--ro-bind" if step[0] == "bind" else "--bind",
                     os.path.join(staging, str(index)) if staged else step[1], step[2]]
            index += 1
        elif step[0] == "link":
            args += ["--symlink", step[1], step[2]]
        elif step[0] == "tmpfs":
            args += ["--tmpfs", step[1]]
        else:
            args += ["--dev-bind", step[1], step[1]]
    args += ["--remount-ro", "/"]
    libraries = [destination for _, destination in binds if destination.startswith(SANDBOX_GPU_LIBRARIES + "/")]
    libcuda = next((d for (s, d) in binds if d in libraries and os.path.exists(os.path.join(s, "libcuda.so.1"))), None)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "TMPDIR": "/tmp", "USER": "nobody",
           "LOGNAME": "nobody", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "COURSEPACK_SANDBOX": "1",
           "COURSEPACK_CGROUPS": ",".join(sorted(made))}
    for name in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "COURSEPACK_CHILD_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    if libraries:
        env["LD_LIBRARY_PATH"] = ":".join(libraries)
    if libcuda:   # Triton looks for libcuda through the loader's cache first, whose paths may not be reachable here
        env["TRITON_LIBCUDA_PATH"] = libcuda
    args += ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    args += ["--chdir", "/tmp", python, f"{SANDBOX_CHECKER}/{os.path.basename(checker)}", "--zygote"]
    if not staged:
        return args
    writable = {source for kind, source, *_ in plan if kind == "rw"}
    script = "set -e; " + "; ".join(f"{_make(source, os.path.join(staging, str(i)))}; mount --bind "
                                    f"{'' if source in writable else '-o ro '}"
                                    f"{_q(source)} {_q(os.path.join(staging, str(i)))}"
                                    for i, (source, _) in enumerate(binds))
    script += "; exec " + ("" if as_root else f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups -- ") + '"$@"'
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", *args]


_MADE = []


def worker_cgroups(owner=None):
    """{controller: folder}: a cgroup v1 folder of the memory and of the pids controller made for one
    sandboxed factory, under this process's own cgroups, where this process may make them (root,
    with cgroup v1's controllers: the 2-core CI machine); owner: the uid the sandbox runs as, who
    makes each worker's cgroup in them (make_worker_cgroups). {} elsewhere (cgroup v2 only, no
    permission): every result then says that it has none (sandbox_label). Removed at exit."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    own = {}
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        own.update({controller: path for controller in controllers.split(",") if controller})
    made = {}
    for controller in ("memory", "pids"):
        parent = os.path.join(CGROUP_V1, controller) + own.get(controller, "/nonexistent")
        _remove_stale(parent)
        folder = os.path.join(parent, f"coursepack-{os.getpid()}-{len(_MADE)}")
        try:
            os.mkdir(folder)
            made[controller] = folder
            for path in (folder, os.path.join(folder, "cgroup.procs"), os.path.join(folder, "tasks")):
                if owner is not None:
                    os.chown(path, owner, owner)
        except OSError:
            for done in made.values():
                remove_cgroup(done)
            return {}
    if not _MADE:
        import atexit
        atexit.register(lambda: [remove_cgroup(folder) for folder in _MADE])
    _MADE.extend(made.values())
    return made


def _remove_stale(parent):
    """The cgroups of processes that ended without removing theirs (os._exit runs no atexit)."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith("coursepack-")]
    except OSError:
        return
    for name in names:
        try:
            os.kill(int(name.split("-")[1]), 0)
        except ProcessLookupError:
            remove_cgroup(os.path.join(parent, name))
        except (OSError, ValueError, IndexError):
            continue


def remove_cgroup(folder):
    """A cgroup folder and the (empty) ones in it; one that still holds a process stays."""
    try:
        for name in os.listdir(folder):
            if os.path.isdir(os.path.join(folder, name)):
                remove_cgroup(os.path.join(folder, name))
        os.rmdir(folder)
    except OSError:
        pass


def make_worker_cgroups(worker_id, limits):
    """In the factory: one worker's cgroup in each of the factory's (SANDBOX_CGROUPS), with its
    memory (memory_mib) and process (processes) limits; the folders made ([] when none)."""
    limits = dict(LIMITS, **(limits or {}))
    values = {"memory": ("memory.limit_in_bytes", str(limits["memory_mib"] << 20)),
              "pids": ("pids.max", str(limits["processes"]))}
    made = []
    for controller in sorted(filter(None, os.environ.get("COURSEPACK_CGROUPS", "").split(","))):
        folder = os.path.join(SANDBOX_CGROUPS, controller, f"w{worker_id}")
        try:
            os.mkdir(folder)
            made.append(folder)
            name, value = values[controller]
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(value)
        except (OSError, KeyError):
            for done in made:
                remove_cgroup(done)
            return []
    return made


def join_cgroups(folders):
    """In a worker, before anything else: into its cgroups (every process it starts stays in them)."""
    for folder in folders:
        with open(os.path.join(folder, "cgroup.procs"), "w") as handle:
            handle.write("0")


def _make(source, target):
    """The shell command that makes a mount point for source at target (a file for a file)."""
    return f"touch {_q(target)}" if not os.path.isdir(source) else f"mkdir -p {_q(target)}"


def _q(text):
    return "'" + text.replace("'", "'\\''") + "'"


def sandbox_staging():
    """As root: a folder for the mounts that let nobody reach the Python it runs (else None)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return None
    import tempfile
    staging = tempfile.mkdtemp(prefix="coursepack-sandbox-", dir="/tmp")   # not TMPDIR: nobody must reach it
    os.chmod(staging, 0o755)
    return staging


def nobody_reaches_the_gpu(staging):
    """Whether the GPU driver's library loads in the sandbox run as nobody. Where it does not (a
    driver installed readable by root only, as on some GPU hosts), the sandbox runs as root in its
    user namespace instead, with root's private files hidden (sandbox_command's as_root)."""
    code = "import ctypes; ctypes.CDLL('libcuda.so.1')"
    argv = sandbox_command(sys.executable, __file__ if os.path.exists(__file__) else sys.argv[0], (), True, None, staging,
                           cgroups=False)
    start = argv.index("--zygote") - 1
    argv[start:start + 2] = ["-c", code]
    try:
        return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_libc = None


def _call(name, *args):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if getattr(_libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _mount(source, target, kind, flags, data=None):
    _call("mount", source.encode() if source else None, target.encode(), kind.encode() if kind else None,
          ctypes.c_ulong(flags), data.encode() if data else None)


def isolate(limits=None, own_pids=True):
    """In a worker just forked from the sandboxed factory (its own process group already): user,
    mount, network, IPC and (own_pids) PID namespaces of its own, then it forks twice: this process
    stays in the factory's view only to wait and hand on the exit status, the namespace's init
    does the same, and the worker goes on under it (_hand_on_exit). Every process it starts, in a
    new session or not, ends with it (the kernel ends a PID namespace with its init), and it sees
    no other process but its init (a /proc of its own: CUDA needs /proc to show the process, error
    304 otherwise). Then
    a private /tmp (its scratch) and /dev/shm, each its own tmpfs; not dumpable; no capabilities;
    no new privileges; limits; and a filter that lets it act on no other process
    (_refuse_other_processes). Returns the scratch folder."""
    limits = dict(LIMITS, **(limits or {}))
    _enter_namespaces(own_pids)
    if own_pids:
        _hand_on_exit()
    _call("prctl", PR_SET_PDEATHSIG, 9, 0, 0, 0)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if own_pids:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if os.path.isdir(SANDBOX_CGROUPS):   # its limits stay out of its reach
        _mount("tmpfs", SANDBOX_CGROUPS, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0")
    _mount("tmpfs", SCRATCH_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits['scratch_mib']}m,mode=0700")
    _mount("tmpfs", SHARED_MEMORY, "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits['shm_mib']}m,mode=0700")
    os.chdir(SCRATCH_ROOT)
    for name in ("HOME", "TMPDIR"):
        os.environ[name] = SCRATCH_ROOT
    _seed_triton_cache()
    _drop_capabilities()
    _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    set_limits(limits)
    _refuse_other_processes(os.getpid(), os.getpgrp())
    return SCRATCH_ROOT


def _enter_namespaces(own_pids):
    uid, gid = os.getuid(), os.getgid()
    _call("unshare", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | (CLONE_NEWPID if own_pids else 0))
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)   # after the maps: they are written through /proc/self


def _hand_on_exit():
    """Two forks: the first process of the new PID namespace (its init), and the worker under it.
    The worker must not be the init: a namespace's init ignores every signal it sends itself, so
    os.abort() or os.kill(os.getpid(), ...) would not end it. This process (the one the factory
    knows) and the init each keep no descriptor, wait for their child and end as it ended (128 +
    the signal that ended it); each child is killed when its parent dies (PR_SET_PDEATHSIG), and
    the kernel ends every process of the namespace with its init."""
    for _ in range(2):
        pid = os.fork()
        if pid != 0:
            _wait_and_hand_on(pid)
        _call("prctl", PR_SET_PDEATHSIG, 9, 0, 0, 0)


def _wait_and_hand_on(pid):
    os.closerange(0, 1 << 16)
    while True:
        try:
            found, status = os.waitpid(-1, 0)   # an init also reaps the orphans given to it
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if found == pid:
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def own_pids_work(use_gpu):
    """Whether a worker may have a PID namespace of its own here (isolate's own_pids): a child in
    one mounts its /proc and, with a GPU, starts the CUDA driver (cuInit; no context). Asked once,
    in the sandboxed factory, in a forked child."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _enter_namespaces(True)
            _hand_on_exit()
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            code = 0 if not use_gpu or ctypes.CDLL("libcuda.so.1").cuInit(0) == 0 else 2
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# The system calls that act on another process, by architecture: (audit arch, {name: number}).
# Without a filter a worker may call each on any process of the same user that it can name: its
# siblings (other students' workers) and the factory share its PID namespace.
PROCESS_CALLS = {
    "x86_64": (0xC000003E, {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                            "pidfd_send_signal": 424, "prlimit64": 302, "setpriority": 141, "ioprio_set": 251,
                            "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
                            "sched_setattr": 314}),
    "aarch64": (0xC00000B7, {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                             "pidfd_send_signal": 424, "prlimit64": 261, "setpriority": 140, "ioprio_set": 30,
                             "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
                             "sched_setattr": 274})}
SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
ON_SELF = ("prlimit64", "sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr")
# setpriority's and ioprio_set's first argument: whom the second names; a user (all its processes) never
WHO_KINDS = {"setpriority": (0, 1), "ioprio_set": (1, 2)}   # PRIO_PROCESS, PRIO_PGRP; IOPRIO_WHO_PROCESS, _PGRP


def _refuse_other_processes(pid, group):
    """A seccomp filter: a worker acts on no other process. kill, tgkill and their kin succeed only
    for this process, its group (its children) or 0 (the same); pidfd_send_signal never; prlimit64
    and the sched_set* calls (limits, scheduling, CPU affinity) only on itself (0 or its pid);
    setpriority and ioprio_set only on itself or its group, never on a user; no call of another
    ABI. Anything else that they ask fails with EPERM: one student's code can neither kill nor
    starve another's."""
    import platform
    found = PROCESS_CALLS.get(platform.machine())
    if found is None:
        return   # another architecture: the namespaces and the uid still apply
    arch, calls = found
    program = _assemble(_filter_program(arch, calls, pid, group))

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*f) for f in program])
    _call("prctl", 22, 2, ctypes.byref(Program(len(program), filters)), 0, 0)   # PR_SET_SECCOMP, FILTER


LOAD, EQUAL, AT_LEAST, GIVE = 0x20, 0x15, 0x35, 0x06   # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
X32_SYSCALL_BIT = 0x40000000
ALLOW, REFUSE = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM


def _filter_program(arch, calls, pid, group):
    """The filter as (opcode, jump if equal, jump if not, value) with labels for the jumps ("next"
    goes on): labels are resolved by _assemble. Arguments are read as their low 32 bits."""
    me = [pid & 0xFFFFFFFF, group & 0xFFFFFFFF, 0]
    # another ABI's calls (i386's int 0x80, x32's numbers) would pass the checks below unread: refused
    program = [(LOAD, None, None, 4), (EQUAL, "next", "refuse", arch), (LOAD, None, None, 0),
               (AT_LEAST, "refuse", "next", X32_SYSCALL_BIT), (EQUAL, "refuse", "next", calls["pidfd_send_signal"])]
    program += [(EQUAL, "signal", "next", calls[name]) for name in SIGNALS]
    program += [(EQUAL, "self", "next", calls[name]) for name in ON_SELF]
    program += [(EQUAL, name, "next", calls[name]) for name in WHO_KINDS]
    program += [(GIVE, None, None, ALLOW)]
    program += [("signal",), (LOAD, None, None, 16)]   # kill's pid, or -group for the group
    program += [(EQUAL, "allow", "next", value) for value in (pid & 0xFFFFFFFF, (-group) & 0xFFFFFFFF, 0)]
    program += [(GIVE, None, None, REFUSE), ("self",), (LOAD, None, None, 16)]
    program += [(EQUAL, "allow", "next", value) for value in (pid & 0xFFFFFFFF, 0)]
    program += [(GIVE, None, None, REFUSE)]
    for name, kinds in WHO_KINDS.items():
        program += [(name,), (LOAD, None, None, 16)]
        program += [(EQUAL, "who", "next", kind) for kind in kinds]
        program += [(GIVE, None, None, REFUSE)]
    program += [("who",), (LOAD, None, None, 24)]
    program += [(EQUAL, "allow", "next", value) for value in me]
    program += [("refuse",), (GIVE, None, None, REFUSE), ("allow",), (GIVE, None, None, ALLOW)]
    return program


def _assemble(program):
    """Labels (one-element tuples) out, jumps to them as offsets from the next instruction."""
    where, count = {}, 0
    for item in program:
        if len(item) == 1:
            where[item[0]] = count
        else:
            count += 1
    code = []
    for item in program:
        if len(item) == 1:
            continue
        op, yes, no, value = item
        here = len(code) + 1
        offset = lambda target: 0 if target in (None, "next") else where[target] - here
        code.append((op, offset(yes), offset(no), value))
    return code


_QUIET = {}   # quiet_folders(), computed before the audit hook is in place (Harness.install)


def reported_file_event(event, args, depth, own, scratch):
    """Whether a file event of the code under check is reported, at any depth of the call stack
    (depth: the frames between its code and the event): always, unless it is in its scratch (a
    sandbox's) or its own file, or, through torch's, triton's or Python's code (depth > 1), a read
    of the Python installation, /proc/self, /sys or /dev, or outside a sandbox Triton's cache and
    the temporary folder (a compile's files)."""
    path = args[0] if args else None
    if isinstance(path, int) or path is None:
        return depth <= 1
    path = os.path.realpath(os.fsdecode(path))
    if (scratch and _inside(path, scratch)) or path == own:
        return False
    if depth <= 1:
        return True
    folders = quiet_folders()
    mode = str(args[1] if event == "open" and len(args) > 1 and args[1] else "r")
    reading = event in ("os.listdir", "os.scandir") or (event == "open" and not set(mode) & set("wax+"))
    if reading and any(_inside(path, folder) for folder in folders["read"]):
        return False
    return scratch is not None or not any(_inside(path, folder) for folder in folders["compile"])


def quiet_folders():
    """Where torch, triton and Python read their own files ("read": the Python installation's
    prefixes, sysconfig's folders, site-packages, torch's and triton's, /proc/self, /sys, /dev),
    and where a compile writes outside a sandbox ("compile": Triton's cache, the temporary folder)."""
    if not _QUIET:
        import site
        import sysconfig
        import tempfile
        found = {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values(), *site.getsitepackages()}
        for name in ("torch", "triton"):
            origin = getattr(sys.modules.get(name), "__file__", None)
            if origin:
                found.add(os.path.dirname(os.path.dirname(origin)))
        read = sorted({os.path.realpath(f) for f in found if f and os.path.isdir(f)})
        _QUIET.update(read=read + ["/proc/self", f"/proc/{os.getpid()}", "/sys", "/dev"],
                      compile=[os.path.realpath(f) for f in (triton_cache_dir(), tempfile.gettempdir())])
    return _QUIET


KERNEL_FILES = (".cubin", ".ptx", ".ttir", ".ttgir", ".llir", ".amdgcn", ".hsaco", ".source", ".json.src", ".py")


def triton_cache_dir():
    """Where Triton keeps its compile cache in this process's environment."""
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def launcher_entries(cache):
    """The entries of a Triton cache that hold only a compiled C module (a kernel signature's launcher,
    the driver's utilities): never a compiled kernel, whose IR would show its source."""
    try:
        entries = sorted(os.listdir(cache))
    except OSError:
        return []
    found = []
    for entry in entries:
        source = os.path.join(cache, entry)
        try:
            names = os.listdir(source) if os.path.isdir(source) and not os.path.islink(source) else []
        except OSError:
            continue
        if (names and all(n.endswith(".so") or n.startswith("__grp__") for n in names)
                and any(n.endswith(".so") for n in names) and not any(n.endswith(KERNEL_FILES) for n in names)):
            found.append(entry)
    return found


def stage_launcher_seed(cache, always=False):
    """A folder holding copies of the launchers in Triton's cache `cache` (see launcher_entries),
    for the sandbox to mount: the sandbox never sees the cache itself (the answer's compiled kernels
    are there when the instructor's build ran it). None when there is none, unless always: then an
    empty one too, for add_launchers to fill while the sandbox runs."""
    entries = launcher_entries(cache) if cache else []
    if not entries and not always:
        return None
    import tempfile
    seed = tempfile.mkdtemp(prefix="coursepack-seed-", dir="/tmp")
    os.chmod(seed, 0o755)   # nobody (the sandbox's user, as root) reads it through the staging mount
    add_launchers(cache, seed)
    return seed


def add_launchers(cache, seed):
    """Copies of the launchers of `cache` that the staged seed lacks, each one complete before it
    appears (a worker forked meanwhile copies the seed: it must never see half a module)."""
    have = set(os.listdir(seed))
    for entry in (launcher_entries(cache) if cache else []):
        if entry in have:
            continue
        partial, target = os.path.join(seed, f".new-{entry}"), os.path.join(seed, entry)
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(os.path.join(cache, entry), partial, symlinks=False,
                        ignore=lambda folder, names: [n for n in names if not n.endswith(".so")])
        os.chmod(partial, 0o755)
        for name in os.listdir(partial):
            os.chmod(os.path.join(partial, name), 0o644)
        os.rename(partial, target)


def _seed_triton_cache():
    """Each worker's own Triton cache, in its scratch folder, starting with the staged launchers
    (stage_launcher_seed): saves each worker a gcc compile per kernel signature."""
    cache = os.path.join(SCRATCH_ROOT, "triton")
    os.makedirs(cache, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = cache
    refresh_seed()


def refresh_seed():
    """Copies of the staged launchers that this worker's Triton cache lacks: at the worker's start,
    and again before it loads the code it checks, since launchers may be added while it waits
    ready (add_launchers: each appears whole, under its own name). Triton looks in its cache at a
    kernel's first launch, after that."""
    seed, cache = SANDBOX_SEED, os.path.join(SCRATCH_ROOT, "triton")
    if not os.path.isdir(seed):
        return
    have = set(os.listdir(cache))
    for entry in os.listdir(seed):
        if entry not in have and not entry.startswith(".new-") and os.path.isdir(os.path.join(seed, entry)):
            shutil.copytree(os.path.join(seed, entry), os.path.join(cache, entry))


def _drop_capabilities():
    for cap in range(64):
        try:
            _call("prctl", PR_CAPBSET_DROP, cap, 0, 0, 0)
        except OSError:
            break   # past the last capability this kernel knows

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    _call("capset", ctypes.byref(Header(0x20080522, 0)), (Data * 2)())


def set_limits(limits):
    import resource   # POSIX only: check.py must also start where there is none (Windows)
    gib, mib = 1 << 30, 1 << 20
    for which, value in ((resource.RLIMIT_CPU, limits["cpu_s"]), (resource.RLIMIT_DATA, limits["data_gib"] * gib),
                         (resource.RLIMIT_FSIZE, limits["file_mib"] * mib), (resource.RLIMIT_NOFILE, limits["files"]),
                         (resource.RLIMIT_NPROC, limits["processes"]), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
