"""The rows of a list a captured loop appended to (kiln._loop_appends). The loop carries them
stacked, one (count, *shape) array; after it the list holds `count` rows, as the appends made
them (NumPy scalars, Python numbers, arrays). Each row is a TracedArray whose value is taken
from the stack only when something reads it: a list of many appends is not as many slice ops.
NumPy's functions of the whole list (np.array, np.stack, np.vstack, np.concatenate, ...) and
the function's result read the stack itself where the list holds its rows, unchanged and in
order: they were a slice per row and a concat of them (seconds of compiling for a thousand).

A row is read (its slice made, kept as its value) outside loop bodies. In a body being traced
it is the slice of the stack, a loop invariant, made again at each read and never kept (a value
of the body used after it is an internal error); so a loop or branch capture first settles the
rows its variables reach (kiln._loop_escapes.settle_rows)."""
import numpy as np

from ._tracer import TracedArray, backend


class Rows:
    """One loop's stacked appends: `array` (no code of the user's holds it: never written),
    each row's (NumPy scalar?, weak type) `flags`, and the slices of the rows read so far."""

    def __init__(self, context, tensor, flags):
        self.array = TracedArray(context, tensor)
        self.count, self.row_shape = int(tensor.shape[0]), tuple(tensor.shape[1:])
        self.flags = flags
        self.sliced = {}  # index -> the row's tensor, where it was read outside loop bodies

    def row_tensor(self, row, index):
        k = backend()
        whole = self.array.tensor
        tensor = k.slice(whole, [(index, index + 1, 1)] + [(0, n, 1) for n in self.row_shape])
        tensor = k.reshape(tensor, list(self.row_shape))
        if not row._context.in_body:
            self.sliced[index] = row._tensor = tensor
        return tensor

    def unchanged(self, row, index):
        """Whether `row` still holds the stack's row `index` as the append made it."""
        return (row._lazy == (self, index) and row._root is None and row._selection is None
                and (row._tensor is None or row._tensor is self.sliced.get(index))
                and (row._scalar, row._weak) == self.flags)

    def stacked(self):
        """The rows stacked: the stack, as a new array."""
        return TracedArray(self.array._context, self.array.tensor)

    def joined(self, reshape_row, axis):
        """The rows, each reshaped to `reshape_row(row_shape)`, concatenated along `axis` (a
        reshape and a transpose of the stack), as a new array."""
        k = backend()
        shape = tuple(reshape_row(self.row_shape))
        tensor = k.reshape(self.array.tensor, [self.count, *shape])
        if axis:
            tensor = k.transpose(tensor, [*range(1, axis + 1), 0, *range(axis + 1, len(shape) + 1)])
        merged = [*shape[:axis], self.count * shape[axis], *shape[axis + 1:]]
        if list(tensor.shape) != merged:
            tensor = k.reshape(tensor, merged)
        return TracedArray(self.array._context, tensor)


def rows(context, tensor, flags):
    """The list's new items: `tensor`'s rows, each of `flags`, read when first used."""
    stack = Rows(context, tensor, flags)
    items = []
    for index in range(stack.count):
        row = TracedArray(context, None)
        row._lazy = (stack, index)
        row._scalar, row._weak = flags
        items.append(row)
    return items


def _whole_stack(items, start):
    """The Rows whose rows, all of them unchanged, are items[start:start + count]; or None."""
    item = items[start]
    lazy = item._lazy if isinstance(item, TracedArray) else None
    if lazy is None or lazy[1] != 0:
        return None
    stack = lazy[0]
    if len(items) - start < stack.count:
        return None
    for index in range(stack.count):
        row = items[start + index]
        if not (isinstance(row, TracedArray) and stack.unchanged(row, index)):
            return None
    return stack


def blocks(items):
    """`items` (a list or tuple) as pieces: each whole stack of rows in it (in order,
    unchanged) one Rows, the other items as they are; None where it holds no whole stack."""
    if not isinstance(items, (list, tuple)):
        return None
    pieces, start, found = [], 0, False
    while start < len(items):
        stack = _whole_stack(items, start)
        if stack is None:
            pieces.append(items[start])
            start += 1
            continue
        pieces.append(stack)
        start += stack.count
        found = True
    return pieces if found else None


def gathered(items, reshape_row, axis):
    """`items` with each whole stack of rows in it one array: its rows, each reshaped to
    `reshape_row(row_shape)`, concatenated along `axis`; the other items as they are. What a
    concatenation of the items along `axis` (the rows reshaped so) reads; None where `items`
    holds no whole stack, or `axis` is no axis of the reshaped rows (NumPy's error then)."""
    pieces = blocks(items)
    if pieces is None:
        return None
    ranks = {len(reshape_row(piece.row_shape)) for piece in pieces if isinstance(piece, Rows)}
    if len(ranks) != 1 or not -min(ranks) <= axis < min(ranks):
        return None
    axis %= min(ranks)
    return [piece.joined(reshape_row, axis) if isinstance(piece, Rows) else piece
            for piece in pieces]


def stacked_along(items, axis, expand):
    """np.stack(items, axis) as (parts, position) to concatenate along `position`: each whole
    stack of rows in `items` its rows joined along the new axis (a transpose of the stack),
    each other item `expand(item, position)`; None where `items` holds no whole stack, or
    items of another shape, or `axis` is none of the result's (NumPy's error then)."""
    pieces = blocks(items)
    if pieces is None:
        return None
    shape = next(piece for piece in pieces if isinstance(piece, Rows)).row_shape
    if not -len(shape) - 1 <= axis <= len(shape) or not all(
            piece.row_shape == shape if isinstance(piece, Rows) else np.shape(piece) == shape
            for piece in pieces):
        return None
    position = axis % (len(shape) + 1)
    return [piece.joined(lambda row: (*row[:position], 1, *row[position:]), position)
            if isinstance(piece, Rows) else expand(piece, position) for piece in pieces], position


def iterated(items, reads_only):
    """The array a `for` over `items` may index instead (kiln._loop_rewrite_parts.sequence_loop)
    where they are exactly a stack's rows, each as indexing the stack gives it (a NumPy scalar;
    an array, where reads_only() says nothing writes through the rows: a write would miss the
    list's row); else None."""
    pieces = blocks(items)
    if pieces is None or len(pieces) != 1:
        return None
    stack = pieces[0]
    if stack.flags != ((True, None) if stack.row_shape == () else (False, None)):
        return None  # Python numbers, 0-d arrays: not what indexing gives
    return stack.stacked() if stack.row_shape == () or reads_only() else None


def row_shape(items):
    """The shape of the rows of the first whole stack of rows in `items`, or None."""
    pieces = blocks(items)
    stacks = [piece for piece in pieces or () if isinstance(piece, Rows)]
    return stacks[0].row_shape if stacks else None


def output_row(leaf):
    """(the stack, its row's value from the stack's output) where `leaf`, a result, is an
    unchanged row: the result holds the stack once, not a graph output per row."""
    lazy = leaf._lazy if isinstance(leaf, TracedArray) else None
    if lazy is None or not lazy[0].unchanged(leaf, lazy[1]):
        return None
    stack, index = lazy
    return stack.array, _RowValue(index, stack.count, stack.flags)


class _RowValue:
    """The row's value from the stack's output array, as the append made it."""

    def __init__(self, index, count, flags):
        self.index, self.count, (self.scalar, self.weak) = index, count, flags

    def __call__(self, stacked):
        if self.weak is not None:
            return self.weak(stacked[self.index])
        if self.scalar:
            return stacked[self.index]
        return stacked[self.index, ...].copy()  # an array of its own, as the append's was


def _all_rows(stacked, scalar, weak):
    """Every row's value from the stack's output array (_RowValue's, at once)."""
    if weak is not None:  # 0-d rows: Python's numbers
        return stacked.tolist()
    if scalar:
        return list(stacked)
    return [stacked[index, ...].copy() for index in range(len(stacked))]


class _Sequence:
    """A result list or tuple holding whole stacks of rows, from its parts' values: each part
    an item, or (the runs) a stack's output array giving all its rows."""

    def __init__(self, kind, runs):
        self.kind, self.runs = kind, runs  # runs: per part, None or the rows' flags

    def __call__(self, parts):
        items = []
        for part, flags in zip(parts, self.runs):
            if flags is None:
                items.append(part)
            else:
                items.extend(_all_rows(part, *flags))
        return items if self.kind is list else tuple(items)


def compact(spec, rebuilt):
    """The output spec `spec` (kiln._pytree: lists, tuples, dicts, `rebuilt` nodes) with each
    list or tuple holding a whole stack's rows (_RowValue of its rows 0..count-1 in order, of
    one output) one node building them all from that output: per row it was a Python call."""
    if type(spec) in (list, tuple):
        children = [compact(child, rebuilt) for child in spec]
        parts, runs, start = [], [], 0
        while start < len(children):
            count = _run_length(children, start, rebuilt)
            if count:
                parts.append(children[start]._kiln_parts)
                row = children[start]._kiln_rebuild
                runs.append((row.scalar, row.weak))
                start += count
            else:
                parts.append(children[start])
                runs.append(None)
                start += 1
        if all(run is None for run in runs):
            return children if type(spec) is list else tuple(children)
        return rebuilt(_Sequence(type(spec), runs), tuple(parts))
    if type(spec) is dict:
        return {key: compact(value, rebuilt) for key, value in spec.items()}
    return spec


def _run_length(children, start, rebuilt):
    """The count of a stack's rows, all of them, in order, from children[start]; else 0."""
    first = children[start]
    if not (type(first) is rebuilt and type(first._kiln_rebuild) is _RowValue
            and first._kiln_rebuild.index == 0):
        return 0
    count = first._kiln_rebuild.count
    if len(children) - start < count:
        return 0
    for index in range(count):
        child = children[start + index]
        if not (type(child) is rebuilt and type(child._kiln_rebuild) is _RowValue
                and child._kiln_rebuild.index == index
                and child._kiln_parts == first._kiln_parts):
            return 0
    return count
