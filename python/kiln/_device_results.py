"""kiln.wrap_numpy's results on the device: the arguments the function assigned into written
back, and results returned as NumPy returns them: an argument itself or a view of it, a view of
another result, an array returned twice as one array, and a new array in NumPy's memory order.

kiln._returned_views says which result leaves are views (of an argument, or of a returned result,
whose layout kiln knows as NumPy lays it out) and which new arrays NumPy lays out densely in
another order than C's (memory_ordered). Here each result gets a return spec:
- n (an int): graph output n itself, a row-major array;
- ("output", n, layout): a view of graph output n: a new array written in NumPy's memory order
  and returned with NumPy's strides, or a view of such a result or of a row-major one;
- ("argument", position, layout): the call's array argument at `position` among its arrays,
  itself where `layout` is None;
- ("result", index, None): the earlier result at `index` (an array returned twice);
where a layout is (offset, shape, strides, read_only) in elements. So `return x` gives the
caller's array itself; `return x.T`, `x[1:]`, `x.reshape(-1)` or `np.broadcast_to(x[0], ...)` a
view of its memory in its own library (torch's as_strided, a CuPy ndarray over its memory), and
a write through it reaches x, as in NumPy. What a library cannot view stays a new row-major
array: JAX arrays (immutable, no views) except the argument itself, torch's negative strides
(np.flip), and the NumPy arrays among the arguments (copied in). torch and CuPy have no read-only
flag: a broadcast's view is writable there, as their own expand/broadcast_to are."""
import importlib
import sys

import numpy as np

from ._device_array_kinds import _is_device_array, _library_of
from ._returned_views import ArgumentView, ResultView, memory_ordered, returned_view


def _can_view(array, layout):
    """Whether kiln can return a view `layout` of `array` (an argument, or an array of the
    results' library) in its library, or `array` itself (layout None)."""
    if not _is_device_array(array):
        return False
    if layout is None:
        return True
    library = _library_of(array)
    return library == "cupy" or library == "torch" and all(s >= 0 for s in layout[2])


def return_specs(items, positions, arguments, results_like, output_of):
    """(the return spec of each result leaf in `items`, or None where each is graph output n
    for the n-th leaf; the graph outputs). `positions`: by id of an argument's tracer, its
    position among `arguments` (the call's arrays); `results_like`: an array of the library
    the graph outputs are returned in; `output_of(leaf)`: the tensor of a leaf the graph
    computes."""
    specs, outputs = [None] * len(items), []
    first = {}  # id of a leaf -> its index among the items
    for index, item in enumerate(items):
        view = returned_view(item, positions, lambda root: None)
        if isinstance(view, ArgumentView) and _can_view(arguments[view._kiln_argument],
                                                        view._kiln_view):
            specs[index] = ("argument", view._kiln_argument, view._kiln_view)
        elif id(item) in first:
            specs[index] = ("result", first[id(item)], None)
        else:
            first[id(item)] = index
    # The leaves the graph computes: a view of one returned too is not one of them.
    computed = {id(item) for index, item in enumerate(items) if specs[index] is None and (
        getattr(item, "_root", None) is None or id(item._root) not in first)}
    for index, item in enumerate(items):
        if specs[index] is None and id(item) in computed:
            ordered = memory_ordered(item)
            if ordered is not None and _can_view(results_like, ordered[1]):
                outputs.append(ordered[0])  # written in NumPy's memory order
                specs[index] = ("output", len(outputs) - 1, ordered[1])
            else:
                outputs.append(output_of(item))
                specs[index] = len(outputs) - 1

    def slot_of(root):  # the graph output a returned root is, as returned_view takes it
        spec = specs[first[id(root)]] if id(root) in computed else None
        return spec if type(spec) is int else None if spec is None else ResultView(*spec[1:])
    for index, item in enumerate(items):
        if specs[index] is None:
            view = returned_view(item, positions, slot_of)
            if isinstance(view, ResultView) and _can_view(results_like, view._kiln_view):
                specs[index] = ("output", view._kiln_result, view._kiln_view)
            else:
                outputs.append(output_of(item))
                specs[index] = len(outputs) - 1
    return (None if specs == list(range(len(items))) else specs), outputs


def assembled(specs, outputs, arguments):
    """The call's results: the graph's `outputs` and the call's array `arguments` placed and
    viewed by the return specs `specs` (return_specs')."""
    returned = []
    for spec in specs:
        if type(spec) is int:
            returned.append(outputs[spec])
            continue
        kind, place, layout = spec
        if kind == "result":
            returned.append(returned[place])
            continue
        array = arguments[place] if kind == "argument" else outputs[place]
        returned.append(array if layout is None else _view(array, layout))
    return returned


def _view(array, layout):
    """The view `layout` (offset, shape, strides, read_only) of a torch tensor or CuPy array,
    sharing its memory (and holding it)."""
    offset, shape, strides, _ = layout
    if _library_of(array) == "torch":
        return array.as_strided(shape, strides, array.storage_offset() + offset)
    cupy = sys.modules["cupy"]
    itemsize = array.itemsize
    return cupy.ndarray(shape, array.dtype, array.data + offset * itemsize,
                        tuple(s * itemsize for s in strides))


def write_back(results, arguments, name):
    """The results less the last len(arguments): the new values of arguments the function
    assigned into, copied into their memory (torch tensors, CuPy arrays, NumPy arrays copied
    in); an immutable array (JAX) or one of a library kiln cannot write is a TypeError."""
    count = len(results) - len(arguments)
    for argument, value in zip(arguments, results[count:]):
        library = _library_of(argument)
        if isinstance(argument, np.ndarray):
            np.copyto(argument, value.get() if hasattr(value, "get") else value)
        elif library == "torch":
            argument.copy_(sys.modules["torch"].as_tensor(value, device=argument.device))
        elif library == "cupy":
            sys.modules["cupy"].copyto(argument, sys.modules["cupy"].asarray(value))
        else:
            raise TypeError(f"kiln.wrap_numpy({name}): the function assigns into an argument "
                            f"of type {type(argument).__name__}, which kiln cannot write "
                            f"(JAX arrays are immutable); pass a torch tensor or CuPy array, "
                            f"or assign into a copy")
    return results[:count]


def on_device_of(array, like):
    """A NumPy result as an array of `like`'s library on its device."""
    library = _library_of(like)
    if library == "torch":
        return sys.modules["torch"].as_tensor(array, device=like.device)
    if library == "cupy":
        return sys.modules["cupy"].asarray(array)
    if library == "jax":
        jax = importlib.import_module("jax")
        return jax.device_put(array, next(iter(like.devices())))
    return array  # a library kiln does not know: NumPy's result as it is
