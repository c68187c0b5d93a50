"""Array updates through an attribute inside loops (`self.states[:, t] = h`, as class-based
layers write their time steps) made updates through a name, which loop capture can carry.

kiln._loop_refusals accepts subscripts of names only as assignment targets: an RNN layer's
forward pass, whose time loop writes `self.state_input[:, t]` and `self.states[:, t]`, was
unrolled (a graph of 470 ops and 4.7 s of compile work for 20 steps, five times slower than
NumPy). Each such statement becomes the same statement through a fresh name bound to the
attribute's value right there, in Python's order of evaluation:

    self.states[:, t] = value   ->   __kiln_value_0 = value
                                     __kiln_target_0 = self.states
                                     __kiln_target_0[:, t] = __kiln_value_0
    self.grad[k] += value       ->   __kiln_target_1 = self.grad
                                     __kiln_target_1[k] += value

The name refers to the very array the attribute holds, so the update reaches it as before, and
the attribute is read at the statement (a body that rebinds it is followed). Only statements
inside loops are changed, and none in nested functions or classes. Where the chain starts at a
parameter the function never rebinds (`self`), each loop around the statement also binds the
name before it (`__kiln_target_0 = getattr(self, 'states', None)`): the loop carries the array
as it carries any variable it updates in place; otherwise the body's write would be to an
array no variable holds, and the loop runs as Python (kiln._loop_escapes).
"""
import ast


def attribute_targets_through_names(statements, fixed_names):
    """`statements` (a function body) with subscript assignments to attributes inside its loops
    made through names bound just before them; `fixed_names`: parameters never rebound."""
    rewriter = _Rewriter(fixed_names)
    return [result for statement in statements for result in _as_list(rewriter.visit(statement))]


def _as_list(result):
    return result if isinstance(result, list) else [result]


def _attribute_subscript(target):
    """`a.b[...]` or `a.b.c[...]`: a subscript of an attribute chain over a name."""
    if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Attribute):
        return False
    base = target.value
    while isinstance(base, ast.Attribute):
        base = base.value
    return isinstance(base, ast.Name)


def _base_name(chain):
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    return chain.id


def _read_or_none(chain):
    """`getattr(getattr(a, 'b', None), 'c', None)` for `a.b.c`: None where one is missing."""
    if not isinstance(chain, ast.Attribute):
        return ast.Name(id=chain.id, ctx=ast.Load())
    return ast.Call(func=ast.Name(id="getattr", ctx=ast.Load()),
                    args=[_read_or_none(chain.value), ast.Constant(chain.attr),
                          ast.Constant(None)], keywords=[])


class _Rewriter(ast.NodeTransformer):
    def __init__(self, fixed_names):
        self.count = 0
        self.loops = 0
        self.fixed_names = fixed_names
        self.aliases = []  # (name, attribute chain) made so far, in order

    def _loop(self, node):
        self.loops += 1
        first = len(self.aliases)
        self.generic_visit(node)
        self.loops -= 1
        before = [_located(_store(alias, _read_or_none(chain)), node)
                  for alias, chain in self.aliases[first:]
                  if _base_name(chain) in self.fixed_names]
        return [*before, node]

    visit_For = visit_While = _loop

    def _scope(self, node):
        return node  # a nested function's or class's statements are its own

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _scope

    def _names(self, chain):
        self.count += 1
        self.aliases.append((f"__kiln_target_{self.count - 1}", chain))
        return f"__kiln_target_{self.count - 1}", f"__kiln_value_{self.count - 1}"

    def visit_Assign(self, node):
        if not self.loops or len(node.targets) != 1 or not _attribute_subscript(node.targets[0]):
            return node
        target = node.targets[0]
        alias, value = self._names(target.value)
        return [_located(_store(value, node.value), node),
                _located(_store(alias, target.value), node),
                _located(ast.Assign(targets=[_through(alias, target)],
                                    value=ast.Name(id=value, ctx=ast.Load())), node)]

    def visit_AugAssign(self, node):
        if not self.loops or not _attribute_subscript(node.target):
            return node
        alias, _ = self._names(node.target.value)
        return [_located(_store(alias, node.target.value), node),
                _located(ast.AugAssign(target=_through(alias, node.target), op=node.op,
                                       value=node.value), node)]


def _store(name, value):
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def _through(alias, target):
    return ast.Subscript(value=ast.Name(id=alias, ctx=ast.Load()), slice=target.slice,
                         ctx=ast.Store())


def _located(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old))
