// Checked node factories. Each factory computes the result type from the op table and the
// operands, and throws a kiln::Error naming the op, the user's location and the offending
// shapes or dtypes. Elementwise factories make broadcasting explicit: after them, every input of
// an elementwise node has the node's shape (the scheduler indexes all operands alike).
#include "ir/builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/builder_checker.h"

namespace kiln::ir {
namespace {

using builder_detail::all_axes;
using builder_detail::Checker;
using builder_detail::ValueType;
using builder_detail::canonical_scalar;
using builder_detail::list_string;

}  // namespace

void Builder::fail(ErrorKind kind, Op op, const std::string& message) const {
  Checker(op, graph_, location_).fail(kind, message);
}

ValueId Builder::add(Op op, DType dtype, Shape shape, std::vector<ValueId> inputs, Attrs attrs) {
  // A DType outside the enum (a cast from a bad integer in the C++ API) would be emitted as
  // code that does not compile.
  if (static_cast<int>(dtype) >= kDTypeCount)
    fail(ErrorKind::Type, op, "unknown dtype " + std::to_string(int(dtype)));
  // Every value's element count and byte size fit int64 (NumPy's rule for any array, its
  // ValueError "array is too big"), so no later stage (buffer plan, index arithmetic,
  // allocation) can overflow.
  // NumPy's rule for an empty value; not for a cast, which is kiln's own intermediate where a
  // reduction widens its operand (np.zeros((0, 2**62), np.int8).sum(axis=1) is NumPy's too).
  const bool numpy_sized = !count_empty_extents_ || op == Op::cast ||
                           checked_byte_size(without_empty_dims(shape), dtype);
  if (!checked_byte_size(shape, dtype) || !numpy_sized)
    fail(ErrorKind::Value, op, "array is too big: the result of shape " + shape_string(shape) +
                                    " needs more than 2**63 bytes");
  return graph_.append(
      Node{op, dtype, std::move(shape), std::move(inputs), std::move(attrs), location_});
}

// ---- sources ----

ValueId Builder::parameter(DType dtype, const Shape& shape) {
  Checker(Op::parameter, graph_, location_).expect_valid_shape(shape);
  Attrs attrs;
  attrs.index = static_cast<int64_t>(graph_.inputs().size());
  return add(Op::parameter, dtype, shape, {}, std::move(attrs));
}

ValueId Builder::constant(Scalar value, DType dtype, const Shape& shape) {
  Checker(Op::constant, graph_, location_).expect_valid_shape(shape);
  Attrs attrs;
  attrs.scalar = canonical_scalar(value, dtype);
  return add(Op::constant, dtype, shape, {}, std::move(attrs));
}

ValueId Builder::constant_array(std::vector<uint8_t> bytes, DType dtype, const Shape& shape) {
  Checker checker(Op::constant_array, graph_, location_);
  checker.expect_valid_shape(shape);
  int64_t expected = element_count(shape) * dtype_size(dtype);
  if (static_cast<int64_t>(bytes.size()) != expected) {
    checker.fail(ErrorKind::Value, std::to_string(bytes.size()) + " bytes of data do not fill " +
                                       std::string(dtype_name(dtype)) + shape_string(shape) +
                                       ", which needs " + std::to_string(expected));
  }
  Attrs attrs;
  attrs.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return add(Op::constant_array, dtype, shape, {}, std::move(attrs));
}

ValueId Builder::iota(DType dtype, const Shape& shape, int64_t axis) {
  Checker checker(Op::iota, graph_, location_);
  checker.expect_valid_shape(shape);
  if (dtype == DType::Bool) checker.fail(ErrorKind::Type, "cannot count in dtype bool");
  Attrs attrs;
  attrs.axis = checker.axis(axis, shape);
  return add(Op::iota, dtype, shape, {}, std::move(attrs));
}

ValueId Builder::size(const Dim& extent, DType dtype) {
  Checker checker(Op::size, graph_, location_);
  if (!is_integer(dtype)) {
    checker.fail(ErrorKind::Type, "a size is an integer, not " + std::string(dtype_name(dtype)));
  }
  if (extent.is_constant()) return constant(Scalar::of_int(extent.constant()), dtype);
  Attrs attrs;
  attrs.extent = extent;
  return add(Op::size, dtype, {}, {}, std::move(attrs));
}

ValueId Builder::random(Op op, DType dtype, const Shape& shape, uint64_t seed, ValueId key) {
  Checker checker(op, graph_, location_);
  checker.expect_valid_shape(shape);
  if (!is_float(dtype)) {
    checker.fail(ErrorKind::Type, "random values need a floating-point dtype, got " +
                                      std::string(dtype_name(dtype)));
  }
  if (key < 0) {
    key = constant(Scalar::of_int(0), DType::Int64);
  } else if (graph_.node(key).dtype != DType::Int64 || !graph_.node(key).shape.empty()) {
    checker.fail(ErrorKind::Type, "a random key must be a 0-d int64 value, got " +
                                      std::string(dtype_name(graph_.node(key).dtype)) + " " +
                                      shape_string(graph_.node(key).shape));
  }
  Attrs attrs;
  attrs.seed = seed;
  return add(op, dtype, shape, {key}, std::move(attrs));
}

ValueId Builder::random_uniform(DType dtype, const Shape& shape, uint64_t seed, ValueId key) {
  return random(Op::random_uniform, dtype, shape, seed, key);
}

ValueId Builder::random_normal(DType dtype, const Shape& shape, uint64_t seed, ValueId key) {
  return random(Op::random_normal, dtype, shape, seed, key);
}

// ---- elementwise ----

ValueId Builder::unary(Op op, ValueId a) {
  Checker checker(op, graph_, location_);
  checker.expect_kind(OpKind::Unary, "unary");
  ValueType type = checker.operand(a);
  checker.expect_accepted(type.dtype, type.shape);
  return add(op, result_dtype(op, type.dtype), type.shape, {a});
}

ValueId Builder::binary(Op op, ValueId a, ValueId b) {
  Checker checker(op, graph_, location_);
  checker.expect_kind(OpKind::Binary, "binary");
  ValueType left = checker.operand(a);
  ValueType right = checker.operand(b);
  checker.expect_same_dtype(left, right);
  checker.expect_accepted(left.dtype, left.shape);
  Shape shape;
  if (!broadcast_shapes(left.shape, right.shape, shape)) {
    checker.fail(ErrorKind::Value, "operands could not be broadcast together with shapes " +
                                       shape_string(left.shape) + " " + shape_string(right.shape));
  }
  ValueId left_input = left.shape == shape ? a : broadcast(a, shape);
  ValueId right_input = right.shape == shape ? b : broadcast(b, shape);
  return add(op, result_dtype(op, left.dtype), shape, {left_input, right_input});
}

ValueId Builder::where(ValueId condition, ValueId a, ValueId b) {
  Checker checker(Op::where, graph_, location_);
  ValueType condition_type = checker.operand(condition);
  ValueType left = checker.operand(a);
  ValueType right = checker.operand(b);
  if (condition_type.dtype != DType::Bool) {
    checker.fail(ErrorKind::Type, "the condition must be bool, got " +
                                      std::string(dtype_name(condition_type.dtype)) +
                                      " (shape " + shape_string(condition_type.shape) + ")");
  }
  checker.expect_same_dtype(left, right);
  Shape partial;
  Shape shape;
  if (!broadcast_shapes(condition_type.shape, left.shape, partial) ||
      !broadcast_shapes(partial, right.shape, shape)) {
    checker.fail(ErrorKind::Value, "operands could not be broadcast together with shapes " +
                                       shape_string(condition_type.shape) + " " +
                                       shape_string(left.shape) + " " + shape_string(right.shape));
  }
  ValueId condition_input =
      condition_type.shape == shape ? condition : broadcast(condition, shape);
  ValueId left_input = left.shape == shape ? a : broadcast(a, shape);
  ValueId right_input = right.shape == shape ? b : broadcast(b, shape);
  return add(Op::where, left.dtype, shape, {condition_input, left_input, right_input});
}

ValueId Builder::cast(ValueId a, DType dtype) {
  ValueType type = Checker(Op::cast, graph_, location_).operand(a);
  return add(Op::cast, dtype, type.shape, {a});
}

// ---- complex numbers ----

ValueId Builder::complex(ValueId real_part, ValueId imaginary_part) {
  Checker checker(Op::complex, graph_, location_);
  ValueType re = checker.operand(real_part);
  ValueType im = checker.operand(imaginary_part);
  checker.expect_same_dtype(re, im);
  if (re.dtype != DType::Float32 && re.dtype != DType::Float64) {
    checker.fail(ErrorKind::Type, "the parts must be float32 or float64, got " +
                                      std::string(dtype_name(re.dtype)));
  }
  if (re.shape != im.shape) {
    checker.fail(ErrorKind::Value, "the parts have shapes " + shape_string(re.shape) + " and " +
                                       shape_string(im.shape));
  }
  return add(Op::complex, complex_of(re.dtype), re.shape, {real_part, imaginary_part});
}

ValueId Builder::complex_part(Op op, ValueId value) {
  Checker checker(op, graph_, location_);
  ValueType type = checker.operand(value);
  if (!is_complex(type.dtype)) {
    checker.fail(ErrorKind::Type, "needs a complex operand, got " +
                                      std::string(dtype_name(type.dtype)));
  }
  return add(op, component_dtype(type.dtype), type.shape, {value});
}

ValueId Builder::real(ValueId value) { return complex_part(Op::real, value); }
ValueId Builder::imag(ValueId value) { return complex_part(Op::imag, value); }

// ---- reductions and scans ----

ValueId Builder::reduce(Op op, ValueId a, std::vector<int64_t> axes, bool keepdims,
                        int64_t ddof) {
  Checker checker(op, graph_, location_);
  checker.expect_kind(OpKind::Reduce, "reduce");
  ValueType type = checker.operand(a);
  checker.expect_accepted(type.dtype, type.shape);
  std::vector<int64_t> reduced =
      axes.empty() ? all_axes(type.rank()) : checker.axes(axes, type.shape, false);
  bool is_arg = op == Op::argmax || op == Op::argmin;
  if (is_arg && reduced.size() > 1) {
    checker.fail(ErrorKind::Value, "reduces over one axis, got axes " + list_string(reduced) +
                                       " of shape " + shape_string(type.shape) +
                                       " (reshape to flatten them first)");
  }
  Shape shape;
  Dim reduced_count = 1;
  for (int d = 0; d < type.rank(); ++d) {
    bool is_reduced = std::binary_search(reduced.begin(), reduced.end(), d);
    if (is_reduced) reduced_count = reduced_count * type.shape[static_cast<size_t>(d)];
    if (!is_reduced) shape.push_back(type.shape[static_cast<size_t>(d)]);
    if (is_reduced && keepdims) shape.push_back(1);
  }
  bool has_no_identity = is_arg || op == Op::max || op == Op::min;
  if (has_no_identity && reduced_count == Dim(0) && element_count_dim(shape) != Dim(0)) {
    checker.fail(ErrorKind::Value, "zero-size array (shape " + shape_string(type.shape) +
                                       ") to a reduction which has no identity");
  }
  DType result = result_dtype(op, type.dtype);
  Attrs attrs;
  attrs.axes = std::move(reduced);
  attrs.keepdims = keepdims;
  if (op == Op::var) attrs.ddof = ddof;  // other reductions keep the default: one spelling
  return add(op, result, std::move(shape), {a}, std::move(attrs));
}

ValueId Builder::scan(Op op, ValueId a, int64_t axis) {
  Checker checker(op, graph_, location_);
  checker.expect_kind(OpKind::Scan, "scan");
  ValueType type = checker.operand(a);
  checker.expect_accepted(type.dtype, type.shape);
  Attrs attrs;
  attrs.axis = checker.axis(axis, type.shape);
  return add(op, type.dtype, type.shape, {a}, std::move(attrs));
}

}  // namespace kiln::ir
