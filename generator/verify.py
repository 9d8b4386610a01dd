"""The verification gate: run the generated packs on a runner before anything is released.

Per lesson and locale, on the generated files (never the sources):
  answer      the answer pack's check.py passes on its kernel file
  notebook    the answer lesson.ipynb executes top to bottom and its check cell passes
  exercise    the exercise pack's check.py fails on the untouched blank with the blank message
  mistake:ID  each declared wrong fill fails on exactly the cases it declares
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from generator.errors import CoursepackError
from generator.model import LessonSpec, Mistake

NOTEBOOK_SCRIPT = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read("lesson.ipynb", as_version=4)
NotebookClient(nb, timeout={timeout}, kernel_name="python3", resources={{"metadata": {{"path": "."}}}}).execute()
checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
print("".join(o.get("text", "") for c in checks for o in c.get("outputs", [])))
print("NOTEBOOK-OK")
"""
PROBE_SCRIPT = ("import json, sys, torch, triton; g = torch.cuda.is_available();"
                "print(json.dumps({'torch': torch.__version__, 'triton': triton.__version__,"
                "'python': sys.version.split()[0], 'cuda': g,"
                "'device': torch.cuda.get_device_name(0) if g else 'CPU'}))")


class RunnerError(CoursepackError):
    pass


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


@dataclass
class Runner:
    """Where packs are run. kind: cuda, interpreter or command."""

    kind: str
    python: str = sys.executable
    template: str = ""
    timeout: float = 600.0
    cache_dir: Path | None = None   # Triton's compile cache for local runs

    @property
    def label(self) -> str:
        return {"cuda": "local CUDA GPU", "interpreter": "Triton interpreter on the CPU",
                "command": f"command runner ({self.template.split()[0] if self.template else '?'})"}[self.kind]

    def identity(self) -> str:
        return json.dumps([self.kind, self.python, self.template])

    def run(self, args: list[str], cwd: Path, timeout: float | None = None) -> RunResult:
        command = [self.python, *args]
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        if self.cache_dir is not None:
            env["TRITON_CACHE_DIR"] = str(self.cache_dir)
        if self.kind == "interpreter":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        shell = False
        if self.kind == "command":
            command = expand_template(self.template, cwd, command)
            shell = True
        start = time.monotonic()
        try:
            done = subprocess.run(command, cwd=cwd, env=env, shell=shell, capture_output=True,
                                  text=True, timeout=timeout or self.timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            return RunResult(124, _text(exc.stdout), _text(exc.stderr), time.monotonic() - start, True)
        except OSError as exc:
            raise RunnerError(f"cannot start the {self.kind} runner ({command!r}): {exc}") from exc
        return RunResult(done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def probe(self, cwd: Path, cache: Path | None = None) -> dict:
        """Versions and device of the runner; cached locally while torch and triton are unchanged."""
        stamp = self._install_stamp() if cache is not None and self.kind != "command" else None
        if stamp is not None:
            try:
                saved = json.loads(cache.read_text(encoding="utf-8"))
                if saved.get("stamp") == stamp:
                    return saved["info"]
            except (OSError, ValueError):
                pass
        info = self._probe(cwd)
        if stamp is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"stamp": stamp, "info": info}), encoding="utf-8")
        return info

    def _install_stamp(self) -> str | None:
        """Where torch and triton are installed and when they changed, without importing them."""
        script = ("import importlib.util as u, os, sys; s = [u.find_spec(m) for m in ('torch', 'triton')];"
                  "print(repr([sys.executable] + [(x.origin, os.path.getmtime(x.origin)) for x in s if x]))")
        try:
            done = subprocess.run([self.python, "-c", script], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        devices = sorted(p.name for p in Path("/dev").glob("nvidia*")) if Path("/dev").exists() else []
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        return json.dumps([self.kind, done.stdout.strip(), devices, visible]) if done.returncode == 0 else None

    def _probe(self, cwd: Path) -> dict:
        result = self.run(["-c", PROBE_SCRIPT], cwd, timeout=300)
        if result.returncode != 0:
            raise RunnerError(f"the {self.kind} runner cannot import torch and triton with {self.python}:\n"
                              + result.stderr.strip()[-800:])
        info = json.loads(result.stdout.strip().splitlines()[-1])
        if self.kind == "interpreter":
            info["device"] = "CPU (Triton interpreter)"
        return info

    def check_usable(self, info: dict) -> None:
        if self.kind == "cuda" and not info["cuda"]:
            raise RunnerError("runner 'cuda' was chosen but torch sees no CUDA GPU (use --runner interpreter)")


def expand_template(template: str, cwd: Path, command: list[str]) -> str:
    """{cwd}: the folder; {cmd}: the command, for a local shell (srun, docker);
    {shell_cmd}: 'cd FOLDER && COMMAND' as one quoted word, for a remote shell (ssh HOST {shell_cmd})."""
    folder = shlex.quote(str(cwd))
    return template.format(cwd=folder, cmd=shlex.join(command),
                           shell_cmd=shlex.quote(f"cd {folder} && {shlex.join(command)}"))


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def make_runner(kind: str, python: str | None, template: str | None, cache_dir: Path | None,
                probe_cache: Path | None = None) -> Runner:
    python = python or ("python3" if kind == "command" else sys.executable)
    if kind == "auto":
        info = Runner("cuda", python).probe(Path.cwd(), probe_cache)
        kind = "cuda" if info["cuda"] else "interpreter"
    if kind == "command" and not template:
        raise RunnerError("runner 'command' needs --runner-command, e.g. 'ssh gpu01 {shell_cmd}' "
                          "or 'srun --gres=gpu:1 --chdir {cwd} {cmd}'")
    if kind not in ("cuda", "interpreter", "command"):
        raise RunnerError(f"unknown runner '{kind}' (expected auto, cuda, interpreter or command)")
    return Runner(kind, python, template or "", cache_dir=cache_dir)


# ---------------------------------------------------------------------------------------------

@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: str = ""
    cases: list[dict] = field(default_factory=list)
    data: dict | None = None


def expected_failures(mistake: Mistake, spec: LessonSpec) -> set[str]:
    ids = [c.id for c in spec.checks.cases]
    if isinstance(mistake.fails, list):
        return set(mistake.fails)
    return set(ids) - set(mistake.fails.all_except)


def _check_json(result: RunResult) -> dict | None:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return None


def step_answer(runner: Runner, answer_dir: Path) -> Step:
    result = runner.run(["check.py", "--json"], answer_dir)
    data = _check_json(result)
    ok = result.returncode == 0 and data is not None and data["status"] == "pass"
    detail = "" if ok else _why(result, data)
    return Step("answer", ok, result.seconds, detail, data["cases"] if data else [])


def step_exercise(runner: Runner, exercise_dir: Path) -> Step:
    result = runner.run(["check.py", "--json"], exercise_dir)
    data = _check_json(result)
    ok = result.returncode == 2 and data is not None and data["status"] == "blank"
    plain = runner.run(["check.py"], exercise_dir) if ok else None
    if plain is not None and "______" not in plain.stdout:
        ok = False
    return Step("exercise", ok, result.seconds + (plain.seconds if plain else 0),
                "" if ok else "the untouched exercise did not give the fill-in-the-blank message: " + _why(result, data))


def step_notebook(runner: Runner, answer_dir: Path, timeout: float) -> Step:
    result = runner.run(["-c", NOTEBOOK_SCRIPT.format(timeout=int(timeout))], answer_dir)
    ok = result.returncode == 0 and "NOTEBOOK-OK" in result.stdout
    return Step("notebook", ok, result.seconds, "" if ok else _why(result, None))


def step_bench(runner: Runner, answer_dir: Path, script: str) -> Step:
    """The lesson's bench on the GPU: its numbers go into the answer pack, never hand-typed ones."""
    result = runner.run([script, "--json", "bench.json"], answer_dir, timeout=900)
    path = answer_dir / "bench.json"
    data = json.loads(path.read_text()) if result.returncode == 0 and path.exists() else None
    if path.exists():
        path.unlink()
    fusion_ok = data is None or all(v for k, v in data.get("fusion_correctness", {}).items()
                                    if isinstance(v, bool))
    ok = data is not None and fusion_ok
    detail = "" if ok else ("fused kernel checks failed" if data else _why(result, None))
    return Step("bench", ok, result.seconds, detail, [], data)


def step_mistake(runner: Runner, exercise_dir: Path, mistake: Mistake, code: str, spec: LessonSpec,
                 work: Path) -> Step:
    folder = work / mistake.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / spec.kernel_file).write_text(code, encoding="utf-8")
    result = runner.run([str(exercise_dir / "check.py"), "--json", str(folder / spec.kernel_file)], folder)
    data = _check_json(result)
    if data is None or data["status"] not in ("pass", "fail"):
        return Step(f"mistake:{mistake.id}", False, result.seconds, _why(result, data))
    ran = {c["id"] for c in data["cases"] if c["status"] != "skip"}
    failed = {c["id"] for c in data["cases"] if c["status"] not in ("pass", "skip")}
    expected = expected_failures(mistake, spec) & ran
    ok = failed == expected and result.returncode == (1 if expected else 0)
    detail = "" if ok else (f"expected to fail {sorted(expected)}, failed {sorted(failed)}")
    return Step(f"mistake:{mistake.id}", ok, result.seconds, detail, data["cases"])


def _why(result: RunResult, data: dict | None) -> str:
    if result.timed_out:
        return f"timed out after {result.seconds:.0f} s"
    if data is not None:
        bad = [c for c in data.get("cases", []) if c["status"] not in ("pass", "skip")]
        return f"status {data['status']}; failing cases: {[c['id'] for c in bad]}; load error: {data.get('load_error')}"
    tail = (result.stderr.strip() or result.stdout.strip())[-1500:]
    return f"exit status {result.returncode}: {tail}"


@dataclass
class Job:
    """Verification of one lesson x locale: the two packs on disk and the mistake fills."""

    spec: LessonSpec
    answer_dir: Path
    exercise_dir: Path
    mistakes: list[tuple[Mistake, str]]
    work: Path


def run_job(runner: Runner, job: Job, notebook: bool, jobs: int, gpu: bool = False,
            shared_bench: tuple[str, dict] | None = None) -> list[Step]:
    """shared_bench: (locale, data) of this lesson's bench from another locale in this build. The
    bench measures code that is the same in every language, so it runs once per lesson."""
    tasks = [lambda: step_answer(runner, job.answer_dir), lambda: step_exercise(runner, job.exercise_dir)]
    if notebook:
        tasks.append(lambda: step_notebook(runner, job.answer_dir, job.spec.checks.timeout_s * 4))
    for mistake, code in job.mistakes:
        tasks.append(lambda m=mistake, c=code: step_mistake(runner, job.exercise_dir, m, c, job.spec, job.work))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        steps = list(pool.map(lambda task: task(), tasks))
    if gpu and job.spec.bench and shared_bench is not None:
        steps.append(Step("bench", True, 0.0, f"measured once per lesson, in the {shared_bench[0]} pack",
                          [], shared_bench[1]))
    elif gpu and job.spec.bench:   # alone on the GPU, after everything else, so the timings are clean
        steps.append(step_bench(runner, job.answer_dir, job.spec.bench))
    return steps


def record(runner: Runner, info: dict, steps: list[Step], seconds: float) -> dict:
    answer = next(s for s in steps if s.name == "answer")
    return {
        "runner": runner.kind, "runner_label": runner.label, "device": info["device"],
        "gpu": bool(info["cuda"]) and runner.kind != "interpreter",
        "torch": info["torch"], "triton": info["triton"], "python": info["python"],
        "date": _dt.date.today().isoformat(), "seconds": round(seconds, 1),
        "passed": all(s.ok for s in steps),
        "steps": [{"name": s.name, "ok": s.ok, "seconds": round(s.seconds, 2), "detail": s.detail} for s in steps],
        "cases": [{"id": c["id"], "status": c["status"]} for c in answer.cases],
        "mistakes_caught": sum(1 for s in steps if s.name.startswith("mistake:") and s.ok),
        "mistakes_declared": sum(1 for s in steps if s.name.startswith("mistake:")),
        "details": {s.name: s.cases for s in steps if s.cases},
        "bench": next((s.data for s in steps if s.name == "bench" and s.data), None),
    }


class Cache:
    """Verification records keyed by everything that affects them."""

    def __init__(self, folder: Path):
        self.folder = folder

    def key(self, *parts: str) -> str:
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        path = self.folder / f"{key}.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{key}.tmp"
        tmp.write_text(json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.folder / f"{key}.json")

    def index(self) -> list[dict]:
        entries = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
            try:
                entries.append(json.loads(path.read_text(encoding="utf-8")))
            except ValueError:
                continue
        return entries


def disagreements(entries: list[dict], content_key: str) -> list[dict]:
    """Cases whose status differs between a GPU run and an interpreter run of the same packs."""
    same = [e for e in entries if e.get("content_key") == content_key]
    gpu = [e for e in same if e["record"].get("gpu")]
    cpu = [e for e in same if not e["record"].get("gpu")]
    if not gpu or not cpu:
        return []
    found = []
    g, c = gpu[-1]["record"]["details"], cpu[-1]["record"]["details"]
    for step in sorted(set(g) & set(c)):
        gs = {x["id"]: x["status"] for x in g[step]}
        cs = {x["id"]: x["status"] for x in c[step]}
        for case in sorted(set(gs) & set(cs)):
            if gs[case] != cs[case] and "skip" not in (gs[case], cs[case]):
                found.append({"step": step, "case": case, "gpu": gs[case], "interpreter": cs[case]})
    return found


def clear(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
