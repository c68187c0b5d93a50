"""Python state a compiled function reads or changes, changed between calls or by the call
itself: each call sees it as eager NumPy's would, never a value fixed at an earlier trace."""
import collections
import functools
import itertools
import types
import warnings

import numpy as np
import pytest

import kiln


def counter():
    count = 0

    def step(x):
        nonlocal count
        count += 1
        return x + count
    return step


def test_a_closure_variable_the_function_rebinds_is_rebound_at_every_call():
    # From the second call on the count was a graph input: the trace's `count += 1` went to
    # a fresh cell, so every later call returned x + 2 and the count stayed 1.
    mine, theirs = counter(), counter()
    compiled = kiln.compile(mine)
    for _ in range(4):
        np.testing.assert_array_equal(compiled(np.ones(3)), theirs(np.ones(3)))
        assert mine.__closure__[0].cell_contents == theirs.__closure__[0].cell_contents
    report = kiln.explain(counter())(np.ones(3))
    assert "closure variable 'count'" in report.break_reasons[0].reason


def scaled_by_length(x, items):
    return x * len(items)


def appends_and_scales(x, items=[]):  # noqa: B006 - the default changed in place is the case
    items.append(1)
    return x * len(items)


ITEMS = []


def scaled_by_global_length(x):
    return x * len(ITEMS)


def test_an_empty_list_guards_its_length():
    # The guard of an empty list matched a list of any length: x * 0 for every later call.
    compiled = kiln.compile(scaled_by_length)
    for items in ([], [1], [1, 2], []):
        np.testing.assert_array_equal(compiled(np.ones(2), items), np.full(2, len(items)))
    compiled = kiln.compile(scaled_by_global_length)
    for length in range(3):
        ITEMS[:] = [0] * length
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, length))


def test_a_list_the_function_appends_to_grows_at_every_call():
    # A default list and an argument list appended to by the trace matched the first entry:
    # the append happened once and every call returned x * 1.
    compiled = kiln.compile(appends_and_scales)
    mine, theirs = [], []
    for call in range(1, 4):
        np.testing.assert_array_equal(compiled(np.ones(2), mine),
                                      appends_and_scales(np.ones(2), theirs))
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, call))
    assert mine == theirs == [1, 1, 1] and appends_and_scales.__defaults__ == ([1, 1, 1],)


class Settings:
    def __init__(self):
        self.table = {"scale": 2.0}
        self.steps = [2.0]


def scaled_by_settings(x, settings):
    return x * settings.table["scale"] * settings.steps[0]


SEEN = {1}


def scaled_by_global_set(x):
    return x * len(SEEN)


def test_sets_and_attribute_containers_changed_in_place_are_read_again():
    # A static was guarded by the object itself, equal to itself whatever was changed in it:
    # a set added to, or a dict or list in an argument's attribute, kept the first result.
    compiled = kiln.compile(scaled_by_length)
    for items in ({1}, bytearray(b"a")):
        np.testing.assert_array_equal(compiled(np.ones(2), items), np.full(2, 1.0))
        items.add(2) if isinstance(items, set) else items.extend(b"bc")
        np.testing.assert_array_equal(compiled(np.ones(2), items), np.full(2, len(items)))
    compiled = kiln.compile(scaled_by_global_set)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 1.0))
    SEEN.add(2)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    settings, compiled = Settings(), kiln.compile(scaled_by_settings)
    np.testing.assert_array_equal(compiled(np.ones(2), settings), np.full(2, 4.0))
    settings.table["scale"] = 3.0
    np.testing.assert_array_equal(compiled(np.ones(2), settings), np.full(2, 6.0))
    settings.steps[0] = 5.0
    np.testing.assert_array_equal(compiled(np.ones(2), settings), np.full(2, 15.0))


def shifted_by_next(x, values):
    return x + next(values)


COUNTS = itertools.count(1)


def shifted_by_global_count(x):
    return x + next(COUNTS)


def test_iterators_are_advanced_at_every_call():
    # An iterator was guarded as itself: the trace's next() was fixed in the graph, every
    # later call returned it and the iterator never moved on.
    compiled = kiln.compile(shifted_by_next)
    values = iter([1.0, 2.0, 3.0])
    for expected in (2.0, 3.0, 4.0):
        np.testing.assert_array_equal(compiled(np.ones(2), values), np.full(2, expected))
    compiled = kiln.compile(shifted_by_global_count)
    for expected in (2.0, 3.0, 4.0):
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, expected))
    report = kiln.explain(shifted_by_next)(np.ones(2), iter([1.0]))
    assert "iterator" in report.break_reasons[0].reason


def divided(x, by):
    return x / by


def test_negative_zero_arguments_keep_their_sign():
    # A static float was guarded by ==, which takes -0.0 for 0.0: x / -0.0 returned the
    # first call's +inf. Bits decide now, so a NaN is also the same static as itself.
    compiled = kiln.compile(divided)
    for by in (0.0, -0.0, np.float64(-0.0), np.float32(0.0), np.float32(-0.0), -0.0,
               complex(-0.0, 1.0), complex(0.0, 1.0)):
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = divided(np.ones(2), by)
        np.testing.assert_array_equal(compiled(np.ones(2), by), expected)
        assert np.signbit(compiled(np.ones(2), by).real).all() == np.signbit(expected.real).all()
    compiled = kiln.compile(lambda x, by: x / by[0])
    np.testing.assert_array_equal(compiled(np.ones(2), (0.0,)), np.full(2, np.inf))
    np.testing.assert_array_equal(compiled(np.ones(2), (-0.0,)), np.full(2, -np.inf))


def doubled(x):
    return x * 2.0


def tripled(x):
    return x * 3.0


def scale(x):
    return x * 2.0


def scaled_by_helper(x):
    return scale(x) + 1.0


def compiles_without_warning(compiled, x, expected):
    """Calls `compiled`, checks the result and that kiln warned of nothing ("runs eagerly")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(compiled(x), expected)
    assert not [w for w in caught if "kiln" in str(w.message)], caught


def test_a_function_whose_code_is_replaced_runs_and_compiles_the_new_code(traces):
    # What IPython's autoreload does to an edited function: its __code__ replaced in place.
    # The entries compiled from the old code kept matching and ran it; then the new code ran
    # eagerly for good. Now the new code is traced once and compiled.
    function = types.FunctionType(doubled.__code__, globals(), "doubled")
    compiled = kiln.compile(function)
    compiles_without_warning(compiled, np.ones(2), np.full(2, 2.0))
    function.__code__ = tripled.__code__
    traces.clear()
    for _ in range(3):
        compiles_without_warning(compiled, np.ones(2), np.full(2, 3.0))
    assert len(traces) == 1
    compiled, saved = kiln.compile(scaled_by_helper), scale.__code__
    compiles_without_warning(compiled, np.ones(2), np.full(2, 3.0))
    try:
        scale.__code__ = tripled.__code__
        compiles_without_warning(compiled, np.ones(2), np.full(2, 4.0))
    finally:
        scale.__code__ = saved
    compiles_without_warning(compiled, np.ones(2), np.full(2, 3.0))


SCALE = 2.0
SHIFT = np.zeros(2)


def helper(x):
    return x + 1.0


def times_scale(x):
    return helper(x) * SCALE


def test_a_helper_defined_again_is_the_one_called():
    """A notebook cell defining `helper` again: the entries traced through the old helper
    missed (its global changed), but the trace ran a clone of the old one."""
    global SCALE, helper
    saved = SCALE, helper
    compiled = kiln.compile(times_scale)
    try:
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 4.0))
        SCALE = 3.0  # another miss first: a dynamic number from now on
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 6.0))

        def helper(x):  # reads a global array the first helper did not
            return x - 1.0 + SHIFT
        np.testing.assert_array_equal(compiled(np.ones(2)), np.zeros(2))
        SHIFT[:] = 5.0  # changed in place: read at each call as the new helper's global
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 15.0))
        helper = saved[1]
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 6.0))
    finally:
        (SCALE, helper), SHIFT[:] = saved, 0.0


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def apply(self, x):
        return self.step(x) * 2.0

    def step(self, x):
        return x * self.factor


SCALER = Scaler(2.0)
OFFSET = functools.partial(np.add, 1.0)


def through_objects(x):
    return SCALER.apply(x) + OFFSET(x)


def test_a_method_replaced_on_the_class_of_a_global_object_or_self_is_the_one_called():
    """through_objects reaches Scaler.step only inside SCALER.apply: replacing it on the class
    was not read, and the entry traced through the old step kept matching."""
    global SCALER, OFFSET
    saved, step = (SCALER, OFFSET), Scaler.step
    compiled, method = kiln.compile(through_objects), kiln.compile(SCALER.apply)
    try:
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 6.0))
        np.testing.assert_array_equal(method(np.ones(2)), np.full(2, 4.0))
        Scaler.step = lambda self, x: x + self.factor
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 8.0))
        np.testing.assert_array_equal(method(np.ones(2)), np.full(2, 6.0))
        OFFSET = functools.partial(np.subtract, 1.0)
        SCALER = Scaler(3.0)
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 8.0))
    finally:
        (SCALER, OFFSET), Scaler.step = saved, step


class Filled:
    """An array-like: NumPy converts it by calling __array__, user code."""

    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        return np.full(3, self.value)


class Holding:
    def __init__(self, value):
        self.values = np.full(3, value)

    def __array__(self, dtype=None, copy=None):
        return self.values


def test_array_likes_whose_array_method_makes_arrays_convert_as_in_numpy():
    # np.asarray(o) in the trace ran o.__array__, whose np.full (or o's traced attribute) was
    # a traced array, which NumPy's C code refused: "kiln:  at ...: object __array__ method
    # not producing an array", where NumPy gives the values.
    def converts(x, o):
        return x + np.asarray(o), x * o, np.array(o, dtype=np.float32)
    compiled = kiln.compile(converts)
    for value in (2.0, 5.0):
        for make in (Filled, Holding):
            for mine, theirs in zip(compiled(np.ones(3), make(value)),
                                    converts(np.ones(3), make(value))):
                np.testing.assert_array_equal(mine, theirs)
                assert mine.dtype == theirs.dtype


class Deferring:
    """An object with its own __array_ufunc__ (pint, xarray): ndarray's operators hand it the
    ufunc; with __array_ufunc__ = None they defer to its reflected operator."""

    def __init__(self, value):
        self.value = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("ufunc", ufunc.__name__, self.value)

    def __radd__(self, other):
        return ("radd", self.value)


class Refusing(Deferring):
    __array_ufunc__ = None


def test_array_likes_numpy_converts_without_a_traced_operand_and_ufunc_overrides():
    # np.add(o, 1), np.sum(o): no traced operand, NumPy's C code ran o.__array__, which
    # returned o's traced array: ValueError "object __array__ method not producing an array".
    # x + o with o's own __array_ufunc__: TypeError, where NumPy calls np.add(x, o), o's.
    def converts(o):
        return np.add(o, 1), np.sum(o)

    def operators(x, o):
        return x + o, x * o
    for function, make in ((converts, lambda v: (Holding(v),)),
                           (operators, lambda v: (np.ones(3), Deferring(v))),
                           (operators, lambda v: (np.ones(3), Refusing(v)))):
        compiled = kiln.compile(function)
        for value in (2.0, 5.0):
            try:
                want = function(*make(value))
            except TypeError as error:
                with pytest.raises(TypeError, match="unsupported operand"):
                    compiled(*make(value))
                assert "unsupported operand" in str(error)
                continue
            got = compiled(*make(value))
            for mine, theirs in zip(got, want):
                np.testing.assert_array_equal(mine, theirs)


def scaled_by_entry(x, table):
    return x * table["scale"] * len(table)


def test_dict_and_list_subclasses_changed_in_place_are_read_again():
    # An OrderedDict, a defaultdict, a Counter or a list subclass is a static, not a container
    # kiln flattens: guarded as itself, a value set in it kept the first result.
    compiled = kiln.compile(scaled_by_entry)
    for table in (collections.OrderedDict(scale=2.0), collections.defaultdict(float, scale=2.0),
                  collections.Counter(scale=2)):
        np.testing.assert_array_equal(compiled(np.ones(2), table), np.full(2, 2.0))
        table["scale"] = 5
        np.testing.assert_array_equal(compiled(np.ones(2), table), np.full(2, 5.0))
        table["other"] = 1
        np.testing.assert_array_equal(compiled(np.ones(2), table), np.full(2, 10.0))

    class Steps(list):
        pass
    steps = Steps([2.0])
    compiled = kiln.compile(lambda x, steps: x * steps[0])
    np.testing.assert_array_equal(compiled(np.ones(2), steps), np.full(2, 2.0))
    steps[0] = 5.0
    np.testing.assert_array_equal(compiled(np.ones(2), steps), np.full(2, 5.0))


@functools.lru_cache(maxsize=None)
def _shared_buffer(n):
    return np.zeros(n)


@functools.lru_cache(maxsize=None)
def _scale(n):
    return 2.0 ** n


def _accumulates(x):
    buffer = _shared_buffer(3)
    buffer += x
    return buffer.sum() * _scale(2)


def test_an_lru_cached_helper_making_an_array_during_the_trace_keeps_numpys_array():
    """An lru_cache'd helper first called inside the trace cached the trace's array: later
    calls reused the graph of a fresh zeros ([12, 12, 12] where NumPy's shared buffer gives
    [12, 24, 36]) and the caller's own buf(3) read a tracer of an ended trace. The call runs
    eagerly, the cache holding NumPy's values; calls that only hit it compile."""
    for cache in (_shared_buffer, _scale):
        cache.cache_clear()
    compiled = kiln.compile(_accumulates)
    assert [float(compiled(np.ones(3))) for _ in range(3)] == [12.0, 24.0, 36.0]
    np.testing.assert_array_equal(_shared_buffer(3), np.full(3, 3.0))
    assert _scale(2) == 4.0

    @kiln.compile
    def scaled(x):
        return x * _scale(3)

    np.testing.assert_array_equal(scaled(np.ones(2)), np.full(2, 8.0))
    np.testing.assert_array_equal(scaled(np.ones(2)), np.full(2, 8.0))


class _Tables:
    @functools.lru_cache(maxsize=None)
    def table(self, n):
        return np.zeros(n)

    def run(self, x):
        table = self.table(3)
        table += x
        return table.sum()


def test_an_lru_cached_method_making_an_array_during_the_trace_keeps_numpys_array():
    mine, theirs = _Tables(), _Tables()
    compiled = kiln.compile(mine.run)
    assert [float(compiled(np.ones(3))) for _ in range(3)] == [
        float(theirs.run(np.ones(3))) for _ in range(3)] == [3.0, 6.0, 9.0]


class _Buffered:
    @functools.cached_property
    def buffer(self):
        return np.zeros(3)

    def step(self, x):
        self.buffer[...] += x
        return self.buffer.sum()


def test_a_cached_property_computed_during_the_trace_is_computed_once_as_in_numpy():
    """self.buffer (functools.cached_property) first computed inside the trace was assigned
    a fresh array by every run of the graph ([3, 3, 3], buffer [1, 1, 1]) where NumPy's calls
    share the first one ([3, 6, 9], buffer [3, 3, 3])."""
    mine, theirs = _Buffered(), _Buffered()
    compiled = kiln.compile(mine.step)
    assert [float(compiled(np.ones(3))) for _ in range(3)] == [
        float(theirs.step(np.ones(3))) for _ in range(3)] == [3.0, 6.0, 9.0]
    np.testing.assert_array_equal(mine.buffer, theirs.buffer)
