"""List comprehensions and `sum(<generator expression>)` over a range, at the top level of the
compiled function, as the for loops they stand for, so that kiln._loop_transform captures them
as it does for loops (they ran as Python and tracing unrolled them: 500 rows' sums, 1.7 s to
compile):

    m = np.array([row_norm(X[i]) for i in range(n)])  ->  __kiln_list_1 = []
                                                          for __kiln_each_1 in range(n):
                                                              __kiln_list_1.append(
                                                                  row_norm(X[__kiln_each_1]))
                                                          m = np.array(__kiln_list_1)
    s = sum(x[i] * w[i] for i in range(n))            ->  __kiln_sum_2 = 0 (then += each term,
                                                          where `sum` is Python's builtin)

The comprehension runs first in its statement, as the loop before it: only one of a plain
statement (an assignment, a return, an expression), outside conditional parts of it (`a if c
else [...]`, `and`/`or`, lambdas, other comprehensions), with one `for` over `range(...)`, a
plain name as its target and no `if`. Its variable gets a name of its own (the comprehension's
is local to it). Others stay as written."""
import ast
import builtins
import copy

from ._loop_rewrite_parts import HELPER, _name, _parse

_CONDITIONAL = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                ast.GeneratorExp, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def is_builtin_sum(function):
    """Whether `sum` names Python's (the helper's, kiln._loop_capture)."""
    return function is builtins.sum


def as_loops(statements, local_names, counter=None):
    """`statements` with the comprehensions of each top-level plain statement (and of those in
    `with` and `try` bodies) before it as for loops. local_names: the function's parameters
    and the names it binds; an element that reads none of them (`[k * 2 for k in range(4)]`)
    is Python's numbers, which stay Python's (traced, `x[offsets[1]:]` was a graph break)."""
    counter = [0] if counter is None else counter
    result = []
    for statement in statements:
        if isinstance(statement, (ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if getattr(statement, field, None):
                    setattr(statement, field, as_loops(getattr(statement, field),
                                                       local_names, counter))
            result.append(statement)
            continue
        if not isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return,
                                      ast.Expr)):
            result.append(statement)
            continue
        hoister = _Hoister(counter, local_names, _calls(statement))
        statement = hoister.visit(statement)
        result.extend(hoister.loops)
        result.append(statement)
    return result


class _Hoister(ast.NodeTransformer):
    """Replaces the comprehensions of one statement by the names their loops fill (`loops`)."""

    def __init__(self, counter, local_names, calls):
        self.counter, self.local_names, self.loops = counter, local_names, []
        self.calls = calls  # the statement's calls: those run before a comprehension keep it

    def _runs_after_a_call(self, node):
        # hoisted, it would run before them: `(rng.normal(), [rng.normal() + x[i] for ...])`
        # would draw its numbers in another order
        start = (node.lineno, node.col_offset)
        return any(end <= start for end in self.calls)

    def generic_visit(self, node):
        if isinstance(node, _CONDITIONAL):
            return node  # runs only sometimes, or in a scope of its own: as written
        return super().generic_visit(node)

    def visit_ListComp(self, node):
        parts = _parts(node, self.local_names)
        if parts is None or self._runs_after_a_call(node):
            return node
        n = self._number()
        items = f"__kiln_list_{n}"
        loop, element = _loop(parts, n, lambda element: _parse(f"{items}.append(0)")[0],
                              "args")
        self.loops.append(_guarded(_reads_arrays(parts), items, "[]", loop, element, node))
        return _placed(_name(items), node)

    def visit_Call(self, node):
        if not (isinstance(node.func, ast.Name) and node.func.id == "sum" and len(node.args) == 1
                and not node.keywords and isinstance(node.args[0], ast.GeneratorExp)):
            return self.generic_visit(node)
        parts = _parts(node.args[0], self.local_names)
        if parts is None or self._runs_after_a_call(node):
            return node
        n = self._number()
        total = f"__kiln_sum_{n}"
        loop, element = _loop(parts, n, lambda element: _parse(f"{total} = {total} + 0")[0],
                              "right")
        # `sum` may be another function (np.sum imported by name): then the call as written
        test = f"{HELPER}.is_builtin_sum(sum) and {_reads_arrays(parts)}"
        self.loops.append(_guarded(test, total, "0", loop, element, node))
        return _placed(_name(total), node)

    def _number(self):
        self.counter[0] += 1
        return self.counter[0]


def _calls(statement):
    """Where each call of `statement` ends in the source (a call that ends before a
    comprehension begins runs before it)."""
    return [(node.end_lineno, node.end_col_offset) for node in ast.walk(statement)
            if isinstance(node, ast.Call) and node.end_lineno is not None]


def _parts(comprehension, local_names):
    """(target name, range call, element, the local names it reads) of `[element for target in
    range(...)]` whose element reads a local name besides the target, or None."""
    if len(comprehension.generators) != 1:
        return None
    generator = comprehension.generators[0]
    iterator = generator.iter
    if (generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name)
            or not (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name)
                    and iterator.func.id == "range" and 1 <= len(iterator.args) <= 3
                    and not iterator.keywords)
            or any(isinstance(a, ast.Starred) for a in iterator.args)):
        return None
    target = generator.target.id
    element = comprehension.elt
    for node in ast.walk(element):  # a scope inside that binds the name too: as written
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp,
                             ast.DictComp, ast.GeneratorExp, ast.Await, ast.Yield)):
            return None
    reads = sorted({node.id for node in ast.walk(element) if isinstance(node, ast.Name)
                    and node.id != target and node.id in local_names})
    if not reads:
        return None
    return target, iterator, element, reads


def is_python_data(*values):
    """Whether the locals a comprehension's element reads are all Python numbers, strings or
    None when it runs (the helper's, kiln._loop_capture): then its items are Python's too
    (`[(rule >> i) & 1 for i in range(8)]` a table of known values), kept as written."""
    return all(type(value) in (int, float, complex, bool, str, bytes, type(None))
               for value in values)


def _reads_arrays(parts):
    """The test that runs the comprehension as a loop: an element reading more than Python
    data (a traced array, a list of them, a traced number)."""
    return f"not {HELPER}.is_python_data({', '.join(parts[3])})"


def _loop(parts, n, statement_of, field):
    """(`for __kiln_each_n in range(...): <statement>`, the element (its variable renamed)) as
    the statement's call argument ("args") or right operand ("right")."""
    target, iterator, element, _ = parts
    each = f"__kiln_each_{n}"
    element = _Renamed(target, each).visit(copy.deepcopy(element))
    statement = statement_of(element)
    if field == "args":
        statement.value.args = [element]
    else:
        statement.value.right = element
    return ast.For(target=_name(each, ast.Store()), iter=copy.deepcopy(iterator),
                   body=[statement], orelse=[], type_comment=None), element


def _guarded(test, name, start, loop, element, node):
    """`if test: name = start; loop` with the comprehension `node` as written otherwise. The
    user's code in it (the loop's range and element, the comprehension) keeps its own places:
    a call's place tells whose call it is (kiln._numpy_creation: np.eye(d) in `[np.eye(d) for
    _ in range(k)]`, placed at the comprehension, was taken for C code's and broke the graph)."""
    guarded = _parse(f"if {test}:\n    {name} = {start}\nelse:\n    {name} = 0\n")[0]
    guarded.body.append(loop)
    guarded.orelse[0].value = copy.deepcopy(node)
    return _placed(guarded, node, kept=(loop.iter, element, guarded.orelse[0].value))


def _placed(new, old, kept=()):
    """`new`, every node of it but those of the subtrees `kept`, at `old`'s place in the user's
    source."""
    users = {id(part) for subtree in kept for part in ast.walk(subtree)}
    for node in ast.walk(new):
        if "lineno" in node._attributes and id(node) not in users:
            ast.copy_location(node, old)
    return new


class _Renamed(ast.NodeTransformer):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_Name(self, node):
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node
