"""Attributes a loop assigns (`self.t += self.dt`, `stats.n += 1`, `acc.total = acc.total + v`)
carried through names, so that kiln._loop_capture carries them as any variable.

kiln._loop_refusals refuses an attribute as an assignment target in a loop body (a body traced
once would assign it once): an integrator's `self.t += self.dt; self.steps += 1` in its time
loop unrolled it (1,000 ops for 200 steps; past the graph bound it ran eagerly). Where nothing
but the loop's own code can see the attributes while it runs, the loop reads and writes a name
instead, bound to the attribute before the loop and written back after it (also when the loop
raises), so that the object holds what Python's loop would have left in it:

    for ...:                     if HELPER.attributes_carried((s,), (('n',),), ...):
        s.n += x[i]       ->         __kiln_attribute_s_n = s.n
                                     try:
                                         for ...:
                                             __kiln_attribute_s_n += x[i]
                                     finally:
                                         s.n = __kiln_attribute_s_n
                                 else:
                                     for ...:  (as written)
                                         s.n += x[i]

Nothing else sees them where, in the loop, each object is named (by a name the loop never binds)
only to read or assign its attributes (not `s.step()`, not `f(s)`), and, as the loop starts
(kiln._loop_attribute_checks): the objects are distinct, keep their attributes in plain slots (no
property, no __setattr__ or __getattr__ of their own), already hold the attributes the loop
assigns, hold in those it only reads nothing that reaches the objects (numbers, arrays, a
configuration object), and the loop calls only NumPy's, math's and Python's built-in functions,
methods of arrays and numbers, and the user's functions whose globals and closures do not reach
the objects. Otherwise the loop runs as written (tracing unrolls it, as before).
"""
import ast
import copy

from ._loop_rewrite_parts import HELPER, _name

PREFIX = "__kiln_attribute"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.GeneratorExp)


def attribute_updates_through_names(statements):
    """`statements` (a function body) with each outermost loop that assigns attributes of
    names rewritten as above; nested functions and classes are left to their own rewrite."""
    result = []
    for node in statements:
        if isinstance(node, (ast.For, ast.While)):
            result.extend(_carried(node))
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            result.append(node)
            continue
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, attribute_updates_through_names(getattr(node, field)))
        for handler in getattr(node, "handlers", ()):
            handler.body = attribute_updates_through_names(handler.body)
        result.append(node)
    return result


def is_carrying_choice(node):
    """Whether `node` is the `if HELPER.attributes_carried(...)` this rewrite made: a choice
    between two forms of one loop, not a branch of the user's (kiln._loop_transform)."""
    return getattr(node, "_kiln_attribute_choice", False)


def _carried(loop):
    parts = _loop_parts(loop)
    if parts is None:
        # a loop that assigns no attribute, or cannot carry them: its nested loops may
        node = copy.copy(loop)
        node.body = attribute_updates_through_names(loop.body)
        return [node]
    assigned, read, callees = parts
    bases = sorted(assigned)
    carried = {(base, attribute): f"{PREFIX}_{base}_{attribute}"
               for base in bases for attribute in sorted(assigned[base])}
    renamed = _Renamer(carried).visit(copy.deepcopy(loop))
    pairs = sorted(carried.items())
    bind = ast.Assign(targets=[_tuple([_name(name, ast.Store()) for _, name in pairs])],
                      value=_tuple([_attribute(base, attribute) for (base, attribute), _ in pairs],
                                   ast.Load()))
    back = ast.Assign(targets=[_tuple([_attribute(base, attribute, ast.Store())
                                       for (base, attribute), _ in pairs])],
                      value=_tuple([_name(name) for _, name in pairs], ast.Load()))
    guarded = ast.Try(body=[renamed], handlers=[], orelse=[], finalbody=[back])
    check = ast.Call(
        func=ast.Attribute(value=_name(HELPER), attr="attributes_carried", ctx=ast.Load()),
        args=[ast.Constant(loop.lineno), _tuple([_name(base) for base in bases], ast.Load()),
              ast.Constant(tuple(tuple(sorted(assigned[base])) for base in bases)),
              ast.Constant(tuple(tuple(sorted(read.get(base, ()))) for base in bases)),
              _tuple([_name(callee) for callee in sorted(callees)], ast.Load())],
        keywords=[])
    loop._kiln_refused_at_run_time = True  # (the check records why it runs as written)
    choice = ast.If(test=check, body=[bind, guarded], orelse=[loop])
    choice._kiln_attribute_choice = True
    return [ast.fix_missing_locations(ast.copy_location(choice, loop))]


def _loop_parts(loop):
    """({base: attributes the loop assigns}, {base: attributes it only reads}, names of the
    callees' roots the loop does not bind), or None where it assigns none or one of the bases
    is used otherwise (rebound, called through, handed on) or the loop holds a scope that
    could read them later."""
    nodes = list(_own_nodes([loop]))
    assigned = {}
    for node in nodes:
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)):
            assigned.setdefault(node.value.id, set()).add(node.attr)
    if not assigned:
        return None
    bound = {node.id for node in nodes
             if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    if bound & assigned.keys():
        return None
    as_attribute = {id(node.value) for node in nodes if isinstance(node, ast.Attribute)}
    called = {id(node.func) for node in nodes if isinstance(node, ast.Call)}
    read = {}
    for node in nodes:
        if isinstance(node, _SCOPES) and any(
                isinstance(part, ast.Name) and part.id in assigned for part in ast.walk(node)):
            return None  # a function, class or generator that may read them after the loop
        if isinstance(node, ast.Name) and node.id in assigned and id(node) not in as_attribute:
            return None  # `f(s)`, `t = s`: another way to reach the object
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in assigned):
            if id(node) in called:
                return None  # `s.step()`: a method may read or assign them
            if node.attr not in assigned[node.value.id]:
                read.setdefault(node.value.id, set()).add(node.attr)
    callees = set()
    for node in nodes:
        if isinstance(node, ast.Call):
            root = _root(node.func)
            if root is None:
                return None
            if root not in bound:  # (a method of a value the loop makes: an array's)
                callees.add(root)
    return assigned, read, callees


def _own_nodes(statements):
    """The nodes of `statements`, not descending into functions, classes, lambdas and generator
    expressions (which are yielded: their reads are checked), comprehensions included."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _root(expression):
    """The name a callee expression starts from (`np` of np.linalg.norm, `x` of x[0].sum), or
    None where it starts elsewhere."""
    while isinstance(expression, (ast.Attribute, ast.Subscript, ast.Call)):
        expression = expression.func if isinstance(expression, ast.Call) else expression.value
    return expression.id if isinstance(expression, ast.Name) else None


class _Renamer(ast.NodeTransformer):
    def __init__(self, carried):
        self.carried = carried

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name):
            name = self.carried.get((node.value.id, node.attr))
            if name is not None:
                return ast.copy_location(_name(name, node.ctx), node)
        return self.generic_visit(node)


def _attribute(base, attribute, context=None):
    return ast.Attribute(value=_name(base), attr=attribute, ctx=context or ast.Load())


def _tuple(elements, context=None):
    return ast.Tuple(elts=elements, ctx=context or ast.Store())
