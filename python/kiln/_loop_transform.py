"""Loops and branches of the user's function, rewritten so that kiln can capture them.

The way TensorFlow's AutoGraph and TorchScript's `script` do it: from the function's source.
`for i in range(...)` becomes a call of the capture helper (kiln._loop_capture) with the body
as a nested function of `i` (names it assigns are `nonlocal`), a getter and a setter of the
variables the body touches; `if c: ... else: ...` becomes the helper's branch with both sides
as functions. At run time the helper decides: plain Python (static bounds and conditions, short
loops, no trace), or one `loop` node / a select in the graph. The rewritten function is the
user's function on its own globals and closure cells, plus one cell for the helper.

Only statements whose effects the helper can see are rewritten: assignments (to names, and to
subscripts of names: array updates), `del` of names, nested loops and branches, `pass`, call
statements, `with` blocks (the helper checks their managers), try/finally; a loop's `break` and
`continue` become flags (kiln._loop_jumps). A loop or branch holding anything else (return,
raise, try/except, other expression statements, nested functions, global/nonlocal:
kiln._loop_refusals) stays as written and is unrolled by tracing, as before; each refusal is
recorded with its reason and line (kiln.explain shows them).
"""
import ast
import copy
import os
import textwrap
import types

from ._body_statements import as_checked_assert
from ._loop_attribute_targets import attribute_targets_through_names
from ._loop_attribute_updates import attribute_updates_through_names, is_carrying_choice
from ._loop_comprehensions import as_loops
from ._loop_assigned_targets import attributes_argument, items_argument
from ._loop_shared_arrays import rebinds_argument
from ._loop_else import without_else_clauses
from ._loop_swaps import in_whole_swap_cycles
from ._loop_jumps import jumps, stop_flag, without_jumps
from ._loop_optional_values import optional_values
from ._loop_scope_reads import enclosing_reads
from ._loop_names import (_augmented_names, _index_reads, _loaded_names, _only_called,
                          _own_scope, _read_before_bound, _read_names, _stored_names,
                          _temporaries_argument, nested_rebinds, rebound_by_calls)
from ._loop_refusals import _body_refusal
from ._loop_returns import single_exit
from ._loop_tuple_names import split_tuple_names
from ._reversed_ranges import reversed_range_call
from ._while_bounds import bound_argument
from ._loop_aliases import aliased_append, as_constant, written_in_place
from ._loop_rewrite_parts import (HELPER, _at, _helper_call, _list_names, _name, _parameters,
                                  _parse, _walk_scope, sequence_loop)
from ._loop_source import compile_like, compiles_to, constant_code, source_of
from ._rewritten_expressions import (_ChoiceRewriter, _returned_conversions, _traceable_logic,
                                     _traced_math_calls, _with_traced_conversions)

_REWRITTEN = "__kiln_rewritten"



class Rewritten:
    """The rewritten code of one function, and what the rewriting found."""

    def __init__(self, code, captured, refused):
        self.code = code            # the function's code, with HELPER among its free variables
        self.captured = captured    # "file.py:12" of each rewritten loop or branch
        self.refused = refused      # ("file.py:12", reason) of each loop left as written

    def bind(self, function, helper):
        """`function` (the user's, or its rebuilt copy over traced globals) running the rewritten
        code, with `helper` in its helper cell."""
        method_of = None
        if isinstance(function, types.MethodType):
            method_of, function = function.__self__, function.__func__
        cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
        cells[HELPER] = types.CellType(helper)
        closure = tuple(cells[name] for name in self.code.co_freevars)
        rebuilt = types.FunctionType(self.code, function.__globals__, function.__name__,
                                     function.__defaults__, closure)
        rebuilt.__kwdefaults__ = function.__kwdefaults__
        rebuilt.__qualname__ = function.__qualname__
        return rebuilt if method_of is None else types.MethodType(rebuilt, method_of)


_cache = {}


def rewrite(fn):
    """Rewritten for `fn` (a function or method), or None when nothing can be rewritten (no
    source, no loop or branch that qualifies). Cached by code object."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    if code not in _cache:
        try:
            _cache[code] = _rewrite(fn, code)
        except (OSError, TypeError, SyntaxError, IndexError):  # no source, or not a plain def
            _cache[code] = None
    return _cache[code]


def _rewrite(fn, code):
    source = textwrap.dedent(source_of(code, getattr(fn, "__globals__", {})))
    tree = ast.parse(source)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef) or definition.name != code.co_name:
        return None
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    filename = code.co_filename
    if not compiles_to(definition, filename, code):
        return None
    if any(isinstance(node, (ast.Global, ast.Yield, ast.YieldFrom, ast.Await))
           for node in _walk_scope(definition.body)) or _uses_kiln_names(definition) or any(
               isinstance(node, ast.Nonlocal) for node in _own_scope(definition.body)):
        return None
    if nested_rebinds(definition) is None:  # a function rebinding its variables, called unseen
        return None
    definition.decorator_list = []
    # what the function writes in place, read before anything is rewritten (the rewrite of
    # a nested function's loops would hide its calls in the helper's)
    in_place = written_in_place(copy.deepcopy(definition))
    captured, refused = _rewrite_scope(definition, filename, in_place)
    if not captured:
        return Rewritten(None, [], refused) if refused else None
    # Under a name of its own: the user's name, bound in the factory, would make a recursive
    # call (`return f(n - 1)`) a closure variable of the factory's instead of the global.
    definition.name = _REWRITTEN
    factory = ast.FunctionDef(
        name="__kiln_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=name) for name in
                                                   (*code.co_freevars, HELPER)],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[definition, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile_like(module, filename, code)
    factory_code = constant_code(compiled, "__kiln_factory")
    rewritten = constant_code(factory_code, _REWRITTEN)
    names = {"co_name": code.co_name}
    if hasattr(code, "co_qualname"):  # Python 3.11+
        names["co_qualname"] = code.co_qualname
    return Rewritten(rewritten.replace(**names), captured, refused)


def _uses_kiln_names(definition):
    """Whether the user's code names something as the rewrite names its own parts (__kiln_...):
    every name the rewrite makes has that prefix, so no other user name can collide."""
    return any(name.startswith("__kiln") for node in ast.walk(definition)
               for name in (getattr(node, "id", ""), getattr(node, "arg", "") or ""))


def _rewrite_scope(definition, filename, in_place):
    """Rewrites the loops and branches of `definition`'s body in place, and first those of the
    functions it defines at its top level (`def ema(x, n): for i in ...` inside the compiled
    function: made as the code runs, no helper of kiln's sees them, and their loops were
    unrolled: an MACD of three 300-step EMAs, 18,876 ops and 1.5 s): ([locations captured],
    [(location, reason) refused]). in_place: what the whole compiled function may write in
    place (kiln._loop_aliases), its nested functions' code included."""
    captured, refused = [], []
    for statement in definition.body:
        if (isinstance(statement, ast.FunctionDef) and not statement.decorator_list
                and _only_called(statement.name, definition) and not any(
                    isinstance(node, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom,
                                      ast.Await)) for node in _walk_scope(statement.body))
                and nested_rebinds(statement) is not None):
            inner = _rewrite_scope(statement, filename, in_place)
            captured += inner[0]
            refused += inner[1]
    definition.body = as_loops(  # [f(x[i]) for i in range(n)], sum(...)
        definition.body, _parameters(definition) | set(_stored_names(definition.body)))
    definition.body = without_else_clauses(definition.body)  # a loop's `else` (kiln._loop_else)
    definition.body = in_whole_swap_cycles(definition.body)  # `u, v = v, u` (kiln._loop_swaps)
    definition.body = optional_values(  # `idx = None` before a loop that binds it
        definition.body, _parameters(definition))
    definition.body = split_tuple_names(  # `best = (i, j)` in a loop (kiln._loop_tuple_names),
        definition.body, _parameters(definition))  # an optional's payload too
    definition.body = single_exit(definition.body)  # early returns (kiln._loop_returns)
    definition.body = attribute_updates_through_names(definition.body)  # `self.t += dt`
    definition.body = attribute_targets_through_names(  # `self.h[:, t] = v` in loops
        definition.body, _parameters(definition) - set(_stored_names(definition.body)))
    list_names = _list_names(definition)  # before loop bodies become functions of their own
    rewriter = _Rewriter(definition, filename, _loaded_names(definition),
                         _parameters(definition) | set(_stored_names(definition.body)),
                         _index_reads(definition), in_place)
    definition.body = rewriter.statements(definition.body)
    # (before the choices: `return int(n) if n else 0` is a conversion on one side)
    rewriter.captured += _returned_conversions(definition.body, rewriter.location)
    choices = _ChoiceRewriter(rewriter.location, list_names, in_place)
    definition.body = [choices.visit(statement) for statement in definition.body]
    rewriter.captured += choices.found
    definition.body, math_calls = _traced_math_calls(definition.body, rewriter.location)
    rewriter.captured += math_calls
    # Names the body functions declare nonlocal must be bound in the function itself.
    bound = sorted(rewriter.nonlocal_names - _parameters(definition))
    if bound:
        definition.body.insert(0, _parse(f"if False:\n    {' = '.join(bound)} = None")[0])
    return captured + rewriter.captured, refused + rewriter.refused


def _as_appended(statement, local_names, in_place):
    """`items.append(value)`, a statement of a for loop's body, appending to a local list:
    `items = HELPER.appended(items, value, aliased)`, which appends (LoopCapture.appended), so
    that the body is one kiln can capture (the values stacked as an array the loop carries);
    aliased: whether the value may be an array changed in place later (aliased_append), a
    bool or the calls of global functions whose code decides it when the loop runs."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    name = _appended_list(call, local_names)
    if name is None:
        return statement
    helper = _helper_call("appended(None, None)", call)
    aliased = as_constant(aliased_append(call.args[0], in_place))
    helper.args = [_name(name), call.args[0], ast.copy_location(ast.Constant(aliased), call)]
    return ast.copy_location(ast.Assign(targets=[_name(name, ast.Store())], value=helper),
                             statement)


def _appended_list(call, local_names):
    """The local list that `call` appends one value to (`items.append(value)`), or None."""
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "append" and isinstance(call.func.value, ast.Name)
            and call.func.value.id in local_names and len(call.args) == 1
            and not call.keywords and not isinstance(call.args[0], ast.Starred)):
        return call.func.value.id
    return None


def _appends_rewritten(statements, local_names, in_place):
    """The body's appends rewritten (_as_appended), those in its `if` blocks too: under a
    traced condition, or after a jump's test, the loop counts the rows it keeps
    (kiln._conditional_appends). A nested loop's are its own."""
    rewritten = []
    for statement in statements:
        if isinstance(statement, ast.If):
            statement = copy.copy(statement)
            statement.body = _appends_rewritten(statement.body, local_names, in_place)
            statement.orelse = _appends_rewritten(statement.orelse, local_names, in_place)
        rewritten.append(_as_appended(statement, local_names, in_place))
    return rewritten


def _appended_in_loops(statements, local_names):
    """The local lists that loops nested in `statements` append to: each loop's rewrite
    rebinds them (`items = HELPER.appended(items, value)`, _appends_rewritten) inside its body
    function, where a branch around the loop does not see the binding, so the branch names them
    itself and merges what its sides leave in them (before, an append in a loop under an `if`
    was kept where the test skipped the loop: a captured loop's list got every iteration's
    rows)."""
    loops = [node for node in _walk_scope(statements) if isinstance(node, (ast.For, ast.While))]
    calls = _walk_scope([statement for loop in loops for statement in loop.body])
    return sorted({_appended_list(call, local_names) for call in calls} - {None})


def _index_copied(loop, number):
    """`for i in range(n): ...; break`, i read after the loop: `for __kiln_index_k in
    range(n): i = __kiln_index_k; ...`. The body binds i, so the loop carries it: after a
    break it holds the iteration that broke, as Python's (it was refused: Newton's method and
    early stopping, `for it in range(maxit): ... if done: break`, then `return x, it`,
    unrolled)."""
    loop = copy.copy(loop)
    index = f"__kiln_index_{number}"
    copied = ast.Assign(targets=[_name(loop.target.id, ast.Store())], value=_name(index))
    loop.body = [ast.copy_location(copied, loop.body[0])] + loop.body
    loop.target = ast.copy_location(_name(index, ast.Store()), loop.target)
    return loop


def _as_effect(statement):
    """`f(args)`, a call statement of a captured body: `HELPER.effect(f, args)`, which calls f
    where its effects are traced (a helper that updates arrays in place, np.copyto, x.fill)
    and otherwise gives the loop up (LoopCapture.effect). Such helpers (npbench's cavity_flow:
    build_up_b(b, ...) in its time loop) made the loop unroll: a 29 MiB graph, run eagerly."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return statement
    helper = _helper_call("effect()", call)
    helper.args, helper.keywords = [call.func] + call.args, call.keywords
    return ast.copy_location(ast.Expr(helper), statement)


def _as_effects(statements):
    """_as_effect of each of a captured body's statements, and of those of its `with` blocks,
    whose managers go through HELPER.managed (LoopCapture.managed checks them), and its
    try/finally blocks; its `assert`s as checks (kiln._body_statements)."""
    result = []
    for statement in statements:
        statement = as_checked_assert(statement, _helper_call)
        if isinstance(statement, (ast.With, ast.Try)):
            statement = copy.copy(statement)
            if isinstance(statement, ast.With):
                statement.items = [ast.withitem(context_expr=_checked_context(item.context_expr),
                                                optional_vars=item.optional_vars)
                                   for item in statement.items]
            else:
                statement.finalbody = _as_effects(statement.finalbody)
            statement.body = _as_effects(statement.body)
        result.append(_as_effect(statement))
    return result


def _checked_context(expression):
    helper = _helper_call("managed()", expression)
    helper.args = [expression]
    return ast.copy_location(helper, expression)


def _catches_everything(node):
    """A `try` whose handler takes BaseException (`except:`): it would catch kiln's own
    RerunEagerly, raised where a captured loop must run again as Python."""
    return any(handler.type is None or isinstance(handler.type, ast.Name)
               and handler.type.id == "BaseException" for handler in getattr(node, "handlers", ()))


class _Rewriter:
    def __init__(self, definition, filename, loaded, local_names, index_reads, in_place):
        self.augmented = _augmented_names(definition)  # names `name += v` reads (carried_views)
        self.held = {}  # a sequence loop's held sequences: {name: the user's expression}
        self.filename = filename
        self.loaded = loaded
        self.index_reads = index_reads  # _index_reads: an index read after its loop
        self.local_names = local_names  # the function's own (parameters and assigned names)
        self.in_place = in_place  # what the function may write in place (kiln._loop_aliases)
        self.rebinds = nested_rebinds(definition) or {}  # {function: variables it rebinds}
        self.captured, self.refused = [], []
        self.nonlocal_names = set()
        self.counter = 0
        self.anchor = None  # the loop or branch being rewritten: generated code gets its line

    def location(self, node):
        return f"{os.path.basename(self.filename)}:{node.lineno}"

    def statements(self, statements):
        result = []
        for statement in statements:
            result.extend(self.statement(statement))
        return result

    def statement(self, node):
        if isinstance(node, ast.For):
            return self.loop(node)
        if isinstance(node, ast.If) and not is_carrying_choice(node):
            return self.branch(node)
        if isinstance(node, ast.While):
            return self.while_loop(node)
        if (isinstance(node, (ast.With, ast.Try)) and not _catches_everything(node)
                or is_carrying_choice(node)):
            # `with np.errstate(...):` and `try:` run their bodies as written: the loops in
            # them are the function's own (they were left to unroll). A copy: a loop reads the
            # names its body's own statements bind, not those of the rewrite's functions
            node = copy.copy(node)
            for field in ("body", "orelse", "finalbody"):
                setattr(node, field, self.statements(getattr(node, field, None) or []))
            for handler in getattr(node, "handlers", ()):
                handler.body = self.statements(handler.body)
        return [node]

    def loop(self, node):
        iterator = reversed_range_call(node.iter) or node.iter  # (its bounds reversed below)
        is_range = (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name) and
                    iterator.func.id == "range" and not iterator.keywords and
                    1 <= len(iterator.args) <= 3 and
                    not any(isinstance(a, ast.Starred) for a in iterator.args))
        reason = None
        if not is_range and not getattr(node, "_kiln_as_written", False):
            converted = self.sequence_loop(node)
            if converted is not None:
                return converted
        if not is_range:
            reason = "it does not iterate over range(...)"
        elif not isinstance(node.target, ast.Name):
            reason = "its target is not a plain name"
        elif node.orelse:
            reason = "it has an `else` clause"
        else:
            if jumps(node.body)[0] and self.live([node.target.id], node.body):
                node = _index_copied(node, self.counter + 1)
            node.body = _appends_rewritten(node.body, self.local_names, self.in_place)
            original = node
            node, before = without_jumps(node, self.counter + 1)
            reason = _body_refusal(node.body, loop=True)
            if reason is not None:
                node = original
        if reason is not None:
            return self.refuse(node, reason)
        self.counter += 1
        n, target = self.counter, node.target.id
        stop = stop_flag(original, n)
        node.body = _with_traced_conversions(_as_effects(node.body))
        body = self.statements(node.body)
        self.anchor = node
        assigned = [name for name in self.assigned(node.body) if name != target]
        touched = sorted(set(assigned) | set(_read_names(node.body)) - {target})
        self.nonlocal_names.update(assigned + [target])
        live = self.live(assigned, node.body)
        if self.index_reads.get(target, 0):  # read after the loop: unbound if it ran no iteration
            live.append(target)
        views = self.carried_views(assigned, live, node.body)
        self.captured.append(self.location(node))
        state = touched + [target]
        definitions = self.body_function(f"__kiln_body_{n}", [target], assigned, body)
        definitions += self.accessors(n, state, assigned + [target] + self.read_locals(
            touched, assigned))
        bounds = ast.Tuple(elts=iterator.args, ctx=ast.Load())
        if iterator is not node.iter:  # reversed(range(...)): kiln._reversed_ranges
            bounds = ast.Call(func=_parse(f"{HELPER}.reversed_bounds")[0].value,
                              args=iterator.args, keywords=[])
        call = _parse(
            f"{HELPER}.for_range(None, __kiln_body_{n}, __kiln_get_{n}, __kiln_set_{n}, "
            f"{tuple(state)!r}, {tuple(live)!r}, {self.location(node)!r}"
            + (f", stop=lambda: {stop}" if stop else "")
            + _temporaries_argument(assigned, live, node.body)
            + items_argument(node.body, assigned) + attributes_argument(node.body)
            + rebinds_argument(node.body)
            + (f", views={views!r})" if views else ")"))[0]
        call.value.args[0] = bounds
        return before + definitions + [_at(call, node)]

    def sequence_loop(self, node):
        """`for v in x:` and its enumerate/zip forms: kiln._loop_rewrite_parts.sequence_loop."""
        return sequence_loop(self, node)

    def while_loop(self, node):
        before = []
        if node.orelse:
            reason = "it has an `else` clause"
        elif any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            reason = "its test binds a name (`:=`)"  # in the test's function, not the user's
        elif rebound_by_calls([node.test], self.rebinds):  # (run more often than Python's)
            reason = "its test calls a function that rebinds a variable (`nonlocal`)"
        else:
            bound = bound_argument(node, self.assigned(node.body),
                                   rebound_by_calls(node.body, self.rebinds))
            node.body = _appends_rewritten(node.body, self.local_names, self.in_place)
            rewritten, before = without_jumps(node, self.counter + 1)
            reason = _body_refusal(rewritten.body, loop=True)
            node = node if reason is not None else rewritten
        if reason is not None:
            return self.refuse(node, reason)
        self.counter += 1
        n = self.counter
        node.body = _with_traced_conversions(_as_effects(node.body))
        node.test = _with_traced_conversions([ast.Expr(node.test)], in_test=True)[0].value
        body = self.statements(node.body)
        self.anchor = node
        with_test = node.body + [ast.Expr(node.test)]
        assigned = self.assigned(with_test)
        touched = sorted(set(assigned) | set(_read_names(with_test)))
        self.nonlocal_names.update(assigned)
        live = self.live(assigned, with_test)
        views = self.carried_views(assigned, live, with_test)
        self.captured.append(self.location(node))
        test = _at(_parse(f"def __kiln_test_{n}():\n    return None\n")[0], node)
        test.body[0].value = _traceable_logic(node.test, self.location)
        definitions = [test] + self.body_function(f"__kiln_body_{n}", [], assigned, body)
        definitions += self.accessors(n, touched, assigned + self.read_locals(touched,
                                                                              assigned))
        call = _parse(f"{HELPER}.while_loop(__kiln_test_{n}, __kiln_body_{n}, __kiln_get_{n}, "
                      f"__kiln_set_{n}, {tuple(touched)!r}, {tuple(live)!r}, "
                      f"{self.location(node)!r}"
                      + _temporaries_argument(assigned, live, [ast.Expr(node.test)] + node.body)
                      + items_argument(node.body, assigned) + attributes_argument(node.body)
                      + bound + (f", views={views!r})" if views else ")"))[0]
        return before + definitions + [_at(call, node)]

    def carried_views(self, assigned, live, statements):
        """The names the loop carries, by value, that may be a view of an array written in
        place, or written through, by the function (kiln._loop_aliases.carried_views): those
        read after the loop (live) or by the next iteration before the body binds them. At
        run time the loop gives up where one holds an array after its traced body
        (LoopCapture.for_range's views): carried as a copy, `last = x[i]` then `last[0] = 9`
        after the loop wrote the copy, x unchanged, no error."""
        augmented = self.augmented  # `last += 1` after the loop reads it
        inside = _augmented_names(ast.Module(body=list(statements), type_ignores=[]))
        carried = [name for name in assigned
                   if name in live or augmented.get(name, 0) > inside.get(name, 0)
                   or _read_before_bound(name, statements)]
        return self.in_place.carried_views(carried, statements, self.held)

    def refuse(self, loop, reason):
        """The loop stays as written (tracing unrolls it); its body is still rewritten, in a
        copy: an enclosing loop reads the names the original body assigns (a branch's rewrite
        moves them into functions, and the enclosing loop would not carry them)."""
        if not getattr(loop, "_kiln_refused_at_run_time", False):  # (its helper records it)
            self.refused.append((self.location(loop), reason))
        loop = copy.copy(loop)
        loop.body = self.statements(loop.body)
        return [loop]

    def live(self, assigned, statements):
        """The assigned names read outside `statements` (after the loop): they keep their final
        values; the others are temporaries of the body."""
        # (reads in the statements' comprehensions are the loop's own; a lambda's or a
        # generator's may run after it: kiln._loop_scope_reads)
        inside = [node.id for node in enclosing_reads(statements, eager_only=True)]
        return [name for name in assigned if self.loaded.get(name, 0) > inside.count(name)]

    def branch(self, node):
        reason = _body_refusal(node.body + node.orelse)
        if reason is not None:  # rewritten in a copy, as a refused loop's body (refuse)
            node = copy.copy(node)
            node.body = self.statements(node.body)
            node.orelse = self.statements(node.orelse)
            return [node]
        self.counter += 1
        n = self.counter
        node = copy.copy(node)
        node.body = _as_effects(node.body)
        node.orelse = _as_effects(node.orelse)
        assigned = sorted(set(self.assigned(node.body + node.orelse)) |
                          set(_appended_in_loops(node.body + node.orelse, self.local_names)))
        touched = sorted(set(assigned) | set(_read_names(node.body + node.orelse)))
        self.nonlocal_names.update(assigned)
        self.captured.append(self.location(node))
        then, otherwise = self.statements(node.body), self.statements(node.orelse)
        self.anchor = node
        definitions = self.body_function(f"__kiln_then_{n}", [], assigned, then)
        definitions += self.body_function(f"__kiln_else_{n}", [], assigned, otherwise)
        # and, where a side has a loop, the names the sides only read: the loop's setter may
        # rebind them for its trace (read_locals), which the side's end must undo (it left a
        # value of the side's body bound there, read after the branch)
        loops = any(isinstance(part, (ast.For, ast.While))
                    for part in _walk_scope(node.body + node.orelse))
        definitions += self.accessors(n, touched, assigned + (
            self.read_locals(touched, assigned) if loops else []))
        live = self.live(assigned, node.body + node.orelse)
        # the names whose arrays the function may write in place (kiln._loop_aliases)
        written = tuple(name for name in assigned if self.in_place.name_changes(name) is not False)
        call = _parse(f"{HELPER}.branch(None, __kiln_then_{n}, __kiln_else_{n}, __kiln_get_{n}, "
                      f"__kiln_set_{n}, {tuple(touched)!r}, {self.location(node)!r}, "
                      f"live={tuple(live)!r}, written={written!r})")[0]
        call.value.args[0] = _traceable_logic(node.test, self.location)
        return definitions + [_at(call, node)]

    def assigned(self, statements):
        """The names `statements` bind, and those the functions they call may rebind
        (kiln._loop_names.nested_rebinds)."""
        return sorted(set(_stored_names(statements)) | set(rebound_by_calls(statements,
                                                                            self.rebinds)))

    def read_locals(self, touched, assigned):
        """The function's own names a loop body (or a branch's side) reads and does not
        assign: a loop's setter may rebind them for the body's trace (a NumPy array the function
        made, read as a graph value: kiln._loop_numpy_arrays), and back."""
        return [name for name in touched if name in self.local_names and name not in assigned]

    def body_function(self, name, parameters, assigned, body):
        text = f"def {name}({', '.join(parameters)}):\n"
        if assigned:
            text += f"    nonlocal {', '.join(assigned)}\n"
        text += "    pass\n"
        function = _at(_parse(text)[0], self.anchor)
        function.body = function.body[:-1] + (body or [ast.Pass()])
        return [function]

    def accessors(self, n, state, assigned):
        """__kiln_get_n() -> the values of `state` (HELPER.UNBOUND for unbound names);
        __kiln_set_n(__kiln_values) assigns the `assigned` ones: HELPER.KEEP leaves one as it
        is, HELPER.UNBOUND unbinds it."""
        reads = ", ".join(f"{HELPER}.read(lambda: {name})" for name in state)
        text = f"def __kiln_get_{n}():\n    return ({reads}{',' if len(state) == 1 else ''})\n"
        # every name made here is a __kiln_ one: a user's `values` was nonlocal and parameter
        text += f"def __kiln_set_{n}(__kiln_values):\n"
        if assigned:
            text += f"    nonlocal {', '.join(assigned)}\n"
        for position, name in enumerate(state):
            if name in assigned:
                text += (f"    if __kiln_values[{position}] is {HELPER}.UNBOUND:\n"
                         f"        try:\n            del {name}\n"
                         f"        except NameError:\n            pass\n"
                         f"    elif __kiln_values[{position}] is not {HELPER}.KEEP:\n"
                         f"        {name} = __kiln_values[{position}]\n")
        text += "    pass\n"
        return [_at(definition, self.anchor) for definition in _parse(text)]
