// Shapes. A dimension is a `Dim`: a constant, or a polynomial in size symbols with integer
// coefficients (`2*s0*s1 + 3`). A size symbol stands for a size not known until a call (a
// dynamic batch or sequence length); like torch's, it stands for sizes >= 2, so that
// broadcasting never depends on it (sizes 0 and 1 specialise). Symbols are numbered per graph
// (Graph::symbol_hints); region graphs share their parent's. Code that needs a number asks
// `dim.constant()`, which throws kiln::Error Unsupported naming the size for a symbolic one:
// an op whose shape rule needs numbers refuses symbols, and the front end specialises.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::ir {

// coefficient x the product of `symbols` (ids in increasing order, repeated for powers).
struct SizeTerm {
  int64_t coefficient = 0;
  std::vector<int32_t> symbols;
  bool operator==(const SizeTerm& other) const {
    return coefficient == other.coefficient && symbols == other.symbols;
  }
};

class Dim {
 public:
  Dim(int64_t value = 0) : constant_(value) {}  // implicit: shapes are written as {3, 4}
  static Dim symbol(int32_t id);
  bool is_constant() const { return terms_ == nullptr; }
  // The value of a constant dimension; throws kiln::Error Unsupported for a symbolic one.
  int64_t constant() const;
  // The constant term and the symbolic terms (sorted by their symbols, none of them zero).
  int64_t constant_term() const { return constant_; }
  const std::vector<SizeTerm>& terms() const;
  bool operator==(const Dim& other) const;
  bool operator!=(const Dim& other) const { return !(*this == other); }
  // "3", "s0", "2*s0*s1 + 3", "s0 - 1".
  std::string to_string() const;

  Dim operator+(const Dim& other) const;
  Dim operator-(const Dim& other) const;
  Dim operator*(const Dim& other) const;
  // The exact quotient (a polynomial) when `divisor` divides this one; else nullopt.
  std::optional<Dim> divided_by(const Dim& divisor) const;
  // The value with symbol k equal to values[k]; throws kiln::Error Value on overflow or on a
  // symbol without a value.
  int64_t evaluate(const std::vector<int64_t>& values) const;
  // The number of symbols needed to evaluate it: 1 + its largest symbol id, 0 for a constant.
  int32_t symbol_bound() const;

 private:
  Dim(int64_t constant, std::vector<SizeTerm> terms);
  int64_t constant_ = 0;
  std::shared_ptr<const std::vector<SizeTerm>> terms_;  // null: a constant
};

using Shape = std::vector<Dim>;

int64_t element_count(const Shape& shape);
// The product of the dimensions, symbolic or not.
Dim element_count_dim(const Shape& shape);
bool is_static(const Shape& shape);
// The shape with symbol k equal to values[k] (Dim::evaluate).
std::vector<int64_t> evaluate(const Shape& shape, const std::vector<int64_t>& values);
// The bytes of a value of `shape` and `dtype`, or nullopt when the element count or the byte
// size overflows int64 (symbolic dimensions count as 1).
std::optional<int64_t> checked_byte_size(const Shape& shape, DType dtype);
std::vector<int64_t> to_ints(const Shape& shape);
Shape from_ints(const std::vector<int64_t>& sizes);
// "(3, 4)" -- NumPy's spelling, used in error messages and the printer.
std::string shape_string(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// The shape without its dimensions of constant extent 1: (1, 64, 1, 1) -> (64,). Two shapes
// equal this way index the same elements in the same order.
Shape without_unit_dims(const Shape& shape);
// The shape without its dimensions of constant extent 0: NumPy's size check multiplies the
// other extents of an empty array (np.empty((0, 2**62)) is too big).
Shape without_empty_dims(const Shape& shape);
// NumPy broadcasting of two shapes; returns false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& result);
// Normalises a possibly negative axis against `rank`; throws an Axis error naming `op`.
int normalize_axis(int64_t axis, int rank, const std::string& op);

}  // namespace kiln::ir
