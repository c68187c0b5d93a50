"""What code after a captured loop does with the list it appended to (kiln._stacked_rows): the
loop carries the values stacked, and the list's rows are read from the stack only when used, so
np.array / np.asarray / np.stack / np.vstack / np.hstack / np.concatenate / np.column_stack /
np.dstack of the list, and the list returned, read the stack itself: a graph of a few ops
whatever the count (it was a slice per row and a concat: seconds of compiling for a thousand
rows, then slower than NumPy). Results stay NumPy's bit for bit, types included; a list changed
after the loop (an item replaced, a row written, the list reordered) is read row by row."""
import importlib.util

import numpy as np
import pytest

import kiln

APPENDS = {
    "scalars": "res.append(x[i] * 2 + 1)",
    "float32": "res.append(np.float32(x[i]) * np.float32(2))",
    "python_floats": "res.append(float(x[i]) * 2)",
    "python_ints": "res.append(i * 3)",
    "bools": "res.append(x[i] > 0)",
    "zero_d": "res.append(np.asarray(x[i] * 2))",
    "rows": "res.append(x[i:i + 3] * i)",
    "matrices": "res.append(np.outer(x[i:i + 2], x[i:i + 3]))",
}
USES = {
    "array": "np.array(res)", "asarray": "np.asarray(res)",
    "array_float32": "np.array(res, dtype=np.float32)", "array_ndmin": "np.array(res, ndmin=3)",
    "stack": "np.stack(res)", "stack_last": "np.stack(res, axis=-1)", "vstack": "np.vstack(res)",
    "hstack": "np.hstack(res)", "dstack": "np.dstack(res)", "column_stack": "np.column_stack(res)",
    "concatenate": "np.concatenate(res)", "concatenate_last": "np.concatenate(res, axis=-1)",
    "concatenate_flat": "np.concatenate(res, axis=None)", "the_list": "res",
    "a_tuple": "tuple(res)", "in_a_dict": "{'values': res, 'n': len(res)}", "count": "len(res)",
    "first_and_all": "[x[:1].sum()] + res", "twice": "(np.array(res), res + res)",
}
RANK_ONE = ("concatenate", "concatenate_last")  # NumPy's error for 0-d items


def _module(tmp_path_factory):
    """The functions append × use, in a module of their own (kiln reads their source)."""
    path = tmp_path_factory.mktemp("appends") / "append_uses.py"
    lines = ["import numpy as np\n"]
    for append_name, append in APPENDS.items():
        for use_name, use in USES.items():
            lines.append(f"def {append_name}__{use_name}(x):\n    res = []\n"
                         f"    for i in range(len(x) - 3):\n        {append}\n"
                         f"    return {use}\n")
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("append_uses", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def uses(tmp_path_factory):
    return _module(tmp_path_factory)


def same(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for key in want:
            same(got[key], want[key])
    elif isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    else:
        assert got == want


@pytest.mark.parametrize("use", list(USES))
@pytest.mark.parametrize("append", list(APPENDS))
def test_uses_of_an_appended_list_are_numpys(uses, append, use):
    function = getattr(uses, f"{append}__{use}")
    x = np.random.default_rng(0).standard_normal(40)
    try:
        want = function(x)
    except (ValueError, getattr(np, "exceptions", np).AxisError) as error:  # 0-d items
        with pytest.raises(type(error)):
            kiln.compile(function)(x)
        return
    compiled = kiln.compile(function)
    for _ in range(2):
        same(compiled(x), want)
    report = kiln.explain(function)(x)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    assert not report.break_reasons


@pytest.mark.parametrize("use", ["array", "asarray", "stack", "vstack", "hstack", "the_list",
                                 "a_tuple", "first_and_all", "twice"])
@pytest.mark.parametrize("append", ["scalars", "python_floats", "rows"])
def test_the_graph_reads_the_stack_not_each_row(uses, append, use):
    """A few ops whatever the count: 300 appends were 300 slices and a concat."""
    function = getattr(uses, f"{append}__{use}")
    report = kiln.explain(function)(np.random.default_rng(1).standard_normal(300))
    assert report.graph_count == 1 and report.op_count < 30, str(report)


def written_row(x):
    rows = []
    for i in range(len(x) - 3):
        rows.append(x[i:i + 3] * 2)
    rows[0][1] = 99.0
    return np.array(rows), rows


def written_through_a_view(x):
    rows = []
    for i in range(len(x) - 3):
        rows.append(x[i:i + 3] * 2)
    view = rows[1][1:]
    view[:] = -1.0
    return np.vstack(rows), rows[1]


def rebound_item(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2)
    res[0] += 1
    res[3] = 0.5
    return np.array(res), res


def reordered(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2)
    res.reverse()
    return np.array(res), np.stack(res[2:])


def appended_by_two_loops(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2)
    for i in range(len(x)):
        res.append(x[i] + 1)
    return np.array(res), res


def after_an_initial_row(x):
    out = [np.zeros(3)]
    for i in range(2, 20, 3):
        out.append(x[:3] * i)
    return np.array(out), out


def read_by_a_later_loop(x):
    rows = []
    for i in range(len(x) - 3):
        rows.append(x[i:i + 3] * 2)
    total = np.zeros(3)
    for j in range(len(rows)):
        total = total + rows[1] * j
    return total, np.stack(rows)


def read_in_a_later_branch(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2)
    out = np.zeros(len(x))
    for j in range(len(x)):
        r = res[2]
        if r > 0:
            out[j] = r
        else:
            out[j] = -r
    return out, res[2]


def read_after_a_graph_break(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2)
    if float(res[0]) > 0:
        y = np.array(res) + 1
    else:
        y = np.array(res) - 1
    return y, res[-1], res


def _mean_of(rows):
    return np.array(rows).max(axis=0)


def handed_to_a_helper(x):
    res = []
    for i in range(len(x) - 3):
        res.append(x[i:i + 3] * 3)
    return _mean_of(res), sum(res), max(r.sum() for r in res)


def two_lists(x):
    a, b = [], []
    for i in range(len(x)):
        a.append(x[i])
        b.append(x[i] * x[i])
    return np.array(a) + np.array(b), np.column_stack([a, b]), np.stack([a, b], axis=1)


def iterated(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2 + 1)
    total = 0.0
    for v in res:
        total += v
    best = res[0]
    for k, v in enumerate(res):
        if v > best:
            best = v * k
    return total, v, best


def iterated_rows(x):
    rows = []
    for i in range(len(x) - 3):
        rows.append(x[i:i + 3] * 2)
    total = np.zeros(3)
    for r in rows:
        total = total + r
    return total, r


def written_while_iterated(x):
    rows = []
    for i in range(len(x) - 3):
        rows.append(x[i:i + 3] * 2)
    for r in rows:
        r += 1
        r[0] = 5.0
    return np.array(rows), rows


@pytest.mark.parametrize("function", [
    written_row, written_through_a_view, rebound_item, reordered, appended_by_two_loops,
    after_an_initial_row, read_by_a_later_loop, read_in_a_later_branch,
    read_after_a_graph_break, handed_to_a_helper, two_lists, iterated, iterated_rows,
    written_while_iterated])
def test_lists_used_or_changed_after_the_loop(function):
    compiled = kiln.compile(function)
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal(12)
        same(compiled(x), function(x))
    assert kiln.explain(function)(x).loops[0].kind == "loop"


def test_a_returned_row_is_an_array_of_its_own():
    def rows_of(x):
        rows = []
        for i in range(len(x) - 3):
            rows.append(x[i:i + 3] * 2)
        return rows, np.array(rows)
    rows, stacked = kiln.compile(rows_of)(np.arange(8.0))
    rows[0][0] = 100.0
    assert rows[1][0] == 2.0 and stacked[0, 0] == 0.0


@pytest.mark.parametrize("value", [0.5, np.float32(0.5), np.float64(0.5), 2, np.int16(2)])
def test_np_array_of_a_scalar_is_a_zero_d_array(value):
    def of(x, v):
        return np.array(x[0] * v), np.asarray(x[1] * v)
    x = np.arange(1.0, 3.0)
    same(kiln.compile(of)(x, value), of(x, value))


def chosen_by_a_branch(x):
    res = []
    for i in range(len(x)):
        res.append(x[i] * 2 + 1)
    if x.sum() > 0:
        out, first = np.array(res), res[0]
    else:
        out, first = -np.array(res), res[1]
    return out, first


def test_a_branch_after_the_loop_reads_only_the_rows_it_uses():
    compiled = kiln.compile(chosen_by_a_branch)
    for seed in (0, 1, 2):
        x = np.random.default_rng(seed).standard_normal(300)
        same(compiled(x), chosen_by_a_branch(x))
    report = kiln.explain(chosen_by_a_branch)(x)
    assert [loop.kind for loop in report.loops] == ["loop", "select"], str(report)
    assert report.op_count < 40, str(report)


@pytest.mark.parametrize("function", [iterated, iterated_rows])
def test_a_for_over_the_appended_list_is_a_loop_over_its_stack(function):
    report = kiln.explain(function)(np.random.default_rng(3).standard_normal(200))
    assert {loop.kind for loop in report.loops} <= {"loop", "select"}, str(report)
    assert report.op_count < 80, str(report)
