"""Tracer implementations of np.einsum (the subscripts form, the sublist form, '...' and size-1
broadcasting, written out explicitly for the graph's einsum), np.tensordot and np.vdot. Each
takes the TraceContext first, then NumPy's arguments."""
import numpy as np

from ._as_strided import c_strides, write_positions
from ._memory_layout import strides_of
from ._numpy_functions import (_as_traced, _check_casting, _k, _product, _result, product_dtype,
                               ravel, transpose)
from ._tracer import cast, check_dtype


_SUBSCRIPT_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # NumPy's 0..51


def _sublist_equation(subscripts, operands):
    """np.einsum(a, [0, 1], b, [1, 2], [0, 2]): (the equation as text, the operands)."""
    items = (subscripts,) + tuple(operands)
    output = items[-1] if len(items) % 2 else None  # an odd count ends with the output's
    items = items[:len(items) - len(items) % 2]
    arrays, terms = list(items[0::2]), list(items[1::2])

    def text(term):
        return "".join("..." if t is Ellipsis else _SUBSCRIPT_LETTERS[int(t)] for t in term)
    equation = ",".join(text(t) for t in terms)
    return equation + ("" if output is None else "->" + text(output)), arrays


def _explicit_equation(equation, values):
    """The equation with '...' replaced by letters of their own and the output written out
    (NumPy's rules: the ellipsis axes align from the right and come first in an implicit
    output), and the operands with size-1 axes broadcast where another operand's are longer
    (NumPy broadcasts them; the graph's einsum wants equal sizes)."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(values):
        return equation, values  # the graph's einsum names the mismatch
    named = [t.replace("...", "") for t in terms]
    ellipsis = [v.ndim - len(n) if "..." in t else 0 for t, n, v in zip(terms, named, values)]
    if any(e < 0 for e in ellipsis):
        raise ValueError("einstein sum subscripts string contains too many subscripts for "
                         "an operand")
    free = [c for c in _SUBSCRIPT_LETTERS if c not in equation]
    width = max(ellipsis, default=0)
    letters = "".join(free[:width])
    terms = [t.replace("...", letters[width - e:]) for t, e in zip(terms, ellipsis)]
    if not arrow:
        counts = {}
        for c in "".join(named):
            counts[c] = counts.get(c, 0) + 1
        output = letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    elif "..." in output:
        output = output.replace("...", letters)
    elif width:
        raise ValueError("output has more dimensions than subscripts given in einstein sum, "
                         "but no '...' ellipsis provided to broadcast the extra dimensions.")
    sizes = {}
    for term, value in zip(terms, values):
        for c, n in zip(term, value.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    broadcast = []
    for term, value in zip(terms, values):
        want = tuple(sizes[c] if n == 1 else n for c, n in zip(term, value.shape))
        if len(set(term)) == len(term) and want != tuple(value.shape):
            value = np.broadcast_to(value, want)
        broadcast.append(value)
    return ",".join(terms) + "->" + output, broadcast


def _relabelling_view(context, equation, x):
    """NumPy's result for one operand without out= whose every label is in the output (a
    transpose, 'ij->ji'; a diagonal, 'ii->i'; both, '...ii->...i'): a writeable view of the
    operand in its own dtype (NumPy ignores dtype= there), so writes through it change the
    operand ("np.einsum('ii->i', A)[:] += lam" adds to A's diagonal). None elsewhere (a sum, a
    0-d result: NumPy computes a new array or scalar)."""
    inputs, arrow, output = equation.replace(" ", "").partition("->")
    if not arrow:  # implicit: the labels seen once, in order (a repeated one is summed)
        output = "".join(sorted(c for c in inputs if inputs.count(c) == 1))
    if (not output or "," in inputs or "." in inputs + output or len(inputs) != x.ndim
            or set(inputs) != set(output) or len(set(output)) != len(output)):
        return None
    axes_of = {c: [d for d, label in enumerate(inputs) if label == c] for c in output}
    if any(len({x.shape[d] for d in axes}) > 1 for axes in axes_of.values()):
        return None  # NumPy's error for unequal diagonal axes: the graph's einsum raises it
    if len(inputs) == len(output):  # no label repeats: a transpose, NumPy's view of its own
        return transpose(context, x, [inputs.index(c) for c in output])
    shape = [x.shape[axes_of[c][0]] for c in output]
    element_strides = [s // x.itemsize for s in c_strides(x.shape, x.itemsize)]
    steps = [sum(element_strides[d] for d in axes_of[c]) for c in output]
    compute = product_dtype(x.dtype)

    def forward(root):
        return cast(_k().einsum(f"{inputs}->{output}", [cast(root, compute)]), x.dtype)
    own = strides_of(x)  # NumPy's strides of the view: of x's axes with each label
    view = x._make_view(forward(x.tensor), forward,
                        lambda root, value: write_positions(root, shape, steps, value),
                        None if own is None else tuple(sum(own[d] for d in axes_of[c])
                                                       for c in output))
    view._scalar = False
    return view


def einsum(context, subscripts, *operands, out=None, dtype=None, optimize=False, **kwargs):
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_equation(subscripts, operands)
    values = [_as_traced(context, o) for o in operands]
    if "..." in subscripts or any(v.ndim and 1 in v.shape for v in values):
        subscripts, values = _explicit_equation(subscripts, values)
    if len(values) == 1 and out is None:
        view = _relabelling_view(context, subscripts, values[0])
        if view is not None:
            return view
    common = check_dtype(dtype) if dtype is not None else np.result_type(
        *[v.dtype for v in values])
    _check_casting(values, common, out, kwargs.get("casting", "safe"))
    compute = product_dtype(common)
    tensor = _k().einsum(subscripts, [cast(v.tensor, compute) for v in values])
    return _result(context, cast(tensor, common), out)


def tensordot(context, a, b, axes=2):
    x, y = _as_traced(context, a), _as_traced(context, b)
    if isinstance(axes, int):
        a_axes, b_axes = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        a_axes, b_axes = ([int(d) for d in np.atleast_1d(side)] for side in axes)
    common = np.result_type(x.dtype, y.dtype)
    compute = product_dtype(common)
    tensor = _k().tensordot(cast(x.tensor, compute), cast(y.tensor, compute), a_axes, b_axes)
    # NumPy reshapes its product: a full contraction is a 0-d array, not a scalar.
    return _result(context, cast(tensor, common), scalar=False)


def vdot(context, a, b):
    """NumPy's vdot conjugates its first argument."""
    first = _result(context, _k().conj(ravel(context, _as_traced(context, a)).tensor))
    return _product("dot")(context, first, ravel(context, _as_traced(context, b)))


FUNCTIONS = {np.einsum: einsum, np.tensordot: tensordot, np.vdot: vdot}
