"""NumPy functions are recognised by identity, however the user's code reached them: names
imported from numpy, numpy under another name, functions kept in dicts or closures. Each such
call builds graph nodes (no real array in the middle of the trace, no graph break)."""
import numpy as np
from numpy import arange, ones, zeros
import numpy as xp

import kiln

TABLE = {"zeros": np.zeros, "ones": np.ones}


def imported_names(x):
    out = zeros(x.shape)
    out[1:] = x[1:] * 2
    return out + ones(x.shape) + arange(x.shape[0])


def other_module_name(x):
    out = xp.zeros(x.shape)
    out[1:] = x[1:] * 2
    return out


def from_a_dict(x):
    out = TABLE["zeros"](x.shape)
    out[::2] = x[::2]
    return out + TABLE["ones"](x.shape)


def make_closure():
    make = np.zeros

    def closure(x):
        out = make(x.shape)
        out[0] = x[0]
        return out
    return closure


def test_every_way_of_reaching_a_numpy_function_is_traced():
    x = np.arange(6.0)
    for f in (imported_names, other_module_name, from_a_dict, make_closure()):
        report = kiln.explain(f)(x)
        assert report.graph_count == 1 and report.graph_break_count == 0, str(report)
        np.testing.assert_array_equal(report.result, f(x))


def test_the_names_still_mean_numpy_outside_a_trace():
    kiln.compile(imported_names)(np.arange(3.0))
    assert zeros is np.zeros and TABLE["zeros"] is np.zeros
    assert isinstance(zeros(2), np.ndarray)


def default_value(x, make=np.zeros, *, fill=np.ones):
    if make is np.zeros and fill is np.ones:   # NumPy's functions, compared by identity
        return make(x.shape) + fill(x.shape) + x
    return x


def test_default_values_are_the_functions_the_body_names():
    """A default value bound to np.zeros is the tracer's np.zeros too: `make is np.zeros` held
    in NumPy and failed under kiln (the other branch: a wrong answer)."""
    x = np.arange(4.0)
    report = kiln.explain(default_value)(x)
    assert report.graph_break_count == 0, str(report)
    np.testing.assert_array_equal(report.result, default_value(x))


def test_the_callee_of_a_call_is_found_from_any_offset_inside_it():
    """The call's instruction, or any offset in its inline caches (a frame's f_lasti points
    there): TABLE["zeros"](...) calls no name (it failed only where f_lasti was the call's own
    offset, which depends on the interpreter's specialisation: an order-dependent graph break),
    np.zeros(...) calls the attribute `zeros`."""
    import dis

    from kiln._graph_breaks import callee_instruction

    def callees(function):
        listing = list(dis.get_instructions(function))
        calls = [i for i, ins in enumerate(listing) if ins.opname in ("CALL", "CALL_KW")]
        found = []
        for i in calls:
            end = listing[i + 1].offset if i + 1 < len(listing) else listing[i].offset + 2
            names = {getattr(callee_instruction(function.__code__, offset), "argval", None)
                     for offset in range(listing[i].offset, end, 2)}
            assert len(names) == 1, names
            found.append(names.pop())
        return found

    assert callees(from_a_dict)[:1] == [None]
    assert callees(other_module_name)[:1] == ["zeros"]
    assert callees(make_closure())[:1] == ["make"]
    # Keyword arguments: Python 3.13's CALL_KW reads their names from a constant placed at the
    # callee's span, which was taken for the callee (none found: np.empty called by NumPy's C
    # code in rng.choice was taken for the user's own call and returned a tracer: a crash).
    assert callees(keyword_calls)[:2] == ["choice", "zeros"]


def keyword_calls(rng, x, n):
    steps = rng.choice([-1, 1], size=n)
    return np.zeros(n, dtype=x.dtype) + steps * x[:n]


def test_c_code_a_keyword_call_runs_gets_numpys_arrays():
    x = np.arange(5.0)
    got = kiln.compile(keyword_calls)(np.random.default_rng(3), x, 4)
    np.testing.assert_array_equal(got, keyword_calls(np.random.default_rng(3), x, 4))
