"""Python code that runs inside a trace without being part of it (a signal handler, a garbage
collection's finalizers) sees no tracer, and a function that rebinds module globals does what
NumPy does: no tracer left in the module, no store lost."""
import gc
import signal
import threading

import numpy as np
import pytest

import kiln


HANDLED = []  # not read by the traced function: kiln cannot see what the handler puts here


def test_a_signal_handler_that_calls_a_compiled_function_mid_trace_gets_an_array():
    @kiln.compile
    def stats(a):
        return a.mean() + a.std() + np.zeros(2)

    def handler(signum, frame):
        HANDLED.append((stats(np.arange(10.0)), np.arange(3.0)))

    HANDLED.clear()
    previous = signal.signal(signal.SIGUSR2, handler)
    try:
        @kiln.compile
        def traced(x):
            signal.raise_signal(signal.SIGUSR2)  # the handler runs at the next instruction
            return x + 1

        np.testing.assert_array_equal(traced(np.ones(3)), np.full(3, 2.0))
        # The trace put the user's handler back as it was.
        assert signal.getsignal(signal.SIGUSR2) is handler
    finally:
        signal.signal(signal.SIGUSR2, previous)
    assert HANDLED, "the handler never ran"
    for result, created in HANDLED:
        assert type(result) is np.ndarray and type(created) is np.ndarray
        a = np.arange(10.0)
        np.testing.assert_allclose(result, a.mean() + a.std() + np.zeros(2))


def test_a_handler_the_trace_installs_stays_installed():
    previous = signal.getsignal(signal.SIGUSR1)

    def mine(signum, frame):
        pass

    @kiln.compile
    def installs(x):
        signal.signal(signal.SIGUSR1, mine)
        return x * 2

    try:
        installs(np.ones(2))
        assert signal.getsignal(signal.SIGUSR1) is mine
    finally:
        signal.signal(signal.SIGUSR1, previous)


class _Cycle:
    """Garbage only the cyclic collector frees; its finalizer computes with NumPy and kiln."""
    results = []

    def __init__(self, helper):
        self.me, self.helper = self, helper

    def __del__(self):
        _Cycle.results.append(self.helper(np.arange(3.0)) + np.zeros(3))


def test_finalizers_run_by_a_collection_mid_trace_see_no_tracer():
    helper = kiln.compile(lambda a: a * 3)
    _Cycle.results.clear()
    enabled = gc.isenabled()
    gc.disable()
    try:
        _Cycle(helper)

        @kiln.compile
        def collects(x):
            gc.collect()
            return x + 1

        np.testing.assert_array_equal(collects(np.ones(3)), np.full(3, 2.0))
    finally:
        if enabled:
            gc.enable()
    assert len(_Cycle.results) == 1 and type(_Cycle.results[0]) is np.ndarray
    np.testing.assert_array_equal(_Cycle.results[0], [0.0, 3.0, 6.0])


SCALED = np.zeros(3)
LAST = None
CALLS = 0


def rebinds_a_global_array(x):
    global SCALED
    SCALED = x * 2
    return SCALED + 1


def rebinds_a_new_global_and_counts(x):
    global LAST, CALLS
    LAST = x * 2
    CALLS += 1
    return x + 1


def _remember(x):
    global LAST
    LAST = x - 1
    return x


def calls_a_helper_that_rebinds(x):
    return _remember(x * 3) + 1


def test_a_function_that_rebinds_module_globals_assigns_them_at_every_call():
    global SCALED, LAST, CALLS
    f = kiln.compile(rebinds_a_global_array)
    for value in (1.0, 5.0):
        np.testing.assert_array_equal(f(np.full(3, value)), np.full(3, 2 * value + 1))
        assert type(SCALED) is np.ndarray
        np.testing.assert_array_equal(SCALED, np.full(3, 2 * value))  # the trace lost it

    LAST, CALLS = None, 0
    g = kiln.compile(rebinds_a_new_global_and_counts)
    for calls, value in enumerate((1.0, 5.0, 7.0), start=1):
        np.testing.assert_array_equal(g(np.full(2, value)), np.full(2, value + 1))
        assert type(LAST) is np.ndarray, type(LAST)  # the trace left a tracer here
        np.testing.assert_array_equal(LAST, np.full(2, 2 * value))
        assert CALLS == calls

    h = kiln.compile(calls_a_helper_that_rebinds)
    for value in (2.0, 4.0):
        np.testing.assert_array_equal(h(np.full(2, value)), np.full(2, 3 * value + 1))
        np.testing.assert_array_equal(LAST, np.full(2, 3 * value - 1))


def stores_through_globals(x):
    globals()["LAST"] = x * SCALED  # reads an array global: the trace runs over a copy
    return x + 1


def test_a_store_into_globals_by_name_is_not_lost():
    global SCALED, LAST
    SCALED, LAST = np.full(2, 3.0), None
    f = kiln.compile(stores_through_globals)
    for value in (1.0, 2.0):
        np.testing.assert_array_equal(f(np.full(2, value)), np.full(2, value + 1))
        assert type(LAST) is np.ndarray, type(LAST)  # the store went to the copy, lost
        np.testing.assert_array_equal(LAST, np.full(2, 3 * value))


RACED = None
STORED, SAMPLED = threading.Event(), threading.Event()


def stores_then_waits(x):
    global RACED
    RACED = x * 2
    STORED.set()
    SAMPLED.wait(timeout=10)  # another thread reads RACED meanwhile
    return x + 1


def test_another_thread_never_reads_a_tracer_from_a_global_the_trace_rebinds():
    seen = []

    def reader():
        STORED.wait(timeout=10)
        seen.append(type(RACED))
        SAMPLED.set()

    thread = threading.Thread(target=reader)
    thread.start()
    kiln.compile(stores_then_waits)(np.ones(2))
    thread.join()
    assert seen == [type(None)], seen  # the module's variable until the call assigns it
    assert type(RACED) is np.ndarray


def test_a_global_rebound_under_fullgraph_is_a_graph_break_naming_the_line():
    f = kiln.compile(rebinds_a_global_array, fullgraph=True)
    with pytest.raises(kiln.GraphBreak, match=r"global 'SCALED'.*test_trust_interruptions.py"):
        f(np.ones(3))


_KEPT = []


class _Keeper:
    def __init__(self, value):
        self.value = value

    def __del__(self):
        _KEPT.append(self.value)  # a store into a list the traced function never names


def test_a_traced_array_a_finalizer_kept_is_an_error_not_a_value_of_later_inputs():
    @kiln.compile
    def f(x):
        keeper = _Keeper(x * 2)
        del keeper  # its finalizer runs inside the trace, and keeps a traced array
        return x + 1

    _KEPT.clear()
    x = np.ones(3)
    np.testing.assert_array_equal(f(x), np.full(3, 2.0))
    x[:] = 100  # the caller's array changes after the call
    # It computed x * 2 from the caller's current x (200, where NumPy kept 2), silently.
    with pytest.raises(kiln.Unsupported, match="used after its trace ended"):
        np.asarray(_KEPT[0])


STOPPED = 0  # rebound by the function below before it raises


@pytest.mark.parametrize("stop", [SystemExit, KeyboardInterrupt, GeneratorExit])
def test_a_base_exception_raised_mid_trace_keeps_the_effects_made_before_it(stop):
    """SystemExit, KeyboardInterrupt and GeneratorExit are not Exceptions: NumPy's run still
    made the global rebinding, the attribute, the append and the array write before them."""
    global STOPPED

    class Holder:
        value = 0

    def stops(x, holder, seen):
        global STOPPED
        STOPPED = 5
        holder.value = 7
        seen.append(3)
        x += 1
        raise stop("stopped")

    for compiled in (stops, kiln.compile(stops)):
        STOPPED, holder, seen, x = 0, Holder(), [], np.zeros(3)
        with pytest.raises(stop, match="stopped"):
            compiled(x, holder, seen)
        assert (STOPPED, holder.value, seen) == (5, 7, [3])
        np.testing.assert_array_equal(x, np.ones(3))


@pytest.mark.parametrize("stop", [SystemExit, KeyboardInterrupt])
def test_a_base_exception_after_writes_only_writes_them_back(stop):
    def stops(x):
        x *= 2
        if x.sum() > 0:  # a graph break before it too
            x += 1
            raise stop(4)

    compiled = kiln.compile(stops)
    x = np.ones(3)
    for expected in (3.0, 7.0):
        with pytest.raises(stop) as raised:
            compiled(x)
        assert raised.value.args == (4,)
        np.testing.assert_array_equal(x, np.full(3, expected))
