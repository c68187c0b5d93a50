"""Capture of Python loops and branches while a function is traced (the run-time side of
kiln._loop_transform, which rewrites the function to call LoopCapture.for_range / .branch).

for_range(bounds, body, get, set, names, live, location):
    Short loops with static bounds (at most UNROLL_AT_MOST iterations) run as Python: tracing
    unrolls them. Otherwise the body is traced once, into a loop body of the trace
    (api/loop_trace.h), with the induction variable and every array the body may touch replaced
    by placeholders; what the body leaves in those variables (rebound or updated in place) is
    carried to the next iteration. One `loop` node results, compiled once for any trip count. A
    variable whose type changes in the first iteration (`s = 0; s = s + x[i]`) is carried at the
    type the body gives it (traced again), unless the loop may run no iteration (a dynamic trip
    count, a while loop) and an array's dtype or shape changes: NumPy's would keep its type.
    A number the first iteration makes another kind of number (Python's float NumPy's float64)
    is seen by the body as after an iteration: the first runs on its own (kiln._loop_peeling).
    An array whose shape changes by the same amount every iteration (`v = p * v[:-1] +
    q * v[1:]`, `x = np.append(x, y)`) is carried at its largest shape, as a window
    (kiln._loop_extents). A name the body binds first and code after the loop reads is
    carried too (kiln._loop_first_bindings).
    When the body cannot be captured (a graph break, a Python number that changes, an array
    made before the loop that the body writes through a view, ...) the trace of the body is
    dropped, every variable restored, and the loop runs as Python; the reason is recorded
    (kiln.explain, KILN_LOGS=graph_breaks).
branch(...): kiln._branch_capture; effect, managed, asserted: kiln._body_statements (mixins).
"""
import sys

import numpy as np

from . import (_affine_indices, _helper_writes, _loop_appends, _loop_counters, _loop_extents,
               _loop_first_bindings, _loop_number_types, _loop_numpy_arrays,
               _loop_optional_values, _loop_scalar_kinds, _loop_strides, _random_state,
               _while_bounds, _windows)
from ._body_statements import BodyStatements
from ._branch_capture import BranchCapture, _plain, _restore, _Retype
from ._graph_breaks import GraphBreakSignal
from ._kiln import Unsupported
from ._loop_appends import Stacked
from ._loop_comprehensions import is_builtin_sum, is_python_data
from ._loop_escapes import Escapes, settle_rows
from ._loop_extents import Resizing
from ._loop_first_bindings import BoundInBody, restore_held_objects, unbind_held_objects
from ._loop_expressions import ExpressionCapture
from ._loop_types import (CaptureFailed, DrawsInBody, WindowMismatch as _WindowMismatch,
                          carried_flags as _carried_flags,
                          changed_before as _changed_before, is_number as _is_number,
                          retyped as _retyped, truth as _truth, type_of as _type_of,
                          unshared_scalars as _unshared_scalars)
from ._loop_results import LoopResults
from ._loop_view_bases import with_view_bases
from ._loop_carried_views import Unfollow, check_followers, checked_body
from ._loop_container_items import with_container_items
from ._loop_shared_arrays import NamesApart, SharedArrayRebound
from ._reversed_ranges import reversed_bounds
from ._loop_peeling import (PEELS_AT_MOST, PeelFirst, broke as _broke, retyped_numbers,
                            run_peeled, split_first, watched_numbers)
from ._tracer import TracedArray, cast, to_tensor

UNROLL_AT_MOST = 2
UNROLL_IN_BODY_AT_MOST = 16  # a static inner loop that cannot be captured, unrolled in a body


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class LoopCapture(BodyStatements, BranchCapture, ExpressionCapture, LoopResults):
    UNBOUND = _Marker("UNBOUND")  # a variable without a value (the setter unbinds it)
    KEEP = _Marker("KEEP")        # the setter leaves the variable as it is
    is_builtin_sum = staticmethod(is_builtin_sum)  # kiln._loop_comprehensions
    reversed_bounds = staticmethod(reversed_bounds)  # kiln._reversed_ranges
    is_python_data = staticmethod(is_python_data)

    def __init__(self, context, record):
        self.context = context  # the tracer's TraceContext of this trace
        self._record = record   # record(kind, location, reason): explain and logs
        self.depth = 0          # loop bodies being traced
        self.pending = []       # records inside the outermost body, kept once it is captured
        self.converting = 0     # while bodies run before their capture (to_python)
        self.testing = 0        # while tests run before their capture
        self.sides = 0          # branch sides being traced for a select (both of them run)
        self.loop_bodies = 0    # loop bodies traced so far (a branch's sides holding loops)
        self.numpy_sides = []   # (depth, name, taken): a branch's NumPy scalar for a number
        self.compiled_code = None  # the compiled function's rewritten code (_carried_views)

    def record(self, kind, location, reason):
        reason = _loop_optional_values.in_user_names(reason)  # (its names are the user's)
        if self.depth > 0 or self.sides > 0:  # kept once what holds it is captured
            self.pending.append((kind, location, reason))
            return
        for pending in self.pending:
            self._record(*pending)
        self.pending.clear()
        self._record(kind, location, reason)

    @staticmethod
    def read(thunk):
        try:
            return thunk()
        except NameError:
            return LoopCapture.UNBOUND

    # ---- loops ----

    def appended(self, items, value, aliased=False):
        """`items.append(value)` of a for loop's body (kiln._loop_appends); aliased: the value
        may be an array the function changes in place later (a bool, or the calls of global
        functions of the caller's module that decide it: kiln._loop_aliases)."""
        aliased = _helper_writes.verdict(aliased, sys._getframe(1).f_globals)
        return _loop_appends.appended(items, value, self.depth, aliased)

    def for_range(self, bounds, body, get, set_, names, live, location, stop=None, peels=0,
                  views=(), temporaries=(), items=(), rebinds=(), attributes=()):
        """stop: the flag a `break` of the body sets (kiln._loop_jumps), or None. peels: the
        first iterations run on their own before this range (kiln._loop_peeling); None: this
        is one of them, which may change a number's type. views: the carried names that may be
        views the function writes through or changes (_carried_views). items: the names whose
        items (of a list or dict) the body assigns (kiln._loop_container_items), attributes:
        the attribute names it assigns (kiln._loop_object_attributes). rebinds: the names its
        top level binds (kiln._loop_shared_arrays)."""
        body = checked_body(self, body, get, names, views, sys._getframe(1),
                                   not all(isinstance(b, (int, np.integer)) for b in bounds))
        static = all(isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_))
                     for b in bounds)
        strided = False
        if static:
            span = range(*(int(b) for b in bounds))
            if len(span) <= UNROLL_AT_MOST:
                return self._run_python(span, body, set_, names, stop)
        else:
            step = bounds[2] if len(bounds) == 3 else 1
            strided = _loop_strides.is_traced_step(step)  # range(i * i, n, i)
            if not strided and (not isinstance(step, (int, np.integer)) or int(step) == 0):
                return self._run_python(range(*bounds), body, set_, names, stop)
            span = None
        # A body that may break: a loop node that also stops at its flag (a bounded while
        # loop), so a search or a convergence loop ends where Python's would. (The flag is set
        # before the loop where its first iteration ran on its own: kiln._loop_peeling.)
        condition = None if stop is None else (lambda: self._continues(stop()),
                                               self._continues(stop()))
        try:
            if strided:  # its trip count is computed in the graph: Python's zero too
                unbound = [name for name, value in zip(names, get())
                           if name in live and value is self.UNBOUND]
                if unbound:
                    raise CaptureFailed(f"`{unbound[0]}` is read after the loop, which may run "
                                        f"no iteration (Python's UnboundLocalError then)")
                _loop_strides.capture(self, bounds, body, get, set_, names, live, location,
                                      condition)
            else:
                if span is None and _loop_first_bindings.for_loop_runs_none(
                        self, bounds, names, get(), live):
                    return  # no iteration: what it binds stays unbound, as in Python
                try:
                    self._capture(bounds, span, body, get, set_, names, live, location,
                                  condition, indexed=True,
                                  peel=None if peels is None else PEELS_AT_MOST - peels,
                                  temporaries=temporaries, items=(items, attributes),
                                  rebinds=rebinds)
                except PeelFirst:
                    first, rest = split_first(self, bounds, span)
                    loop = (body, get, set_, names, live, location, stop)
                    run_peeled(self, first, rest, loop, peels, temporaries)
                    return
            self.record("loop", location, "")
        except CaptureFailed as failure:
            self.record("unrolled", location, str(failure))
            if self.depth > 0 and (span is None or len(span) > UNROLL_IN_BODY_AT_MOST):
                raise  # inside a loop body being captured: the outer loop gives up too
            # (a short static one unrolls in the body's trace: `xs[(k + 1) % len(xs)]`)
            self._run_python(span if span is not None else range(*bounds), body, set_, names,
                             stop)

    def while_loop(self, test, body, get, set_, names, live, location, views=(),
                   temporaries=(), items=(), attributes=(), bound=None):
        """`while test(): body()`: iterations run as Python while the test is a Python value;
        once it is a traced one, the rest of the loop is captured as a while loop node. The
        Python numbers the first iteration changes are lifted to traced ones, for a test that
        reads them (`while t < T: ...; t += dt`, kiln._loop_counters). bound: its most
        iterations, where its test bounds a counter (kiln._while_bounds)."""
        body = checked_body(self, body, get, names, views, sys._getframe(1), True)
        lifted = None  # {name: Python number} lifted for the test, once
        iterations = 0
        while True:
            condition = self._test(test, lifted)
            if isinstance(condition, TracedArray) and condition.size == 1:
                if not _loop_first_bindings.runs_none(self, lambda: condition, names, get(),
                                                      live):
                    break
                return  # no iteration: what it binds stays unbound, as in Python
            if lifted:  # the test reads none of them: Python's numbers again
                _loop_counters.restore(lifted, names, set_, self.KEEP)
                condition = self._test(test)
            if not condition:
                return
            iterations += 1
            lifting = lifted is None and iterations >= _loop_counters.PYTHON_ITERATIONS
            before = get() if lifting else None
            self.converting += 1  # `err = x.item()` makes the test traced: the rest is captured
            try:
                body()
            finally:
                self.converting -= 1
            if lifting:
                lifted = _loop_counters.lift(self.context, names, before, get(), set_,
                                             self.KEEP)
            elif lifted is not None:
                lifted = {}
        try:
            span = _while_bounds.span(bound, lifted, names, get, set_, self.KEEP)
            self._capture((0, span.stop), span, body, get, set_, names, live,
                          location, (test, condition), temporaries=temporaries,
                          items=(items, attributes))
            self.record("loop", location, "")
        except CaptureFailed as failure:
            self.record("unrolled", location, str(failure))
            if self.depth > 0:
                raise
            _loop_counters.restore(lifted, names, set_, self.KEEP)
            while test():
                self._check_time()
                body()

    def _test(self, test, lifted=None):
        """A while loop's test, as it is now (a traced one is captured: `while not
        np.array_equal(a, b)`). On lifted numbers no graph break may cut the trace (`while
        2 ** k < n` needs k's value): a failure is their test's Python value."""
        context = self.context
        driver = context.driver
        if lifted:
            context.driver, context.body_driver = None, driver or context.body_driver
        self.testing += 1
        try:
            return test()
        except Exception:
            if not lifted:
                raise
            return False  # (tested again on the Python numbers)
        finally:
            self.testing -= 1
            context.driver = driver

    def _check_time(self):
        """An unrolled loop's iteration: the driver may end a trace that takes too long."""
        check = getattr(getattr(self.context, "driver", None), "check_time", None)
        if check is not None:
            check()

    def _run_python(self, span, body, set_, names, stop=None):
        last = self.UNBOUND
        for index in span:
            self._check_time()
            body(index)
            last = index
            if stop is not None and _broke(stop()):
                break
        set_(tuple(last if name == names[-1] and last is not self.UNBOUND else self.KEEP
                   for name in names))

    def _continues(self, flag):
        """`not flag` of a break's flag, as a traced bool (a while loop's condition)."""
        value = self.not_(flag)
        if isinstance(value, TracedArray):
            return value
        return TracedArray(self.context, self.context.constant(bool(value), np.dtype(bool)))

    def _capture(self, bounds, span, body, get, set_, names, live, location, condition=None,
                 indexed=None, peel=None, temporaries=(), items=((), ()), rebinds=()):
        """peel: how many first iterations may still run on their own (PeelFirst) where a
        carried number's type changes in an iteration (none: CaptureFailed); None: the type
        the body saw holds for the first iteration only (a loop of at most one).
        temporaries: kiln._loop_first_bindings.unbind_held_objects'. items: for_range's items
        and attributes; rebinds: its."""
        target = int(condition is None if indexed is None else indexed)  # the last name's
        held = unbind_held_objects(self, names, get, set_, temporaries, len(names) - target)
        apart = NamesApart(rebinds if span and condition is None else ())  # (surely runs)
        try:
            return self._capture_unheld(bounds, span, body, get, set_, names, live, location,
                                        condition, indexed, peel, target, items, apart)
        except BaseException:
            apart.rejoin()  # the loop run as Python sees one array again
            raise
        finally:
            restore_held_objects(self, held, names, get, set_)

    def _capture_unheld(self, bounds, span, body, get, set_, names, live, location, condition,
                        indexed, peel, target, items, apart):
        generators = self.generator_states(get())
        names, get, set_ = with_view_bases(names, get, set_, len(names) - target)
        names, get, set_, live = with_container_items(names, get, set_, live,
                                                      len(names) - target, *items,
                                                      (self.KEEP, self.UNBOUND))
        arguments = (bounds, span, body, get, set_, names, live, location, condition,
                     generators, indexed)
        lifted = _loop_numpy_arrays.lift(self.context, names, get, set_, self.KEEP,
                                         len(names) - target)
        try:
            return self._capture_settled(*arguments, stand_ins={
                id(traced): name for name, (_, traced) in lifted.items()}, peel=peel,
                apart=apart)
        except CaptureFailed as failure:
            _random_state.restore(generators)  # the Python loop that runs instead draws them
            if isinstance(failure, DrawsInBody):
                self._drew(location)
            if not lifted:
                raise
            first = failure
        finally:
            _loop_numpy_arrays.restore(lifted, names, get, set_, self.KEEP)
        try:  # the NumPy arrays as they are (a use of them the trace cannot follow)
            with _loop_numpy_arrays.read_only(get()[:len(names) - target]):
                return self._capture_settled(*arguments, peel=peel, apart=apart)
        except CaptureFailed:
            _random_state.restore(generators)
            raise first from None  # the obstacle that remains with them read as graph values

    def _drew(self, location):
        """A body that draws: the trace is this call's only, known now, not at its end (the
        driver may end it at once: _TraceContext.opaque_call; a 2,000-step Metropolis
        sampler's unrolled trace took 1 s before it was given up for NumPy's 8 ms)."""
        driver = getattr(self.context, "driver", None)
        if driver is not None:
            driver.opaque_call("a random generator draws new values on every call", location)

    def _capture_settled(self, bounds, span, body, get, set_, names, live, location, condition,
                         generators, indexed=None, stand_ins=None, peel=None, apart=None):
        """_capture: the body traced until the carried variables' types settle. stand_ins:
        {id: name} of the NumPy arrays read as graph values (kiln._loop_numpy_arrays).
        apart: kiln._loop_shared_arrays.NamesApart."""
        before = _unshared_scalars(self.context, names, get(), set_, self.KEEP)
        types, mark = {}, len(self.pending)
        unfollowed = set()  # views the body rebinds: carried by value, not as their root's
        was_probed = False
        for attempt in range(3 + len(names)):
            del self.pending[mark:]  # records of an attempt that was traced again
            try:
                return self._trace_once(bounds, span, body, get, set_, names, live, location,
                                        before, types, condition, generators=generators,
                                        indexed=indexed, unfollowed=unfollowed,
                                        stand_ins=stand_ins or {}, peel=peel, apart=apart)
            except Unfollow as unfollow:
                unfollowed.add(unfollow.name)
            except SharedArrayRebound as failure:
                before = apart.split(failure, self.context, names, before, set_, self.KEEP)
            except PeelFirst:
                del self.pending[mark:]  # the loops of the body as traced: they run again
                raise
            except _WindowMismatch as failure:  # a shrinking array not yet known as one
                resizing = None if was_probed or span is None or not indexed else (
                    _loop_extents.probed(lambda: self._trace_once(
                        bounds, span, body, get, set_, names, live, location, before, types,
                        condition, generators=generators, indexed=True, unfollowed=unfollowed,
                        stand_ins=stand_ins or {}, probe=span[0])))
                if not resizing:
                    raise CaptureFailed(str(failure)) from None
                was_probed = True
                types.update(resizing)
            except _Retype as retype:
                # the loop may run no iteration (a static range's for loop, one that may
                # break too, runs its first: it is long enough to be captured)
                if span is None or condition is not None and not indexed:
                    changed = _changed_before(retype.types, dict(zip(names, before)))
                    if changed:
                        raise CaptureFailed(
                            f"`{changed}` changes dtype or shape in the loop, which keeps its "
                            "type when the loop runs no iteration") from None
                types.update(retype.types)
        raise CaptureFailed("the types of the carried variables do not settle")

    def _trace_once(self, bounds, span, body, get, set_, names, live, location, before, types,
                    condition, side=False, generators=(), indexed=None,
                    unfollowed=frozenset(), stand_ins=None, probe=None, peel=None,
                    apart=None):
        """condition: a while loop's (test, its traced value before the loop); for loops: None.
        indexed: the body takes the index and the last name is the loop's target (for loops,
        those with a condition too: a break's); by default where there is no condition.
        side: one side of a branch, closed with end_cond_side; returns its slots and the
        variables after it, and restores them. probe: a Python int the body takes as its
        index, for the types one iteration gives (kiln._loop_extents.probed): never kept.
        peel: LoopCapture._capture's. apart: kiln._loop_shared_arrays.NamesApart."""
        context, trace = self.context, self.context.trace
        settle_rows(before, context.in_body, getattr(context.driver, "attribute_dicts", ()))
        indexed = condition is None if indexed is None else indexed
        count = len(names) - indexed
        variables = dict(zip(names[:count], before[:count]))
        by_object, followers = {}, {}
        roots = {id(value) for value in variables.values() if _plain(value)}
        kinds = _loop_scalar_kinds.KindCarry(context, types, variables, side)
        for name, value in variables.items():
            if isinstance(value, TracedArray) and name not in kinds.names:
                if value._selection is not None:
                    raise CaptureFailed(f"`{name}` is a view or a masked selection made before "
                                        f"the loop")
                if (value._root is not None and id(value._root) in roots and not side
                        and name not in unfollowed):
                    # a view of a carried array follows it, writes through it included
                    # (Gray-Scott's u = U[1:-1, 1:-1]; u += ...: carried by value, it unrolled)
                    followers[name] = value
                    continue
                by_object.setdefault(id(value), (value, []))[1].append(name)
        saved = {key: (array, array._tensor, array._scalar) for key, (array, _) in by_object.items()}
        # each value before the loop, read before any placeholder stands in: a view's comes
        # from its base, which may be carried too (read after: an internal error)
        values_before = {key: array.tensor for key, (array, _) in by_object.items()}
        # the test's value before the loop, read before too (`while changed: ...; changed = ...`)
        test_before = _truth(condition[1]) if condition is not None else None
        trace.location = location
        resized = {key: _loop_extents.initial(array, types[array_names[0]],  # before the body
                                              span if condition is None else None)
                   for key, (array, array_names) in by_object.items()
                   if isinstance(types.get(array_names[0]), Resizing)}
        if side:
            index_tensor = trace.begin_loop_body()
        else:
            start, stop, step = self._bounds(bounds, span)  # outside the body: its values may
            index_tensor = trace.begin_loop_body(start, stop, step)  # be among those replaced
        flag = trace.loop_placeholder("bool", []) if condition else None  # carried value 0
        self.loop_bodies += not side
        driver, context.driver = context.driver, None  # no graph break may run the open body
        context.body_driver = driver or context.body_driver
        self.depth += 1
        self.numpy_sides = [entry for entry in self.numpy_sides if entry[0] < self.depth]
        context.in_body += 1  # arrays made in the body are its own, never a break's to cut
        outer_watch = getattr(context, "kind_watch", None) or {}
        slots = []  # (names, array before or None, initial tensor, placeholder)
        escapes = None  # state the body may change without a variable (kiln._loop_escapes)
        windows, by_value = {}, {}  # slots carried by value, by placeholder id (_loop_extents)
        seen_flags = {}  # by placeholder id: the flags the body saw a rebound number with
        try:
            index = TracedArray(context, index_tensor)
            index._scalar, index._weak = True, int
            if span is not None:
                index._range = (min(span[0], span[-1]), max(span[0], span[-1]))
            elif condition is None and not side:
                index._range = _loop_extents.index_range(bounds)
            index._affine = _affine_indices.Affine(index, 0, 1)
            rebound, stacks = {}, []
            for key, (array, array_names) in by_object.items():
                initial = array._tensor
                kind = types.get(array_names[0])
                if isinstance(kind, Resizing) or not _plain(array):  # names rebound
                    initial, placeholder, value = _loop_extents.by_value(
                        context, resized.get(key, values_before[key]), array, kind, index,
                        span if condition is None else None, windows, by_value)
                    rebound.update((name, value) for name in array_names)
                    slots.append((array_names, None, initial, placeholder))
                    continue
                if array_names[0] in types:  # the body gives it another dtype or shape
                    initial = _retyped(context, initial, *types[array_names[0]])
                placeholder = trace.loop_placeholder(*_type_of(initial))
                array._tensor, array._version = placeholder, array._version + 1
                # (its NumPy-scalar flag stays; _final_flags decides the flag after the loop)
                slots.append((array_names, array, initial, placeholder))
            for name, kind in types.items():
                if isinstance(kind, Stacked):  # a list the body appends to
                    stack, stack_slots = _loop_appends.stack_slot(
                        context, trace, variables.get(name), kind, span, condition, self.depth,
                        name)
                    rebound[name] = stack
                    stacks.append(stack)
                    slots += stack_slots
                    continue
                if isinstance(kind, BoundInBody):  # bound by the first iteration
                    initial, placeholder, rebound[name] = kind.carried(context)
                    slots.append(([name], None, initial, placeholder))
                    continue
                if isinstance(kind, (Resizing, _loop_scalar_kinds.CarriedKind)):
                    continue
                dtype, shape = kind
                value = variables.get(name, self.UNBOUND)
                if isinstance(value, TracedArray) or name not in variables:
                    continue
                if not _is_number(value):
                    raise CaptureFailed(f"`{name}` changes type in the loop")
                initial = _retyped(context, to_tensor(context, value), dtype, shape)
                placeholder = trace.loop_placeholder(dtype, shape)
                rebound[name] = TracedArray(context, placeholder)
                rebound[name]._scalar, rebound[name]._weak = _carried_flags(value, dtype, shape)
                seen_flags[placeholder.id] = (rebound[name]._scalar, rebound[name]._weak)
                slots.append(([name], None, initial, placeholder))
            slots += kinds.slots(variables, rebound)  # (after the others: theirs come first)
            if rebound:
                set_(tuple(rebound.get(name, self.KEEP) for name in names))
                now = dict(zip(names, get()))
                for name, value in rebound.items():
                    if now[name] is not value:  # only names the body assigns can be rebound
                        raise CaptureFailed(f"`{name}` is a view made before the loop that the "
                                            f"loop reads or writes through")
            escapes = Escapes(context, set(by_object) | {id(view) for view in followers.values()},
                              getattr(driver, "attribute_dicts", ()), before,
                              getattr(get, "item_containers", ()),
                              getattr(get, "carried_attributes", {}))
            for stack in stacks:
                stack.position = _loop_appends.position(index, span)
            watched = watched_numbers(by_object, rebound)
            context.kind_watch = {**outer_watch, **watched}
            context.kind_sensitive = getattr(context, "kind_sensitive", set()) - set(
                watched.values())
            if indexed:
                body(index if probe is None else probe)
            else:
                body()
            if _random_state.drew(generators):
                raise DrawsInBody("a random generator draws in the body (each iteration "
                                  "draws its own values)")
            escapes.check()
            if apart is not None:
                apart.check_unwritten(slots)
            after = get()
            retyping = _loop_number_types.BranchRetyping(self, variables, kinds.others(live), side)
            _loop_numpy_arrays.check_unshared(stand_ins or {}, slots, names[:count],
                                              after[:count])
            check_followers(followers, by_object, dict(zip(names[:count], after[:count])))
            results = self._results(dict(zip(names[:count], after[:count])), variables, slots,
                                    live, types, windows, by_value, side, peel, kinds)
            if probe is not None:
                raise CaptureFailed("the probe's types are those from before")
            initial = [slot[2] for slot in slots] + kinds.initial() + retyping.initial()
            results += kinds.results(dict(zip(names[:count], after[:count]))) + retyping.results()
            if condition is not None:  # the test of the next iteration, on the new state
                initial.insert(0, test_before)
                results.insert(0, _truth(condition[0]()))
            trace.location = location
            if side:
                trace.end_cond_side(initial, results)
                _restore(saved)
                set_(before)
                return slots, after
            # numbers only a branch retypes keep that branch's flag, but not after a break's
            # test (a branch too) nor where the body's reads tell the kinds apart
            branches = set(retyping.taken) - context.kind_sensitive if condition is None else set()
            if peel is not None and retyped_numbers(
                    self, slots, names, after, saved, variables, seen_flags, branches):
                if peel > 0:
                    raise PeelFirst()
                raise CaptureFailed("a number the loop carries changes between NumPy's and "
                                    "Python's types in every iteration")
            runs = None  # where the loop may run no iteration: whether it runs one
            if span is None:
                runs = _loop_number_types.runs_tensor(start, stop, step)
            elif condition is not None and not indexed:
                runs = test_before
            retyped = [] if runs is None else _loop_number_types.retyped(
                self, slots, self._final_flags(slots, names, after, span, saved, variables),
                variables, kinds.others(live), self.side_loop_depth == self.depth)
            values = trace.end_loop(start, stop, step, initial, results, condition is not None)
            values = values[1:] if condition is not None else values
            values, taken = retyping.split(values)
            values, flags = kinds.split(values)
        except (CaptureFailed, _Retype, PeelFirst):
            self._abandon(saved, set_, before, escapes)
            raise
        except GraphBreakSignal as signal:
            self._abandon(saved, set_, before, escapes)
            failure = (_WindowMismatch if _windows.is_window_reason(signal.reason) else
                       CaptureFailed)
            raise failure(f"{signal.reason} at {signal.location}") from None
        except Unsupported as error:  # end_cond_side: a side with run-time checks
            _restore(saved)
            set_(before)
            raise CaptureFailed(str(error)) from None
        except Exception as error:  # the unrolled loop meets it again, where it belongs
            self._abandon(saved, set_, before, escapes)
            raise CaptureFailed(f"{type(error).__name__}: {error}") from None
        finally:
            self.depth -= 1
            context.in_body -= 1
            context.driver = driver
            context.kind_watch = outer_watch
        last = (self._last_index(start, stop, step, before[-1])
                if indexed and span is None else None)
        self._apply(slots, values, names, after, set_, span, saved, indexed, variables,
                    last, windows)
        if retyped:
            _loop_number_types.settle(self, runs, retyped, names, get, set_)
        retyping.settle(taken, names, get, set_)
        kinds.settle(flags, names, get, set_, self.KEEP)

    def _bounds(self, bounds, span):
        context = self.context
        if span is not None:
            return (context.constant(span.start, np.dtype(np.int64)),
                    context.constant(span.stop, np.dtype(np.int64)), span.step)
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
            bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1)
        for bound in (start, stop):
            if isinstance(bound, TracedArray) and (bound.ndim != 0 or bound.dtype.kind not in "iu"):
                raise CaptureFailed("a loop bound is not an integer")
        return (cast(to_tensor(context, start), "int64"), cast(to_tensor(context, stop), "int64"),
                int(step))

    def _abandon(self, saved, set_, before, escapes=None):
        self.context.trace.abandon_loop_body()
        _restore(saved)
        if escapes is not None:
            escapes.restore()
        set_(before)
