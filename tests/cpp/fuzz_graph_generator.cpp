// The random subgraph generator of the differential fuzzer; see fuzz_graph_generator.h for the
// rules that keep tolerances meaningful. Movement ops and the reduction/scan family live in
// fuzz_graph_movement.cpp.
#include "fuzz_graph_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fuzz_graph_internal.h"

namespace kiln::fuzz {

double dtype_epsilon(DType dtype) {
  switch (dtype) {
    case DType::Float16: return 0x1p-10;
    case DType::BFloat16: return 0x1p-7;
    case DType::Float32: return 0x1p-23;
    case DType::Float64: return 0x1p-52;
    default: return 0;
  }
}

namespace detail {

double integer_limit(DType dtype) {
  if (dtype == DType::Bool) return 1;
  int bits = dtype_size(dtype) * 8;
  return std::ldexp(1.0, is_signed_integer(dtype) ? bits - 1 : bits);
}

void store_element(DType dtype, void* destination, double float_value, int64_t integer_value) {
  switch (dtype) {
    case DType::Float16: {
      _Float16 half = static_cast<_Float16>(float_value);
      std::memcpy(destination, &half, 2);
      return;
    }
    case DType::BFloat16: {
      float single = static_cast<float>(float_value);
      uint32_t bits;
      std::memcpy(&bits, &single, 4);
      uint16_t rounded = static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
      std::memcpy(destination, &rounded, 2);
      return;
    }
    case DType::Float32: {
      float single = static_cast<float>(float_value);
      std::memcpy(destination, &single, 4);
      return;
    }
    case DType::Float64: std::memcpy(destination, &float_value, 8); return;
    case DType::Bool: *static_cast<uint8_t*>(destination) = integer_value != 0; return;
    default:
      // Little-endian truncation: integers wrap into narrower types.
      std::memcpy(destination, &integer_value, static_cast<size_t>(dtype_size(dtype)));
  }
}

Generator::Generator(FuzzCase& fuzz_case, uint64_t seed, int subgraph)
    : case_(fuzz_case), builder_(fuzz_case.graph), subgraph_(subgraph) {
  std::seed_seq sequence{seed, seed >> 32, static_cast<uint64_t>(subgraph), uint64_t{0x6b696c6e}};
  random_.seed(sequence);
}

int64_t Generator::uniform(int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(random_);
}
double Generator::uniform_real(double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(random_);
}
bool Generator::chance(double probability) { return uniform_real(0, 1) < probability; }

DType Generator::random_dtype() {
  // Weighted towards the common types; every type appears.
  static const DType kinds[] = {
      DType::Float32, DType::Float32, DType::Float32, DType::Float64, DType::Float64,
      DType::Int32,   DType::Int32,   DType::Int64,   DType::Int64,   DType::Bool,
      DType::Int8,    DType::Int16,   DType::UInt8,   DType::UInt16,  DType::UInt32,
      DType::UInt64,  DType::Float16, DType::BFloat16};
  return kinds[uniform(0, std::size(kinds) - 1)];
}

Value Generator::derived(ir::ValueId id, const Value& like) {
  Value value = like;
  value.id = id;
  const ir::Node& node = builder_.node(id);
  value.dtype = node.dtype;
  value.shape = ir::to_ints(node.shape);
  return value;
}

Value Generator::scalar_constant(DType dtype, double magnitude) {
  ir::Scalar scalar;
  double value = 0;
  if (is_float(dtype)) {
    value = std::round(uniform_real(-magnitude, magnitude) * 4) / 4;  // exact in every float type
    scalar = ir::Scalar::of(value);
  } else if (dtype == DType::Bool) {
    value = static_cast<double>(uniform(0, 1));
    scalar = ir::Scalar::of_int(static_cast<int64_t>(value));
  } else {
    int64_t low = is_signed_integer(dtype) ? -static_cast<int64_t>(magnitude) : 0;
    int64_t integer = uniform(low, static_cast<int64_t>(magnitude));
    value = static_cast<double>(integer);
    scalar = ir::Scalar::of_int(integer);
  }
  std::vector<int64_t> shape;
  if (chance(0.3)) shape.assign(static_cast<size_t>(uniform(1, 2)), 1);
  Value result;
  result.id = builder_.constant(scalar, dtype, ir::from_ints(shape));
  result.dtype = dtype;
  result.shape = shape;
  result.bound = std::abs(value);
  return result;
}

Value Generator::exact_constant(DType dtype, double value) {
  Value result;
  result.id = builder_.constant(ir::Scalar::of(value), dtype, {});
  result.dtype = dtype;
  result.bound = std::abs(value);
  return result;
}

// ---- inputs -------------------------------------------------------------------------------

std::vector<int64_t> Generator::random_shape(int max_rank) {
  std::vector<int64_t> shape(static_cast<size_t>(uniform(0, max_rank)));
  for (int64_t& dim : shape) {
    int choice = static_cast<int>(uniform(0, 19));
    dim = choice < 5 ? 1 : choice == 5 ? 0 : choice < 17 ? uniform(2, 6) : uniform(7, 13);
  }
  return shape;
}

// A shape that broadcasts against `shape`: some dims 1, some leading dims dropped.
std::vector<int64_t> Generator::broadcastable_shape(const std::vector<int64_t>& shape) {
  std::vector<int64_t> result = shape;
  for (int64_t& dim : result)
    if (chance(0.3)) dim = 1;
  int drop = static_cast<int>(uniform(0, static_cast<int64_t>(result.size())));
  if (chance(0.5)) drop = 0;
  result.erase(result.begin(), result.begin() + drop);
  return result;
}

void Generator::fill_values(DType dtype, int64_t count, std::vector<double>& floats,
                            std::vector<int64_t>& integers, double& bound) {
  floats.assign(static_cast<size_t>(count), 0);
  integers.assign(static_cast<size_t>(count), 0);
  bound = 0;
  if (is_float(dtype)) {
    double magnitude = std::vector<double>{1, 4, 4, 50}[static_cast<size_t>(uniform(0, 3))];
    bool small_integers = chance(0.4);  // exact under any association of adds
    for (double& value : floats) {
      value = small_integers ? std::round(uniform_real(-magnitude, magnitude))
                             : uniform_real(-magnitude, magnitude);
      if (chance(0.05)) value = 0;
      bound = std::max(bound, std::abs(value));
    }
    bound = std::max(bound, magnitude);
    return;
  }
  if (dtype == DType::Bool) {
    for (int64_t& value : integers) value = uniform(0, 1);
    bound = 1;
    return;
  }
  int64_t magnitude = std::vector<int64_t>{3, 20, 100}[static_cast<size_t>(uniform(0, 2))];
  bool extremes = chance(0.2);  // wrap-around at the type's limits must match exactly
  bool is_signed = is_signed_integer(dtype);
  for (int64_t& value : integers) {
    value = uniform(is_signed ? -magnitude : 0, magnitude);
    if (extremes && chance(0.2)) {
      int64_t limit = dtype == DType::UInt64 || dtype == DType::Int64
                          ? std::numeric_limits<int64_t>::max()
                          : static_cast<int64_t>(integer_limit(dtype)) - 1;
      value = chance(0.5) ? limit : (is_signed ? -limit - 1 : 0);
      if (dtype == DType::UInt64 && chance(0.5)) value = -1;  // 2^64 - 1
    }
  }
  bound = extremes ? integer_limit(dtype) : static_cast<double>(magnitude);
}

Value Generator::input(DType dtype, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<double> floats;
  std::vector<int64_t> integers;
  Value value;
  fill_values(dtype, count, floats, integers, value.bound);

  // The layout: row-major, or a view with per-dim steps, a permuted memory order and reversed
  // dims, inside a bigger buffer whose other elements hold garbage (NaN / extremes), so reading
  // outside the view shows up as a mismatch.
  int rank = static_cast<int>(shape.size());
  std::vector<int64_t> steps(static_cast<size_t>(rank), 1);
  std::vector<int64_t> order(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) order[static_cast<size_t>(d)] = d;
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  bool strided = rank > 0 && count > 0 && chance(0.4);
  if (strided) {
    for (int64_t& step : steps) step = uniform(1, 3);
    std::shuffle(order.begin(), order.end(), random_);
    for (size_t d = 0; d < reversed.size(); ++d) reversed[d] = chance(0.35);
  }
  std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
  int64_t span = 1;
  for (int position = rank - 1; position >= 0; --position) {
    size_t d = static_cast<size_t>(order[static_cast<size_t>(position)]);
    strides[d] = span * steps[d];
    span *= std::max<int64_t>(shape[d], 1) * steps[d];
  }
  int64_t total = strided ? span + uniform(0, 3) : count;
  int64_t first = 0;
  for (size_t d = 0; d < reversed.size(); ++d) {
    if (!reversed[d]) continue;
    first += (shape[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  auto storage = std::make_shared<std::vector<uint8_t>>(
      static_cast<size_t>(std::max<int64_t>(total, 1) * dtype_size(dtype)), 0);
  int size = dtype_size(dtype);
  for (int64_t e = 0; strided && e < total; ++e)
    store_element(dtype, storage->data() + e * size, std::nan(""), -1);
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offset = first;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    store_element(dtype, storage->data() + offset * size, floats[static_cast<size_t>(e)],
                  integers[static_cast<size_t>(e)]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  value.id = builder_.parameter(dtype, ir::from_ints(shape));
  value.dtype = dtype;
  value.shape = shape;
  value.exact = true;
  void* data = storage->data() + first * size;
  case_.inputs.push_back(Array::borrow(data, dtype, shape, strides));
  case_.input_strides.push_back(strided ? strides : std::vector<int64_t>{});
  case_.storage.push_back(storage);
  return value;
}

Value Generator::constant_array(DType dtype, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<double> floats;
  std::vector<int64_t> integers;
  Value value;
  fill_values(dtype, count, floats, integers, value.bound);
  std::vector<uint8_t> bytes(static_cast<size_t>(count * dtype_size(dtype)));
  for (int64_t e = 0; e < count; ++e) {
    store_element(dtype, bytes.data() + e * dtype_size(dtype), floats[static_cast<size_t>(e)],
                  integers[static_cast<size_t>(e)]);
  }
  value.id = builder_.constant_array(std::move(bytes), dtype, ir::from_ints(shape));
  value.dtype = dtype;
  value.shape = shape;
  return value;
}

// ---- the subgraph -------------------------------------------------------------------------

void Generator::generate() {
  ir::ValueId first_node = case_.graph.size();
  bool big = chance(0.06);  // a few large shapes reach the parallel and vectorised paths
  element_limit_ = big ? 70000 : 1500;
  std::vector<int64_t> base = random_shape(3);
  if (big) base = chance(0.5) ? std::vector<int64_t>{uniform(33000, 40000)}
                              : std::vector<int64_t>{uniform(150, 200), uniform(170, 200)};
  int parameters = static_cast<int>(uniform(1, 3));
  for (int p = 0; p < parameters; ++p)
    pool_.push_back(input(random_dtype(), p == 0 ? base : broadcastable_shape(base)));
  if (chance(0.3)) pool_.push_back(constant_array(random_dtype(), broadcastable_shape(base)));
  if (chance(0.2) && !base.empty()) {
    Value iota;
    DType dtype = chance(0.5) ? DType::Int32 : DType::Float32;
    iota.id = builder_.iota(dtype, ir::from_ints(base),
                            uniform(0, static_cast<int64_t>(base.size()) - 1));
    iota = derived(iota.id, iota);
    iota.bound = 70000;
    pool_.push_back(iota);
  }
  if (chance(0.15)) {
    Value random;
    bool normal = chance(0.5);
    DType dtype = chance(0.5) ? DType::Float32 : DType::Float64;
    ir::Shape shape = ir::from_ints(base);
    uint64_t seed = static_cast<uint64_t>(uniform(0, 1000));
    random.id = normal ? builder_.random_normal(dtype, shape, seed)
                       : builder_.random_uniform(dtype, shape, seed);
    random = derived(random.id, random);
    random.bound = normal ? 9 : 1;
    random.exact = !normal;  // Box-Muller calls log and cos: libmvec may differ by ulps
    random.error = normal ? 64 * dtype_epsilon(dtype) : 0;
    pool_.push_back(random);
  }

  int steps = static_cast<int>(uniform(3, 10));
  for (int step = 0; step < steps; ++step) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::optional<Value> made = random_step();
      if (!made) continue;
      pool_.push_back(*made);
      break;
    }
  }

  // Outputs: the newest value, a few random others and every wild value.
  std::vector<Value> chosen = wild_;
  chosen.push_back(pool_.back());
  int extra = static_cast<int>(uniform(0, 2));
  for (int e = 0; e < extra; ++e) chosen.push_back(pool_[static_cast<size_t>(
                                      uniform(0, static_cast<int64_t>(pool_.size()) - 1))]);
  std::vector<ir::ValueId> outputs = case_.graph.outputs();
  for (const Value& value : chosen) {
    if (std::find(outputs.begin(), outputs.end(), value.id) != outputs.end()) continue;
    outputs.push_back(value.id);
    OutputCheck check;
    check.subgraph = subgraph_;
    check.exact = value.exact || !is_float(value.dtype);
    // Two of the smallest subnormals: results that underflow keep no relative precision.
    double subnormal = value.dtype == DType::Float16 ? 0x1p-24
                       : value.dtype == DType::Float64 ? 0x1p-1074 : 0x1p-149;
    check.absolute = 4 * value.error + 2 * subnormal;
    check.relative = value.wild ? 8 * dtype_epsilon(value.dtype) : 4 * dtype_epsilon(value.dtype);
    case_.checks.push_back(check);
  }
  case_.graph.set_outputs(outputs);
  case_.subgraph_nodes.emplace_back(first_node, case_.graph.size());
  case_.subgraph_numbers.push_back(subgraph_);
}

std::optional<Value> Generator::random_step() {
  const Value& operand = pick(pool_);
  int choice = static_cast<int>(uniform(0, 99));
  if (choice < 22) return unary(operand);
  if (choice < 44) return binary(operand);
  if (choice < 50) return where(operand);
  if (choice < 58) return cast(operand, random_dtype());
  if (choice < 69) return reduction(operand);
  if (choice < 70) return concat_of_sums(operand);
  if (choice < 75) return scan(operand);
  if (choice < 94) return movement(operand);
  if (choice < 97) return gather(operand);
  wild(operand);
  return std::nullopt;
}

}  // namespace detail

FuzzCase generate_case(uint64_t seed, int first_subgraph, int subgraph_count) {
  FuzzCase fuzz_case;
  for (int k = 0; k < subgraph_count; ++k) {
    detail::Generator generator(fuzz_case, seed, first_subgraph + k);
    generator.generate();
  }
  return fuzz_case;
}

}  // namespace kiln::fuzz
