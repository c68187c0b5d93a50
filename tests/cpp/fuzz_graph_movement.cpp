// Reductions, scans, movement ops and gather for the fuzzer's generator. Movement keeps a
// value's bound, error and exactness; reductions and scans scale the error with their length.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "fuzz_graph_internal.h"

namespace kiln::fuzz::detail {
namespace {

std::vector<ir::Op> ops_of_kind(ir::OpKind kind, DType dtype) {
  std::vector<ir::Op> ops;
  for (int op = 0; op < static_cast<int>(ir::Op::op_count); ++op) {
    const ir::OpInfo& info = ir::op_info(static_cast<ir::Op>(op));
    if (info.kind == kind && (info.accepts & static_cast<uint8_t>(dtype_class(dtype))) != 0)
      ops.push_back(static_cast<ir::Op>(op));
  }
  return ops;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

}  // namespace

// ---- reductions and scans ---------------------------------------------------------------------

void Generator::sum_bounds(Value& result, const Value& in, double length) {
  result.bound = std::max(length, 1.0) * in.bound;
  result.error = length * in.error + 2 * dtype_epsilon(in.dtype) * length * result.bound;
}

Value Generator::sum_last_axis(const Value& in, bool keepdims) {
  Value result = derived(builder_.reduce(ir::Op::sum, in.id, {-1}, keepdims), in);
  const int64_t length = in.shape.back();
  sum_bounds(result, in, static_cast<double>(length));
  result.exact = in.exact && length <= 1;
  if (result.exact) result.error = 0;
  return result;
}

// An attention gradient's structure on x of shape (..., a, n): concat(P, Q) along a, where
// Q = sum_j x, R = sum_j (x @ y^T) * x with the product a reduction nested in R's, and
// P = sum_j x * R, the three sums over the same n. Lowering P tries to join Q's pass, and R
// does join it (sched/lowering.cpp): the product must then be computed inside that pass.
std::optional<Value> Generator::concat_of_sums(const Value& operand) {
  if (!is_float(operand.dtype)) return std::nullopt;
  // Extents of 1 fold their loops away, and the pattern with them: a fresh x then.
  const std::vector<int64_t>& shape = operand.shape;
  const bool wide = shape.size() >= 2 && shape.back() >= 2 && shape[shape.size() - 2] >= 2;
  Value x = wide ? operand : input(operand.dtype, {uniform(2, 3), uniform(2, 6)});
  if (x.bound > 1) x = guard_tanh(x, 1);
  const int rank = static_cast<int>(x.shape.size());
  const int64_t n = x.shape.back();
  std::vector<int64_t> pairs = x.shape;  // (..., a, n, n): [..., i, j, k]
  pairs.insert(pairs.end() - 1, n);
  if (!fits(pairs)) return std::nullopt;
  std::vector<int64_t> spread = x.shape;  // x[..., i, k] along j
  spread.insert(spread.end() - 1, 1);
  Value rows = derived(builder_.broadcast(builder_.reshape(x.id, ir::from_ints(spread)),
                                          ir::from_ints(pairs)), x);
  Value y = input(x.dtype, {n, n});
  if (y.bound > 1) y = guard_tanh(y, 1);
  std::optional<Value> terms =
      float_binary(ir::Op::mul, rows, derived(builder_.broadcast(y.id, ir::from_ints(pairs)), y));
  if (!terms) return std::nullopt;
  std::optional<Value> weighted = float_binary(ir::Op::mul, sum_last_axis(*terms, false), x);
  if (!weighted) return std::nullopt;
  Value r = sum_last_axis(*weighted, true);
  std::optional<Value> scaled = float_binary(
      ir::Op::mul, x, derived(builder_.broadcast(r.id, ir::from_ints(x.shape)), r));
  if (!scaled) return std::nullopt;
  Value p = sum_last_axis(*scaled, false), q = sum_last_axis(x, false);
  Value result = derived(builder_.concat({p.id, q.id}, rank - 2), p);
  result.bound = std::max(p.bound, q.bound);
  result.error = std::max(p.error, q.error);
  result.exact = p.exact && q.exact;
  return result;
}

std::optional<Value> Generator::reduction(const Value& operand) {
  using ir::Op;
  Op op = pick(ops_of_kind(ir::OpKind::Reduce, operand.dtype));
  bool is_arg = op == Op::argmax || op == Op::argmin;
  bool jumps = is_arg || op == Op::any || op == Op::all;
  if (jumps && !operand.exact) return std::nullopt;
  int rank = static_cast<int>(operand.shape.size());
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d)
    if (chance(0.5)) axes.push_back(chance(0.3) ? d - rank : d);
  if (is_arg && axes.size() > 1) axes.resize(1);
  if (is_arg && axes.empty() && rank > 1) axes.push_back(uniform(0, rank - 1));
  if (axes.empty() && rank > 0 && chance(0.3)) axes.push_back(uniform(-rank, rank - 1));
  int64_t length = 1;
  std::vector<int64_t> reduced_shape;
  for (int d = 0; d < rank; ++d) {
    bool reduced = axes.empty();
    for (int64_t axis : axes) reduced = reduced || (axis + rank) % rank == d;
    if (reduced) length *= operand.shape[static_cast<size_t>(d)];
    else reduced_shape.push_back(operand.shape[static_cast<size_t>(d)]);
  }
  bool no_identity = is_arg || op == Op::max || op == Op::min;
  if (no_identity && length == 0 && element_count(reduced_shape) > 0) return std::nullopt;
  bool keepdims = chance(0.4);
  double n = static_cast<double>(length);
  double epsilon = dtype_epsilon(operand.dtype);

  Value in = operand;
  if (op == Op::prod && is_float(operand.dtype)) {
    if (length > 12) return std::nullopt;
    if (operand.bound > 1.25) in = guard_tanh(operand, 1.2);
  }
  int64_t ddof = op == Op::var ? uniform(0, 1) : 0;
  Value result = derived(builder_.reduce(op, in.id, axes, keepdims, ddof), in);
  if (!is_float(operand.dtype) || jumps || op == Op::max || op == Op::min) {
    result.error = is_float(result.dtype) ? in.error : 0;
    if (is_arg) result.bound = std::max(n, 1.0);
    else if (op == Op::any || op == Op::all) result.bound = 1;
    else if (op == Op::sum) result.bound = std::min(integer_limit(in.dtype), n * in.bound);
    else if (op == Op::prod) result.bound = in.bound <= 1 ? 1 : integer_limit(in.dtype);
    if (!is_float(result.dtype)) result.exact = true;
    return result;
  }
  if (op == Op::sum) {
    sum_bounds(result, in, n);
  } else if (op == Op::prod) {
    double base = std::max(in.bound, 1.0);
    result.bound = std::pow(base, n);
    result.error = n * std::pow(base, n - 1) * in.error + 4 * n * epsilon * result.bound;
  } else {  // var
    if (length - ddof <= 0) {  // m2 / 0 (inf or NaN), as NumPy: an output, never an operand
      result.wild = true;
      result.exact = false;
      result.error = 0;
      wild_.push_back(result);
      return std::nullopt;
    }
    result.bound = 2 * in.bound * in.bound;
    result.error = 4 * in.bound * in.error + 8 * (n + 2) * epsilon * result.bound;
  }
  // Over zero or one element, sum and prod are the identity or the element itself.
  result.exact = in.exact && length <= 1 && op != Op::var;
  if (result.exact) result.error = 0;
  return result;
}

std::optional<Value> Generator::scan(const Value& operand) {
  int rank = static_cast<int>(operand.shape.size());
  std::vector<ir::Op> ops = ops_of_kind(ir::OpKind::Scan, operand.dtype);
  if (rank == 0 || ops.empty()) return std::nullopt;
  ir::Op op = pick(ops);
  int64_t axis = uniform(-rank, rank - 1);
  int64_t length = operand.shape[static_cast<size_t>((axis + rank) % rank)];
  double n = static_cast<double>(length);
  Value in = operand;
  bool is_float_value = is_float(operand.dtype);
  if (op == ir::Op::cumprod && is_float_value) {
    if (length > 12) return std::nullopt;
    if (operand.bound > 1.25) in = guard_tanh(operand, 1.2);
  }
  Value result = derived(builder_.scan(op, in.id, axis), in);
  if (op == ir::Op::cummax || op == ir::Op::cummin) return result;  // operand values, exact
  if (!is_float_value) {
    result.bound = integer_limit(in.dtype);
    if (op == ir::Op::cumsum) result.bound = std::min(result.bound, std::max(n, 1.0) * in.bound);
    return result;
  }
  double epsilon = dtype_epsilon(in.dtype);
  if (op == ir::Op::cumsum) {
    result.bound = std::max(n, 1.0) * in.bound;
    result.error = n * in.error + 2 * epsilon * n * result.bound;
  } else {
    double base = std::max(in.bound, 1.0);
    result.bound = std::pow(base, n);
    result.error = n * std::pow(base, n - 1) * in.error + 4 * n * epsilon * result.bound;
  }
  result.exact = false;
  return result;
}

// ---- movement -------------------------------------------------------------------------------

std::vector<int64_t> Generator::reshape_target(const std::vector<int64_t>& shape) {
  int64_t count = element_count(shape);
  std::vector<int64_t> target;
  if (count == 0) {
    target.assign(static_cast<size_t>(uniform(1, 3)), 0);
    for (int64_t& dim : target) dim = uniform(0, 3);
    target[static_cast<size_t>(uniform(0, static_cast<int64_t>(target.size()) - 1))] = 0;
    return target;
  }
  std::vector<int64_t> factors;
  for (int64_t rest = count, p = 2; rest > 1;) {
    if (p * p > rest) {
      factors.push_back(rest);
      break;
    }
    if (rest % p == 0) {
      factors.push_back(p);
      rest /= p;
    } else {
      ++p;
    }
  }
  std::shuffle(factors.begin(), factors.end(), random_);
  for (int64_t factor : factors) {
    if (target.empty() || target.size() >= 4 || chance(0.5)) {
      if (target.size() >= 4) target.back() *= factor;
      else target.push_back(factor);
    } else {
      target.back() *= factor;
    }
  }
  if (target.size() < 5 && chance(0.3))
    target.insert(target.begin() + uniform(0, static_cast<int64_t>(target.size())), 1);
  return target;
}

std::optional<Value> Generator::movement(const Value& operand) {
  int rank = static_cast<int>(operand.shape.size());
  int choice = static_cast<int>(uniform(0, 6));
  const std::vector<int64_t>& shape = operand.shape;
  switch (choice) {
    case 0: {
      std::vector<int64_t> target = reshape_target(shape);
      if (element_count(shape) > 0 && !target.empty() && chance(0.3))
        target[static_cast<size_t>(uniform(0, static_cast<int64_t>(target.size()) - 1))] = -1;
      return derived(builder_.reshape(operand.id, ir::from_ints(target)), operand);
    }
    case 1: {
      std::vector<int64_t> permutation(static_cast<size_t>(rank));
      std::iota(permutation.begin(), permutation.end(), 0);
      std::shuffle(permutation.begin(), permutation.end(), random_);
      for (int64_t& axis : permutation)
        if (chance(0.2)) axis -= rank;
      return derived(builder_.permute(operand.id, permutation), operand);
    }
    case 2: {
      std::vector<int64_t> starts, stops, steps;
      for (int64_t size : shape) {
        static const int64_t step_choices[] = {1, 1, 2, 3, -1, -1, -2, -3};
        int64_t step = step_choices[uniform(0, 7)];
        bool whole = chance(0.3);
        int64_t start = whole ? (step > 0 ? 0 : size - 1) : uniform(-size - 2, size + 2);
        int64_t stop = whole ? (step > 0 ? size : -size - 1) : uniform(-size - 2, size + 2);
        starts.push_back(start);
        stops.push_back(stop);
        steps.push_back(step);
      }
      return derived(builder_.slice(operand.id, starts, stops, steps), operand);
    }
    case 3: {
      ir::PadMode mode = std::vector<ir::PadMode>{ir::PadMode::Constant, ir::PadMode::Edge,
                                                  ir::PadMode::Reflect}[uniform(0, 2)];
      std::vector<int64_t> low, high, padded;
      for (int64_t size : shape) {
        int64_t widest = mode == ir::PadMode::Constant ? 2
                         : mode == ir::PadMode::Edge   ? (size > 0 ? 2 : 0)
                                                       : std::min<int64_t>(2, size - 1);
        widest = std::max<int64_t>(widest, 0);
        low.push_back(uniform(0, widest));
        high.push_back(uniform(0, widest));
        padded.push_back(size + low.back() + high.back());
      }
      if (!fits(padded)) return std::nullopt;
      Value fill = scalar_constant(operand.dtype, std::max(1.0, std::min(operand.bound, 4.0)));
      const ir::Node& fill_node = builder_.node(fill.id);
      Value result = derived(
          builder_.pad(operand.id, low, high, mode, fill_node.attrs.scalar), operand);
      result.bound = std::max(operand.bound, fill.bound);
      return result;
    }
    case 4:
      return concat(operand);
    case 5: {
      std::vector<int64_t> axes;
      for (int d = 0; d < rank; ++d)
        if (chance(0.5)) axes.push_back(chance(0.3) ? d - rank : d);
      return derived(builder_.flip(operand.id, axes), operand);
    }
    default: {
      std::vector<int64_t> target(static_cast<size_t>(uniform(0, 2)));
      for (int64_t& dim : target) dim = uniform(0, 3);
      for (int64_t size : shape) target.push_back(size == 1 ? uniform(1, 4) : size);
      if (!fits(target)) return std::nullopt;
      return derived(builder_.broadcast(operand.id, ir::from_ints(target)), operand);
    }
  }
}

// Concatenates the operand with pool values or slices of itself along a random axis.
std::optional<Value> Generator::concat(const Value& operand) {
  int rank = static_cast<int>(operand.shape.size());
  if (rank == 0) return std::nullopt;
  int axis = static_cast<int>(uniform(0, rank - 1));
  std::vector<Value> parts = {operand};
  int more = static_cast<int>(uniform(1, 2));
  for (int m = 0; m < more; ++m) {
    std::vector<const Value*> matching;
    for (const Value& value : pool_) {
      bool same = value.dtype == operand.dtype && value.shape.size() == operand.shape.size();
      for (int d = 0; same && d < rank; ++d)
        same = d == axis || value.shape[static_cast<size_t>(d)] ==
                                operand.shape[static_cast<size_t>(d)];
      if (same) matching.push_back(&value);
    }
    if (!matching.empty() && chance(0.5)) {
      parts.push_back(*pick(matching));
      continue;
    }
    std::vector<int64_t> starts(static_cast<size_t>(rank), 0);
    std::vector<int64_t> stops = operand.shape;
    std::vector<int64_t> steps(static_cast<size_t>(rank), 1);
    int64_t size = operand.shape[static_cast<size_t>(axis)];
    starts[static_cast<size_t>(axis)] = size - 1;
    stops[static_cast<size_t>(axis)] = -size - 1;
    steps[static_cast<size_t>(axis)] = -static_cast<int64_t>(uniform(1, 2));
    parts.push_back(
        derived(builder_.slice(operand.id, starts, stops, steps), operand));
  }
  std::vector<int64_t> shape = operand.shape;
  std::vector<ir::ValueId> ids;
  Value result = operand;
  shape[static_cast<size_t>(axis)] = 0;
  for (const Value& part : parts) {
    shape[static_cast<size_t>(axis)] += part.shape[static_cast<size_t>(axis)];
    ids.push_back(part.id);
    result.bound = std::max(result.bound, part.bound);
    result.error = std::max(result.error, part.error);
    result.exact = result.exact && part.exact;
  }
  if (!fits(shape)) return std::nullopt;
  int64_t spelled_axis = chance(0.3) ? axis - rank : axis;
  Value joined = derived(builder_.concat(ids, spelled_axis), result);
  return joined;
}

// Gathers along an axis with an index array (a constant or a strided input) of a random
// integer dtype; a few indices are negative (wrapped) or out of range (clamped).
std::optional<Value> Generator::gather(const Value& operand) {
  int rank = static_cast<int>(operand.shape.size());
  if (rank == 0) return std::nullopt;
  if (chance(0.25)) return sort(operand);
  int64_t axis = uniform(0, rank - 1);
  int64_t size = operand.shape[static_cast<size_t>(axis)];
  if (size == 0) return std::nullopt;
  static const DType index_types[] = {DType::Int8,  DType::Int16,  DType::Int32, DType::Int64,
                                      DType::UInt8, DType::UInt32, DType::Int64, DType::Int32};
  DType index_dtype = index_types[uniform(0, 7)];
  bool is_signed = is_signed_integer(index_dtype);
  double type_limit = integer_limit(index_dtype) - 1;
  if (static_cast<double>(size) + 3 > type_limit) index_dtype = DType::Int64;
  std::vector<int64_t> index_shape(static_cast<size_t>(uniform(0, 2)));
  for (int64_t& dim : index_shape) dim = uniform(0, 5);
  std::vector<int64_t> result_shape(operand.shape.begin(), operand.shape.begin() + axis);
  result_shape.insert(result_shape.end(), index_shape.begin(), index_shape.end());
  result_shape.insert(result_shape.end(), operand.shape.begin() + axis + 1, operand.shape.end());
  if (!fits(result_shape)) return std::nullopt;
  int64_t count = element_count(index_shape);
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t& index : indices) {
    index = uniform(is_signed ? -size : 0, size - 1);
    if (chance(0.05)) index = is_signed && chance(0.5) ? -size - 2 : size + 2;
  }
  Value index;
  if (chance(0.5)) {
    std::vector<uint8_t> bytes(static_cast<size_t>(count * dtype_size(index_dtype)));
    for (int64_t e = 0; e < count; ++e)
      store_element(index_dtype, bytes.data() + e * dtype_size(index_dtype), 0,
                    indices[static_cast<size_t>(e)]);
    index.id = builder_.constant_array(std::move(bytes), index_dtype,
                                       ir::from_ints(index_shape));
  } else {
    index = input(index_dtype, index_shape);
    // Overwrite the input's random values with the chosen indices, through its strides.
    const Array& array = case_.inputs.back();
    std::vector<int64_t> position(index_shape.size(), 0);
    for (int64_t e = 0; e < count; ++e) {
      int64_t offset = 0;
      for (size_t d = 0; d < position.size(); ++d) offset += position[d] * array.strides()[d];
      store_element(index_dtype,
                    static_cast<char*>(array.data()) + offset * dtype_size(index_dtype), 0,
                    indices[static_cast<size_t>(e)]);
      for (size_t d = position.size(); d-- > 0;) {
        if (++position[d] < index_shape[d]) break;
        position[d] = 0;
      }
    }
  }
  return derived(builder_.gather(operand.id, index.id, axis), operand);
}

// Sorts along a random axis, either way, all of it or its first k: the positions of a value
// every compiler computes bit for bit, else the values (sorting moves each element by at most
// the operand's error: the k-th smallest of perturbed values is within it of the k-th).
std::optional<Value> Generator::sort(const Value& operand) {
  int rank = static_cast<int>(operand.shape.size());
  int64_t axis = uniform(0, rank - 1);
  int64_t size = operand.shape[static_cast<size_t>(axis)];
  const bool descending = chance(0.5);
  const int64_t k = chance(0.3) ? uniform(0, size) : -1;
  const int64_t spelled = chance(0.3) ? axis - rank : axis;
  if (operand.exact && chance(0.5)) {
    Value positions = derived(builder_.argsort(operand.id, spelled, descending, k), operand);
    positions.bound = static_cast<double>(size);
    positions.error = 0;
    return positions;
  }
  Value values = derived(builder_.sort(operand.id, spelled, descending, k), operand);
  return values;
}

}  // namespace kiln::fuzz::detail
