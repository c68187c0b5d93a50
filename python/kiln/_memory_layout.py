"""NumPy's memory layout of traced arrays, as far as kiln knows it, for what depends on it: a
reshape or ravel is a view where NumPy's is, and a copy where NumPy copies (`A.T.ravel()`, whose
writes reached A: README differences item 8).

A traced array's `_strides` (in elements) is "C" for an array kiln made (C-contiguous, as NumPy
makes the results of C-contiguous inputs), a tuple for a view whose strides follow from its
base's (a transpose, a slice, a reshape; an argument that is not C-contiguous), or None where
NumPy's layout is not known: a view kiln does not follow, or the result of an op that keeps its
input's memory order (order="K": `A.T * 2` is Fortran-ordered) when that input is not
C-contiguous. A reshape of an array of unknown layout may be either in NumPy: it is a view whose
writes, and writes to its base while it lives, are a graph break (_tracer's `_maybe_copy`).
"""
from ._graph_breaks import graph_break


def c_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def strides_of(x):
    """NumPy's element strides of the traced array `x`, None where not known."""
    if x._strides == "C":
        return c_strides(x.shape) if x._root is None else None  # a view made by hand
    return x._strides


def c_contiguous(shape, strides):
    """NumPy's C_CONTIGUOUS flag (axes of length 1 have any stride; an empty array is)."""
    if any(extent == 0 for extent in shape):
        return True
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1:
            if stride != expected:
                return False
            expected *= extent
    return True


def f_strides(shape):
    """The element strides of a Fortran-ordered array of `shape`."""
    return tuple(reversed(c_strides(tuple(reversed(shape)))))


def in_order(x, order):
    """Whether NumPy's layout of the traced array `x` is `order` ("C", "F"; "K", "A": any):
    True, False, or None where kiln does not know it."""
    if order not in ("C", "F"):
        return True
    strides = strides_of(x)
    if strides is None:
        return None
    return (c_contiguous if order == "C" else f_contiguous)(tuple(x.shape), strides)


def ordered(result, order, like):
    """The `_strides` of a new array NumPy lays out in `order` (an astype or copy of `like`)."""
    if order == "F":
        return f_strides(tuple(result.shape)) if result.ndim > 1 else "C"
    if order in ("K", "A"):
        return follows([like], like.shape)
    return "C"


def f_contiguous(shape, strides):
    """NumPy's F_CONTIGUOUS flag."""
    return c_contiguous(tuple(reversed(shape)), tuple(reversed(strides)))


class TracedFlags:
    """x.flags of a traced array whose layout kiln knows (strides_of): NumPy's contiguity and
    aligned flags, and writeable where it does not depend on the caller's array (which guards
    do not check), by attribute or key (`x.flags.c_contiguous`, `x.flags["C_CONTIGUOUS"]`).
    OWNDATA depends on how the caller made its array, and flags set change it: the call runs
    eagerly (a graph break)."""

    def __init__(self, shape, strides, writeable):
        c, f = c_contiguous(shape, strides), f_contiguous(shape, strides)
        self._values = {"c_contiguous": c, "f_contiguous": f, "aligned": True,
                        "writebackifcopy": False, "contiguous": c, "fortran": f and not c,
                        "forc": c or f, "fnc": f and not c}
        self._writeable = writeable

    _KEYS = {"C": "c_contiguous", "CONTIGUOUS": "c_contiguous", "F": "f_contiguous",
             "FORTRAN": "f_contiguous", "W": "writeable", "A": "aligned",
             "X": "writebackifcopy", "B": "behaved", "CA": "carray", "FA": "farray",
             "O": "owndata"}

    def __getattr__(self, name):
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        if name in ("writeable", "behaved", "carray", "farray"):
            writeable = self._known("writeable", self._writeable)
            return {"writeable": writeable, "behaved": writeable and values["c_contiguous"],
                    "carray": writeable and values["c_contiguous"],
                    "farray": writeable and values["fnc"]}[name]
        if name == "owndata":
            return self._known("owndata", None)
        raise AttributeError(f"'flagsobj' object has no attribute '{name}'")

    @staticmethod
    def _known(name, value):
        if value is None:  # NumPy's, the call run eagerly
            graph_break(f"x.flags.{name} depends on how the caller made its array, which the "
                        "compiled code does not check")
        return value

    def __getitem__(self, key):
        name = self._KEYS.get(key, key.lower() if isinstance(key, str) else None)
        if name is None or name.startswith("_"):
            raise KeyError(f"Unknown flag: {key!r}")
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(f"Unknown flag: {key!r}") from None

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            graph_break(f"x.flags.{name} is set: NumPy's flags of its array (the call runs "
                        "eagerly)")
        object.__setattr__(self, name, value)

    def __setitem__(self, key, value):
        self.__setattr__(str(key), value)

    def __repr__(self):
        return "\n".join(f"  {name.upper()} : {self._values[name]}"
                         for name in ("c_contiguous", "f_contiguous", "aligned"))


def flags_of(x):
    """TracedFlags of the traced array `x`, None where its layout is not known. Whether an
    argument (or a view of it) is writeable is the caller's array's, which guards do not check:
    known only for a read-only view of a writeable one (np.broadcast_to's)."""
    strides = strides_of(x)
    if strides is None:
        return None
    root = x._root if x._root is not None else x
    if not root._argument:
        writeable = not x._read_only
    else:
        writeable = False if x._read_only and not root._read_only else None
    return TracedFlags(tuple(x.shape), strides, writeable)


def base_of(x):
    """NumPy's x.base as far as the trace knows it: None for an array kiln made (NumPy's owns
    its data), the array a view was taken from (NumPy collapses a view of a view to the array
    that owns the data, as kiln's _root does). Where NumPy's answer depends on the caller's
    array (an argument's base, whether it owns its data, which guards do not check: x[1:].base
    is x, or x's own base), on a layout kiln does not follow (a reshape NumPy may copy, a view
    made by hand) or on an array NumPy made that kiln does not hold (as_strided's), the call
    runs eagerly: a graph break, NumPy's object. A NumPy function that returns a view of its
    own temporary (np.roll, np.tile) has a base where kiln's result has none."""
    if x._scalar and len(x.shape) == 0:
        return None  # a NumPy scalar: np.float64(1).base
    root = x._root
    if (x._argument or root is not None and root._argument or x._maybe_copy or x._hidden_base
            or strides_of(x) is None or root is not None and strides_of(root) is None):
        graph_break("x.base depends on how the caller made its array, or on a memory layout "
                    "kiln does not follow")
    return root


def layout_of(array):
    """The `_strides` of a traced array standing for the ndarray `array`."""
    if array.flags.c_contiguous:
        return "C"
    if any(s % array.itemsize for s in array.strides):
        return None
    return tuple(s // array.itemsize for s in array.strides)


def nocopy_reshape(shape, strides, target):
    """NumPy's strides of `shape`/`strides` reshaped to `target` in C order without a copy
    (_attempt_nocopy_reshape of numpy/_core/src/multiarray/shape.c), None where it copies."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    dims, steps = [n for n, _ in old], [s for _, s in old]
    new = [0] * len(target)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(target) and oi < len(dims):
        np_, op = target[ni], dims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= target[nj]
                nj += 1
            else:
                op *= dims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if steps[ok] != dims[ok + 1] * steps[ok + 1]:
                return None
        new[nj - 1] = steps[oj - 1]
        for nk in range(nj - 1, ni, -1):
            new[nk - 1] = new[nk] * target[nk]
        ni, oi = nj, oj
        nj, oj = nj + 1, oj + 1
    last = new[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(target)):
        new[nk] = last
    return tuple(new)


def reshaped(x, target, ravel=False):
    """How NumPy reshapes `x` to `target` in C order: ("view", strides), ("copy", None) or
    ("either", None) where x's layout is not known. ravel views only a C-contiguous array
    (x[::2].ravel() copies, x[::2].reshape(-1) does not)."""
    shape = tuple(x.shape)
    if x.size <= 1:  # C-contiguous, whatever its strides
        return "view", c_strides(target)
    strides = strides_of(x)
    if not ravel and [n for n in shape if n != 1] == [n for n in target if n != 1]:
        # only axes of length 1 come or go: always a view
        return "view", (None if strides is None else nocopy_reshape(shape, strides, target))
    if strides is None:
        return "either", None
    if c_contiguous(shape, strides):
        return "view", c_strides(target) if x._strides == "C" else nocopy_reshape(
            shape, strides, target)
    if ravel:
        return "copy", None
    new = nocopy_reshape(shape, strides, target)
    return ("copy", None) if new is None else ("view", new)


def permuted(x, permutation):
    strides = strides_of(x)
    return None if strides is None else tuple(strides[d] for d in permutation)


def indexed(x, entries, shape):
    """(strides, offset) of x[entries] (ints, slices and None: basic indexing, kiln._indexing):
    the view's strides and where its first element lies from x's, in elements; (None, None)
    where not known."""
    strides = strides_of(x)
    if strides is None:
        return None, None
    result, offset, axis = [], 0, 0
    for entry in entries:
        if entry is None:
            result.append(0)
            continue
        if isinstance(entry, slice):
            start, _, step = entry.indices(shape[axis])
            result.append(strides[axis] * step)
            offset += start * strides[axis]
        elif isinstance(entry, int):
            offset += (entry + shape[axis] if entry < 0 else entry) * strides[axis]
        else:
            return None, None
        axis += 1
    return tuple(result), offset


def flipped(x, axes):
    """(strides, offset) of np.flip(x, axes): each flipped axis walked from its last element."""
    strides = strides_of(x)
    if strides is None:
        return None, None
    offset = sum((x.shape[d] - 1) * strides[d] for d in axes if x.shape[d] > 0)
    return tuple(-s if d in axes else s for d, s in enumerate(strides)), offset


def follows(inputs, shape):
    """The layout of a result of `shape` NumPy lays out as its inputs (order="K": elementwise
    ops, astype, np.copy, np.zeros_like): "C" where every traced array input of two axes or
    more is C-contiguous; their common memory order where they agree on one (`A.T * 2` is
    Fortran-ordered); None otherwise."""
    shape, orders = tuple(shape), set()
    for value in inputs:
        if not hasattr(value, "_strides") or value.ndim <= 1:
            continue  # (a broadcast axis has no order)
        strides = strides_of(value)
        if strides is None:
            return None
        contiguous = c_contiguous(value.shape, strides)
        if tuple(value.shape) != shape:
            if contiguous:
                continue
            return None  # NumPy weighs every operand's strides
        if contiguous:
            orders.add(tuple(range(len(shape))))
        elif any(s <= 0 for n, s in zip(shape, strides) if n > 1):
            return None
        else:
            orders.add(tuple(sorted(range(len(shape)), key=lambda d: -strides[d])))
    if not orders or orders == {tuple(range(len(shape)))}:
        return "C"
    if len(orders) > 1:
        return None
    (order,) = orders
    packed = dict(zip(order, c_strides([shape[d] for d in order])))
    return tuple(packed[d] for d in range(len(shape)))
