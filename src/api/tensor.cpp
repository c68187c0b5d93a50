// The C++ Tensor API, elementwise half: Tensor's accessors, NumPy's ufuncs and the operators.
// Each call stamps the caller's source line on the builder and then applies NumPy's typing:
// NEP 50 promotion between tensors, weak double scalars, integer inputs of float-valued ufuncs
// cast to NumPy's smallest safe float. Reductions, movement, linear algebra and creation are in
// tensor_structure.cpp.
#include <cmath>
#include <limits>

#include "api/trace.h"
#include "kiln/tensor.h"
#include "decompose/helpers.h"
#include "decompose/decompositions.h"
#include "decompose/ufuncs.h"

namespace kiln {

using detail::Trace;
using detail::trace_for;
using detail::wrap;
using ir::Op;
using ir::ValueId;
using decompose::detail::cast_to;
using decompose::detail::constant;

namespace {

const ir::Node& node_of(const Tensor& x) {
  if (x.trace() == nullptr || x.id() < 0 || x.id() >= x.trace()->graph.size()) {
    throw Error(ErrorKind::Value,
                error_message("Tensor", "", "the tensor is not part of a traced function"));
  }
  return x.trace()->graph.node(x.id());
}

// The float type NumPy's float-valued ufuncs (sin, sqrt, arctan2, ...) compute integers in:
// the smallest float that holds every value of the type.
DType math_float(DType dtype) {
  switch (dtype) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return DType::Float16;
    case DType::Int16: case DType::UInt16: return DType::Float32;
    default: return is_inexact(dtype) ? dtype : DType::Float64;
  }
}

bool is_comparison(Op op) {
  return op == Op::eq || op == Op::ne || op == Op::lt || op == Op::le || op == Op::gt ||
         op == Op::ge;
}

// Whether an integral `value` is representable in the integer type `dtype`.
bool fits(DType dtype, double value) {
  switch (dtype) {
    case DType::Int8: return value >= -128 && value <= 127;
    case DType::Int16: return value >= -32768 && value <= 32767;
    case DType::Int32: return value >= -2147483648.0 && value <= 2147483647.0;
    case DType::Int64: return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
    case DType::UInt8: return value >= 0 && value <= 255;
    case DType::UInt16: return value >= 0 && value <= 65535;
    case DType::UInt32: return value >= 0 && value <= 4294967295.0;
    case DType::UInt64: return value >= 0 && value < 18446744073709551616.0;
    default: return true;
  }
}

// NEP 50: a double operand is "weak". With a float tensor it takes the tensor's dtype; with an
// integer or bool tensor an integral value acts as a Python int (the tensor's type; int64 for
// bool) and anything else as a Python float (float64).
DType weak_scalar_dtype(DType tensor, double value, Op op, const std::string& name,
                        const std::string& location) {
  if (is_inexact(tensor)) return tensor;
  if (!std::isfinite(value) || value != std::trunc(value)) return DType::Float64;
  if (tensor == DType::Bool) return DType::Int64;
  if (fits(tensor, value)) return tensor;
  // Comparing with an out-of-range integer is well defined; computing with it is not.
  if (is_comparison(op)) return DType::Float64;
  throw Error(ErrorKind::Value,
              error_message(name, location,
                            "Python integer " + std::to_string(static_cast<long double>(value)) +
                                " out of bounds for " + std::string(dtype_name(tensor))));
}

using ir::Promotion;

struct BinarySpec {
  const char* name;
  Op op;
  Promotion floats;
};

// The op and the dtype the operands are cast to, for operands promoted to `dtype`.
std::pair<Op, DType> resolve(const BinarySpec& spec, DType dtype, const std::string& location) {
  if (!is_inexact(dtype) && spec.floats == Promotion::Float64) return {spec.op, DType::Float64};
  if (!is_inexact(dtype) && spec.floats == Promotion::MathFloat) return {spec.op, math_float(dtype)};
  if (dtype != DType::Bool) return {spec.op, dtype};
  // NumPy's bool loops: + is or, * is and, - is refused, the rest compute in int8.
  switch (spec.op) {
    case Op::add: return {Op::logical_or, dtype};
    case Op::mul: return {Op::logical_and, dtype};
    case Op::sub:
      throw Error(ErrorKind::Type,
                  error_message(spec.name, location,
                                "boolean subtract is not supported; use logical_xor or ^"));
    case Op::floordiv: case Op::mod: case Op::pow: case Op::shift_left: case Op::shift_right:
      return {spec.op, DType::Int8};
    default: return {spec.op, dtype};
  }
}

Tensor binary(const BinarySpec& spec, const Tensor& a, const Tensor& b, const Where& where) {
  Trace& trace = trace_for(a, b, spec.name, where);
  auto [op, dtype] = resolve(spec, promote_types(a.dtype(), b.dtype()), trace.builder.location());
  ir::Builder& builder = trace.builder;
  ValueId left = cast_to(builder, a.id(), dtype);
  ValueId right = cast_to(builder, b.id(), dtype);
  return wrap(trace, builder.binary(op, left, right));
}

Tensor binary(const BinarySpec& spec, const Tensor& tensor, double value, bool scalar_first,
              const Where& where) {
  Trace& trace = trace_for(tensor, spec.name, where);
  ir::Builder& builder = trace.builder;
  DType weak = weak_scalar_dtype(tensor.dtype(), value, spec.op, spec.name, builder.location());
  auto [op, dtype] = resolve(spec, promote_types(tensor.dtype(), weak), builder.location());
  ValueId x = cast_to(builder, tensor.id(), dtype);
  ValueId c = constant(builder, value, dtype);
  return wrap(trace, scalar_first ? builder.binary(op, c, x) : builder.binary(op, x, c));
}

// A unary ufunc from the op table: its promotion column, and NumPy's bool loops (|b| is b,
// -b is refused).
Tensor unary(const char* name, Op op, const Tensor& x, const Where& where) {
  Trace& trace = trace_for(x, name, where);
  Promotion floats = ir::op_info(op).promotion;
  if (x.dtype() == DType::Bool && op == Op::abs) return x;
  if (x.dtype() == DType::Bool && op == Op::neg)
    throw Error(ErrorKind::Type, error_message(name, detail::location_string(where),
                                               "boolean negative is not supported; use "
                                               "logical_not or ~"));
  ValueId value = x.id();
  if (floats == Promotion::MathFloat || (floats == Promotion::BoolToFloat && x.dtype() == DType::Bool))
    value = cast_to(trace.builder, value, math_float(x.dtype()));
  if (floats == Promotion::Float64 && !is_inexact(x.dtype())) value = cast_to(trace.builder, value, DType::Float64);
  return wrap(trace, trace.builder.unary(op, value));
}

// Unary ufuncs that are a decomposition rather than one primitive.
template <class Decompose>
Tensor decomposed(const char* name, const Tensor& x, const Where& where, Decompose decompose) {
  Trace& trace = trace_for(x, name, where);
  return wrap(trace, decompose(trace.builder, x.id()));
}

}  // namespace

// ---- Tensor ----

DType Tensor::dtype() const { return node_of(*this).dtype; }
std::vector<int64_t> Tensor::shape() const { return ir::to_ints(node_of(*this).shape); }
int Tensor::ndim() const { return static_cast<int>(node_of(*this).shape.size()); }
int64_t Tensor::size() const { return ir::element_count(node_of(*this).shape); }
Tensor Tensor::astype(DType dtype, Where where) const { return kiln::astype(*this, dtype, where); }
Tensor Tensor::reshape(std::vector<int64_t> shape, Where where) const {
  return kiln::reshape(*this, std::move(shape), where);
}
Tensor Tensor::T() const { return transpose(*this, {}, Where{}); }

Tensor Tensor::operator[](int64_t index) const {
  Trace& trace = trace_for(*this, "getitem", Where{});
  std::vector<int64_t> sizes = shape();
  if (sizes.empty()) {
    throw Error(ErrorKind::Value, error_message("getitem", "", "too many indices for a 0-d array"));
  }
  if (index < -sizes[0] || index >= sizes[0]) {
    throw Error(ErrorKind::Axis,
                error_message("getitem", "",
                              "index " + std::to_string(index) +
                                  " is out of bounds for axis 0 with size " +
                                  std::to_string(sizes[0])));
  }
  if (index < 0) index += sizes[0];
  std::vector<int64_t> starts(sizes.size(), 0), stops = sizes, steps(sizes.size(), 1);
  starts[0] = index;
  stops[0] = index + 1;
  ValueId row = trace.builder.slice(id(), starts, stops, steps);
  sizes.erase(sizes.begin());
  return wrap(trace, trace.builder.reshape(row, ir::from_ints(sizes)));
}

// ---- ufuncs: one per elementwise entry of the op table ----

#define KILN_UNARY(op, accepts, result, expression, function, ...) \
  Tensor function(const Tensor& x, Where where) { return unary(#function, Op::op, x, where); }
KILN_UNARY_OPS(KILN_UNARY)
#undef KILN_UNARY

Tensor square(const Tensor& x, Where where) {
  return decomposed("square", x, where, [](ir::Builder& b, ValueId v) {
    return decompose::square(b, b.node(v).dtype == DType::Bool ? b.cast(v, DType::Int8) : v);
  });
}

Tensor sigmoid(const Tensor& x, Where where) {
  return decomposed("sigmoid", x, where, [](ir::Builder& b, ValueId v) {
    return decompose::sigmoid(b, cast_to(b, v, math_float(b.node(v).dtype)));
  });
}

Tensor relu(const Tensor& x, Where where) {
  return decomposed("relu", x, where, [](ir::Builder& b, ValueId v) { return decompose::relu(b, v); });
}

Tensor gelu(const Tensor& x, bool tanh_approximation, Where where) {
  return decomposed("gelu", x, where, [&](ir::Builder& b, ValueId v) {
    return decompose::gelu(b, cast_to(b, v, math_float(b.node(v).dtype)), tanh_approximation);
  });
}

// ---- ufuncs that are decompositions (decompose/ufuncs.h) ----

namespace {

// Both operands cast to the loop NumPy would pick: their common dtype, made float by
// MathFloat; NumPy's bool loops of integer ufuncs compute in int8.
std::pair<ValueId, ValueId> promoted(Trace& trace, const Tensor& a, const Tensor& b, Promotion floats) {
  DType dtype = promote_types(a.dtype(), b.dtype());
  if (floats == Promotion::MathFloat && !is_inexact(dtype)) dtype = math_float(dtype);
  if (dtype == DType::Bool) dtype = DType::Int8;
  return {cast_to(trace.builder, a.id(), dtype), cast_to(trace.builder, b.id(), dtype)};
}

ValueId as_math_float(Trace& trace, const Tensor& x) {
  return cast_to(trace.builder, x.id(), math_float(x.dtype()));
}

void require_integers(const char* name, const Tensor& a, const Tensor& b, const Where& where) {
  if (is_float(a.dtype()) || is_float(b.dtype()))
    throw Error(ErrorKind::Type, error_message(name, detail::location_string(where),
                                               "is defined for integers only"));
}

}  // namespace

Tensor fmod(const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(a, b, "fmod", where);
  auto [x, y] = promoted(trace, a, b, Promotion::Keep);
  return wrap(trace, decompose::fmod(trace.builder, x, y));
}

Tensor logaddexp(const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(a, b, "logaddexp", where);
  auto [x, y] = promoted(trace, a, b, Promotion::MathFloat);
  return wrap(trace, decompose::logaddexp(trace.builder, x, y, false));
}

Tensor logaddexp2(const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(a, b, "logaddexp2", where);
  auto [x, y] = promoted(trace, a, b, Promotion::MathFloat);
  return wrap(trace, decompose::logaddexp(trace.builder, x, y, true));
}

Tensor heaviside(const Tensor& x, const Tensor& at_zero, Where where) {
  Trace& trace = trace_for(x, at_zero, "heaviside", where);
  auto [value, zero_value] = promoted(trace, x, at_zero, Promotion::MathFloat);
  return wrap(trace, decompose::heaviside(trace.builder, value, zero_value));
}

Tensor gcd(const Tensor& a, const Tensor& b, Where where) {
  require_integers("gcd", a, b, where);
  Trace& trace = trace_for(a, b, "gcd", where);
  auto [x, y] = promoted(trace, a, b, Promotion::Keep);
  return wrap(trace, decompose::gcd(trace.builder, x, y));
}

Tensor lcm(const Tensor& a, const Tensor& b, Where where) {
  require_integers("lcm", a, b, where);
  Trace& trace = trace_for(a, b, "lcm", where);
  auto [x, y] = promoted(trace, a, b, Promotion::Keep);
  return wrap(trace, decompose::lcm(trace.builder, x, y));
}

Tensor ldexp(const Tensor& x, const Tensor& exponent, Where where) {
  Trace& trace = trace_for(x, exponent, "ldexp", where);
  if (is_float(exponent.dtype()))
    throw Error(ErrorKind::Type, error_message("ldexp", detail::location_string(where),
                                               "the exponent must be an integer array"));
  return wrap(trace, decompose::ldexp(trace.builder, as_math_float(trace, x), exponent.id()));
}

Tensor signbit(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "signbit", where);
  return wrap(trace, decompose::signbit(trace.builder, x.id()));
}

std::pair<Tensor, Tensor> modf(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "modf", where);
  auto [fraction, whole] = decompose::modf(trace.builder, as_math_float(trace, x));
  return {wrap(trace, fraction), wrap(trace, whole)};
}

std::pair<Tensor, Tensor> frexp(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "frexp", where);
  auto [mantissa, exponent] = decompose::frexp(trace.builder, as_math_float(trace, x));
  return {wrap(trace, mantissa), wrap(trace, exponent)};
}

// ---- binary ufuncs ----

#define KILN_BINARY(op, accepts, result, expression, function, promotion, ...)     \
  Tensor function(const Tensor& a, const Tensor& b, Where where) {                  \
    return binary({#function, Op::op, Promotion::promotion}, a, b, where);           \
  }                                                                                  \
  Tensor function(const Tensor& a, double b, Where where) {                         \
    return binary({#function, Op::op, Promotion::promotion}, a, b, false, where);    \
  }                                                                                  \
  Tensor function(double a, const Tensor& b, Where where) {                         \
    return binary({#function, Op::op, Promotion::promotion}, b, a, true, where);     \
  }
KILN_BINARY_OPS(KILN_BINARY)
#undef KILN_BINARY

// ---- where, clip, astype ----

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(std::vector<Tensor>{condition, a, b}, "where", where);
  ir::Builder& builder = trace.builder;
  DType dtype = promote_types(a.dtype(), b.dtype());
  ValueId test = cast_to(builder, condition.id(), DType::Bool);
  return wrap(trace, builder.where(test, cast_to(builder, a.id(), dtype),
                                   cast_to(builder, b.id(), dtype)));
}

namespace {
Tensor where_scalar(const Tensor& condition, const Tensor& tensor, double value,
                    bool scalar_first, const Where& where) {
  Trace& trace = trace_for(condition, tensor, "where", where);
  ir::Builder& builder = trace.builder;
  DType weak = weak_scalar_dtype(tensor.dtype(), value, Op::where, "where", builder.location());
  DType dtype = promote_types(tensor.dtype(), weak);
  ValueId test = cast_to(builder, condition.id(), DType::Bool);
  ValueId x = cast_to(builder, tensor.id(), dtype);
  ValueId c = constant(builder, value, dtype);
  return wrap(trace, scalar_first ? builder.where(test, c, x) : builder.where(test, x, c));
}

// An integer bound outside the type's range: one that cannot clip is dropped; one that clips
// everything becomes the extreme value of the type.
std::optional<double> integer_bound(DType dtype, std::optional<double> bound, bool is_low) {
  if (!bound || !is_integer(dtype) || fits(dtype, *bound)) return bound;
  bool below = *bound < 0;
  if (below == is_low) return std::nullopt;
  int bits = 8 * dtype_size(dtype) - (is_signed_integer(dtype) ? 1 : 0);
  // 64-bit extremes are not doubles: the largest double below them stands in.
  double highest = bits >= 63 ? std::nextafter(std::ldexp(1.0, bits), 0.0)
                               : std::ldexp(1.0, bits) - 1;
  double lowest = is_signed_integer(dtype) ? -std::ldexp(1.0, bits) : 0;
  return below ? lowest : highest;
}
}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, double b, Where where) {
  return where_scalar(condition, a, b, false, where);
}
Tensor where(const Tensor& condition, double a, const Tensor& b, Where where) {
  return where_scalar(condition, b, a, true, where);
}

Tensor clip(const Tensor& x, std::optional<double> low, std::optional<double> high, Where where) {
  Trace& trace = trace_for(x, "clip", where);
  ir::Builder& builder = trace.builder;
  DType dtype = x.dtype();
  if (!is_float(dtype)) {
    // Weak bounds as in the binary ufuncs, except that an out-of-range integer is no error.
    for (std::optional<double> bound : {low, high}) {
      if (!bound) continue;
      bool integral = std::isfinite(*bound) && *bound == std::trunc(*bound);
      DType bound_type = !integral                  ? DType::Float64
                         : x.dtype() == DType::Bool ? DType::Int64
                                                    : x.dtype();
      dtype = promote_types(dtype, bound_type);
    }
    low = integer_bound(dtype, low, true);
    high = integer_bound(dtype, high, false);
  }
  ValueId value = cast_to(builder, x.id(), dtype);
  return wrap(trace, decompose::clip(builder, value, low.has_value(), low.value_or(0),
                                  high.has_value(), high.value_or(0)));
}

Tensor astype(const Tensor& x, DType dtype, Where where) {
  Trace& trace = trace_for(x, "astype", where);
  return wrap(trace, cast_to(trace.builder, x.id(), dtype));
}

// ---- operators (C++ operators cannot take a source location: errors name the op only) ----

Tensor operator-(const Tensor& x) { return negative(x, Where{}); }
Tensor operator!(const Tensor& x) { return logical_not(x, Where{}); }
Tensor operator~(const Tensor& x) { return bitwise_not(x, Where{}); }

#define KILN_OPERATOR(symbol, function)                                                      \
  Tensor operator symbol(const Tensor& a, const Tensor& b) { return function(a, b, Where{}); } \
  Tensor operator symbol(const Tensor& a, double b) { return function(a, b, Where{}); }        \
  Tensor operator symbol(double a, const Tensor& b) { return function(a, b, Where{}); }
KILN_OPERATOR(+, add)
KILN_OPERATOR(-, subtract)
KILN_OPERATOR(*, multiply)
KILN_OPERATOR(/, divide)
KILN_OPERATOR(%, mod)
KILN_OPERATOR(==, equal)
KILN_OPERATOR(!=, not_equal)
KILN_OPERATOR(<, less)
KILN_OPERATOR(<=, less_equal)
KILN_OPERATOR(>, greater)
KILN_OPERATOR(>=, greater_equal)
KILN_OPERATOR(&, bitwise_and)
KILN_OPERATOR(|, bitwise_or)
KILN_OPERATOR(^, bitwise_xor)
KILN_OPERATOR(&&, logical_and)
KILN_OPERATOR(||, logical_or)
#undef KILN_OPERATOR

}  // namespace kiln
