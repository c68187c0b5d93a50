// Elementwise steps of the fuzzer's generator: unary and binary ops from the op table, where,
// casts, and "wild" ops whose NaN/Inf results are outputs only. The bound and error rules are
// explained in fuzz_graph_generator.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "ir/interpreter.h"

#include "fuzz_graph_internal.h"

namespace kiln::fuzz::detail {
namespace {

bool is_half(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

std::vector<ir::Op> ops_of_kind(ir::OpKind kind, DType dtype) {
  std::vector<ir::Op> ops;
  for (int op = 0; op < static_cast<int>(ir::Op::op_count); ++op) {
    const ir::OpInfo& info = ir::op_info(static_cast<ir::Op>(op));
    if (info.kind == kind && (info.accepts & static_cast<uint8_t>(dtype_class(dtype))) != 0)
      ops.push_back(static_cast<ir::Op>(op));
  }
  return ops;
}

bool returns_bool(ir::Op op) { return ir::op_info(op).result == ir::ResultType::Bool; }

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

}  // namespace

bool Generator::fits(const std::vector<int64_t>& shape) const {
  return shape.size() <= 6 && element_count(shape) <= element_limit_;
}

Value Generator::finish_float(ir::ValueId id, const Value& like, double bound, double error) {
  Value result = derived(id, like);
  result.bound = bound;
  result.error = error + 4 * dtype_epsilon(result.dtype) * bound;
  result.exact = false;
  return result;
}

Value Generator::guard_positive(const Value& operand, double offset) {
  Value magnitude = derived(builder_.unary(ir::Op::abs, operand.id), operand);
  if (offset == 0) return magnitude;
  Value shifted = derived(
      builder_.binary(ir::Op::add, magnitude.id, exact_constant(operand.dtype, offset).id),
      magnitude);
  shifted.bound = operand.bound + offset;
  // One add of exact operands rounds the same everywhere, except in 16-bit floats, which the
  // compiled code may keep in float32 between fused ops.
  shifted.exact = operand.exact && !is_half(operand.dtype);
  if (!shifted.exact) shifted.error += 4 * dtype_epsilon(operand.dtype) * shifted.bound;
  return shifted;
}

Value Generator::guard_tanh(const Value& operand, double scale) {
  Value squashed = finish_float(builder_.unary(ir::Op::tanh, operand.id), operand, 1,
                                operand.error);
  if (scale == 1) return squashed;
  return finish_float(
      builder_.binary(ir::Op::mul, squashed.id, exact_constant(operand.dtype, scale).id),
      squashed, scale, squashed.error * scale);
}

// ---- unary --------------------------------------------------------------------------------

// x moved into `domain` (op_list.h's domain column) by exact or well-conditioned guards.
Value Generator::guard(const Value& x, ir::FuzzDomain domain) {
  switch (domain) {
    case ir::FuzzDomain::Real: return x;
    case ir::FuzzDomain::Moderate: return x.bound > 6 ? guard_tanh(x, 3) : x;
    case ir::FuzzDomain::Positive: return guard_positive(x, 0.5);
    case ir::FuzzDomain::NonNegative: return guard_positive(x, 0);
    case ir::FuzzDomain::AboveOne: return guard_positive(x, 1.5);
    case ir::FuzzDomain::NonZero: {
      Value away = guard_positive(x, 0.5);
      return chance(0.5) ? derived(builder_.unary(ir::Op::neg, away.id), away) : away;
    }
    case ir::FuzzDomain::Unit: return guard_tanh(x, 0.9);
  }
  throw std::logic_error("fuzzer: unknown input domain");
}

// The interval a guarded value lies in, for measuring an op on it (NonZero: its magnitude).
std::pair<double, double> domain_interval(const Value& in, ir::FuzzDomain domain) {
  switch (domain) {
    case ir::FuzzDomain::Positive: case ir::FuzzDomain::AboveOne: case ir::FuzzDomain::NonZero:
      return {domain == ir::FuzzDomain::AboveOne ? 1.5 : 0.5, std::max(in.bound, 1.0)};
    case ir::FuzzDomain::NonNegative: return {0, in.bound};
    default: return {-in.bound, in.bound};
  }
}

// max |f| and max |f'| of a float unary op over [low, high], measured by the reference
// interpreter on a grid: fine near `low` (where the domain's steep end is) and around 0, then
// geometric, so neither a singularity nor a wide interval is missed. Memoised.
SampledRange sampled_range(ir::Op op, double low, double high) {
  static std::map<std::tuple<int, double, double>, SampledRange> memo;
  auto key = std::make_tuple(static_cast<int>(op), low, high);
  if (auto found = memo.find(key); found != memo.end()) return found->second;
  std::vector<double> points;
  auto add_run = [&](double from, double to, int count) {
    for (int k = 0; k <= count; ++k) points.push_back(from + (to - from) * k / count);
  };
  add_run(low, std::min(high, low + 16), 4096);
  if (low < 0) add_run(-std::min(8.0, high), std::min(8.0, high), 4096);
  for (double x = 16; x < std::max(std::abs(low), high); x *= 1.05) {
    if (x < high) points.push_back(x);
    if (-x > low) points.push_back(-x);
  }
  points.push_back(high);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  ir::Graph graph;
  ir::Builder builder(graph);
  int64_t count = static_cast<int64_t>(points.size());
  graph.set_outputs({builder.unary(op, builder.parameter(DType::Float64, {count}))});
  Array input = Array::from_vector(points, {count});
  std::vector<double> values = ir::interpret(graph, {input})[0].to_vector<double>();
  SampledRange range;
  for (size_t k = 0; k < values.size(); ++k) {
    range.bound = std::max(range.bound, std::abs(values[k]));
    if (k > 0 && points[k] > points[k - 1])
      range.slope = std::max(range.slope, std::abs(values[k] - values[k - 1]) / (points[k] - points[k - 1]));
  }
  range.bound = range.bound * 1.01 + 1e-6;
  range.slope = range.slope * 1.25 + 1e-6;  // between grid points the slope may be a bit steeper
  return memo[key] = range;
}

std::optional<Value> Generator::unary(const Value& operand) {
  ir::Op op = pick(ops_of_kind(ir::OpKind::Unary, operand.dtype));
  if (is_float(operand.dtype)) return float_unary(op, operand);
  Value result = derived(builder_.unary(op, operand.id), operand);
  if (returns_bool(op) || result.dtype == DType::Bool) {
    result.bound = 1;
  } else if (op == ir::Op::neg || op == ir::Op::abs || op == ir::Op::bitwise_not) {
    // -x of an unsigned value, ~x and abs(INT_MIN) wrap.
    result.bound = integer_limit(result.dtype);
  } else if (op == ir::Op::sign) {
    result.bound = 1;
  }
  return result;
}

std::optional<Value> Generator::float_unary(ir::Op op, const Value& x) {
  using ir::Op;
  switch (op) {
    case Op::neg:
    case Op::abs:
      return derived(builder_.unary(op, x.id), x);
    case Op::sign:
    case Op::floor:
    case Op::ceil:
    case Op::round:
    case Op::trunc: {
      if (!x.exact) return std::nullopt;  // a jump at integers: only exact inputs
      Value result = derived(builder_.unary(op, x.id), x);
      result.bound = x.bound + 1;
      return result;
    }
    case Op::isnan:
    case Op::isinf:
    case Op::isfinite:
    case Op::logical_not: {
      if (op == Op::logical_not && !x.exact) return std::nullopt;
      Value result = derived(builder_.unary(op, x.id), x);
      result.bound = 1;
      result.error = 0;
      result.exact = true;
      return result;
    }
    default: break;
  }
  // Every other float op: its input domain from the op table, its bound and slope measured.
  Value in = guard(x, ir::op_info(op).domain);
  auto [low, high] = domain_interval(in, ir::op_info(op).domain);
  SampledRange range = sampled_range(op, low, high);
  return finish_float(builder_.unary(op, in.id), in, range.bound, range.slope * in.error);
}

// ---- binary -------------------------------------------------------------------------------

// A second operand for `left`: a pool value that broadcasts with it (cast to its dtype), or a
// scalar constant (0-d or of shape (1,) / (1, 1)).
std::optional<Value> Generator::partner(const Value& left) {
  if (!chance(0.3)) {
    std::vector<const Value*> candidates;
    for (const Value& value : pool_) {
      ir::Shape shape;
      if (ir::broadcast_shapes(ir::from_ints(left.shape), ir::from_ints(value.shape), shape) &&
          fits(ir::to_ints(shape)))
        candidates.push_back(&value);
    }
    if (!candidates.empty()) {
      const Value& chosen = *pick(candidates);
      if (chosen.dtype == left.dtype) return chosen;
      std::optional<Value> converted = cast(chosen, left.dtype);
      if (converted) return converted;
    }
  }
  double magnitude = is_float(left.dtype) ? std::min(left.bound, 4.0) + 1 : 9;
  return scalar_constant(left.dtype, magnitude);
}

std::optional<Value> Generator::binary(const Value& left) {
  std::optional<Value> right = partner(left);
  if (!right) return std::nullopt;
  ir::Op op = pick(ops_of_kind(ir::OpKind::Binary, left.dtype));
  if (is_float(left.dtype)) return float_binary(op, left, *right);
  Value result = derived(builder_.binary(op, left.id, right->id), left);
  double limit = integer_limit(left.dtype);
  using ir::Op;
  if (returns_bool(op) || result.dtype == DType::Bool) {
    result.bound = 1;
  } else if (!is_signed_integer(left.dtype) && op == Op::sub) {
    result.bound = limit;
  } else if (op == Op::add || op == Op::sub) {
    result.bound = std::min(limit, left.bound + right->bound);
  } else if (op == Op::mul) {
    result.bound = std::min(limit, left.bound * right->bound);
  } else if (op == Op::floordiv) {
    result.bound = left.bound;
  } else if (op == Op::mod) {
    result.bound = right->bound;
  } else if (op == Op::maximum || op == Op::minimum || op == Op::fmax || op == Op::fmin) {
    result.bound = std::max(left.bound, right->bound);
  } else {
    result.bound = limit;  // pow, shifts, bitwise ops
  }
  if (result.bound >= limit) result.bound = limit;
  return result;
}

std::optional<Value> Generator::float_binary(ir::Op op, const Value& a, const Value& b) {
  using ir::Op;
  double epsilon = dtype_epsilon(a.dtype);
  bool rounds_alike = a.exact && b.exact && !is_half(a.dtype);
  auto build = [&](const Value& left, const Value& right) {
    return builder_.binary(op, left.id, right.id);
  };
  switch (op) {
    case Op::add:
    case Op::sub: {
      Value result = derived(build(a, b), a);
      result.bound = a.bound + b.bound;
      result.exact = rounds_alike;
      result.error = a.error + b.error + (rounds_alike ? 0 : 4 * epsilon * result.bound);
      return result;
    }
    case Op::mul: {
      // Not exact even on exact operands: a later add may be contracted into an FMA.
      Value right = a.bound * b.bound > 1e4 ? guard_tanh(b, 1) : b;
      if (a.bound * right.bound > 1e4) return std::nullopt;
      return finish_float(build(a, right), a, a.bound * right.bound,
                          a.error * right.bound + right.error * a.bound);
    }
    case Op::div: {
      Value divisor = guard_positive(b, 0.5);
      if (chance(0.5)) divisor = derived(builder_.unary(Op::neg, divisor.id), divisor);
      double bound = a.bound * 2;
      Value result = finish_float(build(a, divisor), a, bound,
                                  a.error * 2 + divisor.error * a.bound * 4);
      // IEEE division rounds correctly; no contraction applies to it.
      result.exact = a.exact && divisor.exact && !is_half(a.dtype);
      if (result.exact) result.error = 0;
      return result;
    }
    case Op::floordiv:
    case Op::mod: {
      if (!rounds_alike) return std::nullopt;  // jumps: exact operands only
      Value divisor = guard_positive(b, 1);
      if (chance(0.5)) divisor = derived(builder_.unary(Op::neg, divisor.id), divisor);
      Value result = derived(build(a, divisor), a);
      result.bound = op == Op::floordiv ? a.bound + 1 : divisor.bound;
      return result;
    }
    case Op::pow: {
      Value base = guard_positive(a, 0.5);
      if (base.bound > 20) return std::nullopt;
      Value exponent = b.bound <= 3 ? b : guard_tanh(b, 2);
      double bound = std::pow(std::max(base.bound, 2.0), exponent.bound);
      double error = base.error * exponent.bound * bound * 2 +
                     exponent.error * bound * std::max(std::log(base.bound), 0.7);
      return finish_float(build(base, exponent), a, bound, error);
    }
    case Op::maximum:
    case Op::minimum:
    case Op::fmax:
    case Op::fmin: {
      Value result = derived(build(a, b), a);
      result.bound = std::max(a.bound, b.bound);
      result.error = std::max(a.error, b.error);
      result.exact = a.exact && b.exact;
      return result;
    }
    case Op::atan2: {
      // x > 0 keeps away from the branch cut on the negative x axis.
      Value x = guard_positive(b, 0.5);
      return finish_float(build(a, x), a, 3.15, (a.error + x.error) * 2);
    }
    case Op::hypot:
      return finish_float(build(a, b), a, a.bound + b.bound, a.error + b.error);
    case Op::copysign: {
      if (!b.exact) return std::nullopt;  // the sign of an inexact value near 0 may flip
      Value result = derived(build(a, b), a);
      return result;
    }
    default: {
      // An op without a rule here is a failure, not a skip: a new binary op gets fuzzed.
      if (!returns_bool(op))
        throw std::logic_error("fuzzer: no error rule for float binary op '" +
                               std::string(ir::op_name(op)) + "' (fuzz_graph_elementwise.cpp)");
      if (!a.exact || !b.exact) return std::nullopt;  // comparisons of exact values only
      Value result = derived(build(a, b), a);
      result.bound = 1;
      result.error = 0;
      result.exact = true;
      return result;
    }
  }
}

// ---- where and casts ----------------------------------------------------------------------

std::optional<Value> Generator::condition(const std::vector<int64_t>& shape) {
  std::vector<const Value*> bools;
  std::vector<const Value*> exact;
  for (const Value& value : pool_) {
    ir::Shape result;
    if (!ir::broadcast_shapes(ir::from_ints(shape), ir::from_ints(value.shape), result) ||
        !fits(ir::to_ints(result)))
      continue;
    if (value.dtype == DType::Bool) bools.push_back(&value);
    if (value.exact) exact.push_back(&value);
  }
  if (!bools.empty() && (exact.empty() || chance(0.5))) return *pick(bools);
  if (exact.empty()) return std::nullopt;
  const Value& compared = *pick(exact);
  static const ir::Op comparisons[] = {ir::Op::eq, ir::Op::ne, ir::Op::lt,
                                       ir::Op::le, ir::Op::gt, ir::Op::ge};
  ir::Op op = comparisons[uniform(0, 5)];
  Value threshold = scalar_constant(compared.dtype, is_float(compared.dtype) ? 2 : 5);
  Value result = derived(builder_.binary(op, compared.id, threshold.id), compared);
  result.bound = 1;
  return result;
}

std::optional<Value> Generator::where(const Value& operand) {
  std::optional<Value> mask = condition(operand.shape);
  if (!mask) return std::nullopt;
  std::optional<Value> other = partner(operand);
  if (!other) return std::nullopt;
  // Each pair broadcasts, but all three together may not: (0,) (1, 9, 1) (9,).
  ir::Shape partial;
  ir::Shape shape;
  if (!ir::broadcast_shapes(ir::from_ints(mask->shape), ir::from_ints(operand.shape), partial) ||
      !ir::broadcast_shapes(partial, ir::from_ints(other->shape), shape) ||
      !fits(ir::to_ints(shape)))
    return std::nullopt;
  bool swap = chance(0.5);
  const Value& first = swap ? *other : operand;
  const Value& second = swap ? operand : *other;
  Value result = derived(builder_.where(mask->id, first.id, second.id), operand);
  result.bound = std::max(operand.bound, other->bound);
  result.error = std::max(operand.error, other->error);
  result.exact = operand.exact && other->exact;
  return result;
}

std::optional<Value> Generator::cast(const Value& operand, DType dtype) {
  DType from = operand.dtype;
  if (is_float(from) && !is_float(dtype) && !operand.exact) return std::nullopt;
  double limit = dtype == DType::Float16 ? 6e4 : 1e300;
  if (is_float(dtype) && operand.bound > limit) return std::nullopt;
  Value result = derived(builder_.cast(operand.id, dtype), operand);
  if (dtype == DType::Bool) {
    result.bound = 1;
  } else if (!is_float(dtype)) {
    bool may_wrap = (is_signed_integer(from) && !is_signed_integer(dtype)) ||
                    operand.bound >= integer_limit(dtype);
    result.bound = may_wrap ? integer_limit(dtype) : operand.bound + (is_float(from) ? 1 : 0);
  }
  if (!is_float(dtype)) {
    result.error = 0;
    result.exact = true;
    return result;
  }
  // Integers convert exactly while they fit the mantissa; beyond it, or from float64 to a
  // 16-bit float, rounding once or twice (through float32) are both defensible.
  double mantissa_limit = dtype == DType::Float16    ? 2048
                          : dtype == DType::BFloat16 ? 256
                          : dtype == DType::Float32  ? 16777216.0
                                                     : 9007199254740992.0;
  bool rounds_twice = is_half(dtype) && (from == DType::Float64 ||
                                         (!is_float(from) && operand.bound > mantissa_limit));
  if (rounds_twice) {
    result.exact = false;
    result.error = operand.error + 2 * dtype_epsilon(dtype) * operand.bound;
  } else {
    result.error = operand.error + dtype_epsilon(dtype) * operand.bound;
    if (operand.exact) result.error = 0;
  }
  return result;
}

// ---- wild values ------------------------------------------------------------------------------

// An unguarded op on an exact float value: NaN, Inf and huge values on purpose. Both sides
// see the same operand bits, so only the op's own rounding (relative) may differ.
void Generator::wild(const Value& operand) {
  if (!is_float(operand.dtype) || !operand.exact) return;
  using ir::Op;
  static const std::vector<Op> unary_ops = {Op::log,  Op::log2, Op::log10, Op::sqrt,
                                            Op::rsqrt, Op::acosh, Op::atanh, Op::asin,
                                            Op::acos, Op::reciprocal, Op::exp, Op::sinh};
  static const std::vector<Op> binary_ops = {Op::div, Op::floordiv, Op::mod, Op::pow};
  Value result;
  if (chance(0.6)) {
    result = derived(builder_.unary(pick(unary_ops), operand.id), operand);
  } else {
    std::optional<Value> right = partner(operand);
    if (!right || !right->exact) return;
    result = derived(builder_.binary(pick(binary_ops), operand.id, right->id), operand);
  }
  result.wild = true;
  result.exact = false;
  result.error = 0;
  wild_.push_back(result);
}

}  // namespace kiln::fuzz::detail
