"""Selections whose length the data decide, read where the result's shape does not.

kiln holds x[mask] lazily, as x and the mask (kiln._indexing), and computes its ufuncs with
scalars on all of x (kiln._numpy_api). Here is what reads such a selection into values of a
fixed shape, so that a loop body that selects stays one loop node (NumPy users write
`x[x > t].max()`, `np.flatnonzero(m)[0]`, `np.unique(row).size` per row; each was a graph
break that unrolled the loop, slower than NumPy):
- reductions: those that take where= are the same reduction of x where the mask holds; max,
  min and ptp with NumPy's error for an empty selection (a check when the graph runs);
  count_nonzero; argmax and argmin of a selection of elements (a position among them); its
  np.sort (the sorted elements, the unselected sorted last, selected by their count) and
  np.median;
- its size and len(), in a loop (a traced int: the mask's count, times the other axes' extents
  for the size);
- its element at an integer (sel[0], sel[-1]: the k-th selected, NumPy's IndexError past the
  count);
- the arrays NumPy returns with a data-dependent length, made in a loop: np.nonzero
  (np.where(a), a.nonzero()) and np.flatnonzero are positions (aranges) selected by a != 0;
  np.unique is a's sorted values selected where each run of equal ones starts (its index,
  inverse and counts too); y indexed
  with such positions is y at every position (0 where unselected) selected by their mask, and
  y[positions] = v writes the selected ones.
"In a loop": a captured loop's body or its first iteration run on its own
(TraceContext.in_loop), where a graph break unrolls the loop. Elsewhere those functions run
eagerly: their concrete results serve Python code (range(i), int(i)) with no further graph
break. Any other read of a selection settles it at a graph break
(TracedArray._settle_selection).
"""
import math
import operator

import numpy as np

from ._tracer import TracedArray, backend, call_eagerly, cast, has_tracer, to_tensor, traced


def _k():
    return backend()


def _masked(value):
    return isinstance(value, TracedArray) and value._masked()


def _whole(x):
    return TracedArray(x._context, x._unmasked())


def _count(x):
    """How many of the positions of x's leading axes the mask selects (traced int64 0-d)."""
    return np.count_nonzero(x._selection)


def size(x):
    """x[mask].size: a traced Python int (the count times the other axes' extents)."""
    rows = math.prod(x._unmasked().shape[x._selection.ndim:])
    return _python_int(_count(x) * rows if rows != 1 else _count(x),
                       math.prod(x._unmasked().shape))


def length(x):
    """len(x[mask]) in a loop: the count of selected rows (a traced Python int)."""
    return _python_int(_count(x), math.prod(x._selection.shape))


def _python_int(value, most):
    number = traced(value._context, value.tensor)
    number._scalar, number._weak = True, int
    number._bound = most  # (np.bincount's length: kiln._numpy_binning)
    return number


# Reductions that take where=: of x[mask] (whole, all its elements) each is the same reduction
# of x where the mask holds, of fixed shape (npbench's azimint_naive, `data[in_bin].mean()` per
# bin, was a graph break per bin, 8x NumPy's time; k-means' X[labels == k].mean(axis=0) too).
_WHERE_REDUCTIONS = frozenset({np.sum, np.prod, np.mean, np.std, np.var, np.any, np.all,
                               np.nansum, np.nanprod, np.nanmean, np.nanstd, np.nanvar})
_EXTREMES = {np.max: "maximum", np.amax: "maximum", np.min: "minimum", np.amin: "minimum"}
_POSITIONS = {np.argmax: np.max, np.argmin: np.min}


def reduction(function, args, kwargs):
    """function(x[mask]) of fixed shape, or None where that is not NumPy's result here
    (keepdims, out=, where= given, other masked operands, zero extents): it runs eagerly."""
    if not args or not _masked(args[0]) or len(args) > 2 or _has_masked((args[1:], kwargs)):
        return None
    x = args[0]
    if kwargs.get("keepdims") or "where" in kwargs or kwargs.get("out") is not None:
        return None
    if len(args) == 2 and "axis" in kwargs:
        return None  # NumPy's TypeError
    axis = args[1] if len(args) == 2 else kwargs.get("axis")
    options = {name: value for name, value in kwargs.items() if name != "axis"}
    if function is np.ptp and not options:
        return np.subtract(np.max(x, axis=axis), np.min(x, axis=axis))
    if function is np.count_nonzero and not options:
        return np.sum(np.not_equal(x, 0), axis=axis)
    if function in _POSITIONS and axis is None and not options:
        return _position(x, _POSITIONS[function])
    if function is np.sort and axis in (-1, 0, None) and not options:  # (1-d: any axis)
        return _sorted(x)
    if function is np.median and axis is None and not options:
        return _median(x)
    if function not in _WHERE_REDUCTIONS and function not in _EXTREMES:
        return None
    axes = _whole_axes(x, axis)
    if axes is None:
        return None
    whole = _whole(x)
    where = _mask_over(x._selection, whole)
    if function not in _EXTREMES:
        return function(whole, axis=axes, where=where, **options)
    if options or 0 in whole.shape:
        return None
    if whole.dtype == np.bool_:  # (max is any, min all: their identities stand in)
        extreme = np.any if _EXTREMES[function] == "maximum" else np.all
        result = extreme(whole, axis=axes, where=where)
    else:
        result = function(whole, axis=axes, where=where,
                          initial=_identity(whole.dtype, _EXTREMES[function]))
    _check(np.equal(_count(x), 0), "zero-size array to reduction operation "
           f"{_EXTREMES[function]} which has no identity", function.__name__, "ValueError")
    return result


def _mask_over(mask, x):
    """A mask of x's leading axes broadcast to x's shape (where= of a reduction)."""
    extra = x.ndim - mask.ndim
    return np.broadcast_to(mask if extra == 0 else np.reshape(mask, mask.shape + (1,) * extra),
                           x.shape)


def _whole_axes(x, axis):
    """The axes of x (all of it, the mask's leading axes folded into one) that the selection's
    `axis` names, or None where the result keeps the selection's count (or NumPy raises)."""
    masked_axes = x._selection.ndim
    selection_ndim = 1 + len(x._unmasked().shape) - masked_axes
    if axis is None:
        return tuple(range(len(x._unmasked().shape)))
    try:
        axes = [a % selection_ndim if -selection_ndim <= a < selection_ndim else None
                for a in (axis if isinstance(axis, tuple) else (operator.index(axis),))]
    except TypeError:
        return None
    if None in axes or len(set(axes)) != len(axes) or 0 not in axes:
        return None  # NumPy's AxisError; a result that keeps the selection's count
    # the selection's axis 0 is x's masked axes, axis a > 0 x's a + masked_axes - 1
    return tuple(sorted(n for a in axes for n in (
        range(masked_axes) if a == 0 else (a + masked_axes - 1,))))


def _identity(dtype, kind):
    """The value no element loses to: where the mask does not hold, max/min see it."""
    if dtype.kind == "f":
        return -np.inf if kind == "maximum" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "maximum" else info.max


def _check(flag, message, op, error, values=None, after=""):
    """NumPy's `error` when the traced bool `flag` holds, as the graph runs: `message`, then
    `values` (traced, 1-d), the first after the message and each next at a {} of `after`."""
    context = flag._context
    values = values if values is not None else context.lift(np.zeros(0, np.int64))
    _k().check_flag(flag.tensor, values.tensor, message, after, op, error=error)


def _position(x, extreme):
    """np.argmax / np.argmin of a selection: the extreme's first position among the selected
    (NumPy's first NaN for floats), counted in the selection."""
    found = _elements(x)
    if found is None:
        return None  # (a selection of rows)
    whole, mask = found
    name = "argmax" if extreme is np.max else "argmin"
    if whole.dtype == np.bool_:
        whole = whole.astype(np.int8)
    _check(np.equal(_count(x), 0), f"attempt to get {name} of an empty sequence", name,
           "ValueError")
    best = extreme(whole, where=mask, initial=_identity(
        whole.dtype, "maximum" if extreme is np.max else "minimum"))
    if whole.dtype.kind == "f":
        hits = (whole == best) | (np.isnan(whole) & np.isnan(best))
    else:
        hits = whole == best
    first = np.argmax(mask & hits)  # (the position in x; before it, `count` selected ones)
    before = np.arange(whole.shape[0]) < first
    return np.count_nonzero(mask & before)


def _elements(x):
    """(x's elements, the mask) in the selection's order, where x[mask] is 1-d; else None."""
    if x._selection.ndim != x._unmasked().ndim or x.dtype.kind not in "biuf":
        return None
    return np.ravel(_whole(x)), np.ravel(x._selection)


def _filled_and_sorted(elements, mask):
    """The elements sorted with the unselected ones replaced by a value sorted after every
    selected one (NaN for floats, which NumPy sorts last; the largest integer, True), so its
    first `count` are the selection's sorted elements."""
    kind = elements.dtype.kind
    fill = np.nan if kind == "f" else True if kind == "b" else np.iinfo(elements.dtype).max
    return np.sort(np.where(mask, elements, np.array(fill, elements.dtype)))


def _sorted(x):
    """np.sort(x[mask]): the sorted elements selected by their first `count` positions."""
    found = _elements(x)
    if found is None:
        return None
    ordered, mask = _filled_and_sorted(*found), found[1]
    return TracedArray(x._context, ordered.tensor,
                       mask=np.arange(ordered.shape[0]) < np.count_nonzero(mask))


def _median(x):
    """np.median(x[mask]): the mean of its sorted middle elements; NaN where it holds a NaN
    or nothing (NumPy warns there)."""
    found = _elements(x)
    if found is None or x.dtype.kind not in "iuf" or x.dtype == np.float16:
        return None
    elements, mask = found
    ordered = _filled_and_sorted(elements, mask)
    count = np.count_nonzero(mask)
    low = np.take(ordered, np.maximum((count - 1) // 2, 0))
    high = np.take(ordered, np.maximum(count // 2, 0))
    middle = np.mean(np.stack([low, high]))  # (NumPy's dtype: float64 of integers)
    missing = np.equal(count, 0)
    if elements.dtype.kind == "f":
        missing = missing | np.any(mask & np.isnan(elements))
    return np.where(missing, np.array(np.nan, middle.dtype), middle)[()]


def element(x, key):
    """x[mask][k] for an integer k: the k-th selected row (a copy, as x[mask] is), NumPy's
    IndexError where k is past the selection; None for any other key."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, (bool, np.bool_)) or not (
            isinstance(key, (int, np.integer)) or isinstance(key, TracedArray)
            and key.ndim == 0 and key.dtype.kind in "iu"):
        return None
    whole, mask = _whole(x), x._selection
    count = _count(x)
    key = count * 0 + key  # (traced int64)
    wanted = np.where(key < 0, count + key, key)
    _check((wanted < 0) | (wanted >= count), "index ", "getitem", "IndexError",
           values=np.stack([key, count]), after=" is out of bounds for axis 0 with size {}")
    position = np.argmax(np.cumsum(np.ravel(mask)) > wanted)
    rows = np.reshape(whole, (-1,) + whole.shape[mask.ndim:])
    row = np.take(rows, position, axis=0)
    row._scalar = row.ndim == 0
    return row


def _past_integers(x, key):
    """(x indexed by the integers leading `key`, the rest of it) where positions follow them
    (`x[i, idx]` is `x[i][idx]`, a view: writes reach x); None otherwise."""
    if not isinstance(key, tuple):
        return None
    leading = 0
    while leading < len(key) and (
            isinstance(key[leading], (int, np.integer)) and not isinstance(key[leading], bool)
            or isinstance(key[leading], TracedArray) and not key[leading]._masked()
            and key[leading].ndim == 0 and key[leading].dtype.kind in "iu"):
        leading += 1
    if leading == 0 or leading == len(key) or not _masked(key[leading]):
        return None
    return x[key[:leading]], key[leading:]


def _leading_positions(x, key):
    """(positions, their mask) where `key` indexes x's leading axes with positions of a
    data-dependent count (np.nonzero's: a 1-d selection of integers per axis, one mask) and
    takes the other axes whole; None for any other key, or an axis of length 0."""
    entries = key if isinstance(key, tuple) else (key,)
    leading = 0
    while leading < len(entries) and _masked(entries[leading]):
        leading += 1
    if leading == 0 or leading > x.ndim or any(
            not (isinstance(e, slice) and e == slice(None)) and e is not Ellipsis
            for e in entries[leading:]):
        return None
    positions = entries[:leading]
    mask = positions[0]._selection
    if any(p._selection is not mask and not p._context.same_mask(p._selection.tensor,
                                                                 mask.tensor)
           or p._unmasked().ndim != 1 or mask.ndim != 1 or p.dtype.kind not in "iu"
           for p in positions) or 0 in x.shape[:leading]:
        return None
    return positions, mask


def index_with(x, key):
    """x[p] for positions p of a data-dependent count (np.nonzero's, np.flatnonzero's, a
    selection of an integer array): x at all of p's positions (those not selected read
    x's first element) selected by p's mask. None where _leading_positions finds none."""
    past = _past_integers(x, key)
    if past is not None:
        return index_with(*past)
    found = _leading_positions(x, key)
    if found is None:
        return None
    positions, mask = found
    safe = tuple(np.where(mask, _whole(p), 0) for p in positions)
    gathered = x[safe]  # (bounds-checked: a selected position out of bounds is NumPy's error)
    return TracedArray(x._context, gathered.tensor, mask=mask)


def assign_at(x, key, value, stored):
    """x[p] = value for positions p of a data-dependent count (_leading_positions'): every
    position written in order (a later duplicate wins, as in NumPy), the unselected ones into a
    spare row past x's rows, dropped after. value: a scalar, an array of the other axes' shape,
    or values selected by p's own mask (`y[p] = y[p] + 1`); `stored(v)`: a scalar as NumPy
    stores it. False where that is not the case (the caller's graph break follows)."""
    past = _past_integers(x, key)
    if past is not None:
        return assign_at(*past, value, stored)
    found = _leading_positions(x, key)
    if found is None:
        return False
    positions, mask = found
    count, rest = mask.shape[0], tuple(x.shape[len(positions):])
    if _masked(value):
        if value._selection is not mask and not x._context.same_mask(
                value._selection.tensor, mask.tensor) or value._unmasked().shape != (
                count,) + rest:
            return False
        values = _whole(value)
    else:
        if not isinstance(value, TracedArray):
            if has_tracer(value):
                return False
            value = stored(value) if np.ndim(value) == 0 else np.asarray(value)
        try:
            if np.broadcast_shapes(np.shape(value), rest) != rest:
                return False
        except ValueError:  # NumPy's own error, from the graph break that follows
            return False
        values = np.broadcast_to(value, (count,) + rest)
    rows, flat = math.prod(x.shape[:len(positions)]), 0
    for axis, p in enumerate(positions):
        extent, wanted = x.shape[axis], _whole(p).astype(np.int64)
        outside = mask & ((wanted < -extent) | (wanted >= extent))
        _check(np.any(outside), "index ", "setitem", "IndexError",
               values=np.reshape(wanted[np.argmax(outside)], (1,)),
               after=f" is out of bounds for axis {axis} with size {extent}")
        flat = flat * extent + np.where(wanted < 0, wanted + extent, wanted)
    target = np.where(mask, flat, rows)  # the unselected write the spare row
    padded = np.concatenate([np.reshape(x, (rows,) + rest), np.zeros((1,) + rest, x.dtype)])
    written = _k().index_put(padded.tensor, target.tensor,
                             to_tensor(x._context, values, x.dtype, "setitem"), 0, False,
                             check_bounds=False)
    kept = _k().slice(written, [(0, rows, 1)] + [(0, n, 1) for n in rest])
    x._assign(_k().reshape(kept, list(x.shape)))
    return True


def _has_masked(value):
    if isinstance(value, TracedArray):
        return value._masked()
    if isinstance(value, (list, tuple)):
        return any(_has_masked(item) for item in value)
    if isinstance(value, dict):
        return any(_has_masked(item) for item in value.values())
    return False


# ---- the functions whose results have a data-dependent length ----

def _positions(context, a):
    """arange(a.size) and ravel(a) != 0: where nonzero's results come from."""
    flat = np.not_equal(np.ravel(a), 0)
    return _k().arange(flat.tensor, flat.shape[0], "int64"), flat


def nonzero(context, a):
    """np.nonzero(a) inside a loop body: one coordinate array per axis of a, each a's
    positions selected by a != 0."""
    a = a if isinstance(a, TracedArray) else None
    if a is None or not context.in_loop() or a.ndim == 0 or a._selection is not None:
        return None
    index, flat = _positions(context, a)
    coordinates, rest = [], traced(context, index)
    for extent in reversed(a.shape):
        coordinates.append(rest % max(extent, 1))
        rest = rest // max(extent, 1)
    return tuple(TracedArray(context, cast(c.tensor, np.int64), mask=flat)
                 for c in reversed(coordinates))


def _nonzero(context, a):
    result = nonzero(context, a)
    if result is None:
        return call_eagerly(np.nonzero, (a,), {}, "numpy.nonzero has a data-dependent shape")
    return result


def _flatnonzero(context, a):
    if not (isinstance(a, TracedArray) and context.in_loop() and a._selection is None):
        return call_eagerly(np.flatnonzero, (a,), {},
                            "numpy.flatnonzero has a data-dependent shape")
    index, flat = _positions(context, a)
    return TracedArray(context, index, mask=flat)


# NumPy 2's inverse of np.unique(a, return_inverse=True) has a's shape; 1.x's is 1-d.
_INVERSE_SHAPED = np.unique(np.zeros((2, 2)), return_inverse=True)[1].ndim == 2


def _unique(context, ar, return_index=False, return_inverse=False, return_counts=False,
            axis=None, **options):
    """np.unique(ar) in a loop: ar's elements in a stable sort, selected where each run of
    equal ones starts (NaNs one value, as NumPy's equal_nan); with return_index the sort's
    positions there, return_inverse each element's run number (of fixed shape), return_counts
    each run's length, from the next run's start (a running minimum from the end)."""
    arguments = (ar, return_index, return_inverse, return_counts, axis)
    if (axis is not None or options or not isinstance(ar, TracedArray) or not context.in_loop()
            or ar._selection is not None or ar.size == 0 or ar.dtype.kind not in "biuf"):
        return call_eagerly(np.unique, arguments, options,
                            "numpy.unique has a data-dependent shape")
    flat = np.ravel(ar)
    order = np.argsort(flat, kind="stable")  # (a run's first element: its first occurrence)
    ordered = np.take(flat, order)
    differs = ordered[1:] != ordered[:-1]
    if ordered.dtype.kind == "f":  # NaNs are one value (equal_nan)
        differs = differs & ~(np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    starts = np.concatenate([np.ones(1, np.bool_), differs])
    results = [TracedArray(context, ordered.tensor, mask=starts)]
    if return_index:
        results.append(TracedArray(context, order.tensor, mask=starts))
    if return_inverse:
        inverse = np.zeros_like(order)
        inverse[order] = np.cumsum(starts) - 1
        results.append(np.reshape(inverse, ar.shape) if _INVERSE_SHAPED else inverse)
    if return_counts:
        positions = np.arange(flat.shape[0])
        first_from = np.minimum.accumulate(np.where(starts, positions, flat.shape[0])[::-1])[::-1]
        next_start = np.concatenate([first_from[1:], np.full(1, flat.shape[0])])
        results.append(TracedArray(context, (next_start - positions).tensor, mask=starts))
    return results[0] if len(results) == 1 else tuple(results)


FUNCTIONS = {np.nonzero: _nonzero, np.flatnonzero: _flatnonzero, np.unique: _unique}
