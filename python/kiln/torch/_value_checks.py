"""Eager torch's run-time checks of values, kept where kiln decomposes the op: eager
binary_cross_entropy raises RuntimeError for an input or target outside [0, 1] (NaN too),
bernoulli for a probability outside it; their decompositions computed a number (NaN, or draws
as if p were clamped). Each decomposition here asserts what the eager kernel checks with
aten._assert_async.msg (side-effecting, so the graph keeps it) and then decomposes as PyTorch
does; kiln lowers the assertion to a check that raises eager's RuntimeError, with its message,
when the graph runs (_kiln.check_flag), and a graph run in eager PyTorch raises it itself.
quantile and nanquantile decompose inside the dispatcher (CompositeImplicitAutograd), past any
decomposition table: their check of a tensor q is put into Dynamo's graph instead
(assert_quantile_ranges).
"""
import numpy as np
import torch
from torch._decomp import get_decompositions

from .. import _kiln
from ._aten_table import lowers

aten = torch.ops.aten


def _pytorch_decomposition(op):
    """PyTorch's registered decomposition of `op`, the one its Core ATen table holds. Not read
    from core_aten_decompositions(): each call builds a new lazy table that a read materialises
    in full (every CompositeImplicitAutograd op of every namespace), 0.04-0.05 s a lookup,
    0.2 s of `import kiln.torch` for these four."""
    return get_decompositions([op])[op]


def _checked(op, condition, message):
    """PyTorch's decomposition of `op`, after asserting condition(*args, **kwargs)."""
    decomposition = _pytorch_decomposition(op)

    def decompose(*args, **kwargs):
        aten._assert_async.msg(condition(*args, **kwargs), message)
        return decomposition(*args, **kwargs)
    return decompose


def _unless(op, valid):
    """PyTorch's decomposition of `op`, except where valid(*args, **kwargs) is false (a number
    eager's kernel refuses, known when tracing): the op stays whole (NotImplemented) and runs
    in eager PyTorch, which raises its own error."""
    decomposition = _pytorch_decomposition(op)

    def decompose(*args, **kwargs):
        if not valid(*args, **kwargs):
            return NotImplemented
        return decomposition(*args, **kwargs)
    return decompose


def _in_unit_interval(x):
    """All of x in [0, 1]: false for NaN too, as eager's `x >= 0 && x <= 1`."""
    return torch.all((x >= 0) & (x <= 1))


def _binary_cross_entropy(x, target, *args, **kwargs):
    """Eager's two checks, in its order: the input's, then the target's."""
    aten._assert_async.msg(_in_unit_interval(x), "all elements of input should be between 0 and 1")
    return _target_checked(x, target, *args, **kwargs)


_target_checked = _checked(aten.binary_cross_entropy.default,
                           lambda x, target, *_, **__: _in_unit_interval(target),
                           "all elements of target should be between 0 and 1")

VALUE_CHECK_DECOMPOSITIONS = {
    aten.binary_cross_entropy.default: _binary_cross_entropy,
    aten.bernoulli.default: _checked(
        aten.bernoulli.default, lambda p, *_, **__: _in_unit_interval(p),
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    # numbers eager refuses: smooth_l1_loss's negative beta, huber_loss's non-positive delta
    aten.smooth_l1_loss.default: _unless(
        aten.smooth_l1_loss.default, lambda x, y, reduction=1, beta=1.0: beta >= 0),
    aten.huber_loss.default: _unless(
        aten.huber_loss.default, lambda x, y, reduction=1, delta=1.0: delta > 0),
}


# The assertions lowered here: nodes with no result (node_supported takes them).
ASSERTIONS = {aten._assert_async.msg}


@lowers(aten._assert_async.msg)
def _assert_async(context, node, condition, message):
    """RuntimeError(message) when the graph runs if `condition` (a 0-d tensor) is false,
    naming the op decomposed (node.meta's original_aten; PyTorch's own asserts, one_hot's,
    name theirs in the message) and the user's line."""
    original = context.original
    own = original is None or str(original) in {str(op) for op in ASSERTIONS}  # (copies in meta)
    op = "assert" if own else original.name()
    trace = context.trace
    failed = _kiln.logical_not(_kiln.astype(condition, "bool"))
    nothing = trace.constant(np.zeros((0,), np.int64))
    _kiln.check_flag(failed, nothing, message, "", op, "RuntimeError")
    return None


_QUANTILES = {torch.quantile, torch.nanquantile, torch.Tensor.quantile, torch.Tensor.nanquantile}
_QUANTILE_METHODS = {"quantile", "nanquantile"}


def _assert_quantile_range(q):
    """Eager quantile's check of a tensor q (its decomposition clamped a q below 0 to 0)."""
    torch._assert_async(_in_unit_interval(q), "quantile() q values must be in the range [0, 1]")


def assert_quantile_ranges(graph_module):
    """Puts eager's check of q before each quantile and nanquantile of a tensor q in Dynamo's
    graph (AOTAutograd traces it into aten._assert_async.msg, which kiln checks)."""
    changed = False
    for node in list(graph_module.graph.nodes):
        is_quantile = (node.op == "call_function" and node.target in _QUANTILES
                       or node.op == "call_method" and node.target in _QUANTILE_METHODS)
        q = node.args[1] if is_quantile and len(node.args) > 1 else node.kwargs.get("q")
        if not is_quantile or not isinstance(q, torch.fx.Node):
            continue
        with graph_module.graph.inserting_before(node):
            check = graph_module.graph.call_function(_assert_quantile_range, (q,))
        check.meta["stack_trace"] = node.meta.get("stack_trace")  # the user's line
        changed = True
    if changed:
        graph_module.recompile()
