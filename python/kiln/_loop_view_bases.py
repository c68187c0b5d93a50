"""The bases of the views a captured loop body names, carried by the loop where no name of the
body holds them (kiln._loop_capture).

`a = x[:m]; b = x[m:]` before a merge loop that reads `a[i]` and `b[j]`, a helper's loop over
the row `A[i]` it was handed, `D = np.diag(A)` read by every sweep: the body names the views,
not their base. A view follows an array the loop carries (its reads are of the carried value,
its writes land in it); one whose base the loop did not carry was carried by value, which the
body had to rebind (a write through it could not reach its base), so these loops unrolled.
Each such base now joins the loop's variables under a name no Python variable can have, and
the loop carries it as it carries the arrays it names. A base the body only reads is a loop
invariant of the graph (api/loop_trace.cpp: a carried value the body leaves as it is copies
nothing); a write through a view (`a[i] = v`) lands in the base, where every other view of it
and the base itself after the loop see it, as in NumPy.
"""
from ._tracer import TracedArray


def with_view_bases(names, get, set_, count):
    """(names, get, set_) with the bases added after the first `count` names (those that
    follow are the loop's target): the bases of the views among the first `count` values that
    no name holds. get() gives the bases themselves, set_ leaves them as they are (the loop
    updates a carried array through its identity)."""
    values = get()
    held = {id(value) for value in values[:count] if isinstance(value, TracedArray)}
    bases = []
    for name, value in zip(names[:count], values[:count]):
        if (isinstance(value, TracedArray) and value._root is not None
                and value._selection is None and id(value._root) not in held):
            held.add(id(value._root))
            bases.append((f"<base of {name}>", value._root))
    if not bases:
        return names, get, set_
    extra = tuple(base for _, base in bases)

    def get_with_bases():
        values = get()
        return (*values[:count], *extra, *values[count:])

    def set_with_bases(values):
        set_((*values[:count], *values[count + len(extra):]))

    names = (*names[:count], *(name for name, _ in bases), *names[count:])
    return names, get_with_bases, set_with_bases
