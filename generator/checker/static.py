"""What is known of the code under check without running it: the file, the blank, edits outside
the blank, the @triton.jit kernels it defines. Runs in the trusted process (it only reads text)."""
import ast
import difflib
import io
import json
import re
import tokenize
from pathlib import Path

from .common import BLANK, HERE, LESSON, msg, without_main_block


class Target:
    """The code under check: a .py file, or the exercise cell of a notebook written to a file."""

    def __init__(self, path, display, text, cell=None):
        self.path, self.display, self.text, self.cell = path, display, text, cell

    def where(self, line):
        if self.cell is not None:
            return msg("where_cell", file=self.display, cell=self.cell, line=line)
        return f"{self.display}:{line}"


def load_target(arg, workdir, display=None):
    path = Path(arg) if arg else HERE / LESSON["module"]
    display = display or (str(arg) if arg else LESSON["module"])
    if not path.exists():
        raise SystemExit(msg("no_such_file", file=display))
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(notebook.get("cells", []), start=1):
            if "exercise" in cell.get("metadata", {}).get("tags", []):
                source = cell["source"]
                text = "".join(source) if isinstance(source, list) else source
                copy = Path(workdir) / LESSON["module"]
                copy.write_text(text, encoding="utf-8")
                return Target(copy, display, text, cell=index)
        raise SystemExit(msg("no_exercise_cell", file=display))
    return Target(path, display, path.read_text(encoding="utf-8"))


def _tokens(text):
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def code_lines(text):
    """The lines of text with comments and trailing blanks removed (None if it won't tokenize)."""
    lines = text.splitlines()
    tokens = _tokens(text)
    if tokens is None:
        return None
    for tok in reversed(tokens):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [line.rstrip() for line in lines]


def blank_lines(text):
    tokens = _tokens(text)
    if tokens is None:
        return [i for i, line in enumerate(text.splitlines(), 1) if BLANK in line.split("#")[0]]
    return sorted({tok.start[0] for tok in tokens if tok.type == tokenize.NAME and tok.string == BLANK})


def review_edits(text, notebook=False):
    """Line numbers changed outside the blank, and the student's fill if the blank line matches."""
    lines = without_main_block(LESSON["template"]) if notebook else LESSON["template"]
    template = code_lines("\n".join(lines) + "\n")
    mine = code_lines(text)
    if mine is None or template is None:
        return [], None
    while mine and not mine[-1]:   # blank lines at the end are no edit (an editor or a notebook adds them)
        mine.pop()
    while template and not template[-1]:
        template.pop()
    blank_index = LESSON["blank_line"] - 1
    head, _, tail = template[blank_index].partition(BLANK)
    pattern = re.compile(re.escape(head.strip()) + r"(.*)" + re.escape(tail.strip()) + "$")
    fill, changed = None, []
    matcher = difflib.SequenceMatcher(a=[l.strip() for l in template], b=[l.strip() for l in mine], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and a0 <= blank_index < a1 and (a1 - a0) == (b1 - b0):
            found = pattern.match(mine[b0 + blank_index - a0].strip())
            if found:
                fill = found.group(1).strip()
                changed += [b + 1 for b in range(b0, b1) if b != b0 + blank_index - a0]
                continue
        changed += list(range(b0 + 1, b1 + 1)) or [max(b0, 1)]
    return sorted(set(changed)), fill


def kernels_defined(text):
    """Names of the functions the file decorates with a Triton jit (`@triton.jit`, `@jit`,
    `@triton.jit(...)`, under `@triton.autotune` or `@triton.heuristics` too); [] if it won't parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "jit":
                    found.append(node.name)
                    break
    return sorted(set(found))
