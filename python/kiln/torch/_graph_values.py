"""FX graph values that are no ATen op, which kiln computes with as with any tensor: tensor
constants the graph holds as attributes (get_attr: `torch.tensor([])` in a model's code, lifted
by Dynamo), and the Python floats Dynamo passes in as 0-d tensors under dynamic=True
(`aten._local_scalar_dense` of one: `x * self.scale`), with Python's arithmetic on them.
"""
import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .. import _kiln
from ._aten_table import Unconvertible, cast, meta, tensor_dtype_supported

LARGEST_EMBEDDED_CONSTANT = 1 << 16  # elements; a larger one stays a torch tensor


def tensor_constant(context, graph_module, node):
    """The graph's attribute `node.target`, embedded in the kiln graph as a constant."""
    value = graph_module
    for name in node.target.split("."):
        value = getattr(value, name)
    if type(value) not in (torch.Tensor, torch.nn.Parameter) or not tensor_dtype_supported(value):
        raise Unconvertible(f"the graph's attribute {node.target} is not a plain tensor")
    if value.numel() > LARGEST_EMBEDDED_CONSTANT:
        raise Unconvertible(f"a tensor constant of {value.numel()} elements")
    with unset_fake_temporarily():  # AOTAutograd compiles inside its fake mode
        host = value.detach().cpu()
        # NumPy has no bfloat16: through float32, exactly
        array = (host.float() if host.dtype == torch.bfloat16 else host).numpy()
    return cast(context.trace.constant(array), value.dtype)


def is_scalar_input(node):
    """`.item()` of a 0-d float or bool tensor whose number is only computed with: its value
    stays that tensor, which the ops using the number read as their operand."""
    return (node.target is torch.ops.aten._local_scalar_dense.default
            and isinstance(meta(node), (torch.SymFloat, torch.SymBool)))


def _same(x):
    return x


# Python's arithmetic on such floats (`math.sqrt(2.0 / math.pi)` in GELU), as 0-d float64 values;
# sym_float of a size symbol (interpolate's output size from a dynamic input's times its scale)
# is the size as such a value.
_FLOAT_ARITHMETIC = {operator.add: _kiln.add, operator.sub: _kiln.subtract,
                     operator.mul: _kiln.multiply, operator.truediv: _kiln.divide,
                     operator.neg: _kiln.negative, operator.pow: _kiln.power,
                     torch._sym_sqrt: _kiln.sqrt, torch.sym_float: _same}


def is_float_arithmetic(node):
    return node.target in _FLOAT_ARITHMETIC and isinstance(meta(node), torch.SymFloat)


def float_arithmetic(context, node, arguments):
    """The node's value from its `arguments` (kiln tensors and numbers)."""
    operands = [context.as_tensor(argument, torch.float64) for argument in arguments]
    return _FLOAT_ARITHMETIC[node.target](*operands)
