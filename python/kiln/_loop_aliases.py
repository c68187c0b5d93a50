"""Which arrays of a compiled function it may write in place, for the loop rewrites that take a
value for a copy: kiln._loop_transform's appends (`rows.append(x[i])`: a captured loop leaves
rows of a stack in the list, where NumPy's items are views of x, the same list unless x or an
item is written later; the comprehensions of kiln._loop_comprehensions become such loops) and
kiln._loop_rewrite_parts' sequence loops (`for v in x[1:]` iterates a copy).

The rule is conservative and flow-insensitive: anything the function does anywhere (nested
functions included) counts, whatever its order. It is a graph over the function's names: an
edge a -> b says that a may be b or a view of it, or b's items (a node `n[]` stands for the
items of n):

- `y = x`, `y = x[1:]`, `y = x.T`, `y = x.reshape(3, 4)`, `a, b = x`, `for r in x:`, a call
  that may return its argument (`y = f(x)`, `np.asarray(x)`) make y -> x (and y's items ->
  x's items); `rows.append(x[i])`, `rows[0] = x`, `self.x = x`, `rows = [x, y]` make rows' items
  -> x; `for r in rows:` r -> rows' items; a nested function stands for what it returns, its
  parameters for what its calls pass;
- an array is written by a store into a subscript or attribute of a name (`x[0] = v`,
  `x.real = v`, `rows[1][0] = v`), an augmented assignment (`x += 1`), an `out=` argument, a
  positional out (`np.add(x, 1, x)`, np.sum's fourth, np.dot's third), `np.<ufunc>.at`,
  `np.copyto`, `np.put`, `np.place`, `np.putmask`, `np.fill_diagonal`, `np.random.shuffle`,
  and by being (or being held by) an argument or the receiver of a call not known to leave
  them as they are (a user's function, an unknown method); after such a call every name the
  function does not bind (a global a helper may write) counts as written too, and may hold
  its arguments;
- a write to a writes what a may be (a -> b: b is written), and a value may change when
  anything it may be is written.

Calls known to write nothing: the NumPy functions and array methods of the allow-lists
(kiln._call_effects), ufuncs given their inputs only, `math`, the builtins that only read
(`len`, `range`, `print`, `float`, `min`, `zip`, ...), the methods of lists and dicts. A call
of a function the compiled one reads as a global (`bump(x)`, `step(state)`) writes or not as
that function does when the loop runs: its source is read the same way (and the functions it
calls, in their modules: kiln._helper_writes), so that `state = step(state);
hist.append(state)` stays one loop where step returns a fresh array. Any other call (a method
of the user's object, a class, a closure's function) counts as writing all it is given.
"""
import ast
import builtins
import copy

import numpy as np

from ._call_effects import (ANY_NAME_BUILTINS, CONTAINER_METHODS, FRESH_BUILTINS,
                            FRESH_METHODS, HOLDING_BUILTINS, METHOD_OUTS, NUMPY_FRESH,
                            NUMPY_VIEWS, NUMPY_WRITE_FIRST, UFUNC_METHODS, VIEW_METHODS,
                            numpy_object, numpy_path, positional_out)
from ._loop_rewrite_parts import HELPER, _dotted_name as _dotted, list_bindings

def _items(node):
    """The node standing for the items of `node` (items of items are items)."""
    return node if node.endswith("[]") else node + "[]"


def _with_items(nodes):
    return set(nodes) | {_items(n) for n in nodes}


def _combine(a, b):
    """Either of two verdicts (True, False, or a frozenset of calls that write if their
    function does: (dotted name, positional arguments, out= given))."""
    if a is True or b is True:
        return True
    if not a:
        return b or False
    if not b:
        return a
    return a | b


class InPlace:
    """What `definition` may write in place, as the module's docstring says. skip: (line,
    column) of for loops whose target is not taken for its iterable's items (through_rows)."""

    def __init__(self, definition, skip=frozenset()):
        self.definition, self.skip = definition, skip
        self._edges = {}     # node -> nodes it may be
        self._writes = {}    # node -> verdict of its direct writes
        self._escaped = set()  # nodes given to unknown calls (a global may hold them now)
        self._any_name = False
        self._bound = _bound_names(definition)
        self.unbound = {node.id for node in ast.walk(definition)
                        if isinstance(node, ast.Name)} - self._bound
        self._local_lists = _local_lists(definition)
        self._functions = _nested_functions(definition)
        for node in ast.walk(definition):
            self._visit(node)
        for name in self.unbound:  # a helper may have stored what it was given in a global
            self._edge(_items(name), self._escaped)
        self._written = self._closure()
        self._variants = {}
        returned = set()  # what the function's returns may be (carried_views)
        for node in ast.walk(definition):
            if isinstance(node, ast.Return):
                returned |= self.aliases(node.value)
        self._returned = self._reach(returned)

    # ---- queries ----

    def changes(self, value):
        """Whether `value` (an expression) may be an array the function writes in place
        somewhere, or a view or item of one (a fresh result, x[i] * 2, never is): a verdict
        (True, False, or the global functions' calls that decide it when the loop runs)."""
        verdict = self._any_name
        for node in self._reach(self.aliases(value)):
            verdict = _combine(verdict, self._written.get(node, False))
        return verdict

    def name_changes(self, name):
        return self.changes(ast.Name(id=name, ctx=ast.Load()))

    def through_rows(self, loop):
        """The analysis with `loop`'s target not taken for its iterable's items: what is
        written through the rows a for loop binds, not through the iterable's other names."""
        key = (loop.lineno, loop.col_offset)
        if key not in self._variants:
            self._variants[key] = InPlace(self.definition, self.skip | {key})
        return self._variants[key]

    def writes(self, statements):
        """Whether `statements` write an array in place in their own code (a store to other
        than a name, an augmented assignment, out=, a call not known to write nothing): a
        verdict, as `changes` gives."""
        verdict = False
        for node in ast.walk(ast.Module(body=list(statements), type_ignores=[])):
            if isinstance(node, ast.AugAssign) or (
                    isinstance(node, ast.keyword) and node.arg == "out"):
                return True
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.comprehension,
                                 ast.withitem, ast.NamedExpr)) and not all(
                    isinstance(t, ast.Name) for t in _flat_targets(node)):
                return True
            if isinstance(node, ast.Call):
                kind, written, _ = self._call(node)
                if kind is False and written:  # np.copyto(v, 0), ufunc outs
                    return True
                verdict = _combine(verdict, kind)
        return verdict

    def sequence_changes(self, loop, names):
        """Whether a for loop over a sequence (kiln._loop_rewrite_parts.sequence_loop) may
        see it change, or write through the rows it binds to `names` anywhere (`last = v`,
        then `last[0] = 9`: it must reach x, not a copy), as a constant (as_constant)."""
        verdict = self.writes(loop.body)
        rows = self.through_rows(loop)
        for name in names:
            verdict = _combine(verdict, rows.name_changes(name))
        return as_constant(verdict)

    def carried_views(self, names, statements, substitutes=None):
        """((name, verdict in the body, verdict anywhere, bound), ...) of the names a captured
        loop carries (those it binds that code after it, or its next iteration, reads) that
        may be a view or item of an array the function writes in place somewhere, or be
        written through themselves (`last = x[i]` in the loop's `statements`, then `last[0] =
        9`, `bump(last)` or `x[-1] = 0` after it): the loop carries a name by value, so after
        it (or in the next iteration) it would be a copy where NumPy's is the view
        (LoopCapture.for_range's views). The verdict in the body is that of the values the
        body binds to it (`last = x[i] * 2`: a fresh array, the loop's own to write); the
        verdict anywhere that of every binding of the name, the one before the loop too, which
        it keeps where the body may not bind it (bound: a plain `name = value` among the
        body's own statements binds it every iteration). substitutes: {name: expression} of
        the rewrite's names that stand for the user's expressions (a sequence loop's held
        sequence). returned: the function may return the name (or hold it in what it
        returns): a helper's caller may write it (`r = last_row(x); r[0] = 9`), the compiled
        function's results never alias (LoopCapture._carried_views). Verdicts as as_constant
        gives them; names whose verdicts are both false and not returned are left out."""
        found = []
        for name in names:
            if not self._any_name and self._reach({name}) <= {name, _items(name)}:
                continue  # every binding of it a fresh array: the loop's own to write
            everywhere = self.name_changes(name)
            if not everywhere and name not in self._returned:
                continue
            body = self._bound_changes(name, statements, substitutes or {})
            bound = any(isinstance(s, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in s.targets) for s in statements)
            found.append((name, as_constant(body), as_constant(everywhere), bound,
                          name in self._returned))
        return tuple(found)

    def _bound_changes(self, name, statements, substitutes):
        """The verdict of the values `statements` bind to `name` (changes)."""
        class Substitute(ast.NodeTransformer):
            def visit_Name(self, node):
                return copy.deepcopy(substitutes.get(node.id, node))
        nodes = set()
        for node in ast.walk(ast.Module(body=list(statements), type_ignores=[])):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                targets, value, items = _flat_targets(node), node.value, False
                if isinstance(node, ast.Assign) and not all(
                        isinstance(t, ast.Name) for t in node.targets):
                    items = True  # unpacked (a, b = pair): its items
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets, value, items = _flat([node.target]), node.iter, True
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                targets, value, items = _flat([node.optional_vars]), node.context_expr, False
            else:
                if isinstance(node, ast.Name) and node.id == name and isinstance(
                        node.ctx, (ast.Store, ast.Del)) and not _bound_by_parent(
                            node, statements):
                    return self.name_changes(name)  # bound otherwise: every binding counts
                continue
            if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
                continue
            if value is None:
                continue
            value = Substitute().visit(copy.deepcopy(value)) if substitutes else value
            aliases = self.aliases(value)
            nodes |= _with_items(aliases) if items else aliases
        verdict = self._any_name
        for node in self._reach(nodes):
            verdict = _combine(verdict, self._written.get(node, False))
        return verdict

    def own_writes(self):
        """What the function writes that its caller can see (its parameters, the arrays they
        hold, globals): a verdict."""
        verdict = True if self._any_name else False
        parameters = {a.arg for a in ast.walk(self.definition.args)
                      if isinstance(a, ast.arg)}
        for node in _with_items(parameters | self.unbound):
            verdict = _combine(verdict, self._written.get(node, False))
        return verdict

    # ---- the graph ----

    def _edge(self, node, targets):
        """node may be each of targets (and its items may be theirs)."""
        for target in targets:
            if target != node:
                self._edges.setdefault(node, set()).add(target)
                if _items(target) != _items(node):
                    self._edges.setdefault(_items(node), set()).add(_items(target))

    def _write(self, nodes, verdict=True):
        for node in nodes:
            self._writes[node] = _combine(self._writes.get(node, False), verdict)

    def _reach(self, nodes):
        seen, stack = set(nodes), list(nodes)
        while stack:
            for target in self._edges.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    def _closure(self):
        """node -> verdict of the writes that reach it (a write to a writes what a may be)."""
        if self._any_name:
            return {node: True for node in set(self._edges) | set(self._writes) | {
                target for targets in self._edges.values() for target in targets}}
        written = {}
        for node, verdict in self._writes.items():
            for reached in self._reach({node}):
                written[reached] = _combine(written.get(reached, False), verdict)
        return written

    # ---- what a value may be ----

    def aliases(self, node):
        """The nodes whose arrays `node`'s value may be, be a view of, or hold."""
        if node is None or isinstance(node, (ast.Constant, ast.UnaryOp, ast.Compare,
                                             ast.JoinedStr, ast.Slice)):
            return set()
        if isinstance(node, ast.Name):
            return {node.id}
        if isinstance(node, (ast.Subscript, ast.Attribute)):  # a view, or an item
            return _with_items(self.aliases(node.value))
        if isinstance(node, (ast.Starred, ast.Await)):
            return self.aliases(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.aliases(node.value) | {node.target.id}
        if isinstance(node, ast.BinOp):  # arrays: fresh; lists: [x] + rows holds their items
            held = set()
            for side in (node.left, node.right):
                if self._sequence(side):
                    held |= _with_items(self.aliases(side))
            return self._container(node, held) if held else set()
        if isinstance(node, ast.Call):
            return self._call(node)[2]
        if isinstance(node, ast.Lambda):
            return self.aliases(node.body)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return self._container(node, {n for e in node.elts for n in self.aliases(e)})
        if isinstance(node, ast.Dict):
            return self._container(node, {n for e in node.values for n in self.aliases(e)})
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._container(node, self.aliases(node.elt))
        if isinstance(node, ast.DictComp):
            return self._container(node, self.aliases(node.value))
        names = set()  # conditional expressions, and/or, ...
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                names |= self.aliases(child)
        return names

    def _container(self, node, held):
        """A new list, tuple, set or dict holding `held`: a node of its own."""
        container = f"<{type(node).__name__} {id(node)}>"
        self._edge(_items(container), held)
        return {container}

    def _sequence(self, node):
        """Whether `node` may be a list or tuple (its `+` and `*` hold its items)."""
        if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if isinstance(node, ast.Name):
            return node.id in self._local_lists
        if isinstance(node, ast.BinOp):
            return self._sequence(node.left) or self._sequence(node.right)
        if isinstance(node, ast.Call):
            return _dotted(node.func) in ("list", "tuple", "sorted")
        return False

    # ---- calls ----

    def _call(self, call):
        """(kind, nodes written, nodes the result may be) of a call. kind: False for a call
        known to write no more than those nodes, True for one that may write anything it is
        given, or a frozenset of its spec (a global function's: when the loop runs, its
        source says)."""
        arguments = set()
        for argument in call.args:
            arguments |= self.aliases(argument)
        for keyword in call.keywords:
            arguments |= self.aliases(keyword.value)
        out = set()
        for keyword in call.keywords:
            if keyword.arg == "out":
                out |= self.aliases(keyword.value)
        func, path = call.func, numpy_path(call.func)
        name = func.id if isinstance(func, ast.Name) else None
        if name is not None and name in self._functions:  # a nested function: its own code
            return False, set(), {name}
        if _dotted(func).startswith(HELPER + "."):  # kiln's own (the comprehensions' tests)
            return False, set(), arguments
        keyed = any(k.arg == "key" for k in call.keywords)  # sorted(rows, key=f) calls f
        if name in FRESH_BUILTINS and not keyed or (
                name == "sum" and len(call.args) == 1 and not call.keywords):
            return False, set(), set()
        if name in HOLDING_BUILTINS and not keyed:
            return False, set(), _with_items(arguments)
        if _dotted(func).startswith("math."):
            return False, set(), set()
        owner = numpy_path(func.value) if isinstance(func, ast.Attribute) else None
        if owner is not None and isinstance(numpy_object(owner), np.ufunc):
            if func.attr == "at":  # np.add.at(x, i, v) writes x
                return False, self.aliases(call.args[0]) if call.args else arguments, set()
            if func.attr in UFUNC_METHODS:  # np.maximum.reduce(x)
                return False, out, out
        elif path is not None:
            known = self._numpy_call(call, path, arguments, out)
            if known is not None:
                return known
        elif isinstance(func, ast.Attribute):
            receiver = self.aliases(func.value)
            position = METHOD_OUTS.get(func.attr)
            if position is not None and len(call.args) > position:  # x.sum(0, None, y)
                out |= self.aliases(call.args[position])
            if func.attr in FRESH_METHODS and not out:
                if func.attr == "copy" and any(n in self._local_lists for n in receiver):
                    return False, set(), _with_items(receiver)  # a list's copy: its items
                if func.attr == "astype" and any(k.arg == "copy" for k in call.keywords):
                    return False, set(), receiver
                return False, set(), set()
            if func.attr in VIEW_METHODS and not out:
                return False, set(), _with_items(receiver)
            if func.attr in CONTAINER_METHODS:
                return False, set(), _with_items(receiver)
        given = _with_items(arguments | self.aliases(func))
        return self._spec(call), given, given

    def _numpy_call(self, call, path, arguments, out):
        function = numpy_object(path)
        copy_keyword = any(k.arg == "copy" for k in call.keywords)  # np.array(x, copy=False)
        if isinstance(function, np.ufunc):
            extra = set()
            for argument in call.args[function.nin:]:  # positional outs: np.add(x, 1, x)
                extra |= self.aliases(argument)
            return False, out | extra, out | extra
        if isinstance(function, type) and issubclass(function, np.generic):
            return False, out, out  # np.float64(v)
        if path in NUMPY_WRITE_FIRST:
            return False, self.aliases(call.args[0]) if call.args else arguments, set()
        position = positional_out(path) if path in NUMPY_FRESH | NUMPY_VIEWS else None
        if position is not None and len(call.args) > position:  # np.dot(a, b, c) writes c
            out = out | self.aliases(call.args[position])
        if path in NUMPY_FRESH:
            return False, out, arguments if copy_keyword else out
        if path in NUMPY_VIEWS:
            return False, out, arguments
        return None

    def _spec(self, call):
        """The kind of an unknown call: its spec where the callee is a global function's name
        (or a dotted name of a global: utils.step) that is no builtin, else True."""
        name = _dotted(call.func)
        base = name.split(".")[0]
        if not name or base not in self.unbound or hasattr(builtins, base) or (
                numpy_path(call.func) is not None):
            return True
        starred = any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords)
        return frozenset({(name, 99 if starred else len(call.args),
                           any(k.arg == "out" for k in call.keywords))})

    # ---- the function's statements ----

    def _visit(self, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self._bind(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self._write(self.aliases(node.target))
            if self._sequence(node.value) or isinstance(node.value, ast.GeneratorExp):
                for target in self.aliases(node.target):  # rows += [x]: rows holds x
                    self._edge(_items(target), _with_items(self.aliases(node.value)))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            if (node.lineno, node.col_offset) not in self.skip:
                self._bind(node.target, node.iter, items=True)
        elif isinstance(node, ast.comprehension):
            self._bind(node.target, node.iter, items=True)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, node.context_expr)
        elif isinstance(node, ast.FunctionDef) and node.name in self._functions and (
                self._functions[node.name] is node):
            self._function(node)
        elif isinstance(node, ast.Call):
            self._call_effects(node)

    def _bind(self, target, value, items=False):
        """`target = value` (items: bound to its items, as a for loop's target)."""
        if isinstance(target, (ast.Tuple, ast.List)) and not items and isinstance(
                value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts) and not any(
                isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)):
            for part, part_value in zip(target.elts, value.elts):
                self._bind(part, part_value)
            return
        bound = self.aliases(value)
        if items or isinstance(target, (ast.Tuple, ast.List)):  # unpacked: its items
            bound = _with_items(bound)
        for part in _flat([target]):
            if isinstance(part, ast.Name):
                self._edge(part.id, bound)
            else:  # x[0] = v, self.x = v, rows[i][j] = v: writes, and now holds v
                holders = self.aliases(part.value)
                self._write(holders)
                for holder in holders:
                    self._edge(_items(holder), bound)

    def _function(self, node):
        """A nested function: its name stands for what it returns, its parameters for what
        its calls pass."""
        for returned in ast.walk(node):
            if isinstance(returned, ast.Return):
                self._edge(node.name, self.aliases(returned.value))
        passed = set()
        for call in ast.walk(self.definition):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and (
                    call.func.id == node.name):
                for argument in (*call.args, *(k.value for k in call.keywords)):
                    passed |= self.aliases(argument)
        for parameter in (a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)):
            self._edge(parameter, passed)

    def _call_effects(self, call):
        kind, written, result = self._call(call)
        self._write(written, True if kind is False else kind)
        if isinstance(call.func, ast.Name) and call.func.id in ANY_NAME_BUILTINS:
            self._any_name = True
        if kind is not False:  # it may write globals, and store one argument in another
            self._write(_with_items(self.unbound), kind)
            self._escaped |= written
            for node in written:
                self._edge(_items(node), written)
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in CONTAINER_METHODS:
            given = set()  # rows.append(x[i]): rows' items may be x
            for argument in (*call.args, *(k.value for k in call.keywords)):
                given |= self.aliases(argument)
            if func.attr == "extend" or func.attr == "update":
                given = _with_items(given)
            for receiver in self.aliases(func.value):
                self._edge(_items(receiver), given)


def _bound_names(definition):
    """The names `definition` binds anywhere (nested functions' own included) and its
    parameters: the others are globals, free variables or builtins."""
    names = set()
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _nested_functions(definition):
    """{name: definition} of the functions defined inside `definition` whose name is bound by
    that definition only (a name also assigned may be any function when called)."""
    defined, stored = {}, set()
    stack = list(ast.iter_child_nodes(definition))
    while stack:  # a class's methods are its attributes, not names of the function
        node = stack.pop()
        if not isinstance(node, ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in defined:
                stored.add(node.name)
            defined[node.name] = node
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stored.add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return {name: node for name, node in defined.items()
            if name not in stored and isinstance(node, ast.FunctionDef)}


def _bound_by_parent(name_node, statements):
    """Whether a stored Name is the target of an assignment, for loop, comprehension or with
    item of `statements` (AugAssign keeps what the name is)."""
    for node in ast.walk(ast.Module(body=list(statements), type_ignores=[])):
        if isinstance(node, ast.AugAssign) and node.target is name_node:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = _flat_targets(node)
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets = _flat([node.target])
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = _flat([node.optional_vars])
        else:
            continue
        if any(t is name_node for t in targets):
            return True
    return False


def _flat(targets):
    """The names, subscripts and attributes of targets (tuples and starred unpacked)."""
    while any(isinstance(t, (ast.Tuple, ast.List, ast.Starred)) for t in targets):
        targets = [e for t in targets for e in (
            t.elts if isinstance(t, (ast.Tuple, ast.List)) else
            [t.value] if isinstance(t, ast.Starred) else [t])]
    return targets


def _flat_targets(node):
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.optional_vars] if isinstance(node, ast.withitem) else [node.target])
    return _flat([t for t in targets if t is not None])


def _local_lists(definition):
    """Names bound to a list or tuple display or comprehension, or appended to: those whose
    `+` and `copy()` hold their items."""
    return list_bindings(ast.walk(definition))


def written_in_place(definition):
    """The InPlace analysis of `definition` (kiln._loop_transform's rewrite)."""
    return InPlace(definition)


def aliased_append(value, in_place):
    """Whether an appended expression may be an array changed in place later (a verdict, as
    InPlace.changes gives): an array or a view of one that the function writes in place
    somewhere, through any name of it, a call, or the list's items (the append made the
    list's items the value). A fresh result (`x[i] * 2`) is a list item of its own."""
    return in_place.changes(value)


def as_constant(verdict):
    """A verdict as the rewrite puts it in the code: a bool, or a tuple of the calls' specs
    (the global functions' calls that decide it when the loop runs: Writes)."""
    return verdict if isinstance(verdict, bool) else tuple(sorted(verdict))
