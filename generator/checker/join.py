"""check.py, the one file shipped in every pack, joined from the modules of this folder.

Each module holds one job (the trusted supervisor, the untrusted worker, cases, verdicts,
presentation, the sandbox, bench helpers); check.py is their bodies in ORDER, under one set of
imports. `from .x import ...` lines are for readers and tools and are left out: in check.py every
name is the module's own. The lesson's data replaces the line DATA_LINE."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = (
    "shared/common",
    "shared/environment",
    "trusted/provenance",
    "trusted/static",
    "shared/protocol",
    "trusted/cases",
    "trusted/verdict",
    "trusted/memory",
    "untrusted/worker",
    "shared/sandbox",
    "untrusted/zygote",
    "trusted/supervisor",
    "trusted/present",
    "untrusted/bench",
    "main",
)
DATA_LINE = "LESSON = {}  # coursepack:data"
INTRODUCTION = """This process never imports the code it checks: it computes every case's inputs and expected
output, and workers (child processes) import the code, run it and hand back data only, which is
judged here. A kernel that hangs, crashes or leaves the GPU in an error state fails its own case,
and a fresh worker takes the next. The lesson-specific parts (inputs, reference, comparison,
reasons, messages) are the data block below. Joined by coursepack from generator/checker/."""


def _header() -> str:
    """check.py's docstring: its usage (main.py's) and how it works."""
    usage = ast.get_docstring(ast.parse((HERE / "main.py").read_text(encoding="utf-8"))).split(
        "\n\n", 1
    )[1]
    usage = "\n".join("    " + line for line in usage.splitlines())
    return (
        '#!/usr/bin/env python3\n"""Self-check for one coursepack lesson. Needs only Python, torch and triton.\n\n'
        + usage
        + "\n\n"
        + INTRODUCTION
        + '\n"""\n'
    )


class JoinError(Exception):
    pass


def _split(name: str) -> tuple[list[str], str]:
    """A module's import lines (relative ones left out) and its body after them."""
    source = (HERE / f"{name}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    imports, body_start = [], 0
    for node in tree.body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and node is tree.body[0]
        ):
            body_start = node.end_lineno
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                imports.append(source_segment(lines, node))
            body_start = node.end_lineno
            continue
        break
    return imports, "".join(lines[body_start:]).strip("\n") + "\n"


def source_segment(lines: list[str], node: ast.stmt) -> str:
    """ast.get_source_segment(source, node), without splitting the whole source again for each
    node (that split, a loop in Python, cost half a second per process over check.py's imports).
    The offsets are of UTF-8 bytes."""
    first, last = (lines[node.lineno - 1].encode(), lines[node.end_lineno - 1].encode())
    if node.lineno == node.end_lineno:
        return first[node.col_offset : node.end_col_offset].decode()
    middle = [line.encode() for line in lines[node.lineno : node.end_lineno - 1]]
    return b"".join([first[node.col_offset :], *middle, last[: node.end_col_offset]]).decode()


def _top_level_names(body: str) -> set[str]:
    names = set()
    for node in ast.parse(body).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            names.update(
                e.id
                for t in node.targets
                if isinstance(t, ast.Tuple)
                for e in t.elts
                if isinstance(e, ast.Name)
            )
    return names


@lru_cache(maxsize=1)
def joined() -> str:
    """check.py without its data (the line DATA_LINE stays, once)."""
    imports: list[str] = []
    bodies, owners = [], {}
    for name in ORDER:
        found, body = _split(name)
        for defined in _top_level_names(body):
            if defined in owners:
                raise JoinError(
                    f"{HERE}/{name}.py: '{defined}' is also defined in {owners[defined]}.py "
                    "(check.py is one namespace)"
                )
            owners[defined] = name
        imports += [line for line in found if line not in imports]
        bodies.append(
            f"# {'-' * 93}\n# {Path(name).name}.py\n# {'-' * 93}\n\n{body}"
        )  # the file's name alone
    plain = sorted(i for i in imports if i.startswith("import "))
    froms = sorted(i for i in imports if i.startswith("from "))
    text = _header() + "\n".join(plain + froms) + "\n\n\n" + "\n\n".join(bodies)
    if text.count(DATA_LINE) != 1:
        raise JoinError(f"{HERE}: expected the line '{DATA_LINE}' once in the joined checker")
    return text


def with_data(data_json: str) -> str:
    return joined().replace(DATA_LINE, f'LESSON = json.loads(r"""{data_json}""")', 1)
