"""A build's state is its own: no mutable module-level state in generator/ (an ast pass), a build's
memo dropped when it returns, and forked workers that get their work as an argument."""

from __future__ import annotations

import ast
import io
import os
import shutil
import zipfile
from pathlib import Path
from typing import Callable

import pytest

from generator.files import memo
from generator.pipeline.build import build, in_processes
from generator.errors import CoursepackError
from tests.conftest import copy_content, options_for

GENERATOR = Path(__file__).resolve().parents[1] / "generator"
MUTABLE_CALLS = {
    "dict",
    "list",
    "set",
    "defaultdict",
    "OrderedDict",
    "Counter",
    "deque",
    "bytearray",
}
CACHE_DECORATORS = {"lru_cache", "cache"}
MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "remove",
    "discard",
    "sort",
    "reverse",
    "__setitem__",
    "__delitem__",
}

# Not scanned: check.py's sources (a standalone program, one lesson per process: LESSON is its data
# line, and its state ends with that process) and the vendored files.
SKIPPED = ("checker", "vendor")

# Module-level state that stays, each with why. A cache named here is a pure function of immutable
# arguments (it cannot go stale, only be reused) in a module outside the build's pipeline, bounded
# by its maxsize; anything new must go into a build's memo (generator.files.memo) instead.
ALLOWED = {
    "runners/local.py:_SERVERS": "warm task-server processes, not data: one per runner Python and environment "
    "for the life of the process (a test session's builds share them), closed at exit",
    "content/markdown.py:parser_for": "one MarkdownIt per setting; a parser keeps no state between parses",
    "content/markdown.py:_unit_problems": "pure, by text: a Markdown unit's problems (a content load is 2 s without it)",
    "render/html.py:mermaid_script": "the vendored mermaid, pinned by its sha256: read and checked once per process",
    "files/archive.py:_deflated_part": "pure, by bytes: a constant part's deflate (1 s for mermaid); which parts a "
    "build declares is the build's (its memo)",
    "review/render.py:_parser": "the review page's parser; keeps no state between parses",
    "review/render.py:markdown_html": "review app (a long-running server): HTML of an answer text, by its text",
    "review/texts.py:_all": "the review app's interface texts, read once from a file of the package",
    "content/codegen.py:parse_solution": "pure, by text; its result is frozen (content loaded again re-parses what changed)",
    "content/i18n.py:_protected_problems": "pure, by the texts compared",
    "content/loader.py:_top_level_functions": "pure, by text",
    "files/yamlio.py:_compose": "pure, by text; the node tree is never modified",
}


def _name(node: ast.AST) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return (
        node.attr
        if isinstance(node, ast.Attribute)
        else node.id
        if isinstance(node, ast.Name)
        else ""
    )


def _mutable(value: ast.AST | None) -> bool:
    return isinstance(
        value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    ) or (isinstance(value, ast.Call) and _name(value.func) in MUTABLE_CALLS)


def _module_level(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_level(
                [
                    *node.body,
                    *node.orelse,
                    *getattr(node, "finalbody", []),
                    *[s for handler in getattr(node, "handlers", []) for s in handler.body],
                ]
            )
        else:
            yield node


def _constant_name(name: str) -> bool:
    return name.lstrip("_").isupper()


def _mutated_names(trees: list[ast.Module]) -> set[str]:
    """Names (or attributes) written into anywhere: x[k] = v, del x[k], x += ..., x.append(...) ..."""
    found = set()
    for tree in trees:
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = (
                    node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                )
                targets = [
                    t.value if isinstance(t, ast.Subscript) else t
                    for t in targets
                    if isinstance(t, ast.Subscript) or isinstance(node, ast.AugAssign)
                ]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
            ):
                targets = [node.func.value]
            found |= {_name(t) for t in targets}
    return found


def module_state() -> list[str]:
    """Every module-level mutable container, cache decorator and `global` statement in generator/,
    as "file:name" (what ALLOWED names) with its line. A constant (an upper-case name never written
    into anywhere in the package) is not state."""
    files = [
        p
        for p in sorted(GENERATOR.rglob("*.py"))
        if not set(p.relative_to(GENERATOR).parts) & set(SKIPPED)
    ]
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    mutated = _mutated_names(list(trees.values()))
    found = []
    for path, tree in trees.items():
        where = path.relative_to(GENERATOR).as_posix()
        for node in _module_level(tree.body):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and _mutable(node.value):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    name = _name(target)
                    if not _constant_name(name) or name in mutated:
                        found.append((f"{where}:{name}", node.lineno, "a mutable container"))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(_name(d) in CACHE_DECORATORS for d in node.decorator_list):
                    found.append((f"{where}:{node.name}", node.lineno, "a process-wide cache"))
        found += [
            (f"{where}:global {', '.join(node.names)}", node.lineno, "a global statement")
            for node in ast.walk(tree)
            if isinstance(node, ast.Global)
        ]
    return [f"{key} (line {line}): {what}" for key, line, what in found if key not in ALLOWED]


def test_no_module_level_mutable_state_in_the_generator():
    assert module_state() == []


def test_the_scan_finds_state_and_a_written_constant(tmp_path, monkeypatch):
    """The pass itself: a cache, a global, a lower-case table and a constant that is written into
    are found; constants never written into are not."""
    source = (
        "import functools\nTABLE = {}\nROLES = {'a': 1}\n_kept = []\n"
        "@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n"
        "def g():\n    global _kept\n    TABLE['x'] = 1\n"
    )
    (tmp_path / "mod.py").write_text(source)
    monkeypatch.setitem(globals(), "GENERATOR", tmp_path)
    found = module_state()
    assert sorted(line.split(" (")[0] for line in found) == [
        "mod.py:TABLE",
        "mod.py:_kept",
        "mod.py:f",
        "mod.py:global _kept",
    ]


def test_every_allowed_entry_still_exists():
    """An allow-list entry whose state has gone must go too (it would hide a new one of that name)."""
    saved = dict(ALLOWED)
    try:
        ALLOWED.clear()
        found = {line.split(" (")[0] for line in module_state()}
    finally:
        ALLOWED.update(saved)
    assert set(saved) <= found


def _zips(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "dist").glob("*.zip"))}


def _sizes_at_done(sizes: list) -> Callable[[str], None]:
    """A progress callback that notes the build's memo sizes at its last line."""

    def progress(line: str) -> None:
        if line.startswith("done"):
            sizes.append(memo.current().sizes())

    return progress


def test_two_builds_in_one_process_keep_nothing_of_each_other(tmp_path):
    """A build with other templates gives other zips, and the first templates again give the first
    bytes: nothing of a build (compiled templates, parsed sections, deflated files, digests) reaches
    the next. Each build's memo is its own (the same sizes for the same inputs, not growing), and the
    memo around the builds gains nothing."""
    root = copy_content(tmp_path / "a")
    other = tmp_path / "b_templates"
    shutil.copytree(root / "templates", other)
    readme = other / "pack" / "README.md.j2"
    readme.write_text(
        readme.read_text(encoding="utf-8") + "\nAnother line from other templates.\n",
        encoding="utf-8",
    )
    outer = memo.current().sizes()
    sizes: list = []
    kw = {"verify": False, "lessons": ("lesson03_relu",), "locales": ("en",)}
    build(options_for(root, **kw), progress=_sizes_at_done(sizes))
    first = _zips(root / "build")
    options = options_for(root, **kw)
    options.templates, options.out = other, tmp_path / "out_b"
    build(options, progress=_sizes_at_done(sizes))
    second = _zips(tmp_path / "out_b")
    options.templates, options.out = root / "templates", tmp_path / "out_a2"
    build(options, progress=_sizes_at_done(sizes))
    again = _zips(tmp_path / "out_a2")
    assert sorted(first) == sorted(second) and first == again

    def readme_of(zips: dict[str, bytes]) -> bytes:
        with zipfile.ZipFile(io.BytesIO(zips["lesson03_relu-en-exercise.zip"])) as archive:
            return archive.read("lesson03_relu-en-exercise/README.md")

    assert b"Another line from other templates." in readme_of(second)
    assert b"Another line from other templates." not in readme_of(first) + readme_of(again)
    assert (
        sizes[0] and sizes[0] == sizes[2]
    )  # the first and third builds: the same inputs, the same memo
    assert memo.current().sizes() == outer


def test_a_memo_is_dropped_with_its_block_and_a_lesson_memo_keeps_the_build_tables():
    with memo.build_memo() as build_memo:
        memo.table("t")["k"] = 1
        with memo.lesson_memo() as lesson:
            memo.table("l", lesson=True)["k"] = 2
            assert memo.table("t") == {"k": 1} and lesson.build is build_memo.build
        assert memo.table("l", lesson=True) == {}  # the lesson's tables went with it
    assert memo.current() is not build_memo
    with memo.build_memo():
        assert memo.table("t") == {}


def test_outside_a_memo_nothing_is_kept():
    token = memo._CURRENT.set(None)
    try:
        memo.table("t")["k"] = 1
        assert memo.table("t") == {}
        calls = []
        kept = memo.per_build(lambda x: calls.append(x) or x)
        kept(1), kept(1)
        assert calls == [1, 1]
    finally:
        memo._CURRENT.reset(token)


def test_forked_workers_get_their_work_as_an_argument():
    """A closure (which cannot be pickled) reaches the workers; the results come back in order."""
    offset = {"by": 10}
    assert list(in_processes(lambda i: (i + offset["by"], os.getpid()), 5, 2))[0][0] == 10
    pids = {pid for _, pid in in_processes(lambda i: (i, os.getpid()), 6, 2)}
    assert os.getpid() not in pids and [v for v, _ in in_processes(lambda i: (i, 0), 6, 3)] == list(
        range(6)
    )


def test_a_workers_error_is_raised_and_a_dead_worker_is_an_error_not_a_hang():
    def fails(i):
        if i == 2:
            raise CoursepackError("lesson 2 broke")
        return i

    with pytest.raises(CoursepackError, match="lesson 2 broke"):
        list(in_processes(fails, 4, 2))
    with pytest.raises(CoursepackError, match="died"):
        list(in_processes(lambda i: os._exit(3) if i == 1 else i, 3, 2))
    with pytest.raises(CoursepackError, match="cannot be sent back"):
        list(in_processes(lambda i: lambda: i, 2, 2))


def _count_renders(monkeypatch) -> dict:
    """Calls of render_pack by a build, by (pack name, for a course bundle)."""
    import generator.pipeline.build as B

    counts: dict = {}
    real = B.render_pack

    def counted(ctx, *args, **kw):
        key = (f"{ctx.lesson.spec.id}-{ctx.locale}-{ctx.edition}", ctx.bundle)
        counts[key] = counts.get(key, 0) + 1
        return real(ctx, *args, **kw)

    monkeypatch.setattr(B, "render_pack", counted)
    return counts


def test_a_verified_build_renders_each_pack_once_and_zips_the_verified_bytes(
    own_build, monkeypatch
):
    """A verified build (its records cached) renders each lesson x locale x edition once: its zip,
    its course bundle folder and its Quarto folder come from that rendering, and the zips are those
    of the build that verified them."""
    root = own_build.parent
    first = _zips(own_build)
    counts = _count_renders(monkeypatch)
    (own_build / "cache" / "last_build.json").unlink(
        missing_ok=True
    )  # not the whole-build shortcut
    build(options_for(root, runner="interpreter", notebook=False, jobs=1), progress=lambda _: None)
    assert counts and set(counts.values()) == {1}, counts
    assert not any(bundle for _, bundle in counts)
    assert len(counts) == len(first) - 6  # 6: bundles, projects
    assert _zips(own_build) == first


def test_a_leak_stops_a_verified_build_before_any_job_folder_is_written(content_copy):
    """The checks run on the rendered packs before verification writes anything (the first lesson's
    job folder was written before a later lesson's leak was raised)."""
    from generator.gate.leaks import LeakError

    template = content_copy / "templates" / "pack" / "lesson.md.j2"
    text = template.read_text(encoding="utf-8")
    template.write_text(text + "{{ text.solution_note }}\n\n", encoding="utf-8")
    options = options_for(
        content_copy,
        runner="interpreter",
        notebook=False,
        lessons=("lesson02_vector_add", "lesson03_relu"),
    )
    with pytest.raises(
        LeakError, match="lesson03_relu-en-exercise/lesson.md: contains answer-only material"
    ):
        build(options, progress=lambda _: None)
    assert not (options.out / "work").exists() and not (options.out / "dist").exists()
