"""A name bound to None before a loop and to a value in it, rewritten as a (present flag,
payload) pair that kiln._loop_transform can capture.

A search's `idx = None; for i ...: if x[i] < 0: idx = i; break`, then `-1 if idx is None else
idx`; a running best's `best = None; for ...: if best is None or v < best: best = v`; the
previous row's `prev = None; for ...: if prev is not None: out += x - prev; prev = x`. `is None`
is an identity test the trace cannot answer of a traced value, and None is neither an array nor
a number: the loop unrolled (a graph break an iteration). As Numba types an Optional, the name
becomes two, as a JAX user would write it:

    v = None              ->    __kiln_present_v = False    (again later too: a run's reset)
    v = E                 ->    __kiln_optional_v = E
                                __kiln_present_v = __kiln_optional_v is not None
    v is None             ->    not __kiln_present_v          (`is not None`: the flag)
    v (a guarded read)    ->    __kiln_optional_v

The flag is a Python bool the loop makes traced (kiln._branch_capture selects it, the loop
carries it: kiln._loop_results); the payload is first bound in the body and carried from zeros
of the type its first assignment gives it (kiln._loop_first_bindings), zeros on a branch's side
that does not bind it (kiln._branch_capture). That is Python's answer wherever the payload is
read only where the flag is set (`if v is None: raise E` becomes an assert's check of the flag:
kiln._body_statements), and a read is guarded where the test of an `if`, a conditional
expression or an `and`/`or` in front of it says the name is not None, after an `if v is None:`
whose block leaves (raise, return, break, continue) or ends binding it, or after the name's
assignment in its block, until a statement that may bind it to None again (a loop holding one
guards nothing in its body). A `return` that reads it unguarded (`return best`) becomes `if
present: return payload` / `else: return None` (the trace returns the payload, and the call
reruns eagerly where None is returned: kiln._branch_capture). Any other read, a store that is
not a plain `v = E`, a use in another scope or before the `v = None`: the name is left as
written (and its loop unrolls, as it did). Run as Python (a loop that is not captured), the
rewritten code is the user's: each read happens where the payload is bound, and the flag is
`v is not None` at every point. A payload every assignment gives a tuple display (`best = (i,
x[i])`) is split into one name per element afterwards (kiln._loop_tuple_names): the loop
carries numbers and arrays, not tuples.
"""
import ast
import copy
import re

from ._loop_else import _located
from ._loop_rewrite_parts import _helper_call, _name
from ._loop_tuple_names import PREFIX as TUPLE_PREFIX

PRESENT = "__kiln_present_"
PAYLOAD = "__kiln_optional_"


def is_payload(name):
    """Whether `name` is the payload of an optional value rewritten as above, or an element of
    one split from a tuple (`best = (i, x[i])`: kiln._loop_tuple_names)."""
    return name.startswith(PAYLOAD) or name.startswith(TUPLE_PREFIX + PAYLOAD)


def is_present_flag(name):
    """Whether `name` is the present flag of an optional value rewritten as above."""
    return name.startswith(PRESENT)


def in_user_names(text):
    """`text` (why a loop or branch is not captured) with payloads and flags named as the user
    named them."""
    return _REWRITTEN_NAME.sub(r"\2", text)


_REWRITTEN_NAME = re.compile(f"({PAYLOAD}|{PRESENT})([A-Za-z_][A-Za-z_0-9]*)")


def optional_values(statements, parameters):
    """`statements` (a function body) with each name bound to None before a loop that binds it
    rewritten as above, where every read qualifies."""
    _split_parallel_bindings(statements)
    tried = set()
    while True:  # one at a time: a rewrite moves the statements after it
        block, position, name = next((candidate for candidate in _candidates(
            statements, parameters) if candidate[2] not in tried), (None, None, None))
        if name is None:
            return statements
        tried.add(name)
        rest = block[position + 1:]
        if not _Optional(name, rewrite=False).qualifies(rest):
            continue
        flag = ast.Assign(targets=[_name(PRESENT + name, ast.Store())], value=ast.Constant(False))
        block[position:] = ([_located(flag, block[position])] +
                            _Optional(name, rewrite=True).block(rest, False))


def _split_parallel_bindings(statements):
    """`a, b = E, F` as `a = E` then `b = F` where no E reads a name bound there (a running
    best with its key: `best, best_norm = None, None`, then `best, best_norm = X[i], norm`),
    in the blocks of `statements`, for the names bound to None that way."""
    optional = {target.id for node in _scope_nodes(statements) for target, value in
                _parallel_parts(node) if _none_binding(_assignment(target, value)) is not None}
    for block in _blocks(statements):
        position = 0
        while position < len(block):
            parts = _parallel_parts(block[position])
            if parts and optional & {target.id for target, _ in parts}:
                block[position:position + 1] = [
                    _located(_assignment(target, value), block[position])
                    for target, value in parts]
                position += len(parts)
            else:
                position += 1


def _parallel_parts(node):
    """[(target name, value)] of `a, b = E, F` where no E or F reads a or b, else []."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)
            and len(node.targets[0].elts) == len(node.value.elts)
            and all(isinstance(target, ast.Name) for target in node.targets[0].elts)
            and not any(isinstance(value, ast.Starred) for value in node.value.elts)):
        return []
    names = {target.id for target in node.targets[0].elts}
    if len(names) < len(node.targets[0].elts) or any(
            isinstance(part, ast.Name) and part.id in names
            for value in node.value.elts for part in ast.walk(value)):
        return []
    return list(zip(node.targets[0].elts, node.value.elts))


def _assignment(target, value):
    return ast.Assign(targets=[_name(target.id, ast.Store())], value=value)


def _candidates(statements, parameters):
    """(block, position, name) of each `name = None` in a block of `statements` binding a name
    that is no parameter, that nothing names before it or in a nested scope, and that a loop
    after it binds."""
    counts = {}
    for node in ast.walk(ast.Module(body=statements, type_ignores=[])):
        if isinstance(node, ast.Name):
            counts[node.id] = counts.get(node.id, 0) + 1
    found = []
    for block in _blocks(statements):
        for position, statement in enumerate(block):
            name = _none_binding(statement)
            if name is None or name in parameters:
                continue
            later = [node for node in _scope_nodes(block[position + 1:])
                     if isinstance(node, ast.Name) and node.id == name]
            if len(later) + 1 == counts[name] and _bound_in_loop(block[position + 1:], name):
                found.append((block, position, name))
    return found


def _blocks(statements):
    """`statements` and every block of statements in them, not in nested scopes."""
    yield statements
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                yield from _blocks(getattr(node, field))
        for handler in getattr(node, "handlers", ()):
            yield from _blocks(handler.body)


def _scope_nodes(statements):
    """Every node of `statements`, nested scopes' too (a name there is not this scope's)."""
    for statement in statements:
        yield from ast.walk(statement)


def _none_binding(statement):
    """`name` of a `name = None` statement, else None."""
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Constant) and statement.value.value is None):
        return statement.targets[0].id
    return None


def _bound_in_loop(statements, name):
    loops = [node for node in _scope_nodes(statements) if isinstance(node, (ast.For, ast.While))]
    return any(_plain_binding(node, name) for loop in loops for node in _scope_nodes(loop.body))


def _plain_binding(node, name):
    """Whether `node` is `name = E` (E not the constant None)."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and _is_name(node.targets[0], name) and _none_binding(node) is None)


def _is_name(node, name):
    return isinstance(node, ast.Name) and node.id == name


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _exits(statements):
    return bool(statements) and isinstance(statements[-1], (ast.Raise, ast.Return, ast.Break,
                                                            ast.Continue))


class _Optional:
    """One name's reads and stores, checked (rewrite=False: `ok` says whether each qualifies)
    or rewritten (blocks and expressions returned in their rewritten form)."""

    def __init__(self, name, rewrite):
        self.name, self.rewrite, self.ok = name, rewrite, True

    def qualifies(self, statements):
        stores = [node for node in _scope_nodes(statements) if isinstance(node, ast.Name)
                  and node.id == self.name and not isinstance(node.ctx, ast.Load)]
        plain = [node for node in _scope_nodes(statements) if _plain_binding(node, self.name)
                 or _none_binding(node) == self.name]
        if len(stores) != len(plain):
            return False  # `v += 1`, `for v in ...`, `del v`, a tuple target
        if any(isinstance(scope, _SCOPES) and any(_is_name(node, self.name)
                                                  for node in ast.walk(scope))
               for scope in _scope_nodes(statements)):
            return False  # a lambda's, a comprehension's or a nested function's
        self.block(statements, False)
        return self.ok

    def none_test(self, node):
        """True for `name is None`, False for `name is not None`, else None."""
        if (isinstance(node, ast.Compare) and _is_name(node.left, self.name)
                and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))
                and isinstance(node.comparators[0], ast.Constant)
                and node.comparators[0].value is None):
            return isinstance(node.ops[0], ast.Is)
        return None

    def present_where_true(self, test):
        """Whether the name is bound to a value where `test` is true."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self.present_where_true(value) for value in test.values)
        return self.none_test(test) is False

    def present_where_false(self, test):
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(self.present_where_false(value) for value in test.values)
        return self.none_test(test) is True

    def block(self, statements, guarded):
        result = []
        for statement in statements:
            result += self.statement(statement, guarded)
            if self.resets(statement):
                guarded = False
            elif _plain_binding(statement, self.name) or (
                    isinstance(statement, ast.If) and self.present_where_false(statement.test)
                    and not statement.orelse and (_exits(statement.body) or _plain_binding(
                        statement.body[-1], self.name))):
                guarded = True  # (`if start is None: start = i`: bound either way)
        return result

    def resets(self, node):
        """Whether `node` binds the name to None again (a run's `start = None`)."""
        return any(_none_binding(part) == self.name for part in _scope_nodes([node]))

    def statement(self, node, guarded):
        if _none_binding(node) == self.name:
            flag = ast.Assign(targets=[_name(PRESENT + self.name, ast.Store())],
                              value=ast.Constant(False))
            return [_located(flag, node) if self.rewrite else node]
        if isinstance(node, (ast.For, ast.While)) and self.resets(node):
            guarded = False  # its next iteration may start where the name is None again
        if _plain_binding(node, self.name):
            value = self.expression(node.value, guarded)
            if not self.rewrite:
                return [node]
            payload = ast.Assign(targets=[_name(PAYLOAD + self.name, ast.Store())], value=value)
            present = ast.Compare(left=_name(PAYLOAD + self.name), ops=[ast.IsNot()],
                                  comparators=[ast.Constant(None)])
            flag = ast.Assign(targets=[_name(PRESENT + self.name, ast.Store())], value=present)
            return [_located(payload, node), _located(flag, node)]
        if isinstance(node, ast.Return) and node.value is not None and not guarded:
            probe = _Optional(self.name, rewrite=False)
            probe.expression(node.value, False)
            if not probe.ok:
                return self.returned(node)
        if (isinstance(node, ast.If) and self.none_test(node.test) is True and not node.orelse
                and len(node.body) == 1 and isinstance(node.body[0], ast.Raise)):
            return [self.raised(node, guarded)]
        if isinstance(node, ast.If):
            test = self.expression(node.test, guarded)
            body = self.block(node.body, guarded or self.present_where_true(node.test))
            orelse = self.block(node.orelse, guarded or self.present_where_false(node.test))
            return [self.copied(node, test=test, body=body, orelse=orelse)]
        if isinstance(node, ast.Match):
            self.ok = False  # (patterns bind and test in ways not followed here)
            return [node]
        changes = {}
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                changes[field] = self.block(value, guarded)
            elif isinstance(value, list) and value and isinstance(value[0], ast.ExceptHandler):
                changes[field] = [self.copied(handler, body=self.block(handler.body, guarded))
                                  for handler in value]
            elif isinstance(value, list):
                changes[field] = [self.expression(item, guarded) if isinstance(item, ast.expr)
                                  else item for item in value]
            elif isinstance(value, ast.expr):
                changes[field] = self.expression(value, guarded)
        return [self.copied(node, **changes)]

    def raised(self, node, guarded):
        """`if v is None: raise E` as an assert's check of the flag (kiln._body_statements):
        where the flag is traced, the graph reruns the call eagerly where it is not set, and
        Python's run raises E (a graph break at its bool(), the calls after it eager)."""
        body = self.block(node.body, guarded)
        if not self.rewrite:
            return node
        check = _helper_call("asserted()", node.test)
        check.args = [_name(PRESENT + self.name), ast.Constant(f"line {node.lineno}")]
        check.keywords = [ast.keyword(arg="kind", value=ast.Constant("a `None` check"))]
        return _located(ast.If(test=check, body=body, orelse=[]), node)

    def returned(self, node):
        """`return E` reading the name where it may be None: E of the payload where the flag is
        set, E of None where it is not."""
        value = self.expression(node.value, True)
        if not self.rewrite:
            return [node]
        absent = _AsNone(self.name).visit(copy.deepcopy(node))
        taken = ast.If(test=_name(PRESENT + self.name),
                       body=[self.copied(node, value=value)], orelse=[absent])
        return [_located(taken, node)]

    def expression(self, node, guarded):
        test = self.none_test(node)
        if test is not None:
            flag = _name(PRESENT + self.name)
            return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=flag) if test else flag,
                                     node) if self.rewrite else node
        if _is_name(node, self.name):
            self.ok = self.ok and guarded
            return ast.copy_location(_name(PAYLOAD + self.name), node) if self.rewrite else node
        if isinstance(node, ast.IfExp):
            return self.copied(
                node, test=self.expression(node.test, guarded),
                body=self.expression(node.body, guarded or self.present_where_true(node.test)),
                orelse=self.expression(node.orelse,
                                       guarded or self.present_where_false(node.test)))
        if isinstance(node, ast.BoolOp):
            values = []
            for value in node.values:
                values.append(self.expression(value, guarded))
                guarded = guarded or (self.present_where_false(value) if isinstance(
                    node.op, ast.Or) else self.present_where_true(value))
            return self.copied(node, values=values)
        changes = {}
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                changes[field] = self.expression(value, guarded)
            elif isinstance(value, list):
                changes[field] = [self.expression(item, guarded) if isinstance(item, ast.expr)
                                  else item for item in value]
        return self.copied(node, **changes)

    def copied(self, node, **changes):
        if not self.rewrite:
            return node
        node = copy.copy(node)
        for field, value in changes.items():
            setattr(node, field, value)
        return node


class _AsNone(ast.NodeTransformer):
    """An expression where the name is None: `name` the constant, its tests answered."""

    def __init__(self, name):
        self.name = name

    def visit_Compare(self, node):
        test = _Optional(self.name, rewrite=False).none_test(node)
        if test is None:
            return self.generic_visit(node)
        return ast.copy_location(ast.Constant(test), node)

    def visit_Name(self, node):
        return ast.copy_location(ast.Constant(None), node) if node.id == self.name else node
