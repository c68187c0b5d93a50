"""Python numbers that a while loop's body changes and its test reads (kiln._loop_capture's
while_loop): `t = 0.0; while t < T: ...; t += dt`, `i = 0; while i < n: ...; i += 1`.

Such a test is a Python bool on every iteration, so the loop ran as Python: tracing unrolled
it (an RK4 integrator's 1,000 steps were a 43,000-op graph, past kiln's bound on generated
source: the call ran eagerly, after a 3 s trace). A short loop still runs as Python (its
numbers stay Python's after it, for code that needs their values: `f"{i}"`). After
PYTHON_ITERATIONS iterations run as Python, the numbers the last one changed are lifted to
traced 0-d values of the same kind (a weak Python number stays one, a NumPy scalar one,
kiln._loop_types.carried_flags), and the test is tried on them, where no graph break may cut
the trace (`while 2 ** k < n` needs k's value): traced, the rest of the loop is captured as a
while loop node that carries them. Where the test stays a Python value (it reads none of
them, or needs their values) or the capture fails, the numbers are Python's again and the
loop goes on as Python.
"""
from ._loop_types import carried_flags, is_number, type_of
from ._tracer import TracedArray, to_tensor

PYTHON_ITERATIONS = 4  # (each costs the graph a copy of the body: compile time)


def _changed(old, new):
    if type(old) is not type(new):
        return True
    try:
        return bool(old != new)
    except Exception:  # noqa: BLE001 - a number that cannot tell: changed
        return True


def lift(context, names, before, after, set_, keep):
    """{name: its Python value} of the names whose numbers one iteration changed (`before`,
    `after`: their values around it), now rebound to traced values; {} where none is."""
    lifted, values = {}, {}
    for name, old, new in zip(names, before, after):
        if (isinstance(new, TracedArray) or isinstance(old, TracedArray) or not is_number(new)
                or not is_number(old) or not _changed(old, new)):
            continue
        try:  # (an int past int64's range stays Python's)
            tensor = to_tensor(context, new)
        except (OverflowError, TypeError, ValueError):
            continue
        value = TracedArray(context, tensor)
        value._scalar, value._weak = carried_flags(new, *type_of(tensor))
        lifted[name], values[name] = new, value
    if not lifted:
        return {}
    set_(tuple(values.get(name, keep) for name in names))
    return lifted


def restore(lifted, names, set_, keep):
    """The lifted names hold their Python numbers again."""
    if lifted:
        set_(tuple(lifted.get(name, keep) for name in names))
