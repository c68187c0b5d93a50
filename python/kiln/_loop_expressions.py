"""The expressions of a function that kiln._loop_transform rewrites for capture, at run time:
`and`/`or`/`not`, conditional expressions, min/max of several values, and float()/int()/bool()/
.item() in loops. On concrete values they are Python's; on traced ones they stay in the graph
(selects, traced Python numbers) instead of asking bool() or float() of a traced value, a graph
break. A mixin of kiln._loop_capture.LoopCapture, whose branch() and state they use."""
import builtins
import os
import sys

import numpy as np

from . import (_assumed_numbers, _clamped_bounds, _helper_writes, _masked_selections,
               _math_calls, _numpy_sequences, _stacked_rows)
from ._loop_attribute_checks import why_not_carried
from ._loop_types import rerun_note
from ._tracer import TracedArray, backend, cast, check_traced_int_fits, to_tensor

# `for i in np.arange(3)`: a created array of known values this short iterates as Python, its
# items known too (static indices: x[i] reads no index array, kiln._numpy_creation)
_KNOWN_UNROLLED = 16


def _truth(value, context=None):
    """An operand of a test's `and`/`or` as its truth: a traced single element as a bool 0-d
    array (bool(nan) is True), other traced arrays as they are (bool() raises as NumPy's for
    several elements), anything else as Python's bool() (a list: `while stack and ...`), a
    traced one given the `context` (the other side of a select on a traced operand: one type,
    where a Python bool's side made the call rerun eagerly whenever it was not taken)."""
    if isinstance(value, TracedArray):
        if value.size != 1:
            return value
        # (a number whose kind a branch picks is true alike either way: not committed)
        return TracedArray(value._context, cast(backend().reshape(
            _assumed_numbers.uncommitted_tensor(value), []), "bool"))
    if context is not None:
        return TracedArray(context, context.constant(bool(value), np.dtype(bool)))
    return bool(value)


def _is_real_number(value):
    if isinstance(value, TracedArray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    return isinstance(value, (int, float, np.integer, np.floating))


class ExpressionCapture:
    def attributes_carried(self, line, *parts):
        """Whether names may carry the attributes the loop at `line` assigns
        (kiln._loop_attribute_updates); where not, it runs as written, for this reason."""
        reason = why_not_carried(*parts)
        if reason is not None:
            filename = os.path.basename(sys._getframe(1).f_code.co_filename)
            self.record("unrolled", f"{filename}:{line}", reason)
        return reason is None

    # ---- `and`, `or`, `not`, conditional expressions (kiln._loop_short_circuit) ----

    def short_circuit(self, first, rest, conjunction, in_test, location, names, reads,
                      written=False):
        """`first and rest()` (conjunction) or `first or rest()`: Python's value. On a traced
        `first`, a branch (choose) whose side evaluating rest() is taken where `first` does not
        decide: rest's checks apply only there, and a rest that draws, changes a list or
        raises on data is Python's. in_test: the operands stand as their truth (a test reads
        nothing else), so that traced ones of different dtypes still make one bool."""
        if in_test:
            first = _truth(first)
            context = self.context if isinstance(first, TracedArray) else None
            later = lambda: _truth(rest(), context)  # noqa: E731
        else:
            later = rest
        decided = lambda: first  # noqa: E731
        then, otherwise = (later, decided) if conjunction else (decided, later)
        # written: as choose's (`w = a or b` is a or b itself: kiln._loop_short_circuit)
        return self.choose(first, then, otherwise, location, names, reads, not in_test,
                           written)

    @staticmethod
    def not_(value):
        """`not value`: Python's bool, traced for a traced value (a flag `p = not p`)."""
        if not isinstance(value, TracedArray):
            return not value
        result = np.logical_not(value)
        if isinstance(result, TracedArray) and result.ndim == 0:
            result._scalar, result._weak = True, builtins.bool
        return result

    def choose(self, condition, then, otherwise, location, names=(), reads=None, listed=True,
               written=False):
        """`then() if condition else otherwise()`: a branch binding one value (a select).
        names, reads(): the names the sides read and their values, the branch's state.
        listed: whether kiln.explain lists the branch (BranchCapture.branch). written: whether
        an array the sides read may be written in place (BranchCapture.branch's)."""
        if not isinstance(condition, TracedArray) or condition.size != 1:
            return then() if condition else otherwise()
        box = {}

        def get():
            return (box.get("value", self.UNBOUND),) + (reads() if reads is not None else ())

        def set_(values):  # the sides rebind no name they read
            if values[0] is self.UNBOUND:
                box.pop("value", None)
            elif values[0] is not self.KEEP:
                box["value"] = values[0]

        def side(run):
            return lambda: box.__setitem__("value", run())
        self.branch(condition, side(then), side(otherwise), get, set_, ("<value>",) + names,
                    location, select=True, listed=listed,
                    written=("<value>",) if written else ())
        return box["value"]

    def extremum(self, location, function, *operands, written=False):
        """Python's min(a, b, ...) / max(...): the first operand no other beats (b < a for
        min), chosen pairwise; with traced 0-d operands, selects. written: as choose's, an
        operand may be written in place: Python's max is that operand itself, and a choice of
        two arrays (one element each) no select."""
        if function not in (builtins.min, builtins.max) or not any(
                isinstance(o, TracedArray) and o.size == 1 for o in operands):
            return function(*operands)
        clamped = _clamped_bounds.traced_extremum(function is builtins.max, operands)
        if clamped is not None:  # max(0, i - k + 1): a window's bound, not a select
            return clamped
        beats = np.less if function is builtins.min else np.greater
        best = operands[0]
        for operand in operands[1:]:
            best = self.choose(beats(operand, best), lambda o=operand: o, lambda b=best: b,
                               location, ("<operand>", "<best>") if written else (),
                               (lambda o=operand, b=best: (o, b)) if written else None,
                               written=written)
        return best

    def complex_number(self, function, *parts):
        """`complex(re, im)` (kiln._loop_transform: complex_call) of traced real numbers
        (Numba's mandel: c = complex(x, y)): the Python complex they make, traced, where
        Python's complex() was a graph break; otherwise the call itself."""
        if function is not builtins.complex or not any(
                isinstance(part, TracedArray) for part in parts) or not all(
                _is_real_number(part) for part in parts):
            return function(*parts)
        k, context = backend(), self.context
        real, imaginary = (cast(k.reshape(to_tensor(context, part), []), "float64")
                           for part in (parts + (0.0,))[:2])
        result = TracedArray(context, k.complex(real, imaginary))
        result._scalar, result._weak = True, complex
        return result

    @staticmethod
    def scalar(kind, value):
        """`kind(value)` (kiln._loop_transform.scalar_call): a NumPy scalar type of a traced value
        is its cast (a NumPy scalar where the value has no axis, as NumPy's), Python's range
        check of a traced Python int included; otherwise the call itself."""
        if not (isinstance(value, TracedArray) and isinstance(kind, type)
                and issubclass(kind, np.generic) and np.dtype(kind).kind in "biufc"):
            return kind(value)
        if value._weak is int:
            check_traced_int_fits(value, np.dtype(kind), kind.__name__)
        result = value.astype(kind)
        result._scalar = result.ndim == 0
        return result

    @staticmethod
    def traced_sequences(*sequences):
        """Whether a `for` over these sequences (kiln._loop_transform.sequence_loop) iterates
        traced arrays (of at least one axis): then it indexes them in a range loop."""
        return all(isinstance(s, TracedArray) and s.ndim >= 1 and not (
            len(s) <= _KNOWN_UNROLLED and s.tensor.id in s._context.known) for s in sequences)

    @staticmethod
    def sequence(value, changes):
        """A sequence a `for` iterates (kiln._loop_rewrite_parts.sequence_loop): a traced view
        is copied where nothing can change it while the loop runs nor write through its rows
        later (`changes` false: kiln._loop_aliases, a bool or the calls of global functions
        that decide it), so that the loop, which cannot carry a view made before it, is
        captured; so is a list of a loop's appends (kiln._stacked_rows.iterated: their stack,
        indexed)."""
        changes = _helper_writes.verdict(changes, sys._getframe(1).f_globals)
        if (isinstance(value, TracedArray) and value.ndim >= 1 and value._root is not None
                and value._selection is None and not changes):
            return value.copy()
        stacked = _stacked_rows.iterated(value, lambda: not changes)
        return value if stacked is None else stacked  # a loop's appends: their stack

    @staticmethod
    def sequence_length(*sequences):
        return min(len(s) for s in sequences)  # zip stops at the shortest

    @staticmethod
    def listed(function, value, slot=None):
        """An argument of the traced function's call (at `slot`, its position or keyword) that
        may be a list of traced arrays handed to NumPy (`np.mean([a, b], axis=0)`,
        `np.maximum.reduce(masks)`): kiln._numpy_sequences."""
        return _numpy_sequences.listed(function, value, slot)

    # ---- float(x), int(x), bool(x), x.item() in loops (kiln._loop_transform) ----

    def returned(self, function, value):
        """A conversion that is (an element of) the function's returned value
        (kiln._rewritten_expressions._returned_conversions): traced as to_python makes it, the
        Python number or bool it stands for."""
        return self.to_python(function, value, True)

    def keeps_truths_traced(self):
        """Whether a Python bool that NumPy computes of traced arrays (np.array_equal,
        np.allclose: kiln._numpy_math) stays a traced bool here, as bool(x) does (to_python):
        in a loop body being captured, and in a while loop's test or body before its capture."""
        return bool(self.depth or self.converting or self.testing)

    def math_call(self, function, *args):
        """`math.sqrt(x)` and Python's other math functions (kiln._math_calls)."""
        return _math_calls.math_call(self, function, args)

    def to_python(self, function, value, in_test):
        """`function(value)` (`value.item()` when function is None). In a loop being captured,
        in a while loop's test, or in its body before the test is traced, a traced single
        element stays traced, as the Python number it stands for (weak, as NumPy treats Python
        numbers): float64, int64 or bool. An integer conversion of floats (Python raises on
        nan) or of uint64 (Python's int is exact) is Python's (a graph break). len() of a
        selection whose length the data decide is its traced length there."""
        if function is builtins.len:
            if (isinstance(value, TracedArray) and value._masked()
                    and (in_test or self.depth or self.converting)):
                return _masked_selections.length(value)
            return len(value)
        if (isinstance(value, TracedArray) and value.size == 1
                and (in_test or self.depth or self.converting)
                and function in (None, builtins.float, builtins.int, builtins.bool)):
            kind = np.dtype(value.dtype).kind
            if function is None:
                function = {"b": builtins.bool, "i": builtins.int, "u": builtins.int,
                            "f": builtins.float}.get(kind)
            dtype = {builtins.float: np.float64, builtins.int: np.int64,
                     builtins.bool: np.bool_}.get(function)
            exact = (kind in "biu" and np.dtype(value.dtype) != np.uint64
                     if function is builtins.int else kind in "biuf")
            if function is builtins.int and kind == "f" and rerun_note(self.context):
                return _math_calls.truncated(self.context, value)
            if dtype is not None and exact:
                number = TracedArray(self.context,
                                     cast(np.reshape(value, ()).tensor, np.dtype(dtype)))
                # (a Python bool: NumPy's bool in promotion, an int in Python's arithmetic)
                number._scalar = True
                number._weak = function
                return number
        return value.item() if function is None else function(value)
