"""Numbers whose Python type depends on the data: a branch between a traced NumPy scalar and a
Python number written in the code (`max(hi - lo, 1)`, `if d < 1: d = 1`, `x[j] if ok else -1.0`)
gives a NumPy float64 on one side and Python's int 1 on the other. One tensor of the NumPy
side's dtype holds both values (a select), but what NumPy makes of the value next depends on
its type (NEP 50: a Python number is weak, `x32 * 1` is float32 and `x32 * np.float64(1)`
float64), and so does the type the function returns. Such a branch was a graph break.

An AssumedNumber is that select, typed as the NumPy side. The ops that know it, NumPy's ufuncs
and the operators (kiln._numpy_api.call_ufunc, kiln._tracer_operators), resolve NumPy's loop for
both types: where it is the same, so is the value, and the result holds for either
(`(img - lo) * 255.0 / max(hi - lo, 1)` is float64 either way); a result that would be a Python
number on the Python side stays an AssumedNumber. Any other use reads its tensor (a list's
item, `x32 * max(s, 1)` whose loops differ): that commits the assumption, a check that reruns
the call eagerly where the Python number's side is taken (kiln._loop_types.rerun_where), so
that NumPy's own run gives the type. A return is no use: the side taken comes out of the graph
beside the value, and the caller gets the type NumPy's run would have given (`returned`); nor
is a loop that carries it: it carries the side taken too (kiln._loop_scalar_kinds).
"""
import functools
import itertools
import warnings

import numpy as np

from ._graph_breaks import graph_break
from ._loop_types import rerun_where
from ._pytree import Rebuilt
from ._tracer import TracedArray, backend, cast, to_tensor, weak_type

_DIVISIONS = (np.true_divide, np.floor_divide, np.remainder, np.divmod)
# Python's operators that keep two bools bools, as NumPy's do (kiln._tracer_operators)
_BOOLS_KEPT = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
               np.bitwise_and, np.bitwise_or, np.bitwise_xor)


class AssumedNumber(TracedArray):
    """A traced number that is a NumPy scalar where `_taken` holds and the Python number of
    type `_python` elsewhere (the same value in this dtype)."""

    # _by_run: NumPy's where a loop ran an iteration (kiln._loop_number_types.settle)
    __slots__ = ("_taken", "_python", "_committed", "_depth", "_by_run")

    @property
    def tensor(self):
        commit(self)
        return self._tensor

    @property
    def shape(self):  # () either way: no commit (min/max ask for the size)
        return tuple(self._tensor.shape)


def assumed(context, tensor, taken, python):
    """An AssumedNumber of `tensor`, NumPy's scalar where the bool 0-d traced `taken` holds and
    a Python number of type `python` elsewhere (a loop's number a branch retypes)."""
    number = AssumedNumber(context, tensor)
    number._scalar = True
    number._taken, number._python, number._committed = taken, python, False
    number._depth = context.in_body  # the loop bodies its condition is computed in
    number._by_run = False
    return number


def select(context, taken, numpy_side, python_side):
    """The branch's value: `numpy_side` (a traced or NumPy scalar) where the bool 0-d traced
    `taken` holds, the Python number `python_side` elsewhere. Committed at once where one
    tensor cannot hold both values exactly (0.5 beside a uint8), or where the NumPy side is a
    0-d array (NumPy's result type would be another still)."""
    k = backend()
    numpy_tensor = to_tensor(context, numpy_side)
    dtype = np.dtype(numpy_tensor.dtype)
    exact = (dtype.kind in "iuf" or dtype.kind == "b" and type(python_side) is bool) and (
        holds(dtype, python_side)) and (
        not isinstance(numpy_side, TracedArray) or numpy_side._scalar)
    python_tensor = context.constant(python_side if exact else 0, dtype)
    number = assumed(context, k.where(cast(taken.tensor, "bool"), numpy_tensor, python_tensor),
                      taken, type(python_side))
    if not exact:
        commit(number)
    return number


def holds(dtype, value):
    """Whether `dtype` holds the Python number `value` exactly (2**60 + 1 is no float64)."""
    if isinstance(value, complex):
        return False
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 1.x wraps 300 to 44
            stored = dtype.type(value)
        if dtype.kind in "iu" or isinstance(value, int):  # (int(inf): OverflowError)
            return float(value).is_integer() and int(stored) == value
        return float(stored) == value  # exactly (NEP 50 compares 0.1 as a float32; NaN: no)
    except (OverflowError, ValueError):
        return False


def is_open(value):
    """An AssumedNumber not committed yet (None: only in the loop body it was made in)."""
    return isinstance(value, AssumedNumber) and value._committed is False


def commit(number):
    """The assumption becomes a check (the NumPy side was taken), once for the whole call
    where it is recorded outside loop bodies and branch sides (whose checks apply where they
    run): elsewhere at each use."""
    if number._committed:
        return
    context = number._context
    if context.in_body < number._depth:
        # read after the loop body it was made in (the loop's own bookkeeping): the body
        # carried it out of the loop, which read it there (a check of the body's)
        if number._committed is None:
            number._committed = True
            return
        graph_break("a number whose type depends on a branch in a loop body, used after it")
    rerun_where(context, backend().logical_not(cast(number._taken.tensor, "bool")),
                "a branch took the side of a Python number, whose type the trace did not "
                "assume (the call runs again eagerly)", "select")
    if not context.in_body and not context.branch_sides:
        number._committed = True
    elif context.in_body == number._depth:
        number._committed = None  # checked in its body: not yet outside it


def returned(number, output):
    """The result leaf of an open AssumedNumber the function returns, outside loop bodies and
    branch sides: its value and which side the branch took are graph outputs (`output` of a
    tensor: its spec), and the caller gets NumPy's scalar or the Python number as the call
    went (a search's `return i, s` / `return -1, 0.0`), where a commit's check reran every call
    of the Python side eagerly. None where the number is committed or still in a body."""
    if not is_open(number) or number._context.in_body or number._context.branch_sides:
        return None
    taken = cast(number._taken.tensor, "bool")
    return Rebuilt(functools.partial(_as_taken, number._python),
                   (output(number._tensor), output(taken)))


def _as_taken(python, parts):
    value, taken = parts
    return value if taken else python(value)


def as_index(key):
    """An index key with its open AssumedNumbers of Python's int and an integer dtype read as
    NumPy's integers: they index alike (`x[max(j - 1, 0)]`)."""
    def index(item):
        return _strong(item) if (is_open(item) and item._python is int
                                 and np.dtype(item._tensor.dtype).kind in "iu") else item
    return tuple(index(item) for item in key) if isinstance(key, tuple) else index(key)


def as_stored(value, dtype):
    """`x[i] = value` of an open AssumedNumber into an array of `dtype` that stores either
    reading alike (a float or complex array, or its own dtype, which holds the Python number
    exactly): its NumPy reading, uncommitted. A binomial tree's payoff `V[j] = max(K - S, 0)`
    committed the choice, and every call whose payoff was 0 somewhere ran again eagerly."""
    if is_open(value) and (np.dtype(dtype).kind in "fc"
                           or np.dtype(dtype) == np.dtype(value._tensor.dtype)):
        return _strong(value)
    return value


def reselect(context, predicate, a, b):
    """`a if predicate else b` where one side is an open AssumedNumber and the other a number
    of one of its kinds: a Python number of its Python type that its dtype holds
    (`min(max(v, 0.0), 1.0)`), NumPy's scalar of its dtype (`level = x[i]`, else as before),
    or another such AssumedNumber: an AssumedNumber again, its NumPy side taken where the
    predicate picks a side that was NumPy's; None otherwise (the number is committed, as any
    other use)."""
    k = backend()
    for number, other, picks in ((a, b, predicate), (b, a, k.logical_not(predicate))):
        if not is_open(number):
            continue
        dtype = np.dtype(number._tensor.dtype)
        other = as_kind(context, other, dtype, number._python)
        if other is None:
            continue
        if other is False:
            return None
        other_tensor, other_taken = other
        taken = TracedArray(context, k.where(picks, cast(number._taken.tensor, "bool"),
                                             other_taken))
        tensor = k.where(picks, number._tensor, other_tensor)
        return assumed(context, tensor, taken, number._python)
    return None


def as_kind(context, value, dtype, python):
    """(tensor, whether NumPy's: a bool 0-d tensor) of `value` as a number of `dtype` whose
    Python reading is `python`: None where it is neither kind, False where it is a Python
    number of that type that `dtype` does not hold exactly."""
    if type(value) is python:
        if not holds(dtype, value):
            return False
        return context.constant(value, dtype), context.constant(False, np.dtype(bool))
    if (isinstance(value, TracedArray) and value._weak is python and value.ndim == 0
            and np.dtype(value.dtype) == dtype):  # a traced Python number (a loop's counter)
        return value.tensor, context.constant(False, np.dtype(bool))
    if is_open(value):
        if value._python is not python or np.dtype(value._tensor.dtype) != dtype:
            return None
        return value._tensor, cast(value._taken.tensor, "bool")
    if isinstance(value, AssumedNumber):  # committed: read as NumPy's (a check holds it)
        return None
    strong = (isinstance(value, TracedArray) and value._scalar and value._weak is None
              and value.ndim == 0) or isinstance(value, np.generic)
    if not strong or np.dtype(value.dtype) != dtype:
        return None
    return to_tensor(context, value), context.constant(True, np.dtype(bool))


def uncommitted_tensor(value):
    """A traced value's tensor, an AssumedNumber's not committed: for reads that either kind
    answers alike (its truth, `if state:`) and for bookkeeping."""
    return value._tensor if isinstance(value, AssumedNumber) else value.tensor


def _strong(number):
    """The NumPy side's reading of an AssumedNumber: a NumPy scalar of its tensor."""
    value = TracedArray(number._context, number._tensor)
    value._scalar = True
    return value


def _readings(inputs):
    """The types `inputs` have under each choice of their open AssumedNumbers' sides (one
    choice per distinct condition, the NumPy sides' first): lists of weak_type()s."""
    open_numbers = [x for x in inputs if is_open(x)]
    conditions = list({id(x._taken): x._taken for x in open_numbers}.values())
    for choice in itertools.product((False, True), repeat=len(conditions)):
        python = {id(c) for c, side in zip(conditions, choice) if side}
        yield [(_weak(x._python) if id(x._taken) in python else np.dtype(x._tensor.dtype))
               if is_open(x) else weak_type(x) for x in inputs]


def _weak(python):
    """What NumPy's dtype resolution sees of a Python number of type `python` (a bool: NumPy's
    bool, weak_type's)."""
    return np.dtype(bool) if python is bool else python


def settled(inputs, resolve):
    """A ufunc's inputs with open AssumedNumbers read as NumPy scalars where NumPy's loop
    (resolve(types)) is the same under every reading; as they are (committed when read)
    otherwise."""
    if not any(is_open(x) for x in inputs):
        return inputs
    try:
        loops = {resolve(tuple(types)) for types in _readings(inputs)}
    except Exception:  # NumPy has no loop for one reading: commit
        return inputs
    if len(loops) != 1:
        return inputs
    return tuple(_strong(x) if is_open(x) else x for x in inputs)


def operator(ufunc, operands, run, resolve):
    """An operator (`a / b`: run(a, b)) with open AssumedNumbers among its `operands` (in the
    ufunc's order): its result where NumPy's loop is the same under every reading of them,
    an AssumedNumber again where Python's operator gives a Python number where all of them
    are Python's (`255.0 / max(hi - lo, 1)`; `fired + (armed + 1)` of two conditions: NumPy's
    where either is), whose division by zero raises there (a check); None where the operator
    commits them (loops that differ, `**`)."""
    numbers = [x for x in operands if is_open(x)]
    if not numbers or ufunc is np.power:
        return None
    try:
        if len({resolve(tuple(types)) for types in _readings(operands)}) != 1:
            return None
    except Exception:  # NumPy has no loop for one reading
        return None
    conditions = list({id(x._taken): x._taken for x in numbers}.values())
    taken = conditions[0]
    for other in conditions[1:]:
        taken = TracedArray(taken._context, backend().logical_or(
            cast(taken.tensor, "bool"), cast(other.tensor, "bool")))
    plain = [_strong(x) if is_open(x) else x for x in operands]
    python_numbers = all(_python_kind(x) is not None for x in operands)
    if (python_numbers and all(_python_kind(x) is bool for x in operands)
            and ufunc not in _BOOLS_KEPT):
        return None  # Python's bools compute as ints there (True + True is 2)
    if python_numbers and ufunc in _DIVISIONS:
        divisor = plain[1]
        if isinstance(divisor, TracedArray) or divisor == 0:
            # Python's ZeroDivisionError, where the Python side is taken (NumPy's inf else)
            context = taken._context
            zero = backend().logical_and(
                backend().logical_not(cast(taken.tensor, "bool")),
                cast(np.equal(divisor, 0).tensor if isinstance(divisor, TracedArray)
                     else context.constant(True, np.dtype(bool)), "bool"))
            backend().check_flag(zero, context.lift(np.zeros(0, np.int64)).tensor,
                                 "division by zero", "", ufunc.__name__,
                                 error="ZeroDivisionError")
    result = run(*plain)
    if (python_numbers and isinstance(result, TracedArray) and result.ndim == 0
            and result.dtype.kind in "bifc"):  # (`level > 0.0`: Python's bool or NumPy's)
        return assumed(result._context, result.tensor, taken,
                        {"b": bool, "i": int, "f": float, "c": complex}[result.dtype.kind])
    return result


def _python_kind(value):
    """The Python type an operand is in its Python reading (an open AssumedNumber's Python
    side, a Python number or bool, traced or not); None for NumPy's scalars and arrays."""
    if is_open(value):
        return value._python
    if isinstance(value, TracedArray):
        return value._weak
    return type(value) if type(value) in (bool, int, float, complex) else None
