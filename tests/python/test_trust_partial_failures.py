"""A compiled function that raises part-way leaves the caller's arrays as NumPy leaves them:
the writes made before the failing line done, none after. kiln left them as before the call,
whether the error came while tracing (an index past the end, shapes that do not broadcast, the
user's own raise, after a graph break too) or from a runtime check of the compiled graph (an
index array out of bounds, a singular matrix), on the first call and on cached ones."""
import numpy as np
import pytest

import kiln


def _index_past_the_end(x, y, n):
    x += 1
    return x[n + 10]


def _shapes_that_do_not_broadcast(x, y, n):
    x *= 2
    y[:2] = 7
    return x + y[:n + 2]


def _users_raise_after_a_graph_break(x, y, n):
    x[0] = 100
    if x.sum() > 0:
        raise KeyError("the user's")
    return x


def _python_division_by_zero(x, y, n):
    y -= x
    return x * (1 // n)


def _index_array_out_of_bounds(x, y, n):
    y += 1
    return x[np.array([0, n])] * 2


def _index_array_out_of_bounds_after_a_graph_break(x, y, n):
    if float(x.sum()) > -1:  # a graph break: each call is traced again (a retrace entry)
        y += 1
    return x[np.array([0, n])] * 2


def _singular_matrix(x, y, n):
    x += 1
    return np.linalg.inv(np.diag(y[1:3]) * n) + 1


CASES = [(_index_past_the_end, 0, None), (_shapes_that_do_not_broadcast, 1, None),
         (_users_raise_after_a_graph_break, 0, None), (_python_division_by_zero, 0, 1),
         (_index_array_out_of_bounds, 9, 2), (_index_array_out_of_bounds_after_a_graph_break, 9, 2),
         (_singular_matrix, 0, 1)]


def _run(function, n):
    x, y = np.arange(6.0), np.arange(6.0) * 3
    try:
        result = function(x, y, n)
    except Exception as error:  # noqa: BLE001
        return type(error), x, y
    return result, x, y


@pytest.mark.parametrize("function, bad, good", CASES, ids=[case[0].__name__ for case in CASES])
def test_the_arguments_hold_the_writes_before_the_failing_line(function, bad, good):
    compiled = kiln.compile(function)
    if good is not None:  # cached entries first (n a graph input from the second on): the
        for n in (good, good + 1):  # failing call runs the cached graph
            for a, b in zip(_run(function, n), _run(compiled, n)):
                np.testing.assert_array_equal(a, b)
    error, x, y = _run(function, bad)
    assert isinstance(error, type) and issubclass(error, Exception)
    raised, kx, ky = _run(compiled, bad)
    assert isinstance(raised, type) and issubclass(raised, error), raised
    np.testing.assert_array_equal(kx, x)
    np.testing.assert_array_equal(ky, y)


def test_a_function_that_writes_nothing_keeps_kilns_message():
    def gather(x, i):
        return x[i] * 2
    compiled = kiln.compile(gather)
    compiled(np.arange(6.0), np.array([0, 1]))
    with pytest.raises(IndexError, match="kiln: "):
        compiled(np.arange(6.0), np.array([0, 9]))


class Holder:
    pass


def _stores_into_its_arguments(x, holder, seen, fail):
    x *= 3
    holder.total = x.sum()
    if seen is not None:
        seen.append(x[0])
    if fail:
        raise RuntimeError("after the stores")
    return x


@pytest.mark.parametrize("fail", [False, True], ids=["returns", "raises"])
@pytest.mark.parametrize("with_list", [False, True], ids=["object", "object-and-list"])
def test_values_stored_into_argument_objects_are_values_not_tracers(fail, with_list):
    # `holder.total = x.sum()` on an argument object kept a traced array there, an error
    # ("used after its trace ended") at the caller's next look; so did a list the function
    # appended to before raising.
    compiled = kiln.compile(_stores_into_its_arguments)
    for call in range(2):
        x, holder, seen = np.arange(3.0), Holder(), [] if with_list else None
        try:
            compiled(x, holder, seen, fail)
        except RuntimeError:
            assert fail
        assert type(holder.total) is np.float64 and holder.total == 9.0
        assert not with_list or (seen == [0.0] and type(seen[0]) is np.float64)
        np.testing.assert_array_equal(x, [0.0, 3.0, 6.0])



TOTAL = np.zeros(3)
CALLS = 0


def _updates_globals_then_raises(x, fail):
    global TOTAL, CALLS
    TOTAL = TOTAL + x  # rebound before the failing line
    CALLS = CALLS + 1
    if fail:
        raise KeyError("the user's")
    return TOTAL * 2


def test_globals_rebound_before_the_failing_line_are_kept():
    # The trace ran over copies of the globals: a raise lost the rebinding NumPy's run kept.
    global TOTAL, CALLS
    compiled, x = kiln.compile(_updates_globals_then_raises), np.ones(3)
    TOTAL, CALLS = np.zeros(3), 0
    for fail in (True, False, True):
        if fail:
            with pytest.raises(KeyError):
                compiled(x, fail)
        else:
            np.testing.assert_array_equal(compiled(x, fail), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(TOTAL, [3.0, 3.0, 3.0])
    assert CALLS == 3


class _Accumulator:
    def __init__(self):
        self.total, self.calls = np.zeros(3), 0

    def add(self, x, fail):
        self.total = self.total + x  # assigned before the failing line
        self.calls += 1
        if fail:
            raise KeyError("the user's")
        return self.total * 2


def test_attributes_of_self_assigned_before_the_failing_line_are_kept():
    accumulator = _Accumulator()
    compiled = kiln.compile(accumulator.add)
    for fail in (True, False, True):
        if fail:
            with pytest.raises(KeyError):
                compiled(np.ones(3), fail)
        else:
            compiled(np.ones(3), fail)
    np.testing.assert_array_equal(accumulator.total, [3.0, 3.0, 3.0])
    assert accumulator.calls == 3


class _CountingPicker:
    def __init__(self):
        self.total, self.calls = np.zeros(3), 0

    def pick(self, x, index):
        self.total = self.total + x  # assigned by each run of the graph
        self.calls += 1
        return x[index] * 2  # a runtime check of the graph: raises after the assignments


def test_attributes_assigned_before_a_failing_runtime_check_are_kept():
    # The check raised before the graph's assignments: self kept its old values.
    picker = _CountingPicker()
    compiled = kiln.compile(picker.pick)
    for index in ([5, 0], [0, 1], [0, 5], [0, 2]):  # the first run's check, then a cached one's
        try:
            compiled(np.ones(3), np.array(index))
        except IndexError:
            assert max(index) == 5
    np.testing.assert_array_equal(picker.total, [4.0, 4.0, 4.0])
    assert picker.calls == 4


def _picks_with_a_comprehension(x, index):
    scale = sum([weight for weight in (1.0, 2.0)])
    return x[index] * scale


def _picks_under_a_handler(x, index):
    try:
        return x[index] * 3.0
    except IndexError:
        return x[:1] * 0.0


def test_a_comprehension_is_no_handler_a_failing_check_raises_kilns_error():
    # Python 3.12 inlines comprehensions into the function with exception-table entries of
    # their own: kiln took them for the user's try/except and reran the call eagerly on a
    # runtime check's error (NumPy's message, naming no line; the function's Python run again).
    compiled = kiln.compile(_picks_with_a_comprehension)
    np.testing.assert_array_equal(compiled(np.arange(3.0), np.array([0, 2])), [0.0, 6.0])
    with pytest.raises(IndexError, match=r"kiln: index at .*index 5 is out of bounds"):
        compiled(np.arange(3.0), np.array([0, 5]))
    # A handler the user wrote still sees NumPy's error, the call run eagerly.
    handled = kiln.compile(_picks_under_a_handler)
    np.testing.assert_array_equal(handled(np.arange(3.0), np.array([2])), [6.0])
    np.testing.assert_array_equal(handled(np.arange(3.0), np.array([5])), [0.0])
