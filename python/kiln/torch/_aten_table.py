"""The conversion table: one entry per ATen overload, mapping it to kiln builder calls.

An entry is a function `(context, node, *args, **kwargs) -> kiln Tensor | tuple` registered with
`@lowers(aten.op.overload, ...)`. Its arguments are the FX node's, with every input node replaced
by its kiln Tensor. Results are checked against the node's fake-tensor metadata (dtype and shape)
by the converter, so an entry may leave the final cast to the converter, never a wrong shape.
The entries live in _aten_pointwise.py, _aten_structure.py, _aten_linear.py, _aten_slice_writes.py,
_aten_diagonals.py, _aten_pooling.py, _aten_convolution.py, _aten_bags.py, _aten_sampling.py,
_aten_antialias.py, _aten_attention.py, _aten_sorting.py, _aten_scans.py, _aten_special.py,
_aten_gradients.py, _aten_random.py and _value_checks.py (and _library_ops.py, for ops other
libraries define);
this module owns the table, the dtype mapping and the helpers they share.
"""
import numpy as np
import torch

from .. import _kiln

# op overload -> lowering function; filled by the @lowers decorators of the entry modules.
TABLE = {}

# Overloads with entries that compute nothing: views of their input. A partition made only of
# these stays in eager PyTorch, where a view costs nothing.
VIEW_OPS = set()

# Nodes that only assert what the trace already fixed (a tensor's dtype, device, sizes): a kiln
# graph is compiled for exactly those, so they compute nothing there.
METADATA_ASSERTIONS = {torch.ops.aten._assert_tensor_metadata.default}

_KILN_DTYPES = {
    torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32",
    torch.float64: "float64", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool",
}
_INTEGER_DTYPES = {"int8", "int16", "int32", "int64", "uint8"}


def lowers(*overloads, view=False):
    def register(function):
        for overload in overloads:
            if overload in TABLE:
                raise RuntimeError(f"kiln.torch: two lowerings for {overload}")
            TABLE[overload] = function
            if view:
                VIEW_OPS.add(overload)
        return function
    return register


def kiln_dtype(dtype):
    """kiln's name of a torch dtype ("float32", "bfloat16", ...); None when kiln has none
    (complex, quantized, unsigned past 8 bits, float8)."""
    return _KILN_DTYPES.get(dtype)


def tensor_dtype_supported(value):
    """Non-tensors pass; tensors need a dtype kiln has, dense (strided) memory and a device
    kiln compiles for (the CPU, CUDA): complex, quantized, sparse and other layouts stay in
    PyTorch."""
    return not isinstance(value, torch.Tensor) or (
        kiln_dtype(value.dtype) is not None and value.layout == torch.strided
        and value.device.type in _DEVICES)


_DEVICES = ("cpu", "cuda")


def meta(node):
    """The fake tensor (or tuple of them) Dynamo/AOTAutograd recorded for an FX node."""
    return node.meta.get("val")


class Unconvertible(Exception):
    """This node (with these arguments) has no kiln lowering: it runs in eager PyTorch."""


class LoweringContext:
    """What the entries need beyond their arguments: the trace, and constants made in it."""

    def __init__(self, trace):
        self.trace = trace
        self.sizes = None  # SizeSymbols when the graph keeps its dynamic sizes symbolic
        self.mutations = []  # (copy_ node, new value) per input the graph mutates
        # The op PyTorch's decomposition took apart into the node being lowered, if any
        # (node.meta["original_aten"]): its eager kernel's errors are the user's.
        self.original = None
        self._anchor = None
        self.random_key = None  # the graph's random key input, once an entry draws (draw_key)
        self._draws = 0

    def draw_key(self):
        """(key, seed) for one random op: the key is a 0-d int64 input after the FX graph's own
        (lower_graph converts the placeholders first), which each call of the compiled graph draws
        from torch's generator (CompiledGraph._run); the seed is this op's own offset from it,
        so two ops of a graph draw different numbers."""
        if self.random_key is None:
            self.random_key = self.trace.input("int64", [])
        self._draws += 1
        return self.random_key, self._draws - 1

    def anchor(self):
        """A tensor of this trace, for the builder calls that need one to know their trace."""
        if self._anchor is None:
            self._anchor = self.trace.constant(np.zeros((), np.int64))
        return self._anchor

    def full(self, shape, value, dtype, rounded=True):
        """A constant tensor of a torch dtype (exact for integers past 2**53); `value` may be a
        kiln.Size (a dynamic length used as data)."""
        kind = kiln_dtype(dtype)
        if kind is None:
            raise Unconvertible(f"dtype {dtype}")
        if isinstance(value, _kiln.Size):
            size = cast(_kiln.size_value(self.anchor(), value, "int64"), dtype)
            return _kiln.broadcast_to(size, list(shape)) if len(shape) else size
        if isinstance(value, bool) or kind == "bool":
            return _kiln.full(self.anchor(), list(shape), float(bool(value)), kind)
        if isinstance(value, int) and kind in _INTEGER_DTYPES:
            return _kiln.full_integer(self.anchor(), list(shape), int(np.int64(value)), kind)
        if kind in ("float16", "bfloat16") and rounded:
            # A half-precision constant holds its dtype's value, as torch rounds a Python number
            # to the tensor's dtype (x + 0.3 adds bfloat16(0.3)); kiln computes such kernels in
            # float32, where an unrounded 0.3 changed a third of the sums' last bits.
            value = float(torch.tensor(float(value), dtype=dtype))
        return _kiln.full(self.anchor(), list(shape), float(value), kind)

    def as_tensor(self, value, dtype, rounded=True):
        """`value` (a kiln Tensor or a Python number) as a tensor of torch dtype `dtype`; a
        Python number not rounded to a half-precision dtype where `rounded` is False."""
        if isinstance(value, _kiln.Tensor):
            return cast(value, dtype)
        if isinstance(value, (bool, int, float, _kiln.Size)):
            return self.full((), value, dtype, rounded)
        raise Unconvertible(f"operand {type(value).__name__}")


def cast(tensor, dtype):
    kind = kiln_dtype(dtype)
    if kind is None:
        raise Unconvertible(f"dtype {dtype}")
    return tensor if tensor.dtype == kind else _kiln.astype(tensor, kind)


def computing_dtype(dtype):
    """The dtype kiln computes a torch dtype's statistics and library calls in: float16 and
    bfloat16 in float32 (rounded once when stored), as PyTorch's CPU kernels accumulate."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def out_dtype(node, index=None):
    value = meta(node)
    if index is not None:
        value = value[index]
    return value.dtype


def out_shape(context, node, index=None):
    """The shape torch recorded for the node's result: ints, and kiln.Size objects for dynamic
    sizes when the graph keeps them symbolic."""
    value = meta(node)
    if index is not None:
        value = value[index]
    if context.sizes is not None:
        return [context.sizes.size(extent) for extent in value.shape]
    return [int(extent) for extent in value.shape]


def axis(dim, ndim):
    """A torch dim (negative counts from the end; 0-d tensors accept 0 and -1) as an axis."""
    if ndim == 0:
        return 0
    return dim + ndim if dim < 0 else dim


def reduced_operand(x, dims, keepdim):
    """(x, kiln axes, keepdim) of a reduction over torch `dims` (an int, a list, or None for
    all): a 0-d x reduced along dim 0 or -1, as torch allows, is reduced as one element along
    an axis of its own (kiln has no axis 0 in a 0-d tensor), and stays 0-d with keepdim."""
    if x.ndim == 0:
        return _kiln.reshape(x, [1]), [0], False
    return x, axes(dims, x.ndim), keepdim


def axes(dims, ndim):
    """Reduction dims: None or [] mean all of them (as torch's sum/mean/amax do)."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({axis(dim, ndim) for dim in dims})
