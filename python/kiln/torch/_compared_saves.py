"""Values the backward compares with their forward's maximum or minimum are saved, not
recomputed.

amax's gradient (amin's, max's and min's without a dim alike) is a mask of the maxima:
eq(amax(x), x). The min-cut partitioner recomputes pointwise work in the backward rather than
save it (x = erf(y): it saves y and computes erf again). A math function's last bit depends on
whether its loop was vectorised (libmvec) or not (libm): recomputed in the backward's kernel, x
matched none of the forward's maxima, the mask was empty and the gradient NaN. Such an x is
marked CheckpointPolicy.MUST_SAVE, which the partitioner honours: the backward reads the very
values the maximum was taken of.
"""
import torch
from torch.utils.checkpoint import CheckpointPolicy

aten = torch.ops.aten
_EXTREMA = {aten.amax.default, aten.amin.default, aten.max.default, aten.min.default}
_COMPARISONS = {aten.eq.Tensor, aten.ne.Tensor, aten.ge.Tensor, aten.le.Tensor, aten.gt.Tensor,
                aten.lt.Tensor}


def _under_views(node):
    """The node whose values `node` shows (through views and detaches)."""
    while (isinstance(node, torch.fx.Node) and node.op == "call_function" and node.args
           and isinstance(node.target, torch._ops.OpOverload)
           and (node.target.is_view or node.target is aten.detach.default)):
        node = node.args[0]
    return node


def save_compared_extrema_operands(joint_graph):
    """Marks the computed values of `joint_graph` that a comparison reads beside their own
    maximum or minimum."""
    for node in joint_graph.nodes:
        if node.op != "call_function" or node.target not in _COMPARISONS:
            continue
        first, second = (_under_views(argument) for argument in node.args[:2])
        for extremum, values in ((first, second), (second, first)):
            if (isinstance(extremum, torch.fx.Node) and extremum.target in _EXTREMA
                    and _under_views(extremum.args[0]) is values
                    and values.op == "call_function"):
                values.meta["recompute"] = CheckpointPolicy.MUST_SAVE
