"""The package's stage folders and the one direction of their imports (docs/architecture.md).

An `ast` pass over generator/ (imports inside functions and under TYPE_CHECKING count: they hide
cycles as well as any other): every module's folder, what each folder may import, no cycle between
modules or folders, no import against the direction, and no `from x import _private` across
modules anywhere in the repository's Python (tests, scripts and benchmarks included: they test
through public names). `pytest -s tests/test_layering.py` prints the modules per folder.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "generator"
SKIPPED = (
    "vendor",
    "skeleton/content",
)  # vendored files and a new lesson's skeleton, not code of ours

# The direction, top to bottom: cli -> pipeline | grade -> release -> gate -> render -> content ->
# files -> errors; gate and grade may use runners, which import only files and errors. checker/ is
# check.py's sources (joined into one standalone file) and imports nothing outside itself; the
# generator side reads it (join, common helpers). review/ is the grading stage's local review page:
# grade hands its results on to review's record, and review reads grade's gradebook and rubric.
BELOW = {
    "errors": set(),
    "checker": set(),
    "files": {"errors"},
    "content": {"files", "errors"},
    "render": {"content", "files", "errors", "checker"},
    "gate": {"render", "content", "files", "errors", "checker", "runners"},
    "runners": {"files", "errors"},
    "release": {"gate", "render", "content", "files", "errors", "checker"},
    "pipeline": {"release", "gate", "render", "content", "files", "errors", "checker", "runners"},
    "grade": {"review", "gate", "render", "content", "files", "errors", "checker", "runners"},
    "review": {"grade", "render", "content", "files", "errors"},
    "skeleton": {"files", "errors"},
    "cli": {
        "pipeline",
        "grade",
        "review",
        "release",
        "gate",
        "render",
        "content",
        "files",
        "errors",
        "runners",
        "skeleton",
        "checker",
    },
    "__main__": {"cli"},
    "__init__": set(),
}
# Folders that may import each other (a pair of one stage); their modules still may not form a cycle.
SIBLINGS = {frozenset({"grade", "review"})}


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in rel or any(rel.startswith(s + "/") for s in SKIPPED):
            continue
        parts = ["generator", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__" and len(parts) > 2:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) for every import of the package in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "generator"
            ]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = _package_of(module, path).split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([target] if target else []))
            if target.split(".")[0] != "generator":
                continue
            names = [a.name for a in node.names]
            submodules = [n for n in names if f"{target}.{n}" in known]
            if submodules:  # `from generator.files import memo`: the submodule is what is used
                found += [(node.lineno, f"{target}.{n}", []) for n in submodules]
                names = [n for n in names if n not in submodules]
                if not names:
                    continue
            found.append((node.lineno, target, names))
    return found


def graph():
    known = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], str] = {}
    for module, path in known.items():
        for line, target, _ in imports(module, path, known):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != module and target in known:
                edges[module].add(target)
                where.setdefault((module, target), f"{path.relative_to(REPO)}:{line}")
    return known, edges, where


def cycles(nodes, edges) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def upward(known, edges, where) -> list[str]:
    found = []
    for module in sorted(edges):
        for target in sorted(edges[module]):
            a, b = folder(module), folder(target)
            if a == b or frozenset({a, b}) in SIBLINGS and b in BELOW.get(a, set()):
                continue
            if a not in BELOW:
                found.append(f"{where[module, target]}: {module} is in no known folder ({a}/)")
            elif b not in BELOW[a]:
                found.append(
                    f"{where[module, target]}: {module} ({a}/) imports {target} ({b}/), "
                    f"against the direction ({a}/ may use {', '.join(sorted(BELOW[a])) or 'nothing'})"
                )
    return found


def folder_edges(edges) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for module, targets in edges.items():
        for target in targets:
            if (
                folder(module) != folder(target)
                and frozenset({folder(module), folder(target)}) not in SIBLINGS
            ):
                out[folder(module)].add(folder(target))
    return out


def private_imports() -> list[str]:
    """`from generator.x import _name` in a module other than x, anywhere in the repository."""
    known = modules()
    files = [p for p in known.values()]
    for top in ("tests", "scripts", "bench", "examples"):
        files += sorted(
            p
            for p in (REPO / top).rglob("*.py")
            if "__pycache__" not in p.parts
            and "adversarial" not in p.parts
            and "golden" not in p.parts
        )
    module_of = {p: m for m, p in known.items()}
    found = []
    for path in files:
        module = module_of.get(path, "tests." + path.stem)
        for line, target, names in imports(module, path, known):
            hidden = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if hidden and target != module:
                found.append(
                    f"{path.relative_to(REPO)}:{line}: from {target} import {', '.join(hidden)}"
                )
    return found


def summary() -> str:
    known, edges, where = graph()
    by_folder: dict[str, list[str]] = defaultdict(list)
    for module in known:
        path = known[module].relative_to(PACKAGE)
        inner = path.relative_to(path.parts[0]) if len(path.parts) > 1 else path
        by_folder[folder(module)].append(inner.with_suffix("").as_posix())
    lines = ["modules per folder:"]
    lines += [
        f"  {name + '/':10} {len(ms):3}  {' '.join(sorted(ms))}"
        for name, ms in sorted(by_folder.items())
    ]
    module_cycles = cycles(known, edges)
    folder_cycles = cycles(set(map(folder, known)), folder_edges(edges))
    ups = upward(known, edges, where)
    hidden = private_imports()
    lines.append(
        f"module cycles: {len(module_cycles)}"
        + "".join(f"\n  {' <-> '.join(c)}" for c in module_cycles)
    )
    lines.append(
        f"folder cycles: {len(folder_cycles)}"
        + "".join(f"\n  {' <-> '.join(c)}" for c in folder_cycles)
    )
    lines.append(f"upward imports: {len(ups)}" + "".join(f"\n  {u}" for u in ups))
    lines.append(
        f"private names imported across modules: {len(hidden)}"
        + "".join(f"\n  {h}" for h in hidden)
    )
    return "\n".join(lines)


def test_every_module_is_in_a_known_folder():
    known = modules()
    unknown = sorted(
        f"generator/{p.relative_to(PACKAGE)}" for m, p in known.items() if folder(m) not in BELOW
    )
    assert unknown == [], (
        "modules outside the stage folders (add the folder to BELOW):\n" + "\n".join(unknown)
    )


def test_no_cycles():
    known, edges, where = graph()
    found = cycles(known, edges)
    described = []
    for component in found:
        inside = [
            where[a, b] + f": {a} -> {b}"
            for a in component
            for b in sorted(edges[a])
            if b in component
        ]
        described.append(" <-> ".join(component) + "\n    " + "\n    ".join(inside))
    assert found == [], "import cycles between modules:\n  " + "\n  ".join(described)
    folder_cycles = cycles(set(map(folder, known)), folder_edges(edges))
    assert folder_cycles == [], f"import cycles between folders: {folder_cycles}\n{summary()}"


def test_imports_go_one_way():
    known, edges, where = graph()
    found = upward(known, edges, where)
    assert found == [], "imports against the direction:\n  " + "\n  ".join(found)


def test_nothing_outside_the_checker_imports_its_untrusted_side_or_its_jobs():
    known, edges, where = graph()
    found = [
        f"{where[module, target]}: {module} imports {target}"
        for module in sorted(edges)
        for target in sorted(edges[module])
        if folder(module) != "checker"
        and target.startswith(("generator.checker.untrusted", "generator.checker.jobs"))
    ]
    assert found == [], (
        "the untrusted side and the job scripts are check.py's own:\n  " + "\n  ".join(found)
    )


def test_no_private_names_imported_across_modules():
    found = private_imports()
    assert found == [], (
        "private names imported across modules (make them public or test through "
        "public ones):\n  " + "\n  ".join(found)
    )


def test_the_pass_finds_a_cycle_and_an_upward_import():
    edges = {"generator.files.a": {"generator.gate.b"}, "generator.gate.b": {"generator.files.a"}}
    where = {
        ("generator.files.a", "generator.gate.b"): "generator/files/a.py:3",
        ("generator.gate.b", "generator.files.a"): "generator/gate/b.py:4",
    }
    assert cycles(set(edges), edges) == [["generator.files.a", "generator.gate.b"]]
    assert upward(set(edges), edges, where) == [
        "generator/files/a.py:3: generator.files.a (files/) imports generator.gate.b (gate/), against "
        "the direction (files/ may use errors)"
    ]


def test_print_the_layers(capsys):
    text = summary()
    with capsys.disabled():
        print("\n" + text)
    assert "module cycles: 0" in text and "upward imports: 0" in text, text
