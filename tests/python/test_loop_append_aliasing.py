"""Arrays a captured loop takes for copies, and the writes that make them NumPy's own arrays
(kiln._loop_aliases): a list of `rows.append(x[i])` holds views of x in NumPy, which see a
later write to x (through another name of it, a helper, a ufunc's out, np.put, ...) and whose
writes reach x; a `for v in x[1:]` iterates x as it changes. Each function is compiled and
compared with NumPy on copies of its arguments: what it returns (a list item by item) and
the arguments afterwards. Loops whose arrays nothing writes stay captured."""
import copy

import numpy as np
import pytest

import kiln


def same(got, want, what="result"):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want), (what, type(got), type(want))
        assert len(got) == len(want), what
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{what}[{k}]")
        return
    if isinstance(want, (bool, int, float)):
        assert type(got) is type(want), (what, type(got), type(want))
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got, want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)


def check(function, *arguments):
    """kiln.compile(function) agrees with NumPy on copies of `arguments`: the result and the
    arguments afterwards (an array written through a list's item, or by a helper)."""
    mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
    same(kiln.compile(function)(*mine), function(*theirs))
    for k, (got, want) in enumerate(zip(mine, theirs)):
        same(got, want, f"argument {k} afterwards")


def loop_kinds(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops if loop.kind != "select"]


def matrix(rows=5, columns=3, seed=0):
    return np.random.default_rng(seed).random((rows, columns))


# ---- helpers of the module, as users write them ----

def bump(a):
    a[0] += 100


def bump_all(a):
    a += 1


def scale_rows(rows):
    for r in rows:
        r *= 2


def head(a):
    return a[:2]


def step_in_place(s, dt):
    s += dt
    return s


def step_fresh(s, dt):
    return s + dt * np.sin(s)


def norm(v):
    return np.sqrt(np.sum(v * v))


# ---- a list of views of x, then x written ----

def helper_writes(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    bump(x)
    return rows


def another_name(x):
    rows = []
    y = x
    for i in range(x.shape[0]):
        rows.append(x[i])
    y[0] = 99
    return rows


def ufunc_positional_out(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    np.add(x, 1, x)
    return rows


def written_through_the_items(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    for r in rows:
        r[0] = -1
    return x


def ufunc_at(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    np.add.at(x, [0], 5)
    return rows


def comprehension_then_helper(x):
    rows = [x[i] for i in range(x.shape[0])]
    bump(x)
    return rows


def a_slice_of_it(x):
    rows = []
    tail = x[1:]
    for i in range(x.shape[0]):
        rows.append(x[i])
    tail[0] = 99
    return rows


def reshaped(x):
    rows = []
    flat = x.reshape(-1)
    for i in range(x.shape[0]):
        rows.append(x[i])
    flat[4] = -7
    return rows


def unpacked_items(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    first, second = rows[0], rows[1]
    second[2] = 42
    return rows, x


def helper_writes_the_list_items(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    scale_rows(rows)
    return rows, x


def a_view_method_appended(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i].reshape(1, -1))
    x[0] = 99
    return rows


def asarray_appended(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(np.asarray(x[i]))
    bump_all(x)
    return rows


def nested_function_writes(x):
    def clear(a):
        a[:2] = 0.0

    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    clear(x)
    return rows


def collected_by_a_nested_function(x):
    def collect():
        rows = []
        for i in range(x.shape[0]):
            rows.append(x[i])
        return rows

    rows = collect()
    x[0] = 99.0
    return rows


def a_view_a_helper_returns_written(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    top = head(x)
    top[0] = 7.0
    return rows


def state_returned_by_a_writing_helper(x):
    state = x.copy()
    history = []
    for t in range(6):
        state = step_in_place(state, 0.5)
        history.append(state)
    return history


WRITES = {
    "put": "np.put(x, [0, 4], -3.0)",
    "fill_diagonal": "np.fill_diagonal(x, 0.5)",
    "putmask": "np.putmask(x, x > 0.5, 0.0)",
    "place": "np.place(x, x > 0.5, [1.0])",
    "negative_out": "np.negative(x, x)",
    "multiply_at": "np.multiply.at(x, ([0, 1], [1, 2]), 3.0)",
}


def _written_by(name, statement):
    return (f"def written_by_{name}(x):\n    rows = []\n"
            f"    for i in range(x.shape[0]):\n        rows.append(x[i])\n"
            f"    {statement}\n    return rows\n")


@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    """One function a NumPy writer (WRITES) of x, in a module of its own (kiln reads its
    source)."""
    path = tmp_path_factory.mktemp("aliasing") / "numpy_writers.py"
    path.write_text("import numpy as np\n\n\n" + "\n\n".join(
        _written_by(name, statement) for name, statement in WRITES.items()))
    namespace = {"__name__": "numpy_writers"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("function", [
    helper_writes, another_name, ufunc_positional_out, written_through_the_items, ufunc_at,
    comprehension_then_helper, a_slice_of_it, reshaped, unpacked_items,
    helper_writes_the_list_items, a_view_method_appended, asarray_appended,
    nested_function_writes, collected_by_a_nested_function, a_view_a_helper_returns_written],
    ids=lambda f: f.__name__)
def test_views_appended_then_written_are_numpys(function):
    check(function, matrix())
    check(function, matrix(7, 3, seed=1))  # the same compiled function, another shape


@pytest.mark.parametrize("name", sorted(WRITES))
def test_views_appended_then_written_by_numpy_are_numpys(writers, name):
    function = writers[f"written_by_{name}"]
    check(function, matrix())


def test_a_state_a_helper_updates_in_place_is_one_array_in_the_list():
    # NumPy's history holds six times the same array (its final value); stacked rows were
    # each iteration's copy
    check(state_returned_by_a_writing_helper, np.arange(3.0))


# ---- a `for` over a view of x while x changes ----

def helper_writes_while_iterating(x):
    s = 0.0
    for v in x[1:]:
        s = s + v[0]
        bump_all(x)
    return s, x


def filled_rows(x):
    for v in x[1:]:
        v.fill(0)
    return x


def copied_into_rows(x):
    for v in x[1:]:
        np.copyto(v, 3.0)
    return x


def ufunc_out_while_iterating(x):
    s = 0.0
    for v in x[1:]:
        s = s + v[0]
        np.add(x, 1, x)
    return s, x


@pytest.mark.parametrize("function", [
    helper_writes_while_iterating, filled_rows, copied_into_rows, ufunc_out_while_iterating],
    ids=lambda f: f.__name__)
def test_a_view_iterated_while_written_is_not_a_copy(function):
    check(function, matrix())
    check(function, matrix(6, 3, seed=2))


# ---- what nothing writes stays one loop ----

def views_only_read(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    total = np.sum(x) + len(x) + np.add(x, 1).mean() + x.reshape(-1).max()
    return rows, float(total)


def fresh_rows_then_x_written(x):
    doubled, roots, copies = [], [], []
    for i in range(x.shape[0]):
        doubled.append(x[i] * 2)
        roots.append(np.sqrt(x[i]))
        copies.append(x[i].copy())
    bump(x)
    return doubled, roots, copies, x


@pytest.mark.parametrize("function", [views_only_read, fresh_rows_then_x_written],
                         ids=lambda f: f.__name__)
def test_arrays_nothing_writes_stay_one_loop(function):
    check(function, matrix(30, 3))
    assert loop_kinds(function, matrix(30, 3)) == ["loop"]


def trajectory_through_a_pure_helper(x):
    state = x
    history = []
    for t in range(20):
        state = step_fresh(state, 0.1)
        history.append(state)
    return np.array(history)


def norms_through_a_pure_helper(x):
    s = 0.0
    for v in x[1:]:
        s = s + norm(v)
    return s


def test_a_global_helper_that_writes_nothing_keeps_the_loop():
    # its source is read when the loop runs: step_fresh returns a new array, so the states
    # appended are arrays nothing writes (it was unrolled while any user function counted as
    # writing all it is given)
    check(trajectory_through_a_pure_helper, np.arange(3.0))
    assert loop_kinds(trajectory_through_a_pure_helper, np.arange(3.0)) == ["loop"]
    check(norms_through_a_pure_helper, matrix(30, 3))
    assert loop_kinds(norms_through_a_pure_helper, matrix(30, 3)) == ["loop"]


def test_views_appended_then_written_run_the_loop_as_python():
    assert loop_kinds(helper_writes, matrix(30, 3)) == ["unrolled"]
    assert loop_kinds(comprehension_then_helper, matrix(30, 3)) == ["unrolled"]


# ---- a global helper is read when the loop runs ----

def rebindable(a):
    return a * 1.0


def through_a_global_helper(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    rebindable(x)
    return rows


def test_a_global_helper_rebound_between_calls_is_read_again(monkeypatch):
    # a helper that writes nothing leaves the loop captured; the same name bound to one that
    # writes (the compiled function's globals changed) makes the next trace run it as Python
    x = matrix(30, 3)
    compiled = kiln.compile(through_a_global_helper)
    same(compiled(x.copy()), through_a_global_helper(x.copy()))
    assert loop_kinds(through_a_global_helper, x) == ["loop"]
    monkeypatch.setitem(globals(), "rebindable", bump)
    same(compiled(x.copy()), through_a_global_helper(x.copy()))
    assert loop_kinds(through_a_global_helper, x) == ["unrolled"]
