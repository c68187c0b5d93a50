"""Early returns of a function kiln._loop_transform rewrites, merged into one exit.

A guard clause (`if n < eps: return v`, then `return v / n`) asks bool() of a traced test: a
graph break, so the function ran in segments and was traced again on every call. As AutoGraph
does it: each return assigns the result, what follows an `if` whose body returns on every path
becomes its `else`, and the function returns the result once, at its end; the `if` is then a
branch the capture helper selects or runs on the side taken (kiln._branch_capture), and on a
Python test it runs as before. A loop whose body returns sets the result and a flag and breaks
(kiln._loop_jumps), and what follows it runs where the flag is not set; a `while True:` loop
that no `break` leaves has nothing after it, so a single return in it is merged too. Where every
return gives a tuple, list or dict display of one form (`return x_new, it` in a solver's loop,
`return x, it` after it), each element is a result of its own (RESULT_0, RESULT_1, ...: a loop
carries each as it carries a single array, and a Python counter stays a Python number) and the
exit builds the container from them; a return in a nested loop also breaks the loops around it.
Where every return gives one name or a slice of it at a position (`return hist[:k + 1], k + 1`
in the loop, `return hist, n` after it; `return hist[:k]` alone), the results there are the
slice's bounds and the exit slices the name: a prefix whose length the data decide is no value
a loop node carries (an early exit from a 10,000-step simulation: first call 4.4 s unrolled).
Where every return gives the name itself (`return x, it, info` in a solver's loop and after it),
the exit reads it: a result starts from zeros of its type, which a dict, a list or None has not
(the branch refused the loop, which unrolled).
Returns in `with` or `try` blocks, in an `if` whose body may fall through, and returned conversions
(`return float(loss)`: kiln._loop_transform keeps those Python numbers) leave the function as
written.
"""
import ast
import copy

from ._loop_rewrite_parts import _name, _walk_scope

RESULT = "__kiln_result"


def is_result(name):
    """Whether `name` holds (an element of) the merged result."""
    return name == RESULT or name.startswith(RESULT + "_")


def single_exit(statements):
    """The function body `statements` with its returns merged into one, or `statements` itself
    where they take another form or there is no early return."""
    returns = [node for node in _walk_scope(statements) if isinstance(node, ast.Return)]
    if (not returns or len(returns) < 2 and not _in_a_loop(statements)
            or any(_converts(node.value) for node in returns)):
        return statements
    body = list(statements)
    if not isinstance(body[-1], ast.Return) and not _only_returns_leave(body[-1]):
        # falling off the end returns None (nothing follows a `while True:` only returns leave)
        body.append(ast.copy_location(ast.Return(value=None), body[-1]))
    returns = [node for node in _walk_scope(body) if isinstance(node, ast.Return)]
    form = _Container.of(returns, body)
    merged = _terminal(body, form)
    if merged is None:
        return statements
    exit_ = ast.copy_location(ast.Return(value=form.rebuilt() if form else _name(RESULT)),
                              returns[-1])
    if form is None and _loops_return_none(statements):
        # `return None` in a loop (a check that gives up): the result is None from the start,
        # so the loop's branch leaves it as it is on both sides (bound on one side only, it
        # refused the loop, a graph break an iteration); the exit's branch decides the rest
        merged = [ast.copy_location(_assign_result(None, None, body[0]), body[0])] + merged
    return [ast.fix_missing_locations(statement) for statement in merged + [exit_]]


def _loops_return_none(statements):
    """Whether every return in a loop of `statements` returns None (and one does)."""
    values = [node.value for loop in _walk_scope(statements)
              if isinstance(loop, (ast.For, ast.While))
              for node in _walk_scope(loop.body) if isinstance(node, ast.Return)]
    return bool(values) and all(value is None or isinstance(value, ast.Constant)
                                and value.value is None for value in values)


def _in_a_loop(statements):
    """Whether a return is in a loop's body (one return there is an early one)."""
    return any(isinstance(node, ast.Return) for loop in _walk_scope(statements)
               if isinstance(loop, (ast.For, ast.While)) for node in _walk_scope(loop.body))


class _Container:
    """The form every return shares: a tuple, list or dict display (no `*x`, `**d`; a dict's
    keys constants, the same in the same order) of `size` elements; their values become
    RESULT_0, RESULT_1, ... and the exit builds the container again (`return x_new, it`).
    kind None: a single value that every return slices from one name (`return x[:k]`)."""

    def __init__(self, kind, keys, size, slices=None):
        self.kind, self.keys, self.size = kind, keys, size
        self.slices = slices or {}  # {position: the name every return slices or gives there}
        self.whole = set()  # of those, where every return gives the name itself

    @classmethod
    def of(cls, returns, statements):
        """The form of `returns`, those of the function body `statements`; None where they
        differ, or each returns a single value that no name is at every return."""
        forms = {cls._form(node.value) for node in returns}
        if len(forms) != 1:
            return None
        form = forms.pop()
        container = cls(None, None, 1) if form is None else cls(*form)
        columns = [container.elements(node.value) for node in returns]
        if not _code_after_returns(statements):
            container.slices = _sliced_positions(columns, _loop_targets(statements))
        container.whole = {position for position in container.slices
                           if all(isinstance(row[position], ast.Name) for row in columns)}
        if form is None and not container.slices:  # `return x[:k]` and `return x`, or `return x`
            return None
        return container

    @staticmethod
    def _form(value):
        if isinstance(value, (ast.Tuple, ast.List)) and value.elts and not any(
                isinstance(element, ast.Starred) for element in value.elts):
            return type(value), None, len(value.elts)
        if isinstance(value, ast.Dict) and value.keys and all(
                isinstance(key, ast.Constant) for key in value.keys):
            keys = tuple((type(key.value), key.value) for key in value.keys)
            if len(set(keys)) == len(keys):
                return ast.Dict, keys, len(keys)
        return None

    def names(self, context):
        names = []
        for index in range(self.size):
            if self._reads(index):  # the name itself, read at the exit
                continue
            if index in self.slices:  # the slice's bounds
                names += [_name(f"{RESULT}_{index}_{end}", context) for end in ("lo", "hi")]
            else:
                names.append(_name(f"{RESULT}_{index}", context))
        return names

    def _reads(self, index):
        """Whether every return gives the name at `index` itself (no slice): the exit reads it,
        and no result carries it (a list, `history`, has no zeros a loop could start from)."""
        return index in self.slices and index in self.whole

    def elements(self, value):
        if self.kind is None:
            return [value]
        return list(value.values if isinstance(value, ast.Dict) else value.elts)

    def assigned(self, value):
        """The values of names(): a sliced position's bounds (`x[:k]`: 0 and k; `x`: 0 and
        len(x)) in place of its element."""
        values = []
        for index, element in enumerate(self.elements(value)):
            if self._reads(index):
                continue
            if index not in self.slices:
                values.append(element)
                continue
            part = element.slice if isinstance(element, ast.Subscript) else ast.Slice()
            whole = ast.Call(func=_name("len"), args=[_name(self.slices[index])], keywords=[])
            values += [part.lower or ast.Constant(value=0), part.upper or whole]
        return values

    def rebuilt(self):
        names, values = iter(self.names(ast.Load())), []
        for index in range(self.size):
            if self._reads(index):  # `return x, it` wherever it returns: x is what it was
                values.append(_name(self.slices[index]))
            elif index in self.slices:  # sliced at the exit, where the name is what it was
                lower, upper = next(names), next(names)
                values.append(ast.Subscript(value=_name(self.slices[index]),
                                            slice=ast.Slice(lower=lower, upper=upper),
                                            ctx=ast.Load()))
            else:
                values.append(next(names))
        if self.kind is None:
            return values[0]
        if self.kind is ast.Dict:
            return ast.Dict(keys=[ast.Constant(value=key) for _, key in self.keys],
                            values=values)
        return self.kind(elts=values, ctx=ast.Load())


def _sliced_positions(elements, loop_targets):
    """{position: name} where every return's element is that name or a slice of it without a
    step (`return history[:k + 1], k` in the loop, `return history, n` after it): the returned
    prefix has a shape the loop's data decide, which no loop node can carry, so the results are
    its bounds, and the exit slices the name; where each gives the name itself (`return x, it`
    in BiCGSTAB's loop and after it), the exit reads it. That name is what it was at the return:
    no code rebinds it between a return and the exit (it breaks out of every loop, and what
    follows them runs only where no return did; a `finally` around a return may, and then no
    name is read at the exit), unless it is a loop's index, which a captured loop leaves at its
    range's last."""
    positions = {}
    for position, column in enumerate(zip(*elements)):
        bases = {element.id if isinstance(element, ast.Name) else
                 element.value.id if (isinstance(element, ast.Subscript)
                                      and isinstance(element.value, ast.Name)
                                      and isinstance(element.slice, ast.Slice)
                                      and element.slice.step is None) else None
                 for element in column}
        if len(bases) == 1 and None not in bases and not bases <= loop_targets:
            positions[position] = bases.pop()
    return positions


def _code_after_returns(statements):
    """Whether code may run between a return of `statements` and the function's exit: a
    `finally` block or a `with`'s exit around it (`try: return total, i` / `finally: total *=
    0.5` returns the total from before the block)."""
    return any((isinstance(block, (ast.With, ast.AsyncWith)) or getattr(block, "finalbody", None))
               and any(isinstance(node, ast.Return) for node in _walk_scope([block]))
               for block in _walk_scope(statements))


def _loop_targets(statements):
    """The names the `for` loops of `statements` bind as their index."""
    return {target.id for loop in _walk_scope(statements) if isinstance(loop, ast.For)
            for target in ast.walk(loop.target) if isinstance(target, ast.Name)}


def _assign_result(value, form, at):
    """`RESULT = value`, or with a container form `RESULT_0, RESULT_1, ... = elements`."""
    if value is None:
        value = ast.Constant(value=None)
    if form is None:
        assign = ast.Assign(targets=[_name(RESULT, ast.Store())], value=value)
    elif not form.names(ast.Store()):  # every element is read at the exit
        assign = ast.Pass()
    else:
        assign = ast.Assign(targets=[ast.Tuple(elts=form.names(ast.Store()), ctx=ast.Store())],
                            value=ast.Tuple(elts=form.assigned(value), ctx=ast.Load()))
    return ast.copy_location(assign, at)


def _terminal(statements, form):
    """`statements`, which return on every path, with each return assigning RESULT instead;
    None where a return is in another form."""
    for position, statement in enumerate(statements):
        if isinstance(statement, ast.Return):
            return statements[:position] + [_assign_result(statement.value, form, statement)]
        if not any(isinstance(node, ast.Return) for node in _walk_scope([statement])):
            continue
        if isinstance(statement, (ast.For, ast.While)):
            return _loop_exit(statements, position, form)
        if not isinstance(statement, ast.If):
            return None  # a return in a `with` or a `try`
        then = _terminal(statement.body, form)
        otherwise = _terminal(statement.orelse + statements[position + 1:], form)
        if then is None or otherwise is None:
            return None
        merged = copy.copy(statement)
        merged.body, merged.orelse = then, otherwise
        return statements[:position] + [merged]
    return None  # a path that falls through


def _loop_exit(statements, position, form):
    """statements[position], a loop whose body returns (`for i in range(n): ... if escaped:
    return i`, Numba's Mandelbrot), as one that sets the result and a flag and breaks
    (kiln._loop_jumps makes the break a flag too); what follows it runs where the flag is
    not set, and nothing follows a `while True:` that only its returns leave. A return in a
    nested loop breaks each loop out to this one (`for i: for j: if M[i, j] > t: return i, j`).
    None for a loop with an `else`."""
    loop = statements[position]
    if loop.orelse:
        return None
    returned = f"__kiln_returned_{loop.lineno}_{loop.col_offset}"
    start = ast.copy_location(ast.Assign(targets=[_name(returned, ast.Store())],
                                         value=ast.Constant(value=False)), loop)
    exits = [start]
    if not _only_returns_leave(loop):
        rest = _terminal(statements[position + 1:], form)
        if rest is None:
            return None
        exits.append(ast.copy_location(ast.If(test=_name(returned), body=[ast.Pass()],
                                              orelse=rest), loop))
    loop = copy.deepcopy(loop)  # the visit rewrites nested blocks in place
    as_breaks = _ReturnsAsBreaks(returned, form)
    # a return directly in the body (`for ...: <skip with continue>; return i`) becomes a list
    # of statements, spliced in
    loop.body = [rewritten for statement in loop.body
                 for rewritten in _statement_list(as_breaks.visit(statement))]
    return statements[:position] + [start, loop] + exits[1:]


def _statement_list(visited):
    return visited if isinstance(visited, list) else [visited]


def _only_returns_leave(loop):
    """`while True:` (any truthy constant) without a `break` of its own."""
    return (isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant)
            and bool(loop.test.value) and not _breaks(loop.body))


def _breaks(statements):
    """Whether `statements` hold a `break` of their own loop (not one of a nested loop's)."""
    for node in statements:
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if _breaks([child for child in ast.iter_child_nodes(node)
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))]):
            return True
    return False


class _ReturnsAsBreaks(ast.NodeTransformer):
    """`return e` in a loop: `RESULT = e; returned = True; break`, and after each nested loop
    that holds one, `if returned: break`, so that the flag leaves every loop out to the
    rewritten one (a loop's `else` is skipped by the break as by the return)."""

    def __init__(self, returned, form):
        self.returned, self.form = returned, form

    def visit_Return(self, node):
        return [_assign_result(node.value, self.form, node)] + [
            ast.copy_location(statement, node) for statement in (
                ast.Assign(targets=[_name(self.returned, ast.Store())],
                           value=ast.Constant(True)),
                ast.Break())]

    def visit_For(self, node):
        if not any(isinstance(inner, ast.Return) for inner in _walk_scope([node])):
            return node
        node = self.generic_visit(node)
        leave = ast.copy_location(ast.If(test=_name(self.returned), body=[ast.Break()],
                                         orelse=[]), node)
        return [node, leave]

    visit_While = visit_For

    def visit_FunctionDef(self, node):  # returns of their own
        return node

    visit_AsyncFor = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef


def _converts(value):
    """Whether a returned value holds float(x), int(x), bool(x) or x.item()."""
    return value is not None and any(
        isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "bool")
            or isinstance(node.func, ast.Attribute) and node.func.attr == "item")
        for node in ast.walk(value))
