"""The first calls of a function that breaks on data (kiln._retrace.RetraceTimes.may_compile):
its graphs compile only where that can pay off. A flood fill or a decision stump that NumPy runs
in microseconds compiled a dozen graphs for 3-5 s on its first call; now its first calls run
eagerly, timed, and its graphs compile only within COMPILE_EAGER_CALLS eager calls' time (the
counts below are of graphs compiled, never of seconds). Results are NumPy's either way."""
import random
import warnings

import numpy as np
import pytest

import kiln

pytestmark = pytest.mark.usefixtures("eager_time_bounds")


def flood_fill(img, sr, sc, new):
    h, w = img.shape
    old = img[sr, sc]
    if old == new:
        return img
    stack = [(sr, sc)]
    while stack:
        r, c = stack.pop()
        if 0 <= r < h and 0 <= c < w and img[r, c] == old:
            img[r, c] = new
            stack.extend([(r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)])
    return img


def stump(X, y, w):
    best = (np.inf, 0, 0.0, 1)
    n, d = X.shape
    for j in range(d):
        for t in np.unique(X[:, j]):
            for s in (1, -1):
                pred = np.where(X[:, j] <= t, s, -s)
                err = w[pred != y].sum()
                if err < best[0]:
                    best = (err, j, t, s)
    return best


def _image(seed):
    return (np.random.default_rng(seed).random((8, 8)) > 0.4).astype(np.int64)


def test_a_flood_fill_numpy_runs_in_microseconds_compiles_nothing():
    compiled = kiln.compile(flood_fill)
    function = compiled._kiln_function
    for call in range(8):
        mine, theirs = _image(call), _image(call)
        np.testing.assert_array_equal(compiled(mine, 0, 0, 7), flood_fill(theirs, 0, 0, 7))
        np.testing.assert_array_equal(mine, theirs)
        assert len(function.segments) == 0, f"call {call} compiled a graph"
    (times,) = function.retrace_times.values()
    assert times.choice == "eager"


def test_a_decision_stump_settles_on_eager_without_compiling_its_paths():
    # It compiled 11 graphs (3-5 s) on its first call. Its first calls run eagerly; then the
    # bound (50 eager calls: 25-50 ms, more on a loaded machine) leaves room for a graph or two
    # at most before it settles on eager.
    rng = np.random.default_rng(7)
    compiled = kiln.compile(stump)
    function = compiled._kiln_function
    for call in range(8):
        X = np.round(rng.standard_normal((20, 3)), 1)
        y = np.where(rng.integers(0, 3, 20) > 0, 1, -1)
        w = np.full(20, 1 / 20)
        assert compiled(X, y, w) == stump(X, y, w)
        if call < kiln._retrace.RetraceTimes.PROBES:
            assert len(function.segments) == 0
    assert len(function.segments) <= 2
    assert [times.choice for times in function.retrace_times.values()] == ["eager"]


def test_a_function_whose_eager_calls_cost_more_than_its_compiles_compiles(monkeypatch):
    # (as if NumPy took seconds a call: the bound is COMPILE_EAGER_CALLS eager calls' time,
    # and a trace SLOWER times longer than an eager call settles on eager)
    monkeypatch.setattr(kiln._retrace, "COMPILE_EAGER_CALLS", 1e12)
    monkeypatch.setattr(kiln._retrace.RetraceTimes, "SLOWER", 1e12, raising=False)
    compiled = kiln.compile(flood_fill)
    function = compiled._kiln_function
    for call in range(5):
        mine, theirs = _image(1), _image(1)
        np.testing.assert_array_equal(compiled(mine, 0, 0, 7), flood_fill(theirs, 0, 0, 7))
        np.testing.assert_array_equal(mine, theirs)
        # one eager call, timed: its time alone pays for every compile the function may make
        assert (len(function.segments) == 0) == (call == 0), (call, len(function.segments))
    report = kiln.explain(flood_fill)(_image(1), 0, 0, 7)  # explain shows the graphs at once
    assert report.graph_count > 0 and report.graph_break_count > 0


def test_kiln_explain_compiles_what_a_tiny_function_meets():
    report = kiln.explain(stump)(np.round(np.random.default_rng(1).standard_normal((6, 2)), 1),
                                 np.array([1, -1, 1, 1, -1, 1]), np.full(6, 1 / 6))
    assert report.graph_count > 0
    assert any("numpy.unique" in reason.reason for reason in report.break_reasons)


def test_the_budget_of_seconds_is_checked_before_a_compile_starts(monkeypatch):
    # It was checked after each compile: a function went on compiling until past it (5.3-6 s
    # against the 5 s bound); a compile now starts only if the one expected fits.
    monkeypatch.setattr(kiln._retrace, "COMPILE_EAGER_CALLS", None)
    monkeypatch.setattr(kiln._retrace, "FIRST_COMPILE_SECONDS", 2.0, raising=False)
    monkeypatch.setattr(kiln._retrace, "SEGMENT_SECONDS", 1.0)
    compiled = kiln.compile(flood_fill)
    with pytest.warns(RuntimeWarning, match="distinct graphs around its graph breaks"):
        mine, theirs = _image(2), _image(2)
        np.testing.assert_array_equal(compiled(mine, 0, 0, 7), flood_fill(theirs, 0, 0, 7))
    assert len(compiled._kiln_function.segments) == 0


def test_a_retraced_call_that_gives_up_runs_eagerly_from_then_on(monkeypatch, traces):
    # Its compile past kiln's bounds (minibatch SGD's unrolled batches: 32 MiB of source) was
    # given up by a retraced call, which has no guards to mark: every later call traced (5 s)
    # and gave up again.
    monkeypatch.setattr(kiln._retrace, "COMPILE_EAGER_CALLS", 1e12)
    monkeypatch.setattr(kiln._retrace.RetraceTimes, "SLOWER", 1e12, raising=False)

    def refused(*args, **kwargs):
        raise kiln._kiln.Unsupported("a graph past kiln's bounds (refused by the test)")
    monkeypatch.setattr(kiln._kiln, "compile_graph", refused)
    compiled = kiln.compile(flood_fill)
    for _ in range(kiln._retrace.RetraceTimes.PROBES + 1):
        mine, theirs = _image(3), _image(3)
        np.testing.assert_array_equal(compiled(mine, 0, 0, 7), flood_fill(theirs, 0, 0, 7))
    settled = len(traces)
    for _ in range(3):
        mine, theirs = _image(4), _image(4)
        np.testing.assert_array_equal(compiled(mine, 0, 0, 7), flood_fill(theirs, 0, 0, 7))
    assert len(traces) == settled


def _writes_then_raises(x):
    x += 1
    if x.sum() > 0:  # a break on data
        x *= 2
    return x[100]


def test_a_call_that_raises_after_its_writes_leaves_numpys_writes():
    # Its trace raised before its first graph compiled: the call runs eagerly (timed), so the
    # writes NumPy makes before its IndexError are made (they were dropped as kiln's limits'
    # are).
    compiled = kiln.compile(_writes_then_raises)
    for _ in range(3):
        mine, theirs = np.arange(4.0), np.arange(4.0)
        with pytest.raises(IndexError):
            _writes_then_raises(theirs)
        with pytest.raises(IndexError):
            compiled(mine)
        np.testing.assert_array_equal(mine, theirs)


def _prints_then_breaks(x):
    print("start", x.shape)
    if x.sum().item() > 0:  # a break: the trace is given up here to time the call eagerly
        x = x * 2
    print("end")
    return x


def test_what_a_call_timed_eagerly_prints_shows_once(capsys):
    compiled = kiln.compile(_prints_then_breaks)
    for _ in range(4):  # timed eagerly, then settled (eager, or traced)
        np.testing.assert_array_equal(compiled(np.arange(3.0)),
                                      _prints_then_breaks(np.arange(3.0)))
        out = capsys.readouterr().out
        assert out == "start (3,)\nend\n" * 2, out


def _plus_draws(x):
    shift = random.random()  # an opaque call: the call is traced again each time
    if x.sum().item() > 0:
        x = x + random.random()
    return x + shift


def test_a_trace_given_up_after_python_random_draws_puts_its_state_back():
    # Given up to time the call eagerly, it draws again: the random module's state is put
    # back first, so the eager call draws NumPy's values
    compiled = kiln.compile(_plus_draws)
    for seed in (1, 2, 1, 3):
        random.seed(seed)
        expected = _plus_draws(np.arange(3.0))
        random.seed(seed)
        np.testing.assert_array_equal(compiled(np.arange(3.0)), expected)


def minibatch_sgd(X, y, epochs, batch):
    rng = np.random.default_rng(0)  # its own generator: every trace draws
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        order = rng.permutation(len(X))
        for start in range(0, len(X), batch):
            rows = order[start:start + batch]
            w = w - 0.05 * X[rows].T @ (X[rows] @ w - y[rows]) / len(rows)
    return w


def test_a_trace_that_draws_runs_eagerly_from_its_first_call(traces):
    # Its batches are unrolled (a loop body that draws is not captured). A trace that drew
    # was never cut short: the first call compiled the unrolled graph (1.3 s; a random walk of
    # 2,000 steps 6-7 s), and each later call traced again (60-140 ms, NumPy 1 ms). Now its
    # first compile is timed against eager calls as any retraced call's is: the generator's
    # state is put back and the call runs eagerly, compiling nothing. Its first trace ends at
    # the loop's first draw, and the one after the eager calls once it is SLOWER times theirs.
    X = np.random.default_rng(1).standard_normal((200, 4))
    y = X @ np.arange(4.0)
    compiled = kiln.compile(minibatch_sgd)
    for _ in range(6):
        np.testing.assert_allclose(compiled(X, y, 2, 20), minibatch_sgd(X, y, 2, 20),
                                   rtol=1e-12)
    # (a trace for each of its PROBES eager calls, each cut at its first draw, and one after
    # them, ended once it is SLOWER times theirs or at its compile: fewer where one settles it)
    assert len(traces) <= kiln._retrace.RetraceTimes.PROBES + 1
    assert len(compiled._kiln_function.segments) == 0
    # (on NumPy 1.x the generator's C code makes a break that ends the trace: eager too)
    for times in compiled._kiln_function.retrace_times.values():
        assert times.opaque and times.choice == "eager"


class Walker:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.step = 0.5


def walk(start, walker, n):
    x = start
    for _ in range(n):
        x = x + walker.step * walker.rng.standard_normal(start.shape)
    return x


def test_a_generator_in_an_argument_objects_attribute_draws_as_numpy_does():
    # The trace draws from walker.rng, then is given up (its compile would cost more than
    # eager calls): the generator's state is put back first, so the eager call draws what
    # NumPy's does, and so does every later call.
    compiled = kiln.compile(walk)
    mine, theirs = Walker(3), Walker(3)
    for n in (50, 50, 80):
        np.testing.assert_array_equal(compiled(np.zeros(3), mine, n),
                                      walk(np.zeros(3), theirs, n))
        assert mine.rng.bit_generator.state == theirs.rng.bit_generator.state


def metropolis(rng, n, step):
    x, accepted = 0.0, 0
    chain = np.empty(n)
    for i in range(n):
        proposal = x + step * rng.normal()  # a scalar draw: the loop is unrolled
        if np.log(rng.random()) < -0.5 * (proposal * proposal - x * x):
            x, accepted = proposal, accepted + 1
        chain[i] = x
    return chain.mean(), accepted


def test_a_first_trace_ends_where_a_loop_body_draws(monkeypatch):
    # The draw makes every call trace again and the first call run eagerly (timed): the trace
    # ended only after unrolling the whole loop (2,000 steps: 1 s, NumPy 8 ms). It ends at
    # the body's draw now; the call's draws are NumPy's.
    unrolled = []
    original = kiln._loop_capture.LoopCapture._run_python
    monkeypatch.setattr(kiln._loop_capture.LoopCapture, "_run_python",
                        lambda self, *a, **k: unrolled.append(1) or original(self, *a, **k))
    compiled = kiln.compile(metropolis)
    mine, theirs = np.random.default_rng(5), np.random.default_rng(5)
    assert compiled(mine, 300, 1.0) == metropolis(theirs, 300, 1.0)
    assert unrolled == []
    for _ in range(4):
        assert compiled(mine, 300, 1.0) == metropolis(theirs, 300, 1.0)
    assert mine.bit_generator.state == theirs.bit_generator.state


def walk_2d(n):
    position, returns = np.zeros(2), 0
    for _ in range(n):
        position += np.random.choice([-1, 1], size=2)  # np.random's global state
        if np.all(position == 0):
            returns += 1
    return returns


def test_a_trace_slower_than_eager_calls_ends_before_it_compiles(traces):
    # After its eager calls were timed, a call traced again unrolled its 500 steps (0.5 s,
    # NumPy 15 ms) and compiled their graph for 5 s before its time settled on eager: a
    # trace already SLOWER times an eager call's ends where it stands (RetraceTimes.too_slow)
    compiled = kiln.compile(walk_2d)
    for seed in range(5):
        np.random.seed(seed)
        expected = walk_2d(500), np.random.get_state()[1]
        np.random.seed(seed)
        assert compiled(500) == expected[0]
        np.testing.assert_array_equal(np.random.get_state()[1], expected[1])
    assert len(compiled._kiln_function.segments) == 0
    (times,) = compiled._kiln_function.retrace_times.values()
    assert times.choice == "eager"


def seeded_walk(start, seed, n):
    rng = np.random.default_rng(seed)
    x = start
    for _ in range(n):
        x = x + rng.standard_normal(start.shape)
    return x


def test_new_seeds_of_a_drawing_function_follow_its_kinds_choice(traces):
    # Each new seed is a new guard: once its kind's traces lost to eager calls, a new seed's
    # call ran its trace again until it was 10x an eager call (60 ms a call, NumPy 6 ms).
    compiled = kiln.compile(seeded_walk)
    for seed in range(8):
        np.testing.assert_array_equal(compiled(np.zeros(3), seed, 200),
                                      seeded_walk(np.zeros(3), seed, 200))
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        return  # (1.x's Generator C code ends each trace at a break at its first draw)
    (times,) = compiled._kiln_function.retrace_times.values()
    assert times.choice == "eager"
    assert len(traces) <= kiln._retrace.RetraceTimes.PROBES + 1


def random_walk_2d(rng, n):
    return np.cumsum(rng.normal(size=(n, 2)), axis=0)


def test_a_call_of_a_kind_settled_on_eager_skips_the_checks_of_what_must_run_eagerly(
        monkeypatch):
    # A walk drawn from an rng argument settles on eager; each later call still ran the
    # argument reads and eager checks first (40 us a call: 9x NumPy's 5 us), to run eagerly
    # all the same. Settled, it goes to the function first.
    compiled = kiln.compile(random_walk_2d)
    for seed in range(8):
        np.testing.assert_array_equal(compiled(np.random.default_rng(seed), 50),
                                      random_walk_2d(np.random.default_rng(seed), 50))
    assert [times.choice for times in compiled._kiln_function.retrace_times.values()] == [
        "eager"]
    checks = []
    monkeypatch.setattr(kiln._compile, "eager_reason", lambda *a: checks.append(a))
    np.testing.assert_array_equal(compiled(np.random.default_rng(9), 50),
                                  random_walk_2d(np.random.default_rng(9), 50))
    assert checks == []


def swap_into_shuffled_gaps(cells, rng, steps):
    cells = cells.copy()
    for _ in range(steps):
        crowded = cells * np.roll(cells, 1) + cells * np.roll(cells, -1)
        movers = np.flatnonzero(crowded > 1)  # a break: the sizes are the data's
        gaps = np.flatnonzero(cells == 0)
        rng.shuffle(gaps)
        k = min(len(movers), len(gaps))
        cells[gaps[:k]] = cells[movers[:k]]
        cells[movers[:k]] = 0
    return cells


def test_a_fresh_generator_drawn_from_after_a_break_follows_its_kinds_choice(traces):
    # Schelling's model called with np.random.default_rng(seed) per call: its first traces end
    # at the break ahead of the draw, so nothing marked its calls as drawing, and each new
    # generator (a new guard) traced again, 10x NumPy, until recompile_limit warned. The eager
    # calls that draw mark them (RetraceTimes.opaque): new generators run eagerly.
    compiled = kiln.compile(swap_into_shuffled_gaps)
    cells = np.random.default_rng(0).integers(0, 3, 40)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        for seed in range(12):
            np.testing.assert_array_equal(
                compiled(cells, np.random.default_rng(seed), 4),
                swap_into_shuffled_gaps(cells, np.random.default_rng(seed), 4))
    assert not [w for w in warned if "recompile_limit" in str(w.message)]
    (times,) = compiled._kiln_function.retrace_times.values()
    assert times.choice == "eager" and times.opaque
    assert len(traces) <= kiln._retrace.RetraceTimes.PROBES + 2
