"""What is known of the code under check without running it: the file, the blank, edits outside
the blank, the @triton.jit kernels it defines. Runs in the trusted process (it only reads text)."""
import ast
import difflib
import importlib.util
import io
import json
import re
import tokenize
import warnings
from pathlib import Path

from ..shared.common import BLANK, HERE, LESSON, msg, without_main_block
from .provenance import (enclosing_function, fill_problem, is_jit, kernel_scope, reference_operations, same_but_blank,
                         torch_computations)


class Target:
    """The code under check: a .py file, or the exercise cell of a notebook written to a file."""

    def __init__(self, path, display, text, cell=None, undecodable=None):
        self.path, self.display, self.text, self.cell = path, display, text, cell
        self.undecodable = undecodable   # why Python cannot decode the file (then text is a best guess)

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
                return read_target(copy, display, cell=index)
        raise SystemExit(msg("no_exercise_cell", file=display))
    return read_target(path, display)


def python_text(data):
    """(the text Python runs from a file's bytes, None) as an import decodes it: a BOM or a coding
    cookie, else UTF-8, and universal newlines (a lone CR ends a line); (a best guess, why) when
    Python cannot decode it (the import then fails with a SyntaxError of its own)."""
    try:
        return importlib.util.decode_source(data), None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        guess = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        return guess, f"{type(exc).__name__}: {exc}"[:200]


def source_encoding(text):
    """The codec to write text in so that Python reads the same text back: the one its coding
    cookie names (a file decoded from Latin-1 goes back to Latin-1), else UTF-8."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8")).readline)[0]
        text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


def read_target(path, display, cell=None):
    """A kernel file as a Target, decoded as Python decodes it."""
    text, undecodable = python_text(Path(path).read_bytes())
    return Target(path, display, text, cell=cell, undecodable=undecodable)


def _tokens(text):
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def code_lines(text):
    """The lines of text with comments and trailing blanks removed (None if it won't tokenize).
    Lines end at newlines only, as tokenize counts them (str.splitlines also splits at a form
    feed or U+2028, which would shift every comment after it onto another line)."""
    lines = _newlines(text).split("\n")
    text = "\n".join(lines)
    tokens = _tokens(text)
    if tokens is None:
        return None
    for tok in reversed(tokens):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [line.rstrip() for line in lines]


def _newlines(text):
    return text.replace("\r\n", "\n").replace("\r", "\n")


def blank_lines(text):
    text = _newlines(text)
    tokens = _tokens(text)
    if tokens is None:
        return [i for i, line in enumerate(text.split("\n"), 1) if BLANK in line.split("#")[0]]
    return sorted({tok.start[0] for tok in tokens if tok.type == tokenize.NAME and tok.string == BLANK})


def review(text, notebook=False, undecodable=None, grammar=True):
    """What the trusted side knows of a file from its text (the one check.py runs): the lines
    changed outside the blank, the fill, whether the code is the exercise with an expression in its
    blank (syntax trees compared: layout and comments aside, a fill may span lines), why the fill
    is not a Triton expression, and the torch computations of the answer in its host code. Fails
    closed: a file that cannot be decoded or parsed (or nests too deeply), or whose changes cannot
    be listed because it will not tokenize, is `unreviewed` (why), never one without edits.
    `proven`: the code is provably the exercise with a Triton fill. grammar=False leaves the fill
    unchecked (it imports triton.language, which only environment.prepare may import first: before
    a check's workers exist, or in grading's own process, the edits and the fill are all it asks)."""
    found = {"edits": [], "fill": None, "unreviewed": undecodable, "code_differs": True, "fill_not_triton": None,
             "torch_computes": [], "proven": False}
    if undecodable:
        return found
    try:
        _review(found, text, without_main_block(LESSON["template"]) if notebook else LESSON["template"], grammar)
    except (RecursionError, MemoryError) as exc:
        found.update(unreviewed=f"{type(exc).__name__}: {str(exc)[:120]}", code_differs=True, fill_not_triton=None)
    found["proven"] = grammar and not (found["unreviewed"] or found["code_differs"] or found["fill_not_triton"])
    return found


def _review(found, text, lines, grammar):
    lined = _line_review(text, lines)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        found["unreviewed"] = f"{type(exc).__name__}: {exc}"[:200]
        return
    if lined is not None:
        found["edits"], found["fill"] = lined
    _review_tree(found, tree, lines, grammar)
    if lined is None and found["code_differs"]:   # changed, and the changed lines cannot all be named
        found["unreviewed"] = msg("unreviewed_tokenize")
    if found["code_differs"]:
        found["torch_computes"] = _computes(tree)


def review_edits(text, notebook=False):
    """(lines changed outside the blank, the fill or None)."""
    found = review(text, notebook, grammar=False)
    return found["edits"], found["fill"]


def _computes(tree):
    return torch_computations(tree, reference_operations(LESSON.get("reference") or ""))


def _review_tree(found, tree, lines, grammar=True):
    """The file's syntax tree against the exercise's, whose blank stands for any one expression:
    the file is the exercise with that expression as its fill, or the line where they differ (an
    edit, though every line may match: an indentation changed); then the fill against Triton's
    grammar."""
    exercise = ast.parse("\n".join(lines) + "\n")
    captured = []
    differs = same_but_blank(exercise, tree, BLANK, captured)
    found["code_differs"] = differs is not None or not captured
    if found["code_differs"]:
        if not found["edits"]:
            found["edits"] = [differs or 1]
        return
    if found["fill"] is None:   # a fill over several lines: the line review did not see it
        found["fill"] = ast.unparse(captured[0])[:400]
    kernel = enclosing_function(exercise, LESSON["blank_line"])
    if grammar and kernel is not None and is_jit(kernel):
        found["fill_not_triton"] = fill_problem(captured[0], kernel_scope(kernel))


def _line_review(text, template_lines):
    """(lines changed outside the blank, the fill if the blank's line matches), blank lines and
    comments aside; None when the text or the template cannot be tokenized."""
    template = code_lines("\n".join(template_lines) + "\n")
    mine = code_lines(text)
    if mine is None or template is None:
        return None
    a = [(n, line.strip()) for n, line in enumerate(template, 1) if line.strip()]
    b = [(n, line.strip()) for n, line in enumerate(mine, 1) if line.strip()]
    blank = next(k for k, (n, _) in enumerate(a) if n == LESSON["blank_line"])
    head, _, tail = a[blank][1].partition(BLANK)
    pattern = re.compile(re.escape(head.strip()) + r"(.*)" + re.escape(tail.strip()) + "$")
    fill, changed = None, []
    matcher = difflib.SequenceMatcher(a=[l for _, l in a], b=[l for _, l in b], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and a0 <= blank < a1 and (a1 - a0) == (b1 - b0):
            found = pattern.match(b[b0 + blank - a0][1])
            if found and found.group(1).strip():
                fill = found.group(1).strip()
                changed += [b[k][0] for k in range(b0, b1) if k != b0 + blank - a0]
                continue
        changed += [b[k][0] for k in range(b0, b1)] or [b[min(b0, len(b) - 1)][0] if b else 1]
    return sorted(set(changed)), fill


def syntax_error(text, undecodable=None):
    """The file's syntax error as Python gives it, found here by compiling the text (never running
    it): {"kind": "syntax", "line", "column", "text"}, or None when it compiles."""
    if undecodable:
        return {"kind": "syntax", "line": None, "column": None, "text": undecodable}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<submission>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return {"kind": "syntax", "line": exc.lineno, "column": exc.offset, "text": str(exc.msg)[:400]}
    except (ValueError, RecursionError, MemoryError) as exc:
        return {"kind": "syntax", "line": None, "column": None, "text": f"{type(exc).__name__}: {exc}"[:400]}
    return None


def kernels_defined(text):
    """Names of the functions the file decorates with a Triton jit (`@triton.jit`, `@jit`,
    `@triton.jit(...)`, under `@triton.autotune` or `@triton.heuristics` too); [] if it won't parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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
