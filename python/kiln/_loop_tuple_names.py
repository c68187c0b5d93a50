"""Names a loop assigns tuple displays to, split into one name per element.

A search loop keeps where it found its best value as a tuple of Python numbers
(`best_box = (top, bottom, start, j)`, `best_ij = (i, j)`): kiln._loop_capture carries arrays
and numbers, not tuples, so such a loop was refused ("the loop changes the Python value of
`best_box`") and unrolled, every iteration of a maximum-sum-rectangle search traced (3.6 s of
compiling at 7x6). Where every assignment of a local name is `NAME = (e0, ..., ek)` with the same
number of elements, the rewrite assigns the elements to names of their own and reads the name as
the display of those names (an element of an unpacking of a display, `best, where = h, (i, j)`,
too: its names join the unpacking):

    best = (0, 0)                      __kiln_tuple_best_0, __kiln_tuple_best_1 = 0, 0
    for i in ...:               ->     for i in ...:
        if x[i] > m:                       if x[i] > m:
            best = (i, j)                      __kiln_tuple_best_0, __kiln_tuple_best_1 = i, j
    return best                        return (__kiln_tuple_best_0, __kiln_tuple_best_1)

The same values in the same order: a tuple holds references, and the names hold the same ones
(a tuple's identity aside, which a display builds anew). A name assigned any other way (a
parameter, `+=`, a for loop's or an unpacking's target, `del`, `with ... as`), one a nested
function, lambda, class or comprehension names, or a function that reads its names by computed
ones (`locals()`, `eval`, `exec`, `vars`) is left as written, and so is a name no loop assigns.
"""
import ast

from ._loop_rewrite_parts import _walk_scope

PREFIX = "__kiln_tuple_"
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                  ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPUTED_NAMES = {"locals", "eval", "exec", "vars", "globals"}


def split_tuple_names(statements, parameters):
    """`statements` (a function's body, changed in place) with its qualifying tuple names split;
    parameters: the function's parameter names (never split: their values come from a call)."""
    sizes = _tuple_names(statements, parameters)
    if not sizes:
        return statements
    rewriter = _Splitter(sizes)
    return [rewriter.visit(statement) for statement in statements]


def element_names(name, size):
    return [f"{PREFIX}{name}_{n}" for n in range(size)]


def _tuple_names(statements, parameters):
    """{name: its displays' length} of the names to split."""
    nodes = list(_walk_scope(statements))
    if any(isinstance(node, ast.Name) and node.id in _COMPUTED_NAMES for node in nodes):
        return {}
    sizes, refused, in_loops, displayed = {}, set(parameters), set(), set()
    for node in nodes:
        for target, value in _displayed(node):
            name, size = target.id, len(value.elts)
            displayed.add(id(target))
            if sizes.setdefault(name, size) != size:
                refused.add(name)
    for node in nodes:
        if (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
                and id(node) not in displayed):
            refused.add(node.id)  # stored some other way (for, unpacking, +=, del, with, :=)
        if isinstance(node, (ast.For, ast.While)):
            in_loops.update(target.id for statement in _walk_scope(node.body)
                            for target, _ in _displayed(statement))
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            refused.update(node.names)
        if isinstance(node, (ast.ExceptHandler, ast.alias, ast.MatchAs)):
            refused.add(getattr(node, "name", None) or getattr(node, "asname", None))
    for node in nodes:  # names a nested scope sees are its closure's: left as they are
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _NESTED_SCOPES):
                refused.update(n.id for n in ast.walk(child) if isinstance(n, ast.Name))
                refused.update(n.arg for n in ast.walk(child) if isinstance(n, ast.arg))
    return {name: size for name, size in sizes.items()
            if name not in refused and name in in_loops and size > 0}


def _is_display(value):
    return isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts)


def _displayed(node):
    """(name, display) pairs `node` assigns: `name = (e0, ..., ek)`, and each such element of an
    unpacking of a display (`best, where = h, (i, j)`)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_display(node.value)):
        return []
    target = node.targets[0]
    if isinstance(target, ast.Name):
        return [(target, node.value)]
    if (isinstance(target, ast.Tuple) and len(target.elts) == len(node.value.elts)
            and not any(isinstance(e, ast.Starred) for e in target.elts)):
        return [(name, value) for name, value in zip(target.elts, node.value.elts)
                if isinstance(name, ast.Name) and _is_display(value)]
    return []


class _Splitter(ast.NodeTransformer):
    def __init__(self, sizes):
        self.sizes = sizes

    def visit_Assign(self, node):
        split = [(target, value) for target, value in _displayed(node)
                 if target.id in self.sizes]
        self.generic_visit(node)
        if not split:
            return node
        if split[0][0] is node.targets[0]:
            node.targets = [self._names(node.targets[0])]
            return node
        # an unpacking: the display's elements join it, in their places
        targets, values = [], []
        for target, value in zip(node.targets[0].elts, node.value.elts):
            if any(target is name for name, _ in split):
                targets.extend(self._names(target).elts)
                values.extend(value.elts)
            else:
                targets.append(target)
                values.append(value)
        node.targets[0].elts, node.value.elts = targets, values
        return node

    def _names(self, target):
        names = element_names(target.id, self.sizes[target.id])
        return ast.copy_location(ast.Tuple(
            elts=[ast.copy_location(ast.Name(id=n, ctx=ast.Store()), target) for n in names],
            ctx=ast.Store()), target)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.sizes:
            return ast.copy_location(ast.Tuple(
                elts=[ast.copy_location(ast.Name(id=n, ctx=ast.Load()), node)
                      for n in element_names(node.id, self.sizes[node.id])],
                ctx=ast.Load()), node)
        return node

    def _nested(self, node):  # a nested scope's names are its own (none of them are split)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _nested
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _nested
