// Shape helpers shared by the builder, the verifier, the printer and the interpreter.
#include "ir/shape.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::ir {

int64_t element_count(const Shape& shape) {
  int64_t count = 1;
  for (const Dim& dim : shape) count *= dim.constant();
  return count;
}

std::optional<int64_t> checked_byte_size(const Shape& shape, DType dtype) {
  int64_t bytes = dtype_size(dtype);
  for (const Dim& dim : shape) {
    int64_t extent = dim.is_constant() ? dim.constant() : 1;
    if (extent < 0 || __builtin_mul_overflow(bytes, extent, &bytes)) return std::nullopt;
  }
  return bytes;
}

std::vector<int64_t> to_ints(const Shape& shape) {
  std::vector<int64_t> sizes;
  sizes.reserve(shape.size());
  for (const Dim& dim : shape) sizes.push_back(dim.constant());
  return sizes;
}

Shape from_ints(const std::vector<int64_t>& sizes) { return Shape(sizes.begin(), sizes.end()); }

std::string shape_string(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += shape[i].to_string();
  }
  // NumPy writes a 1-tuple with a trailing comma: (5,)
  if (shape.size() == 1) text += ",";
  return text + ")";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i].constant();
  }
  return strides;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& result) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right: missing leading dimensions act as 1.
    Dim dim_a = i < rank - a.size() ? Dim(1) : a[i - (rank - a.size())];
    Dim dim_b = i < rank - b.size() ? Dim(1) : b[i - (rank - b.size())];
    if (dim_a == dim_b || dim_b == Dim(1)) {
      out[i] = dim_a;
    } else if (dim_a == Dim(1)) {
      out[i] = dim_b;
    } else {
      return false;
    }
  }
  result = std::move(out);
  return true;
}

int normalize_axis(int64_t axis, int rank, const std::string& op) {
  if (axis < -static_cast<int64_t>(rank) || axis >= rank) {
    throw Error(ErrorKind::Axis,
                error_message(op, "", "axis " + std::to_string(axis) +
                                          " is out of bounds for array of dimension " +
                                          std::to_string(rank)));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace kiln::ir
