// Shape helpers shared by the builder, the verifier, the printer and the interpreter.
#include "ir/shape.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::ir {
namespace {

void check_overflow(bool overflowed) {
  if (overflowed) throw Error(ErrorKind::Value, "a size expression overflows int64");
}
int64_t add_checked(int64_t a, int64_t b) {
  int64_t sum = 0;
  check_overflow(__builtin_add_overflow(a, b, &sum));
  return sum;
}
int64_t multiply_checked(int64_t a, int64_t b) {
  int64_t product = 0;
  check_overflow(__builtin_mul_overflow(a, b, &product));
  return product;
}

const std::vector<SizeTerm>& no_terms() {
  static const std::vector<SizeTerm>& empty = *new std::vector<SizeTerm>();
  return empty;
}

// Whether `part` is a sub-multiset of `whole` (both sorted); `rest` gets whole minus part.
bool remove_symbols(const std::vector<int32_t>& whole, const std::vector<int32_t>& part,
                    std::vector<int32_t>& rest) {
  rest.clear();
  size_t j = 0;
  for (int32_t symbol : whole) {
    if (j < part.size() && part[j] == symbol) {
      ++j;
    } else {
      rest.push_back(symbol);
    }
  }
  return j == part.size();
}

}  // namespace

Dim::Dim(int64_t constant, std::vector<SizeTerm> terms) : constant_(constant) {
  std::sort(terms.begin(), terms.end(),
            [](const SizeTerm& a, const SizeTerm& b) { return a.symbols < b.symbols; });
  std::vector<SizeTerm> merged;
  for (SizeTerm& term : terms) {
    if (!merged.empty() && merged.back().symbols == term.symbols) {
      merged.back().coefficient = add_checked(merged.back().coefficient, term.coefficient);
    } else {
      merged.push_back(std::move(term));
    }
  }
  std::erase_if(merged, [](const SizeTerm& term) { return term.coefficient == 0; });
  if (!merged.empty()) terms_ = std::make_shared<const std::vector<SizeTerm>>(std::move(merged));
}

Dim Dim::symbol(int32_t id) { return Dim(0, {SizeTerm{1, {id}}}); }

int64_t Dim::constant() const {
  if (!is_constant()) {
    throw Error(ErrorKind::Unsupported,
                "the size " + to_string() + " is symbolic where kiln needs a number");
  }
  return constant_;
}

const std::vector<SizeTerm>& Dim::terms() const { return terms_ ? *terms_ : no_terms(); }

bool Dim::operator==(const Dim& other) const {
  return constant_ == other.constant_ &&
         (terms_ == other.terms_ || (terms_ && other.terms_ && *terms_ == *other.terms_));
}

std::string Dim::to_string() const {
  if (is_constant()) return std::to_string(constant_);
  std::string text;
  for (const SizeTerm& term : terms()) {
    int64_t magnitude = term.coefficient < 0 ? -term.coefficient : term.coefficient;
    if (!text.empty()) text += term.coefficient < 0 ? " - " : " + ";
    if (text.empty() && term.coefficient < 0) text += "-";
    if (magnitude != 1) text += std::to_string(magnitude) + "*";
    for (size_t i = 0; i < term.symbols.size(); ++i) {
      text += (i > 0 ? "*s" : "s") + std::to_string(term.symbols[i]);
    }
  }
  if (constant_ > 0) text += " + " + std::to_string(constant_);
  if (constant_ < 0) text += " - " + std::to_string(-constant_);
  return text;
}

Dim Dim::operator+(const Dim& other) const {
  if (is_constant() && other.is_constant()) return Dim(add_checked(constant_, other.constant_));
  std::vector<SizeTerm> terms = this->terms();
  terms.insert(terms.end(), other.terms().begin(), other.terms().end());
  return Dim(add_checked(constant_, other.constant_), std::move(terms));
}

Dim Dim::operator-(const Dim& other) const { return *this + other * Dim(-1); }

Dim Dim::operator*(const Dim& other) const {
  if (is_constant() && other.is_constant()) {
    return Dim(multiply_checked(constant_, other.constant_));
  }
  // (a + A)(b + B) = ab + aB + bA + AB, A and B the symbolic terms.
  std::vector<SizeTerm> terms;
  for (const SizeTerm& term : other.terms()) {
    terms.push_back({multiply_checked(constant_, term.coefficient), term.symbols});
  }
  for (const SizeTerm& term : this->terms()) {
    terms.push_back({multiply_checked(other.constant_, term.coefficient), term.symbols});
    for (const SizeTerm& right : other.terms()) {
      SizeTerm product{multiply_checked(term.coefficient, right.coefficient), term.symbols};
      product.symbols.insert(product.symbols.end(), right.symbols.begin(), right.symbols.end());
      std::sort(product.symbols.begin(), product.symbols.end());
      terms.push_back(std::move(product));
    }
  }
  return Dim(multiply_checked(constant_, other.constant_), std::move(terms));
}

std::optional<Dim> Dim::divided_by(const Dim& divisor) const {
  if (divisor.is_constant()) {
    int64_t d = divisor.constant_;
    if (d == 0 || constant_ % d != 0) return std::nullopt;
    std::vector<SizeTerm> terms = this->terms();
    for (SizeTerm& term : terms) {
      if (term.coefficient % d != 0) return std::nullopt;
      term.coefficient /= d;
    }
    return Dim(constant_ / d, std::move(terms));
  }
  // Long division by the divisor's leading term (more symbols first, then the larger ids):
  // for one divisor the remainder is zero exactly when it divides this polynomial.
  // 4*s0 + 4 divided by 2*s0 + 2 is 2; s0*s1 + s1 by s0 + 1 is s1.
  auto as_terms = [](const Dim& dim) {
    std::vector<SizeTerm> terms = dim.terms();
    if (dim.constant_ != 0) terms.push_back(SizeTerm{dim.constant_, {}});
    return terms;
  };
  auto leading = [&](const Dim& dim) {
    std::vector<SizeTerm> terms = as_terms(dim);
    return *std::max_element(terms.begin(), terms.end(), [](const SizeTerm& a, const SizeTerm& b) {
      return a.symbols.size() != b.symbols.size() ? a.symbols.size() < b.symbols.size()
                                                  : a.symbols < b.symbols;
    });
  };
  auto term_dim = [](const SizeTerm& term) {
    Dim dim(term.coefficient);
    for (int32_t symbol : term.symbols) dim = dim * Dim::symbol(symbol);
    return dim;
  };
  const SizeTerm by = leading(divisor);
  Dim remainder = *this, quotient = 0;
  for (int steps = 0; remainder != Dim(0); ++steps) {
    if (steps == 256) return std::nullopt;  // a quotient of more terms than any shape has
    const SizeTerm first = leading(remainder);
    SizeTerm step;
    if (first.coefficient % by.coefficient != 0 ||
        !remove_symbols(first.symbols, by.symbols, step.symbols)) {
      return std::nullopt;
    }
    step.coefficient = first.coefficient / by.coefficient;
    quotient = quotient + term_dim(step);
    remainder = remainder - term_dim(step) * divisor;
  }
  return quotient;
}

int64_t Dim::evaluate(const std::vector<int64_t>& values) const {
  int64_t value = constant_;
  for (const SizeTerm& term : terms()) {
    int64_t product = term.coefficient;
    for (int32_t symbol : term.symbols) {
      if (symbol < 0 || static_cast<size_t>(symbol) >= values.size()) {
        throw Error(ErrorKind::Value, "the size " + to_string() + " needs a value for s" +
                                          std::to_string(symbol));
      }
      product = multiply_checked(product, values[static_cast<size_t>(symbol)]);
    }
    value = add_checked(value, product);
  }
  return value;
}

int32_t Dim::symbol_bound() const {
  int32_t bound = 0;
  for (const SizeTerm& term : terms()) {
    for (int32_t symbol : term.symbols) bound = std::max(bound, symbol + 1);
  }
  return bound;
}

Dim element_count_dim(const Shape& shape) {
  Dim count(1);
  for (const Dim& dim : shape) count = count * dim;
  return count;
}

bool is_static(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim& dim) { return dim.is_constant(); });
}

std::vector<int64_t> evaluate(const Shape& shape, const std::vector<int64_t>& values) {
  std::vector<int64_t> sizes;
  sizes.reserve(shape.size());
  for (const Dim& dim : shape) sizes.push_back(dim.evaluate(values));
  return sizes;
}

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

static Shape without_dims_of_extent(const Shape& shape, int64_t extent) {
  Shape result;
  for (const Dim& d : shape)
    if (!d.is_constant() || d.constant() != extent) result.push_back(d);
  return result;
}

Shape without_unit_dims(const Shape& shape) { return without_dims_of_extent(shape, 1); }

Shape without_empty_dims(const Shape& shape) { return without_dims_of_extent(shape, 0); }

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
