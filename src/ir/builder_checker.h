// The checks every Builder factory shares (operand lookup, dtype classes, axes), each reporting
// a kiln::Error that names the op, the user's location and the offending shapes or dtypes.
// Internal to the builder's .cpp files.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
// The host C++ compiler builds this: the C++ prelude supplies the semantics' primitives.
#include "codegen/cpp/cpp_prelude.h"
#include "ir/scalar_math.h"
#include "kiln/error.h"

namespace kiln::ir::builder_detail {

// The dtype and shape of an operand, copied: appending nodes invalidates references into the
// graph's node vector, and the factories append broadcasts and reshapes as they go.
struct ValueType {
  DType dtype;
  Shape shape;
  int rank() const { return static_cast<int>(shape.size()); }
};

inline std::string list_string(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

inline std::string accepts_string(uint8_t accepts) {
  switch (accepts) {
    case Accepts::Float: return "floating-point";
    case Accepts::Integer: return "integer";
    case Accepts::IntegerOrBool: return "integer or bool";
    case Accepts::Numeric: return "numeric (non-bool)";
    case Accepts::NumericOrComplex: return "numeric (non-bool) or complex";
    case Accepts::FloatOrComplex: return "floating-point or complex";
    case Accepts::Any: return "bool, integer or floating-point";
    default: return "any";
  }
}

// What one factory call needs to report errors: the op and the user's location.
class Checker {
 public:
  Checker(Op op, const Graph& graph, const std::string& location)
      : op_(op), graph_(graph), location_(location) {}

  [[noreturn]] void fail(ErrorKind kind, const std::string& message) const {
    throw Error(kind, error_message(std::string(op_name(op_)), location_, message));
  }

  void expect_kind(OpKind kind, const char* factory) const {
    if (op_info(op_).kind != kind) {
      fail(ErrorKind::Value, "is not an op that Builder::" + std::string(factory) + " builds");
    }
  }

  ValueType operand(ValueId id) const {
    if (id < 0 || id >= graph_.size()) {
      fail(ErrorKind::Value, "operand %" + std::to_string(id) + " is not a value of this graph");
    }
    const Node& node = graph_.node(id);
    return {node.dtype, node.shape};
  }

  void expect_accepted(DType dtype, const Shape& shape) const {
    if ((op_info(op_).accepts & static_cast<uint8_t>(dtype_class(dtype))) == 0) {
      // NumPy defines most ops on complex numbers; kiln lowers only some (op_list.h): the
      // frontends run the rest eagerly.
      fail(is_complex(dtype) ? ErrorKind::Unsupported : ErrorKind::Type, "unsupported dtype " + std::string(dtype_name(dtype)) + " (shape " +
                                shape_string(shape) + "); " + std::string(op_name(op_)) +
                                " accepts " + accepts_string(op_info(op_).accepts) + " dtypes");
    }
  }

  void expect_same_dtype(const ValueType& a, const ValueType& b) const {
    if (a.dtype != b.dtype) {
      fail(ErrorKind::Type, "operands have different dtypes " + std::string(dtype_name(a.dtype)) +
                                " and " + std::string(dtype_name(b.dtype)) + " (shapes " +
                                shape_string(a.shape) + " " + shape_string(b.shape) +
                                "); cast one of them first");
    }
  }

  // Ops whose shape rule needs numbers (convolution geometry) refuse size symbols.
  void expect_static(const Shape& shape) const {
    if (!is_static(shape)) {
      fail(ErrorKind::Unsupported, "needs fixed sizes, got shape " + shape_string(shape) +
                                       " with size symbols");
    }
  }

  void expect_valid_shape(const Shape& shape) const {
    for (const Dim& dim : shape) {
      if (dim.is_constant() && dim.constant() < 0) {
        fail(ErrorKind::Value, "negative dimensions are not allowed: " + shape_string(shape));
      }
    }
  }

  int axis(int64_t axis, const Shape& shape) const {
    int rank = static_cast<int>(shape.size());
    if (axis < -static_cast<int64_t>(rank) || axis >= rank) {
      fail(ErrorKind::Axis, "axis " + std::to_string(axis) + " is out of bounds for array of " +
                                "dimension " + std::to_string(rank) + " (shape " +
                                shape_string(shape) + ")");
    }
    return static_cast<int>(axis < 0 ? axis + rank : axis);
  }

  // Normalised, sorted axes; duplicates are an error (as in NumPy reductions) or merged.
  std::vector<int64_t> axes(const std::vector<int64_t>& axes, const Shape& shape,
                            bool duplicates_allowed) const {
    std::vector<int64_t> result;
    for (int64_t axis_value : axes) result.push_back(axis(axis_value, shape));
    std::sort(result.begin(), result.end());
    auto duplicate = std::adjacent_find(result.begin(), result.end());
    if (duplicate != result.end() && !duplicates_allowed) {
      fail(ErrorKind::Value, "duplicate value in axes " + list_string(axes));
    }
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
  }

 private:
  Op op_;
  const Graph& graph_;
  const std::string& location_;
};

// Stores a scalar in the representation of its dtype's class (integers exact, floats as
// double), so that equal constants have equal attributes and print equally.
// A float stored into an integer dtype converts as NumPy's array casts do on x86-64
// (kiln_float_to_int: 300.7 -> int8 44, NaN and out of range -> the "integer indefinite").
inline Scalar float_to_integer_scalar(double value, DType dtype) {
  switch (dtype) {
    case DType::Int8: return Scalar::of_int(kiln_float_to_int<int8_t>(value));
    case DType::Int16: return Scalar::of_int(kiln_float_to_int<int16_t>(value));
    case DType::Int32: return Scalar::of_int(kiln_float_to_int<int32_t>(value));
    case DType::UInt8: return Scalar::of_int(kiln_float_to_int<uint8_t>(value));
    case DType::UInt16: return Scalar::of_int(kiln_float_to_int<uint16_t>(value));
    case DType::UInt32: return Scalar::of_int(kiln_float_to_int<uint32_t>(value));
    case DType::UInt64:  // the bits, in the int64 field
      return Scalar::of_int(static_cast<int64_t>(kiln_float_to_int<uint64_t>(value)));
    default: return Scalar::of_int(kiln_float_to_int<int64_t>(value));
  }
}

inline Scalar canonical_scalar(Scalar value, DType dtype) {
  if (dtype == DType::Bool) return Scalar::of_int(value.as_double() != 0 ? 1 : 0);
  if (is_integer(dtype) && !value.is_integer) return float_to_integer_scalar(value.f, dtype);
  if (is_float(dtype) && value.is_integer) return Scalar::of(static_cast<double>(value.i));
  return value;
}

inline std::vector<int64_t> all_axes(int rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) axes[static_cast<size_t>(i)] = i;
  return axes;
}

}  // namespace kiln::ir::builder_detail
