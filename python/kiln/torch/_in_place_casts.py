"""In-place arithmetic whose result the written tensor cannot hold: `x.mul_(y)` of an integer x
and a float y (a tensor, 0-d too), `x.addcmul_(a, b)` of floats into integers, `y.mul_(1j)` of a
float y. Eager torch refuses them ("result type Float can't be cast to the desired output type
Long"); fake tensors trace some of them, functionalisation makes them a product and a copy_ that
casts, and kiln wrote the truncated values. Such a graph runs in eager PyTorch, which raises.

The test is eager's own: the ops' common dtype (torch._prims_common's rule for elementwise ops,
numbers of lower priority than tensors, 0-d tensors than others) must cast to the written
tensor's dtype (torch.can_cast)."""
import operator

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

# In-place methods (and the operators of the same ops) whose result is their operands' common
# dtype (ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT).
_PROMOTING = {"add_", "sub_", "mul_", "addcmul_", "clamp_", "clamp_min_", "clamp_max_",
              "fmod_", "remainder_", "floor_divide_", "lerp_", "bitwise_and_", "bitwise_or_",
              "bitwise_xor_"}
_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.imod, operator.ifloordiv,
              operator.iand, operator.ior, operator.ixor}
# A symbolic number (dynamic shapes) by its kind.
_NUMBERS = {torch.SymInt: 1, torch.SymFloat: 1.0, torch.SymBool: True}


def uncastable_write(graph_module):
    """The first node of a Dynamo graph writing in place a result its tensor cannot hold, or
    None."""
    for node in graph_module.graph.nodes:
        promoting = (node.op == "call_method" and node.target in _PROMOTING
                     or node.op == "call_function" and node.target in _OPERATORS)
        written = _value(node.args[0]) if promoting and node.args else None
        if not isinstance(written, torch.Tensor):
            continue
        operands = [value for value in map(_value, torch.utils._pytree.tree_leaves(
            (node.args[1:], node.kwargs))) if value is not None]
        try:
            _, result = elementwise_dtypes(written, *operands, type_promotion_kind=(
                ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT))
        except Exception:  # noqa: BLE001  operands it does not take: eager's own error decides
            continue
        if not torch.can_cast(result, written.dtype):
            return node
    return None


def _value(argument):
    """A tensor Dynamo recorded for an FX node, a number (a symbolic one as one of its kind),
    else None."""
    if isinstance(argument, torch.fx.Node):
        argument = argument.meta.get("example_value")
    if isinstance(argument, tuple(_NUMBERS)):
        return _NUMBERS[type(argument)]
    return argument if isinstance(argument, torch.Tensor) or type(argument) in (
        bool, int, float, complex) else None
