"""Whether a file is the student's Triton, decided from its text alone in the trusted process:
the code equals the exercise with the fill in its blank (compared as syntax trees: comments and
layout do not count, indentation does), and the fill is a Triton expression, so that nothing of
it can run Python when the interpreter executes the kernel body as Python. Nothing the worker
reports enters here; its launch record can only add suspicion (supervisor.flags).

For a file that is not the exercise with a fill (edits outside the blank), what can be named is
the torch computations outside its kernels that could produce the answer by themselves: the
operations the lesson's reference uses, with their torch aliases."""
import ast

from ..shared.common import msg

# Attributes a Triton value has in a kernel beyond its class's public methods (instance fields
# and the pointer type's element type). Never `handle`: in the interpreter that is numpy data.
VALUE_ATTRIBUTES = {"dtype", "shape", "T", "element_ty", "numel", "primitive_bitwidth"}
# Nodes that compute nothing of their own: their children are checked.
PLAIN = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.Slice,
         ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context, ast.keyword)
# torch's other names for its generic arithmetic, by the name the reference calls. A lesson adds
# the other names of its own computation in reference.py (TORCH_EQUIVALENTS: a lesson is content).
ALIASES = {"matmul": {"matmul", "mm", "bmm", "addmm", "einsum", "tensordot", "mv", "dot", "inner", "linear", "chain_matmul"},
           "add": {"add", "add_"}, "sub": {"sub", "sub_", "subtract"}, "mul": {"mul", "mul_", "multiply"},
           "div": {"div", "div_", "divide", "true_divide"}}
OPERATORS = {ast.MatMult: "@"}   # an operator in host code only where it rarely means index arithmetic
# The torch functions of the reference's element-wise operators (the operators themselves are not
# looked for in host code: there they are index arithmetic as often as not).
OPERATOR_FUNCTIONS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}


def fill_problem(fill_node, scope):
    """Why the fill (an ast expression) is not a Triton expression, or None. scope: the names the
    kernel binds (its parameters and assignments) beside `tl`."""
    for node in ast.walk(fill_node):
        why = _node_problem(node, scope)
        if why:
            return why
    return None


def _node_problem(node, scope):
    if isinstance(node, PLAIN):
        return None
    if isinstance(node, ast.Constant):
        ok = node.value is None or isinstance(node.value, (bool, int, float, str))
        return None if ok else _problem("fill_constant", node)
    if isinstance(node, ast.Name):
        return None if node.id in scope or node.id == "tl" else _problem("fill_name", node)
    if isinstance(node, ast.Attribute):
        return _attribute_problem(node)
    if isinstance(node, ast.Call):
        return None if isinstance(node.func, ast.Attribute) else _problem("fill_call", node.func)
    if isinstance(node, ast.Subscript):
        return None
    return _problem("fill_python", node)


def _problem(key, node):
    return msg(key, code=ast.unparse(node)[:80])


def _attribute_problem(node):
    chain, root = [], node
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    if isinstance(root, ast.Name) and root.id == "tl":
        ok = not any(name.startswith("_") for name in chain) and _in_triton(chain)
    else:
        ok = all(name in _value_attributes() for name in chain)
    return None if ok else _problem("fill_attribute", node)


def _in_triton(chain):
    """Whether tl.<chain> names an object of triton.language (a function, a dtype, an enum member,
    one of its modules), reached through triton.language's own modules only."""
    import triton.language as tl
    value = tl
    for name in chain:
        if not hasattr(value, name):
            return False
        value = getattr(value, name)
        if type(value).__name__ == "module":
            if not value.__name__.startswith("triton.language"):
                return False
            continue
        home = getattr(value, "__module__", None) or type(value).__module__
        if not str(home).startswith("triton"):
            return False
    return True


def _value_attributes():
    import triton.language as tl
    return VALUE_ATTRIBUTES | {name for name in dir(tl.tensor) if not name.startswith("_")}


def kernel_scope(function):
    """The names a kernel binds: its parameters, and every name it assigns or loops over."""
    args = function.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def enclosing_function(tree, line):
    """The innermost function whose body holds line, or None."""
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if found is None or node.lineno >= found.lineno:
                found = node
    return found


def is_jit(function):
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")) == "jit":
            return True
    return False


def same_but_blank(exercise, mine, blank, captured):
    """None when the syntax tree mine is exercise with an expression where exercise has the name
    blank (appended to captured); else the line of mine where they first differ (positions, layout
    and comments are not in a tree)."""
    if isinstance(exercise, ast.Name) and exercise.id == blank and isinstance(mine, ast.expr):
        captured.append(mine)
        return None
    if type(exercise) is not type(mine):
        return _line(mine)
    for name, theirs in ast.iter_fields(exercise):
        ours = getattr(mine, name, None)
        if isinstance(theirs, list):
            differs = _same_lists(theirs, ours, blank, captured, mine)
        elif isinstance(theirs, ast.AST):
            differs = same_but_blank(theirs, ours, blank, captured) if isinstance(ours, ast.AST) else _line(mine)
        else:
            differs = None if theirs == ours and type(theirs) is type(ours) else _line(mine)
        if differs is not None:
            return differs
    return None


def _same_lists(theirs, ours, blank, captured, parent):
    if not isinstance(ours, list):
        return _line(parent)
    for a, b in zip(theirs, ours):
        if isinstance(a, ast.AST) and isinstance(b, ast.AST):
            differs = same_but_blank(a, b, blank, captured)
        else:
            differs = None if a == b and type(a) is type(b) else _line(parent)
        if differs is not None:
            return differs
    if len(theirs) != len(ours):   # a statement added (its line) or left out (the one before)
        return _line(ours[len(theirs)] if len(ours) > len(theirs) else (ours[-1] if ours else parent))
    return None


def _line(node):
    return getattr(node, "lineno", None) or 1


def reference_operations(reference_source):
    """The torch computations the lesson's reference function performs, as names to look for:
    torch.X and Tensor.X calls (with torch's aliases), `@`, and the torch functions of its
    element-wise operators (x + y: torch.add, x.add), and the names reference.py lists as
    TORCH_EQUIVALENTS (read from the text, never run)."""
    try:
        tree = ast.parse(reference_source)
    except (SyntaxError, ValueError):
        return set()
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "reference"), None)
    found = set(_declared_equivalents(tree))
    for node in ast.walk(function) if function else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found |= ALIASES.get(node.func.attr, set()) | {node.func.attr}
        elif isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            found |= {OPERATORS[type(node.op)]} | ALIASES["matmul"]
        elif isinstance(node, ast.BinOp) and type(node.op) in OPERATOR_FUNCTIONS:
            found |= ALIASES[OPERATOR_FUNCTIONS[type(node.op)]]
    return found - NOT_COMPUTING


# Calls of a reference that compute nothing of the lesson's: conversions, copies, allocations and
# shape changes (a host that calls torch.empty_like or reshapes is not computing the answer).
NOT_COMPUTING = {"double", "float", "half", "to", "contiguous", "clone", "empty", "empty_like", "zeros", "zeros_like",
                 "ones", "ones_like", "full", "full_like", "new_empty", "new_zeros", "new_full", "view", "reshape",
                 "unsqueeze", "squeeze", "expand", "long", "int", "bool", "size", "dim", "numel", "stride", "item",
                 "tensor", "long", "tolist", "float64", "type"}


def _declared_equivalents(tree):
    """The strings of a top-level `TORCH_EQUIVALENTS = (...)` (a tuple, list or set of literals)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "TORCH_EQUIVALENTS" for t in node.targets) \
                and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def torch_computations(tree, operations):
    """`name (line N)` for each call or operator in host code (outside jit kernels and the
    `__main__` demo) that is one of operations."""
    found = []
    for node in _host_nodes(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in operations:
                found.append((node.lineno, node.col_offset, f"{ast.unparse(node.func)[:40]} (line {node.lineno})"))
        elif isinstance(node, ast.BinOp) and OPERATORS.get(type(node.op)) in operations:
            found.append((node.lineno, node.col_offset, f"{OPERATORS[type(node.op)]} (line {node.lineno})"))
    return [text for _, _, text in sorted(found)][:10]


def _host_nodes(tree):
    """Every node outside jit kernels and the module's own `if __name__ == "__main__":` demo (only
    that test, at the top level: inside a function, such a test is code that runs when imported)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_jit(node):
            skip |= {id(n) for n in ast.walk(node)}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.If) and _is_main_test(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    return [n for n in ast.walk(tree) if id(n) not in skip]


def _is_main_test(test) -> bool:
    """`__name__ == "__main__"` (either way round), and nothing else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))
