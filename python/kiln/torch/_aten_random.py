"""Conversion-table entries: dropout and torch's random draws (rand, randn, rand_like,
randn_like, randint, bernoulli) as kiln's Philox draws (the Random loop-IR node), keyed by a
graph input that each call draws from torch's default generator (LoweringContext.draw_key), as
Inductor's seed input: every training step has its own mask, torch.manual_seed makes runs
repeat (kiln's numbers, not eager's). Dropout's mask is a forward output that AOTAutograd saves
for the backward (its partitioner never recomputes random ops), so the backward applies the
forward's mask.
"""
import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, computing_dtype, kiln_dtype, lowers, meta

aten = torch.ops.aten


def _static_shape(value):
    shape = list(meta(value).shape) if isinstance(value, torch.fx.Node) else list(value)
    if not all(type(extent) is int for extent in shape):
        raise Unconvertible("random draws of dynamic sizes")
    return shape


def _draw(context, shape, dtype, normal=False):
    """Uniform [0, 1) or standard normal values of float torch dtype `dtype` (half precision
    drawn in float32)."""
    kind = kiln_dtype(computing_dtype(dtype))
    if kind not in ("float32", "float64"):
        raise Unconvertible(f"random draws of {dtype}")
    key, seed = context.draw_key()
    draw = _kiln.random_normal if normal else _kiln.random_uniform
    return draw(key, list(shape), seed, kind, key=key)


@lowers(aten.native_dropout.default)
def _native_dropout(context, node, x, p, train):
    """(x * mask / (1 - p), mask), mask true with probability 1 - p; eager's product, so an
    infinite element dropped is NaN there too, and p = 1 gives zeros (scale 0)."""
    dtype = meta(node)[0].dtype
    if train is False:
        return x, context.full(_static_shape(node.args[0]), True, torch.bool)
    computing = computing_dtype(dtype)
    keep = _kiln.greater_equal(_draw(context, _static_shape(node.args[0]), dtype),
                               context.full((), p, computing, rounded=False))
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    masked = _kiln.multiply(cast(x, computing), cast(keep, computing))
    return _kiln.multiply(masked, context.full((), scale, computing, rounded=False)), keep


@lowers(aten.rand_like.default, aten.randn_like.default)
def _random_like(context, node, x, **_):
    return _draw(context, _static_shape(node), meta(node).dtype,
                 normal=node.target is aten.randn_like.default)


@lowers(aten.rand.default, aten.randn.default)
def _random(context, node, size, **_):
    return _draw(context, _static_shape(node), meta(node).dtype,
                 normal=node.target is aten.randn.default)


@lowers(aten.randint.default, aten.randint.low)
def _randint(context, node, *args, **_):
    """low + floor(u * (high - low)), u a float64 uniform: 53 random bits, so ranges past
    2**53 are refused."""
    low, high = (0, args[0]) if node.target is aten.randint.default else args[:2]
    if not (isinstance(low, int) and isinstance(high, int)) or not 0 < high - low <= 2 ** 53:
        raise Unconvertible("randint of a range kiln does not draw")
    u = _draw(context, _static_shape(node), torch.float64)
    drawn = _kiln.floor(_kiln.multiply(u, context.full((), high - low, torch.float64)))
    return _kiln.add(cast(drawn, torch.int64), context.full((), low, torch.int64))


@lowers(aten.bernoulli.p)
def _bernoulli(context, node, x, p=0.5, *, generator=None):
    """1 with probability p (torch.bernoulli(x, p), x.bernoulli_(p)), as x's dtype. A p outside
    [0, 1] (NaN too) runs in eager PyTorch, which raises its RuntimeError."""
    if generator is not None or not isinstance(p, (int, float)):
        raise Unconvertible("bernoulli with a generator or a tensor p")
    if not 0 <= p <= 1:
        raise Unconvertible(f"bernoulli with p={p}, outside [0, 1] (eager raises)")
    dtype = meta(node).dtype
    drawn = computing_dtype(dtype) if dtype.is_floating_point else torch.float32
    return _kiln.less(_draw(context, _static_shape(node), drawn),
                      context.full((), p, drawn, rounded=False))
