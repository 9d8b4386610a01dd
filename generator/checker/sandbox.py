"""The sandbox for code that is not the user's own (grading, `check.py --sandbox`, verification's
answer and declared mistakes), in two layers:

1. bubblewrap around the worker factory (zygote.py): no network, a read-only root, the user's and
   the instructor's folders (home, the course, the build, the submissions) replaced by empty ones,
   only the Python that runs torch and triton mounted back (read-only), a cleared environment, only
   the GPU device nodes, no capabilities, a new session, killed with its parent; as root, it runs
   as nobody (65534).
2. each worker, forked from that factory, in namespaces of its own (a user, mount, PID, network
   and IPC namespace): a private scratch folder no other worker sees, a PID namespace whose first
   process is the worker (when it ends, every process it started ends), no capabilities, no new
   privileges, not dumpable (no other process may read its memory), and resource limits (CPU
   time, data, file size, open files, processes).

Where bubblewrap is missing or user namespaces are refused, `sandbox_problem()` names what is missing: a
grading run refuses rather than run unconfined."""
import ctypes
import glob
import os
import resource
import shutil
import subprocess
import sys

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 1 << 14, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
NOBODY = 65534
SCRATCH_ROOT = "/tmp/w"      # a worker's private folder (its own tmpfs, in its own mount namespace)
SANDBOX_CHECKER, SANDBOX_SEED = "/tmp/.coursepack", "/tmp/.coursepack-triton-seed"
LIMITS = {"cpu_s": 900, "data_gib": 16, "file_mib": 512, "files": 1024, "processes": 4096, "scratch_mib": 1024}
# Folders that hold people's files: replaced by empty ones (what Python needs is mounted back).
HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/mnt", "/media", "/srv", "/run/user", "/var/lib", "/var/mail")


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


def _bwrap_base():
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _as_nobody():
    """As root, the sandbox runs as nobody: no root-owned file is then readable or writable by owner,
    and the process limit (which root ignores) holds."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    return {}


def _python_dirs(excluded=()):
    """The folders this Python needs: its prefixes and the sys.path entries that hold the modules
    imported so far (torch, triton, numpy and theirs), never a hidden folder itself (the course's,
    the submission's, the current one, /tmp)."""
    wanted = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            os.path.dirname(os.path.realpath(sys.executable)))}
    roots = sorted((os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)), key=len, reverse=True)
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not origin:
            continue
        origin = os.path.realpath(origin)
        root = next((r for r in roots if origin.startswith(r + os.sep)), None)
        if root is not None:
            wanted.add(root)
    return sorted(w for w in wanted if w not in excluded)


def sandbox_command(python, checker, extra_hidden=(), use_gpu=False, seed_cache=None, staging=None):
    """The command line that starts the worker factory, `python checker --zygote`, in bubblewrap.
    As root, bubblewrap runs as nobody, who cannot reach folders under a private one (/root): the
    folders to mount back are first bound, in a mount namespace of the command's own (util-linux's
    `unshare`), under `staging`, a folder nobody can reach, then bubblewrap starts (`setpriv`)."""
    args = _bwrap_base() + ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    binds = []   # (source, destination)
    hidden = [d for d in HIDDEN if os.path.isdir(d)]
    hidden += [os.path.realpath(d) for d in extra_hidden if d and os.path.isdir(d)]
    home = os.path.expanduser("~")
    if os.path.isdir(home):
        hidden.append(os.path.realpath(home))
    hidden.append(os.path.realpath(os.getcwd()))
    checker_dir = os.path.dirname(os.path.realpath(checker))
    for folder in sorted(set(hidden)):
        args += ["--tmpfs", folder]
    for folder in _python_dirs(set(hidden) | {checker_dir}):
        binds.append((folder, folder))
    binds.append((checker_dir, SANDBOX_CHECKER))
    if seed_cache and os.path.isdir(seed_cache):
        binds.append((seed_cache, SANDBOX_SEED))
    as_root = staging is not None
    for index, (source, destination) in enumerate(binds):
        args += ["--ro-bind", os.path.join(staging, str(index)) if as_root else source, destination]
    if use_gpu:
        for node in sorted(glob.glob("/dev/nvidia*")):
            if not os.path.isdir(node):
                args += ["--dev-bind", node, node]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "TMPDIR": "/tmp",
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    for name in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "COURSEPACK_CHILD_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    args += ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    args += ["--dir", SCRATCH_ROOT, "--chdir", "/tmp", python, f"{SANDBOX_CHECKER}/{os.path.basename(checker)}",
             "--zygote"]
    if not as_root:
        return args
    script = "set -e; " + "; ".join(f"mkdir -p {_q(os.path.join(staging, str(i)))}; mount --bind -o ro "
                                    f"{_q(source)} {_q(os.path.join(staging, str(i)))}"
                                    for i, (source, _) in enumerate(binds))
    script += f"; exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups -- \"$@\""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", *args]


def _q(text):
    return "'" + text.replace("'", "'\\''") + "'"


def sandbox_staging():
    """As root: a folder for the mounts that let nobody reach the Python it runs (else None)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return None
    import tempfile
    staging = tempfile.mkdtemp(prefix="coursepack-sandbox-")
    os.chmod(staging, 0o755)
    return staging


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


def isolate(limits=None):
    """In a worker just forked from the sandboxed factory: namespaces of its own, then fork again
    (the PID namespace takes effect in children). Returns in the new worker (PID 1 of its
    namespace, scratch folder ready, no capabilities, limits set); the process that called it
    waits for that worker and leaves with its status, never returning."""
    limits = dict(LIMITS, **(limits or {}))
    uid, gid = os.getuid(), os.getgid()
    _call("unshare", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC)
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)   # after the maps: they are written through /proc/self
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", SCRATCH_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits['scratch_mib']}m,mode=0700")
    os.chdir(SCRATCH_ROOT)
    for name in ("HOME", "TMPDIR"):
        os.environ[name] = SCRATCH_ROOT
    _seed_triton_cache()
    pid = os.fork()
    if pid:
        _wait_and_leave(pid)
    _call("prctl", PR_SET_PDEATHSIG, 9, 0, 0, 0)
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    _drop_capabilities()
    _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    set_limits(limits)
    return SCRATCH_ROOT


def _seed_triton_cache():
    """The launchers Triton compiles with gcc for each kernel signature, copied from the instructor's
    warm cache (never a compiled kernel: the answer's would be there): saves each worker a compile."""
    seed, cache = SANDBOX_SEED, os.path.join(SCRATCH_ROOT, "triton")
    os.makedirs(cache, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = cache
    if not os.path.isdir(seed):
        return
    for entry in os.listdir(seed):
        source = os.path.join(seed, entry)
        names = os.listdir(source) if os.path.isdir(source) else []
        if any(n.endswith(".so") for n in names) and not any(n.endswith((".cubin", ".ptx", ".ttir", ".ttgir", ".llir",
                                                                           ".source", ".json.src")) for n in names):
            shutil.copytree(source, os.path.join(cache, entry))


def _wait_and_leave(pid):
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


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
    gib, mib = 1 << 30, 1 << 20
    for which, value in ((resource.RLIMIT_CPU, limits["cpu_s"]), (resource.RLIMIT_DATA, limits["data_gib"] * gib),
                         (resource.RLIMIT_FSIZE, limits["file_mib"] * mib), (resource.RLIMIT_NOFILE, limits["files"]),
                         (resource.RLIMIT_NPROC, limits["processes"]), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
