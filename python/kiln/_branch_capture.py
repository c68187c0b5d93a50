"""Capture of branches on traced values while a function is traced: a mixin of
kiln._loop_capture.LoopCapture, whose loop capture (_capture, _trace_once, _apply) and state it
uses.

branch(condition, then, otherwise, get, set, names, location):
    A Python (static) condition runs one side. A traced one traces both sides on the same state.
    When they rebind names to few elements (SELECT_AT_MOST), or update arrays in place, the
    branch selects, per variable, where(condition, then-value, else-value), computing both;
    runtime checks of one side (an index out of bounds) only apply where that side is taken.
    Sides that rebind names to big arrays, or that hold loops, become two loops of 0 or 1
    iterations (the side's condition as trip count): only the side taken runs, an `if` in the
    compiled code. If the sides disagree (a variable bound on one side only, different
    dtypes) or a side raises as it is traced, the condition is evaluated as before (a graph
    break) and one side runs; nothing traced for the sides is computed or checked then
    (_not_captured). So it is where a side changes Python state (appends to a list, `d[k] = v`,
    prints, draws a random number: both sides run while traced), and a side that traces an op
    raising on data as the graph runs (np.linalg.solve or inv's singular matrix:
    TraceContext.raising_ops) runs only when taken, never as a select; `a if c else b`
    (kiln._loop_expressions.choose) alike, and the later operands of `a and b` / `a or b`,
    sides taken where the earlier ones do not decide (kiln._loop_short_circuit).
"""
import copy

import numpy as np

from . import _assumed_numbers, _loop_appends, _random_state
from ._loop_appends import Appended, Stack
from ._loop_escapes import Containers, reachable, settle_rows
from ._loop_numpy_arrays import read_only
from ._loop_else import is_found
from ._loop_optional_values import is_payload
from ._loop_returns import is_result
from ._loop_types import (AppendsUnderCondition, CaptureFailed, Retype as _Retype,
                          is_number as _is_number, python_type as _python_type, rerun_note,
                          rerun_where, type_of as _type_of)
from ._tracer import TracedArray, backend, cast, to_tensor
from ._unbound_locals import running_as_written

# A branch on a traced value whose sides rebind names to at most this many elements is a select
# (both sides computed, no branch: what element loops want); bigger ones run only the side
# taken, unless a side updates a bigger array in place: the select of an updated slice stays a
# slice (simplify), while a loop would carry (copy) the whole array each time it runs.
SELECT_AT_MOST = 4096
BRANCH_FORM = None  # "select" or "loops": one form for every branch (tests)


def _plain(value):
    """A traced array the capture can stand in for (not a view, not a masked selection)."""
    return isinstance(value, TracedArray) and value._root is None and value._selection is None


class BranchCapture:
    side_loop_depth = None  # the depth of the body of a branch's side run as a loop

    def generator_states(self, values):
        """The call's random generators (kiln._random_state, found by the driver) and those
        among `values` (the loop's or branch's variables) with their states now: a loop body
        or branch side traced once that draws from one would keep one draw for every
        iteration, or draw on both sides; such code is not captured, and the generators get
        their states back for the Python code that runs instead."""
        driver = self.context.driver
        return _random_state.current(driver.random_states if driver is not None else (), values)

    def branch(self, condition, then, otherwise, get, set_, names, location, select=False,
               live=None, listed=True, written=()):
        """live: the names assigned in the branch that are read outside it (None: all).
        listed: whether kiln.explain lists it (a test's `and` is part of its test's branch
        or loop: kiln._loop_short_circuit). written: the names assigned whose arrays the
        function may write in place (kiln._loop_aliases): no select stands for them."""
        if not isinstance(condition, TracedArray) or condition.size != 1:
            return running_as_written(then if condition else otherwise)()
        trace = self.context.trace
        before = get()
        settle_rows(before, self.context.in_body, reached=False)
        # Every array a side may update: those the names hold, and the arrays views write to.
        arrays = {}
        for value in before:
            root = value._root if isinstance(value, TracedArray) and value._root is not None else value
            if _plain(root):
                arrays[id(root)] = root
        saved = {key: (array, array._tensor, array._scalar) for key, array in arrays.items()}
        # (a number whose kind a branch picks is true alike either way: not committed)
        truth = _assumed_numbers.uncommitted_tensor(condition)
        predicate = cast(backend().reshape(truth, []), "bool")
        first_check, raising_before = trace.check_count, self.context.raising_ops
        generators = self.generator_states(before)
        containers = Containers(before)  # both sides run: neither may change Python state
        loop_bodies = self.loop_bodies
        records = len(self.pending)  # the sides' loops, recorded again when traced again
        try:  # (both sides run: NumPy's writes into the function's arrays raise)
            with read_only(before):
                merged = self._traced_sides(then, otherwise, get, set_, names, before, arrays,
                                            saved, predicate, containers, generators, live,
                                            written)
        except AppendsUnderCondition:
            del self.pending[records:]
            _restore(saved)
            containers.restore()
            _random_state.restore(generators)
            set_(before)
            raise
        except Exception as failure:  # Python's `if` meets it again where it belongs (a side
            # not taken may raise: `t * 2 if ok else 0.0` where t is bound where ok holds)
            del self.pending[records:]
            _restore(saved)
            containers.restore()
            _random_state.restore(generators)
            set_(before)
            reason = str(failure)
        else:
            reason = None
        if reason is not None:  # out of the except: the failure's traceback holds the sides
            return self._not_captured(condition, then, otherwise, location, reason, first_check)
        k = backend()
        rebound, updated = merged[2]
        raising = self.context.raising_ops != raising_before  # never a select: see TraceContext
        # A side holding a loop runs only when taken: a select ran it on every pass (a
        # sieve's inner loop for every i, not only the primes).
        big = (rebound > SELECT_AT_MOST and updated <= SELECT_AT_MOST
               or self.loop_bodies != loop_bodies)
        if any(isinstance(value, (Appended, Stack)) for value in merged[1]):
            # a list appended to on a side: a select of its count (kiln._conditional_appends)
            if raising:
                del self.pending[records:]
                return self._not_captured(condition, then, otherwise, location, "a side that "
                                          "appends to a list may raise", first_check)
            select = True
        if raising or (not select and (BRANCH_FORM == "loops" or
                                       (big and BRANCH_FORM != "select"))):
            # Big sides: each runs only when taken (a loop of 0 or 1 iterations per side).
            merged = None  # nothing may hold the sides traced for a select (_not_captured)
            del self.pending[records:]
            _restore(saved)
            set_(before)
            trace.condition_checks(first_check, self.context.constant(False, np.dtype(bool)))
            try:
                with read_only(before):
                    self._capture_cond(predicate, then, otherwise, get, set_, names, location)
                self._listed(listed, "branch", location)
                return
            except CaptureFailed:  # sides that carry different things: a loop per side
                _restore(saved)
                set_(before)
            outer_side_loop, self.side_loop_depth = self.side_loop_depth, self.depth + 1
            try:
                del self.pending[records:]
                for run, taken in ((then, predicate), (otherwise, k.logical_not(predicate))):
                    stop = TracedArray(self.context, cast(taken, "int64"))
                    mark = trace.check_count
                    with read_only(before):
                        self._capture((0, stop), None, lambda index, run=run: run(),
                                      lambda: get() + (self.UNBOUND,),
                                      lambda values: set_(values[:-1]), names + ("",), names,
                                      location)
                    # a check of work the side's loop hoisted (it reads no carried value:
                    # `solve(A, b) if ok else b`) is outside the loop: it applies where taken
                    trace.condition_checks(mark, taken)
                self._listed(listed, "branch", location)
                return
            except CaptureFailed as failure:  # select after all
                del self.pending[records:]
                _restore(saved)
                set_(before)
                reason = str(failure)
            finally:
                self.side_loop_depth = outer_side_loop
            if raising:  # out of the except, as above
                return self._not_captured(condition, then, otherwise, location, reason,
                                          first_check)
            return self.branch(condition, then, otherwise, get, set_, names, location, True,
                               live, listed, written)
        for key, tensor in merged[0].items():
            arrays[key]._tensor, arrays[key]._version = tensor, arrays[key]._version + 1
        set_(merged[1])
        self._listed(listed, "select", location)

    def _listed(self, listed, kind, location):
        if listed:
            self.record(kind, location, "")

    def _not_captured(self, condition, then, otherwise, location, reason, first_check):
        """The branch as Python's `if` (a graph break at its condition); inside a captured loop,
        that loop cannot be captured. What was traced for it since `first_check` is dropped: its
        checks never fire, and, as its caller holds none of the sides' values, the graph break
        computes only what Python's `if` needs (the side not taken may solve a singular system,
        which NumPy never does: `np.linalg.solve(A, b) if ok else b`)."""
        self.context.trace.condition_checks(first_check,
                                            self.context.constant(False, np.dtype(bool)))
        if self.depth > 0:
            raise CaptureFailed(f"the branch at {location}: {reason}")
        return running_as_written(then if condition else otherwise)()

    def _traced_sides(self, then, otherwise, get, set_, names, before, arrays, saved,
                      predicate, containers, generators, live, written=()):
        """Both sides traced on the state `before`, each undone after it, and merged (_merge).
        Each side's checks apply where it is taken (condition_checks conditions every check
        from a mark on: a side's, as soon as it is traced; the else side's never fired). The
        sides' values live in this frame only: a failure leaves nothing that holds them
        (_not_captured)."""
        trace, sides = self.context.trace, []
        mark = trace.check_count
        for run, taken in ((then, predicate), (otherwise, backend().logical_not(predicate))):
            self.sides += 1
            self.context.branch_sides += 1
            try:
                run()
            finally:
                self.sides -= 1
                self.context.branch_sides -= 1
            trace.condition_checks(mark, taken)
            mark = trace.check_count
            containers.check()
            sides.append((get(), {key: a._tensor for key, a in arrays.items()},
                          trace.check_count))
            _restore(saved)
            set_(before)
        if _random_state.drew(generators):  # both sides ran: NumPy draws on one
            raise CaptureFailed("a random generator draws in a side of the branch")
        return self._merge(predicate, names, before, arrays, sides, live, written)

    def _capture_cond(self, predicate, then, otherwise, get, set_, names, location):
        """The branch as one cond node (ir/cond.h): each side traced as a body on the same
        carried variables; sides that would carry different ones raise CaptureFailed."""
        trace = self.context.trace
        before, types = get(), {}
        variables = dict(zip(names, before))
        mark, records = trace.cond_side_count, len(self.pending)
        for attempt in range(3):
            del self.pending[records:]  # the sides' loops of the attempt before
            try:
                sides = []
                for run in (then, otherwise):
                    sides.append(self._trace_once(
                        None, None, lambda index, run=run: run(), lambda: get() + (self.UNBOUND,),
                        lambda values: set_(values[:-1]), names + ("",), names, location,
                        before + (self.UNBOUND,), types, None, side=True))
                break
            except _Retype as retype:
                trace.abandon_cond_sides(mark)
                types.update(retype.types)
            except CaptureFailed:
                trace.abandon_cond_sides(mark)
                raise
        else:
            trace.abandon_cond_sides(mark)
            raise CaptureFailed("the types of the branch's variables do not settle")
        (slots, after), (other_slots, other_after) = sides
        agree = [s[0] for s in slots] == [s[0] for s in other_slots] and all(
            _type_of(a[3]) == _type_of(b[3]) and (a[1] is None or
                                                   (after[names.index(a[0][0])] is a[1]) ==
                                                   (other_after[names.index(a[0][0])] is a[1]))
            and _same_kind(after[names.index(a[0][0])], other_after[names.index(a[0][0])])
            for a, b in zip(slots, other_slots))
        if not agree:
            trace.abandon_cond_sides(mark)
            raise CaptureFailed("the sides of the branch carry different variables")
        saved = {id(s[1]): (s[1], s[1]._tensor, s[1]._scalar) for s in slots if s[1] is not None}
        trace.location = location
        values = trace.end_cond(predicate)
        # Names bound by the then side only stay as before where the else side ran; a value
        # that differs between the sides is in the cond's results either way.
        self._apply(slots, values, names, after, set_, None, saved, False, variables)

    def _merge(self, predicate, names, before, arrays, sides, live, written=()):
        k = backend()
        (then_values, then_arrays, _), (else_values, else_arrays, _) = sides
        merged_arrays, rebound, updated = {}, 0, 0  # elements selected between
        for key in arrays:
            a, b = then_arrays[key], else_arrays[key]
            merged_arrays[key] = a if a.id == b.id else k.where(predicate, a, b)
            updated += 0 if a.id == b.id else int(np.prod(a.shape))
        values, earlier = [], None
        for name, old, a, b in zip(names, before, then_values, else_values):
            if a is b:
                values.append(a if a is not old else self.KEEP)
                continue
            if isinstance(a, (Appended, Stack)) or isinstance(b, (Appended, Stack)):
                values.append(_loop_appends.merged(self.context, predicate, name, a, b))
                continue
            a, b = _as_on_side(a, arrays, then_arrays), _as_on_side(b, arrays, else_arrays)
            if (a is self.UNBOUND) != (b is self.UNBOUND) and (
                    is_result(name) or is_found(name) or is_payload(name)):
                # read only where its side ran (kiln._loop_returns, kiln._loop_else), or its
                # flag is set (kiln._loop_optional_values)
                a, b = _returned_on_one_side(a, b, self.UNBOUND)
            if (a is self.UNBOUND or b is self.UNBOUND) and live is not None and name not in live:
                # a temporary of one side (`if E >= w: t = ...; S += t`), read nowhere after
                values.append(self.UNBOUND)
                continue
            if a is self.UNBOUND or b is self.UNBOUND:
                raise CaptureFailed(f"`{name}` is bound on one side of the branch only")
            if name in written and earlier is None:
                earlier = _earlier_roots(before)
            if name in written and _other_arrays(a, b, earlier):
                # NumPy's name holds one of the two arrays, which a write through it, or through
                # their own names, changes; where(p, a, b) is a third (`u, v = v, u` under a
                # traced condition, a loop's body after its break: the writes were lost)
                raise CaptureFailed(f"`{name}` holds another array on each side of the branch, "
                                    f"and the function writes arrays in place")
            if is_result(name) and (a is None) != (b is None):
                values.append(self._returned_or_none(predicate, name, a, b))
                continue
            merged, count = self._selected(predicate, name, a, b)
            values.append(merged)
            rebound += count
        return merged_arrays, tuple(values), (rebound, updated)

    def _selected(self, predicate, name, a, b):
        """where(predicate, a, b) of one name's values, and its element count. Tuples of the
        same length select item by item (a search's `best = (score, j, threshold)`). Numbers
        of different types, a Python number written in the code and a NumPy scalar, are an
        AssumedNumber (kiln._assumed_numbers)."""
        if a is b:
            return a, 0
        if type(a) is tuple and type(b) is tuple and len(a) == len(b):
            items = [self._selected(predicate, name, x, y) for x, y in zip(a, b)]
            return tuple(item for item, _ in items), sum(count for _, count in items)
        if not ((isinstance(a, TracedArray) or _is_number(a)) and
                (isinstance(b, TracedArray) or _is_number(b))):
            raise CaptureFailed(f"`{name}` is not an array, a number or a tuple of them on both "
                                "sides")
        if _views_of_one_array(a, b):
            return _merged_view(self.context, predicate, a, b), int(np.prod(a.tensor.shape))
        for value in (a, b):
            if isinstance(value, TracedArray) and not _plain(value):
                # where(p, a, b) would be neither a view (writes through it were lost) nor a
                # selection (x[mask] stood for all of x)
                raise CaptureFailed(f"`{name}` is a view, a masked selection or a slice with a "
                                    "loop-varying bound on a side of the branch")
        reselected = _assumed_numbers.reselect(self.context, predicate, a, b)
        if reselected is not None:
            return reselected, 1
        ta, tb = (to_tensor(self.context, v) for v in (a, b))
        if _type_of(ta) != _type_of(tb) or _python_type(a) != _python_type(b) and any(
                _written_number(v) for v in (a, b)):
            side = self._numpy_side(a, b, ta, tb)
            if side is None:
                raise CaptureFailed(f"`{name}` has different dtypes or shapes on the two sides")
            taken = TracedArray(self.context, predicate if side is a else
                                backend().logical_not(predicate))
            return _assumed_numbers.select(self.context, taken, side, b if side is a else a), 1
        if not self.depth and not ta.shape and _one_python_number(a, b):
            # a traced Python number (a loop's counter) beside NumPy's scalar of its dtype: an
            # AssumedNumber, as a written one is (in a loop body: BranchRetyping)
            numpy_taken = predicate if _python_type(a) is None else backend().logical_not(
                predicate)
            return _assumed_numbers.assumed(
                self.context, backend().where(predicate, ta, tb),
                TracedArray(self.context, numpy_taken), _python_type(a) or _python_type(b)), 1
        merged = TracedArray(self.context, backend().where(predicate, ta, tb))
        # a Python number on both sides stays one (weak in promotion: int8 + counter is
        # int8), a NumPy scalar on both sides one
        merged._scalar = all(_is_number(v) or v._scalar for v in (a, b))
        if not ta.shape and _is_scalar(a) != _is_scalar(b):
            merged._scalar = self._scalar_or_zero_d(predicate, name, a)
        # (a loop's carried Python number and a NumPy scalar: a NumPy scalar in the body; the
        # loop keeps whether the NumPy side was ever taken: kiln._loop_number_types)
        weak = {_python_type(v) for v in (a, b)}
        merged._weak = weak.pop() if len(weak) == 1 else None
        if merged._scalar and merged._weak is None and None in weak and self.depth:
            numpy_taken = predicate if _python_type(a) is None else backend().logical_not(
                predicate)
            self.numpy_sides.append((self.depth, name, numpy_taken))
        return merged, int(np.prod(ta.shape))

    def _returned_or_none(self, predicate, name, a, b):
        """The function's result where one side returns None (`if np.any(x < 0): return None`,
        a check that gives up) and the other an array: the trace returns the array and the
        call reruns eagerly where the None side is taken, so the caller gets NumPy's None
        (it was a graph break, the call eager every time); a tuple of arrays and numbers too
        (`return best`, an optional's `(i, x[i])`); refused where no call reruns."""
        array = b if a is None else a
        if rerun_note(self.context) is None or not _traced_values(array):
            raise CaptureFailed(f"`{name}` is None on one side of the branch")
        none_taken = cast(predicate, "bool")
        if a is not None:
            none_taken = backend().logical_not(none_taken)
        rerun_where(self.context, none_taken, "the function returns None where the trace "
                    "returned an array (the call runs again eagerly)", "select")
        return array

    def _scalar_or_zero_d(self, predicate, name, a):
        """Whether the branch's value is a NumPy scalar where one side is one and the other a
        0-d array (`v / n if n > 0 else v` of v = np.asarray(x)): NumPy returns the side
        taken, so the trace assumes `a`'s and reruns the call eagerly where the other is
        taken; refused where no call reruns."""
        if rerun_note(self.context) is None:
            raise CaptureFailed(f"`{name}` is a NumPy scalar on one side of the branch and a 0-d "
                                "array on the other")
        rerun_where(self.context, backend().logical_not(cast(predicate, "bool")),
                    "a branch took the side of a 0-d array where the trace assumed a NumPy "
                    "scalar, or the other way around (the call runs again eagerly)", "select")
        return _is_scalar(a)

    def _numpy_side(self, a, b, ta, tb):
        """Of two single numbers whose types differ, one a Python number written in the code
        (`max(hi - lo, 1)`: a NumPy float64 or the int 1), the other side: the branch's value
        is then an AssumedNumber, of that side's type until a use tells them apart, which
        reruns the call eagerly where the Python number's side is taken. None where no call
        reruns, or where the Python number is traced (a loop's carried `best = 0`, whose type
        the body changes: the check would fail in most iterations)."""
        if ta.shape or tb.shape or rerun_note(self.context) is None:
            return None
        written = [v for v in (a, b) if _written_number(v)]
        if len(written) != 1:
            return None
        side = b if written[0] is a else a
        # (a traced Python number, a loop's counter, is no NumPy side: its type is Python's)
        return side if _python_type(side) is None else None


def _is_scalar(value):
    """Whether a branch's value is a number, not a 0-d array."""
    return _is_number(value) or value._scalar


def _one_python_number(a, b):
    """Whether one of two numbers is a Python number (or stands for one) and the other NumPy's
    scalar."""
    return sum(_python_type(v) is not None for v in (a, b)) == 1 and all(
        _python_type(v) is not None or _is_scalar(v) for v in (a, b))


def _same_kind(a, b):
    """Whether two values of a name after the sides of a cond are alike beyond dtype and shape:
    both NumPy's scalars, both 0-d arrays, or both Python numbers of one type (the cond's
    value takes the first side's: `d = 1.0` beside a side's float64 gave Python's float either
    way). An AssumedNumber is alike only to itself (its kind is the data's)."""
    if a is b:
        return True
    if any(isinstance(v, _assumed_numbers.AssumedNumber) for v in (a, b)):
        return False
    return _number_kind(a) == _number_kind(b)


def _number_kind(value):
    if isinstance(value, TracedArray):
        return value._scalar, value._weak
    return _is_number(value), _python_type(value)


def _written_number(value):
    """A Python number itself (not one traced: a loop's carried `s = 0.0`, a dynamic float)."""
    return not isinstance(value, TracedArray) and _python_type(value) is not None


def _earlier_roots(before):
    """By id, the plain arrays the branch's names reach before it: held, viewed, or items of
    the lists, dicts, tuples and objects' attributes they hold (`w = L[0]` or `w = h.buf` on
    one side, another array on the other: NumPy's w is that array, which a write changes)."""
    roots = {}
    for value in reachable(before):
        root = value._root if isinstance(value, TracedArray) and value._root is not None else value
        if _plain(root):
            roots[id(root)] = root
    return roots


def _other_arrays(a, b, arrays):
    """Whether a and b are (views of) two different arrays, one of them from before the branch
    (`arrays`: by id, the plain arrays the branch's names reached, _earlier_roots), or tuples
    holding such a pair at one place (`(v, u) if c else (u, v)`); numbers, NumPy's scalars
    among them, are never changed in place (`i += 1` rebinds)."""
    if type(a) is tuple and type(b) is tuple and len(a) == len(b):
        return any(_other_arrays(x, y, arrays) for x, y in zip(a, b))
    roots = [v._root if isinstance(v, TracedArray) and v._root is not None else v for v in (a, b)]
    return (roots[0] is not roots[1] and
            any(isinstance(root, TracedArray) and not root._scalar and
                arrays.get(id(root)) is root for root in roots))


def _views_of_one_array(a, b):
    return (isinstance(a, TracedArray) and isinstance(b, TracedArray)
            and a._root is not None and a._root is b._root and a._root_shape == b._root_shape
            and a._selection is None and b._selection is None and not (a._scalar or b._scalar)
            and _type_of(a.tensor) == _type_of(b.tensor))


def _merged_view(context, predicate, a, b):
    """where(predicate, a, b) of two views of one array (`v = y[:3] if c else y[-3:]`), itself a
    view of it: it reads the chosen side's elements, and a write through it goes where that
    side's view would have written."""
    k, root = backend(), a._root
    forward_a, backward_a, forward_b, backward_b = a._forward, a._backward, b._forward, b._backward
    merged = TracedArray(context, k.where(predicate, a.tensor, b.tensor))
    merged._root, merged._root_shape, merged._root_version = root, a._root_shape, root._version
    merged._forward = lambda whole: k.where(predicate, forward_a(whole), forward_b(whole))
    merged._backward = lambda whole, value: k.where(predicate, backward_a(whole, value),
                                                    backward_b(whole, value))
    merged._read_only = a._read_only or b._read_only
    merged._overlapping = a._overlapping or b._overlapping
    return merged


def _traced_values(value):
    """Whether `value` is an array, or a tuple of arrays and numbers, the trace can return."""
    if type(value) is tuple:
        return bool(value) and all(isinstance(item, TracedArray) or _is_number(item)
                                   for item in value)
    return isinstance(value, TracedArray)


def _returned_on_one_side(a, b, unbound):
    """An early return's result (kiln._loop_returns) set on one side only: zeros of its type on
    the other, which reads it only where the returning side ran (its flag set)."""
    bound = b if a is unbound else a
    if isinstance(bound, TracedArray):
        zero = np.zeros_like(bound)
        zero._scalar, zero._weak = bound._scalar, bound._weak
    elif _is_number(bound):
        zero = type(bound)(0)
    else:
        return a, b
    return (zero, b) if a is unbound else (a, zero)


def _as_on_side(value, arrays, side_arrays):
    """A name's value on one side, where it holds an array that side wrote in place
    (`out[3] = v; result = out` after a loop that may return early): the array holds the state
    before the branch again while the other side runs, so the side's contents stand in for it."""
    if (not isinstance(value, TracedArray) or arrays.get(id(value)) is not value
            or side_arrays[id(value)] is value._tensor):
        return value
    on_side = copy.copy(value)
    on_side._tensor = side_arrays[id(value)]
    return on_side


def _restore(saved):
    for array, tensor, scalar in saved.values():
        array._tensor, array._scalar, array._version = tensor, scalar, array._version + 1
