"""The adversarial corpus (tests/adversarial/): submissions written to get a verdict they do not
deserve or to break out of the checker, each run through the trusted checker the way grading runs
it (one session, many kernel files), in the sandbox and, for those that cannot harm this machine,
without it. Each must get the verdict of its `# expect:` lines, and no file may crash or stall the
checker. A small copy of lesson 3 (five cases) keeps the corpus fast in the interpreter.

Each file is lesson 3's correct kernel (_kernel.py) followed by the file's own code, or, with
`fill=EXPR`, the pack's exercise file with EXPR in its blank followed by the file's code (an
attack on the blank itself, or code appended to a filled exercise). `newline=cr|mixed` and
`encoding=NAME` (a coding cookie on line 1) say how the file is written; `score=N` the automatic
points it must get; `status_gpu` its status on a GPU where it differs."""

import os
from pathlib import Path

import pytest

from tests.conftest import has_cuda, load_checker, options_for, small_lesson_copy, unzip

CORPUS = Path(__file__).parent / "adversarial"
ATTACKS = sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("_"))
KEEP = ["seed", "tail_257", "random_f16", "empty", "special_f32"]


def expectations(path: Path) -> dict:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# expect:"):
            for part in line.removeprefix("# expect:").split(";"):
                key, equals, value = part.strip().partition("=")
                found[key] = value.strip() if equals else True  # `flags_gpu=`: none
    return found


def test_the_corpus_is_what_the_issue_lists():
    assert len(ATTACKS) >= 15
    for path in ATTACKS:
        assert expectations(path).get("status") in ("pass", "fail", "load_error"), path.name


@pytest.fixture(scope="module")
def small_pack(tmp_path_factory) -> Path:
    """Lesson 3's exercise pack (English) with five of its cases (its mistakes cut to match),
    built without verification."""
    from generator.pipeline.build import build

    root = tmp_path_factory.mktemp("corpus")
    small_lesson_copy(root, KEEP)
    options = options_for(root, verify=False, lessons=("lesson03_relu",), locales=("en",))
    build(options, progress=lambda _: None)
    unzip(root / "build" / "dist" / "lesson03_relu-en-exercise.zip", root / "packs")
    return root / "packs" / "lesson03_relu-en-exercise"


def submission_bytes(pack: Path, path: Path) -> bytes:
    """The kernel file an attack is checked as: see the module's docstring."""
    want = expectations(path)
    if "fill" in want:
        base = (pack / "relu.py").read_text(encoding="utf-8").replace("______", want["fill"], 1)
    else:
        base = (CORPUS / "_kernel.py").read_text(encoding="utf-8")
    text = base + "\n\n" + path.read_text(encoding="utf-8")
    if want.get("newline") == "cr":
        text = text.replace("\n", "\r")
    elif want.get("newline") == "mixed":
        text = "".join(
            line + ("\r\n", "\r", "\n")[k % 3] for k, line in enumerate(text.split("\n"))
        )
    if "encoding" in want:
        return f"# -*- coding: {want['encoding']} -*-\n{text}".encode(want["encoding"])
    return text.encode("utf-8")


def run_corpus(pack: Path, tmp_path: Path, sandbox: bool, gpu: bool = False) -> dict:
    units = []
    for path in ATTACKS:
        if not sandbox and "sandbox_only" in expectations(path):
            continue
        folder = tmp_path / path.stem
        folder.mkdir()
        (folder / "relu.py").write_bytes(submission_bytes(pack, path))
        units.append({"id": path.stem, "path": str(folder / "relu.py")})
    checker = load_checker(pack)
    session = checker.Session(
        not gpu,
        sandbox,
        checker=str(pack / "check.py"),
        start_margin=30,
        limits={"processes": 256, "data_gib": 4, "scratch_mib": 256, "file_mib": 128},
    )
    return checker.check_units(units, 2, 20, session)


def assert_verdicts(results: dict, sandbox: bool, gpu: bool = False) -> None:
    problems = []
    for name, data in sorted(results.items()):
        want = expectations(CORPUS / f"{name}.py")
        flags = data.get("flags") or {}
        events = {e["kind"] for e in flags.get("events") or []}
        status = want.get("status_gpu", want["status"]) if gpu else want["status"]
        if data["status"] != status:
            problems.append(f"{name}: status {data['status']}, expected {status}")
        if "score" in want and data["score"]["normal"] + data["score"]["boundary"] != int(
            want["score"]
        ):
            problems.append(f"{name}: automatic points {data['score']}, expected {want['score']}")
        for flag in filter(
            None,
            str(
                want.get("flags_gpu", want.get("flags", "")) if gpu else want.get("flags", "")
            ).split(","),
        ):
            if not flags.get(flag):
                problems.append(f"{name}: flag {flag} not reported ({flags})")
        for kind in filter(None, str(want.get("events", "")).split(",")):
            if kind not in events:
                problems.append(f"{name}: no '{kind}' event reported ({flags.get('events')})")
        if want.get("reason") and not any(c.get("reason") == want["reason"] for c in data["cases"]):
            problems.append(f"{name}: no case shows the reason {want['reason']}")
        if want.get("stdout_has") and want["stdout_has"] not in data["text"]:
            problems.append(f"{name}: the report lacks {want['stdout_has']!r}")
        if want.get("stdout_lacks") and want["stdout_lacks"] in data["text"]:
            problems.append(
                f"{name}: the report shows the submission's own text {want['stdout_lacks']}"
            )
    assert not problems, "\n".join(problems)


def test_corpus_in_the_sandbox(small_pack, tmp_path):
    checker = load_checker(small_pack)
    why = checker.sandbox_problem()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the sandbox: {why}")
        pytest.skip(f"no sandbox here: {why}")
    assert_verdicts(run_corpus(small_pack, tmp_path, sandbox=True), sandbox=True)


def test_corpus_without_the_sandbox(small_pack, tmp_path):
    """A student's own `python check.py`: the verdict still comes from a process the code never
    touched (the attacks that would harm this machine run only in the sandbox)."""
    assert_verdicts(run_corpus(small_pack, tmp_path, sandbox=False), sandbox=False)


@pytest.mark.cuda
def test_corpus_on_the_gpu(small_pack, tmp_path):
    if not has_cuda():
        pytest.skip("needs a CUDA GPU; none is visible to torch here")
    checker = load_checker(small_pack)
    sandbox = checker.sandbox_problem() is None
    assert_verdicts(
        run_corpus(small_pack, tmp_path, sandbox=sandbox, gpu=True), sandbox=sandbox, gpu=True
    )
