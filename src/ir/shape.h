// Shapes. A dimension is a `Dim`: a constant today; a size symbol later. Code that needs a
// number asks `dim.constant()` (which throws for a symbol) so symbolic shapes can be added
// without rewriting the IR: only the places that really need a constant will notice.
#pragma once
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::ir {

class Dim {
 public:
  Dim(int64_t value = 0) : value_(value) {}  // implicit: shapes are written as {3, 4}
  bool is_constant() const { return true; }
  int64_t constant() const { return value_; }
  bool operator==(const Dim& other) const { return value_ == other.value_; }
  bool operator!=(const Dim& other) const { return !(*this == other); }
  std::string to_string() const { return std::to_string(value_); }

 private:
  int64_t value_;
};

using Shape = std::vector<Dim>;

int64_t element_count(const Shape& shape);
// The bytes of a value of `shape` and `dtype`, or nullopt when the element count or the byte
// size overflows int64 (symbolic dimensions count as 1).
std::optional<int64_t> checked_byte_size(const Shape& shape, DType dtype);
std::vector<int64_t> to_ints(const Shape& shape);
Shape from_ints(const std::vector<int64_t>& sizes);
// "(3, 4)" -- NumPy's spelling, used in error messages and the printer.
std::string shape_string(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; returns false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& result);
// Normalises a possibly negative axis against `rank`; throws an Axis error naming `op`.
int normalize_axis(int64_t axis, int rank, const std::string& op);

}  // namespace kiln::ir
