"""Conversion-table entries: ATen's pointwise ops and reductions (see _aten_table.py).

Type promotion is PyTorch's, not NumPy's: every operand is cast to the dtype the op computes in
(the node's result dtype, or for comparisons the operands' torch.result_type) before kiln's
builder runs, so kiln's own NumPy promotion never decides anything.
"""
import math

import torch

from .. import _kiln
from ._aten_table import (Unconvertible, axes, axis, cast, computing_dtype, lowers, meta,
                          out_dtype, out_shape, reduced_operand)

aten = torch.ops.aten


def _computing_dtype(node, operands):
    """The dtype torch computes an op in: its result dtype, unless that is bool (comparisons,
    logical ops), where it is the operands' promoted dtype."""
    result = out_dtype(node)
    if result != torch.bool:
        return result
    samples = []
    for operand in operands:
        if isinstance(operand, torch.fx.Node):
            samples.append(_promotion_sample(meta(operand)))
        else:
            samples.append(operand)
    if len(samples) == 2:
        return torch.result_type(samples[0], samples[1])
    return samples[0].dtype if samples and isinstance(samples[0], torch.Tensor) else result


def _promotion_sample(value):
    """What promotes as an operand node's value does: a tensor of its dtype (0-d tensors
    promote like scalars: kept 0-d), or a Python number for a size or a float the graph
    computes (`arange(n) >= n - 2` under dynamic=True compares with a SymInt)."""
    if isinstance(value, torch.Tensor):
        return torch.empty((1,) if value.dim() else (), dtype=value.dtype)
    for symbolic, number in ((torch.SymBool, False), (torch.SymInt, 0), (torch.SymFloat, 0.0)):
        if isinstance(value, symbolic):
            return number
    return value


# torch's CPU multiplication and division take a Python scalar at the precision they compute
# in (a half-precision tensor's float32), unrounded, and round the result once; other ops cast
# it to the tensor's dtype. (kiln rounds every 16-bit float value, constants included.)
_UNROUNDED_SCALARS = frozenset([aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor,
                                aten.div.Scalar, aten.true_divide.Tensor])


def _operands(context, values, dtype):
    return [context.as_tensor(value, dtype) for value in values]


def _elementwise(builder, arity):
    def lower(context, node, *args, **kwargs):
        operand_nodes = node.args[:arity]
        dtype = _computing_dtype(node, operand_nodes)
        values = args[:arity]
        if (node.target in _UNROUNDED_SCALARS and dtype in (torch.float16, torch.bfloat16)
                and not all(isinstance(value, _kiln.Tensor) for value in values)):
            operands = [context.as_tensor(value, torch.float32) for value in values]
            return cast(builder(*operands, *args[arity:], **kwargs), dtype)
        return builder(*_operands(context, values, dtype), *args[arity:], **kwargs)
    return lower


def _register_elementwise(table, arity):
    for overloads, builder in table:
        lowers(*overloads)(_elementwise(builder, arity))


_register_elementwise([
    ((aten.neg.default,), _kiln.negative), ((aten.abs.default,), _kiln.abs),
    ((aten.exp.default,), _kiln.exp), ((aten.exp2.default,), _kiln.exp2),
    ((aten.expm1.default,), _kiln.expm1), ((aten.log.default,), _kiln.log),
    ((aten.log1p.default,), _kiln.log1p), ((aten.log2.default,), _kiln.log2),
    ((aten.log10.default,), _kiln.log10), ((aten.sqrt.default,), _kiln.sqrt),
    ((aten.rsqrt.default,), _kiln.rsqrt), ((aten.reciprocal.default,), _kiln.reciprocal),
    ((aten.sin.default,), _kiln.sin), ((aten.cos.default,), _kiln.cos),
    ((aten.tan.default,), _kiln.tan), ((aten.tanh.default,), _kiln.tanh),
    ((aten.sinh.default,), _kiln.sinh), ((aten.cosh.default,), _kiln.cosh),
    ((aten.asin.default,), _kiln.arcsin), ((aten.acos.default,), _kiln.arccos),
    ((aten.atan.default,), _kiln.arctan), ((aten.asinh.default,), _kiln.arcsinh),
    ((aten.acosh.default,), _kiln.arccosh), ((aten.atanh.default,), _kiln.arctanh),
    ((aten.erf.default,), _kiln.erf), ((aten.erfc.default,), _kiln.erfc),
    ((aten.sigmoid.default,), _kiln.sigmoid), ((aten.relu.default,), _kiln.relu),
    ((aten.floor.default,), _kiln.floor), ((aten.ceil.default,), _kiln.ceil),
    ((aten.trunc.default,), _kiln.trunc), ((aten.round.default,), _kiln.round),
    ((aten.logical_not.default,), _kiln.logical_not),
    ((aten.isnan.default,), _kiln.isnan), ((aten.isinf.default,), _kiln.isinf),
    ((aten.signbit.default,), _kiln.signbit),
], 1)

def _checked_divisor(builder, name):
    """An integer division or remainder: a zero divisor raises when the graph runs, as
    torch's "ZeroDivisionError" (kiln's kernels return 0 there)."""
    def divide(a, b):
        if b.dtype in _INTEGER_KINDS:
            _kiln.check_nonzero_divisor(b, name)
        return builder(a, b)
    return divide


_INTEGER_KINDS = {"int8", "int16", "int32", "int64", "uint8"}


def _remainder(a, b):
    """torch.remainder: kiln's (NumPy's) mod, except that a zero result keeps fmod's sign, the
    dividend's (torch.remainder(-4.0, 2.0) is -0.0; NumPy's is 0.0, the divisor's)."""
    result = _kiln.mod(a, b)
    if "float" not in result.dtype:
        return result
    return _kiln.where(_kiln.equal(result, 0.0), _kiln.copysign(result, a), result)

_register_elementwise([
    ((aten.mul.Tensor, aten.mul.Scalar), _kiln.multiply),
    ((aten.div.Tensor, aten.div.Scalar, aten.true_divide.Tensor), _kiln.divide),
    ((aten.maximum.default,), _kiln.maximum), ((aten.minimum.default,), _kiln.minimum),
    # (NaN only where both are NaN; gcd and lcm of integers, of magnitudes, 0 with 0)
    ((aten.fmax.default,), _kiln.fmax), ((aten.fmin.default,), _kiln.fmin),
    ((aten.gcd.default,), _kiln.gcd), ((aten.lcm.default,), _kiln.lcm),
    # torch's ldexp is x * 2**other in the float result dtype (other may be fractional)
    ((aten.ldexp.Tensor,), lambda x, other: _kiln.multiply(x, _kiln.exp2(other))),
    ((aten.atan2.default,), _kiln.arctan2),
    # (libm's hypot: no overflow of the squares; copysign of integers computes in the float
    # result dtype)
    ((aten.hypot.default,), _kiln.hypot),
    ((aten.copysign.Tensor, aten.copysign.Scalar), _kiln.copysign),
    ((aten.remainder.Tensor, aten.remainder.Scalar), _checked_divisor(_remainder, "remainder")),
    ((aten.fmod.Tensor, aten.fmod.Scalar), _checked_divisor(_kiln.fmod, "fmod")),
    ((aten.eq.Tensor, aten.eq.Scalar), _kiln.equal),
    ((aten.ne.Tensor, aten.ne.Scalar), _kiln.not_equal),
    ((aten.lt.Tensor, aten.lt.Scalar), _kiln.less),
    ((aten.le.Tensor, aten.le.Scalar), _kiln.less_equal),
    ((aten.gt.Tensor, aten.gt.Scalar), _kiln.greater),
    ((aten.ge.Tensor, aten.ge.Scalar), _kiln.greater_equal),
    ((aten.logical_and.default,), _kiln.logical_and),
    ((aten.logical_or.default,), _kiln.logical_or),
    ((aten.logical_xor.default,), _kiln.logical_xor),
    ((aten.bitwise_and.Tensor, aten.bitwise_and.Scalar), _kiln.bitwise_and),
    ((aten.bitwise_or.Tensor, aten.bitwise_or.Scalar), _kiln.bitwise_or),
    ((aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar), _kiln.bitwise_xor),
    # kiln's shifts give torch's results for counts outside [0, bit width) (0, or -1 for a
    # negative value shifted right); a count eager wraps into the tensor's dtype (int8 >> 257
    # shifts by 1) is wrapped alike, by the cast into the computing dtype
    ((aten.__lshift__.Tensor, aten.__lshift__.Scalar, aten.bitwise_left_shift.Tensor,
      aten.bitwise_left_shift.Tensor_Scalar, aten.bitwise_left_shift.Scalar_Tensor),
     _kiln.left_shift),
    ((aten.__rshift__.Tensor, aten.__rshift__.Scalar, aten.bitwise_right_shift.Tensor,
      aten.bitwise_right_shift.Tensor_Scalar, aten.bitwise_right_shift.Scalar_Tensor),
     _kiln.right_shift),
], 2)


@lowers(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def _add_or_subtract(context, node, a, b, alpha=1):
    dtype = out_dtype(node)
    a, b = _operands(context, (a, b), dtype)
    if alpha != 1:
        b = _kiln.multiply(b, context.as_tensor(alpha, dtype))
    subtract = node.target in (aten.sub.Tensor, aten.sub.Scalar)
    return (_kiln.subtract if subtract else _kiln.add)(a, b)


@lowers(aten.rsub.Scalar, aten.rsub.Tensor)
def _reverse_subtract(context, node, a, b, alpha=1):
    dtype = out_dtype(node)
    a, b = _operands(context, (a, b), dtype)
    if alpha != 1:
        a = _kiln.multiply(a, context.as_tensor(alpha, dtype))
    return _kiln.subtract(b, a)


@lowers(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _divide_rounding(context, node, a, b, rounding_mode=None):
    dtype = out_dtype(node)
    a, b = _operands(context, (a, b), dtype)
    if rounding_mode is None:
        return _kiln.divide(a, b)
    if not dtype.is_floating_point:
        _kiln.check_nonzero_divisor(b, f"div(rounding_mode={rounding_mode!r})")
    if rounding_mode == "floor":
        return _kiln.floor_divide(a, b)
    if dtype.is_floating_point:
        return _kiln.trunc(_kiln.divide(a, b))
    # Integer division rounding toward zero: floor division, one up where signs differ.
    quotient = _kiln.floor_divide(a, b)
    inexact = _kiln.not_equal(_kiln.mod(a, b), context.full((), 0, dtype))
    zero = context.full((), 0, dtype)
    signs_differ = _kiln.not_equal(_kiln.less(a, zero), _kiln.less(b, zero))
    return _kiln.where(_kiln.logical_and(inexact, signs_differ),
                       _kiln.add(quotient, context.full((), 1, dtype)), quotient)


@lowers(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _power(context, node, base, exponent):
    dtype = out_dtype(node)
    if (isinstance(exponent, int) and exponent < 0 and isinstance(base, _kiln.Tensor)
            and not dtype.is_floating_point and not dtype.is_complex):
        # Eager torch's RuntimeError "Integers to negative integer powers are not allowed"
        # (kiln's kernel computed 0 or 1): eager torch runs the node, and raises it.
        raise Unconvertible("an integer tensor to a negative integer power")
    if isinstance(exponent, (int, float)) and isinstance(base, _kiln.Tensor):
        base = cast(base, dtype)
        # torch's own kernel takes these exponents apart the same way (bit for bit): no
        # vector pow, whose slow path a negative base takes in every lane (GPT-2's GELU, x**3)
        if exponent == 2:
            return _kiln.square(base)
        if exponent == 1:
            return base
        if exponent == 3 and dtype.is_floating_point:
            return _kiln.multiply(_kiln.multiply(base, base), base)
        if exponent == 0.5 and dtype.is_floating_point:
            return _kiln.sqrt(base)
        if exponent == -0.5 and dtype.is_floating_point:
            return _kiln.rsqrt(base)
        if exponent == -1 and dtype.is_floating_point:
            return _kiln.reciprocal(base)
        if exponent == -2 and dtype.is_floating_point:
            return _kiln.reciprocal(_kiln.multiply(base, base))
    base, exponent = _operands(context, (base, exponent), dtype)
    return _kiln.power(base, exponent)


@lowers(aten.sign.default)
def _sign(context, node, x):
    # NaN's sign is 0 in torch (NaN in NumPy, kiln's builder)
    dtype = out_dtype(node)
    if dtype == torch.bool:  # torch's sign of a bool is itself; kiln's sign takes numbers
        return x
    if not dtype.is_floating_point:
        return _kiln.sign(x)
    return _kiln.where(_kiln.isnan(x), context.full((), 0, dtype), _kiln.sign(x))


@lowers(aten.angle.default)
def _angle(context, node, x):
    """A real number's angle: pi below 0, else 0 (-0.0 included, where NumPy's is pi), NaN
    kept."""
    dtype = out_dtype(node)
    x = cast(x, dtype)
    zero = context.full((), 0, dtype)
    return _kiln.where(_kiln.isnan(x), x, _kiln.where(_kiln.less(x, zero),
                                                      context.full((), math.pi, dtype), zero))


@lowers(aten.round.decimals)
def _round_decimals(context, node, x, *, decimals=0):
    """torch's: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d <= 0, in
    x's dtype."""
    dtype = out_dtype(node)
    scale = context.full((), 10.0 ** abs(decimals), dtype)
    if decimals > 0:
        return _kiln.divide(_kiln.round(_kiln.multiply(x, scale)), scale)
    return _kiln.multiply(_kiln.round(_kiln.divide(x, scale)), scale)


@lowers(aten.bitwise_not.default)
def _bitwise_not(context, node, x):
    return _kiln.logical_not(x) if out_dtype(node) == torch.bool else _kiln.bitwise_not(x)


@lowers(aten.where.self)
def _where(context, node, condition, a, b):
    dtype = out_dtype(node)
    condition = context.as_tensor(condition, torch.bool)
    return _kiln.where(condition, *_operands(context, (a, b), dtype))


@lowers(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(context, node, x, mask, value):
    dtype = out_dtype(node)
    return _kiln.where(context.as_tensor(mask, torch.bool), context.as_tensor(value, dtype),
                       cast(x, dtype))


@lowers(aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(context, node, x, low=None, high=None):
    if node.target == aten.clamp_max.default:
        low, high = None, low
    dtype = out_dtype(node)
    result = cast(x, dtype)
    # maximum/minimum return their second operand where both are equal. Eager torch keeps the
    # value there for a number as bound (clamp(-0.0, min=0.0) is -0.0): the bound goes first.
    # (For tensor bounds its vector loops return the bound, its scalar tail the value.)
    bound_first = node.target != aten.clamp.Tensor

    def limit(extremum, bound):
        bound = context.as_tensor(bound, dtype)
        return extremum(bound, result) if bound_first else extremum(result, bound)
    if low is not None:
        result = limit(_kiln.maximum, low)
    if high is not None:
        result = limit(_kiln.minimum, high)
    return result


@lowers(aten.hardtanh.default)
def _hardtanh(context, node, x, min_val=-1.0, max_val=1.0):
    # (the schema's bounds when the graph leaves them out: F.hardtanh_(x) was x)
    return _clamp(context, node, x, min_val, max_val)


@lowers(aten.gelu.default)
def _gelu(context, node, x, approximate="none"):
    return _kiln.gelu(x, approximate == "tanh")


@lowers(aten.silu.default)
def _silu(context, node, x):
    return _kiln.multiply(x, _kiln.sigmoid(x))


@lowers(aten.leaky_relu.default)
def _leaky_relu(context, node, x, negative_slope=0.01):
    zero = context.full((), 0, out_dtype(node))
    return _kiln.where(_kiln.greater(x, zero), x,
                       _kiln.multiply(x, context.as_tensor(negative_slope, out_dtype(node))))


@lowers(aten.threshold_backward.default)
def _threshold_backward(context, node, grad, x, threshold):
    dtype = out_dtype(node)
    below = _kiln.less_equal(x, context.as_tensor(threshold, meta(node.args[1]).dtype))
    return _kiln.where(below, context.full((), 0, dtype), cast(grad, dtype))


@lowers(torch.ops.prims.fma.default)
def _fused_multiply_add(context, node, a, b, c):
    # a * b + c: the C++ compiler contracts it into one fma instruction where the target has it.
    dtype = out_dtype(node)
    a, b, c = _operands(context, (a, b, c), dtype)
    return _kiln.add(_kiln.multiply(a, b), c)


@lowers(aten.copy.default)
def _copy(context, node, destination, source, non_blocking=False):
    return _kiln.broadcast_to(cast(source, out_dtype(node)), out_shape(context, node))


# prims.convert_element_type: what the decompositions of group norm's gradient are made of
# under dynamic sizes (a diffusion UNet's backward with dynamic=True ran it eagerly)
# (torch.func.grad under vmap traces `_to_copy(2.0)`, mse_loss's gradient factor, of a Python
# number: the entry took it for a tensor and raised AttributeError)
@lowers(aten._to_copy.default, torch.ops.prims.convert_element_type.default)
def _to_copy(context, node, x, *args, **kwargs):
    return context.as_tensor(x, out_dtype(node))


# ---- reductions --------------------------------------------------------------------------

def _rounded(builder, x, dtype, *args):
    """builder(x in `dtype`, *args): a float16/bfloat16 sum, mean, product or log-sum-exp
    accumulates in float32 and is then rounded to its dtype once, as eager's kernels (and
    Inductor's stores) do. kiln's own 16-bit reduction kept the float32 value where a fused
    consumer read it (x.sum(0).float() of halves past 65504 was finite, eager's inf), as its
    cast to float32 rounds nothing: an explicit cast from float32 does."""
    if dtype not in (torch.float16, torch.bfloat16):
        return builder(cast(x, dtype), *args)
    return cast(builder(cast(x, torch.float32), *args), dtype)


def _reduction(builder, casts_input=True):
    def lower(context, node, x, dims=None, keepdim=False, *, dtype=None):
        x, reduced, keepdim = reduced_operand(x, dims, keepdim)
        if casts_input:
            return _rounded(builder, x, out_dtype(node), reduced, keepdim)
        return builder(x, reduced, keepdim)
    return lower


lowers(aten.sum.dim_IntList)(_reduction(_kiln.sum))
lowers(aten.mean.dim)(_reduction(_kiln.mean))
lowers(aten.amax.default)(_reduction(_kiln.max, casts_input=False))
lowers(aten.amin.default)(_reduction(_kiln.min, casts_input=False))
lowers(aten.any.dims)(_reduction(_kiln.any, casts_input=False))
lowers(aten.all.dims)(_reduction(_kiln.all, casts_input=False))


@lowers(aten.sum.default, aten.mean.default, aten.prod.default, aten.max.default,
        aten.min.default, aten.any.default, aten.all.default)
def _reduce_all(context, node, x, *, dtype=None):
    name = node.target.overloadpacket.__name__
    builder = {"sum": _kiln.sum, "mean": _kiln.mean, "prod": _kiln.prod, "max": _kiln.max,
               "min": _kiln.min, "any": _kiln.any, "all": _kiln.all}[name]
    if name in ("sum", "mean", "prod"):
        return _rounded(builder, x, out_dtype(node), list(range(x.ndim)), False)
    return builder(x, list(range(x.ndim)), False)


@lowers(aten.prod.dim_int, aten.any.dim, aten.all.dim)
def _reduce_one(context, node, x, dim, keepdim=False, *, dtype=None):
    name = node.target.overloadpacket.__name__
    builder = {"prod": _kiln.prod, "any": _kiln.any, "all": _kiln.all}[name]
    x, reduced, keepdim = reduced_operand(x, dim, keepdim)
    if name == "prod":
        return _rounded(builder, x, out_dtype(node), reduced, keepdim)
    return builder(x, reduced, keepdim)


@lowers(aten.argmax.default, aten.argmin.default)
def _argmax_or_argmin(context, node, x, dim=None, keepdim=False):
    builder = _kiln.argmax if node.target == aten.argmax.default else _kiln.argmin
    if dim is None:
        result = builder(x, None, False)
        return _kiln.reshape(result, out_shape(context, node)) if keepdim else result
    x, (reduced,), keepdim = reduced_operand(x, dim, keepdim)
    return builder(x, reduced, keepdim)


@lowers(aten.max.dim, aten.min.dim)
def _max_or_min_with_indices(context, node, x, dim, keepdim=False):
    x, (dim,), keepdim = reduced_operand(x, dim, keepdim)
    maximum = node.target == aten.max.dim
    values = (_kiln.max if maximum else _kiln.min)(x, [dim], keepdim)
    indices = (_kiln.argmax if maximum else _kiln.argmin)(x, dim, keepdim)
    return values, indices


# topk on the GPU runs k rounds of argmax over a row: a few, as a mixture-of-experts router asks
# (2 of 8). On the CPU it is a partial sort (_aten_sorting.py).
MOST_TOPK = 16


def topk_by_rounds(context, node, x, k, dim=-1, largest=True):
    """The k largest (smallest) along `dim` in order, in k rounds over what the rounds before
    left: torch's order puts NaN above everything (first of the largest, last of the
    smallest); where only the exhausted value is left (taken elements count as -inf for the
    largest), the first element not taken, a real infinity before a NaN."""
    if not isinstance(k, int) or k > MOST_TOPK or x.ndim == 0:
        raise Unconvertible(f"topk of k={k} (kiln takes k <= {MOST_TOPK} of a dimension)")
    if not x_is_floating(x):
        raise Unconvertible("topk of integers")
    dim = axis(dim, x.ndim)
    values_dtype = out_dtype(node, 0)
    dtype = computing_dtype(values_dtype)
    x = cast(x, dtype)
    find, extreme = (_kiln.argmax, _kiln.max) if largest else (_kiln.argmin, _kiln.min)
    exhausted = context.full((), float("-inf") if largest else float("inf"), dtype)
    lowest = context.full((), float("-inf"), dtype)
    # Which element not taken comes first when only the exhausted value is left: no NaN first.
    taken_rank, nan_rank, plain_rank = (context.full((), rank, torch.int64) for rank in range(3))
    along = [-1 if d == dim else 1 for d in range(x.ndim)]
    positions = _kiln.reshape(_kiln.arange(context.anchor(), x.shape[dim], "int64"), along)
    nan = _kiln.isnan(x)
    taken = _kiln.logical_and(nan, _kiln.logical_not(nan))  # none yet
    values, indices = [], []
    for _ in range(k):
        left = _kiln.where(_kiln.logical_or(taken, nan), exhausted, x)
        rank = _kiln.where(taken, taken_rank, _kiln.where(nan, nan_rank, plain_rank))
        index = _kiln.where(_kiln.equal(extreme(left, [dim], True), exhausted),
                            _kiln.argmax(rank, dim, True), find(left, dim, True))
        if largest:  # NaNs first
            nan_left = _kiln.logical_and(nan, _kiln.logical_not(taken))
            index = _kiln.where(_kiln.any(nan_left, [dim], True), _kiln.argmax(nan_left, dim, True),
                                index)
        chosen = _kiln.equal(positions, index)
        values.append(_kiln.max(_kiln.where(chosen, x, lowest), [dim], True))
        indices.append(index)
        taken = _kiln.logical_or(taken, chosen)
    return (cast(_kiln.concatenate(values, dim), values_dtype),
            cast(_kiln.concatenate(indices, dim), torch.int64))


def x_is_floating(x):
    return x.dtype in ("float16", "bfloat16", "float32", "float64")


def _correction(correction, unbiased=None):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _corrected_variance(context, x, reduced, keepdim, correction):
    """x's variance with torch's divisor max(0, N - correction): kiln's own for a whole
    correction; a fractional one (var(correction=0.5), which int() made 0 silently) scales the
    population variance by N / (N - correction), inf past N as torch's m2 / 0."""
    if float(correction).is_integer():
        return _kiln.var(x, reduced, keepdim, int(correction))
    extents = [x.shape[dim] for dim in reduced]
    if not all(isinstance(extent, int) for extent in extents):
        raise Unconvertible("a fractional variance correction over a dynamic size")
    count = math.prod(extents)
    factor = count / (count - correction) if count > correction else math.inf
    return _kiln.multiply(_kiln.var(x, reduced, keepdim, 0),
                          context.full((), factor, torch.float64, rounded=False))


@lowers(aten.var.correction, aten.var_mean.correction, aten.std.correction)
def _variance(context, node, x, dims=None, *, correction=None, keepdim=False):
    if not x_is_floating(x):
        raise Unconvertible("variance of integers")
    x, reduced, keepdim = reduced_operand(x, dims, keepdim)
    correction = _correction(correction)
    name = node.target.overloadpacket.__name__

    def variance(x, std=False):  # in float32 for 16-bit floats, rounded once (_rounded)
        result = _corrected_variance(context, x, reduced, keepdim, correction)
        return _kiln.sqrt(result) if std else result
    dtype = out_dtype(node, 0) if name == "var_mean" else out_dtype(node)
    if name == "std":
        return _rounded(lambda x: variance(x, std=True), x, dtype)
    result = _rounded(variance, x, dtype)
    if name == "var_mean":
        return result, _rounded(_kiln.mean, x, dtype, reduced, keepdim)
    return result


@lowers(aten._softmax.default, aten._log_softmax.default)
def _softmax(context, node, x, dim, half_to_float):
    dtype = out_dtype(node)
    if not dtype.is_floating_point:
        # Eager torch has no integer softmax (NotImplementedError); kiln's gave 0s. The node
        # runs in eager torch, which raises it.
        raise Unconvertible(f"softmax of {dtype}")
    computing = computing_dtype(dtype)
    builder = _kiln.softmax if node.target == aten._softmax.default else _kiln.log_softmax
    return cast(builder(cast(x, computing), axis(dim, x.ndim)), dtype)


@lowers(aten.cumsum.default, aten.cumprod.default)
def _scan(context, node, x, dim, *, dtype=None):
    """Accumulated in torch's accumulate type (at::acc_type): float32 for the 16-bit floats,
    and on the CPU double for float32 (a million float32 partial sums drift 1%)."""
    builder = _kiln.cumsum if node.target == aten.cumsum.default else _kiln.cumprod
    result = out_dtype(node)
    on_cpu = meta(node).device.type == "cpu"
    accumulating = torch.float64 if result == torch.float32 and on_cpu else computing_dtype(result)
    return cast(builder(cast(x, accumulating), axis(dim, x.ndim)), result)


@lowers(aten.logsumexp.default)
def _logsumexp(context, node, x, dims, keepdim=False):
    x, reduced, keepdim = reduced_operand(x, dims, keepdim)
    return _rounded(_kiln.logsumexp, x, out_dtype(node), reduced, keepdim)
