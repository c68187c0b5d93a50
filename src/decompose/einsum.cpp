// einsum and NumPy's products (dot, inner, outer, tensordot) lowered to primitives. Every
// contraction of two operands becomes permute + reshape + one matmul, so the BLAS extern does
// the arithmetic; diagonals (a letter repeated in one operand) are an iota mask and a sum.
#include <algorithm>
#include <cctype>
#include <map>

#include "ir/graph.h"
#include "decompose/helpers.h"
#include "decompose/decompositions.h"

namespace kiln::decompose {

using ir::Op;
using namespace detail;

namespace {

[[noreturn]] void fail(const Builder& b, ErrorKind kind, const std::string& op,
                       const std::string& message) {
  throw Error(kind, error_message(op, b.location(), message));
}

// Operands of a product share NumPy's promoted dtype.
void promote_operands(Builder& b, std::vector<ValueId>& operands) {
  if (operands.empty()) return;
  DType common = b.node(operands[0]).dtype;
  for (ValueId operand : operands) common = promote_types(common, b.node(operand).dtype);
  for (ValueId& operand : operands) operand = cast_to(b, operand, common);
}

int64_t product_of(const std::vector<int64_t>& sizes) {
  int64_t product = 1;
  for (int64_t size : sizes) product *= size;
  return product;
}

// A value whose axis i carries the einsum letter letters[i].
struct Labeled {
  ValueId value;
  std::string letters;
};

bool contains(const std::string& text, char letter) {
  return text.find(letter) != std::string::npos;
}

std::vector<int64_t> sizes_of(const Builder& b, ValueId value) {
  return ir::to_ints(b.node(value).shape);
}

// A letter repeated within one operand selects its diagonal: mask the off-diagonal entries to 0
// and sum the repeated axis away.
Labeled take_diagonals(Builder& b, Labeled operand) {
  for (size_t first = 0; first < operand.letters.size(); ++first) {
    size_t repeat;
    while ((repeat = operand.letters.find(operand.letters[first], first + 1)) !=
           std::string::npos) {
      // Copies: building nodes below invalidates references into the graph.
      ir::Shape shape = b.node(operand.value).shape;
      DType dtype = b.node(operand.value).dtype;
      ValueId row = b.iota(DType::Int64, shape, static_cast<int64_t>(first));
      ValueId column = b.iota(DType::Int64, shape, static_cast<int64_t>(repeat));
      ValueId on_diagonal = b.binary(Op::eq, row, column);
      ValueId masked = b.where(on_diagonal, operand.value, constant(b, 0, dtype));
      operand.value = b.reduce(Op::sum, masked, {static_cast<int64_t>(repeat)}, false);
      operand.letters.erase(repeat, 1);
    }
  }
  return operand;
}

// Sums away the axes whose letters are not in `needed`.
Labeled sum_unneeded(Builder& b, Labeled operand, const std::string& needed) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t axis = 0; axis < operand.letters.size(); ++axis) {
    if (contains(needed, operand.letters[axis])) {
      kept += operand.letters[axis];
    } else {
      axes.push_back(static_cast<int64_t>(axis));
    }
  }
  if (axes.empty()) return operand;
  return {b.reduce(Op::sum, operand.value, axes, false), kept};
}

Labeled permute_to(Builder& b, const Labeled& operand, const std::string& order) {
  std::vector<int64_t> permutation;
  for (char letter : order) {
    permutation.push_back(static_cast<int64_t>(operand.letters.find(letter)));
  }
  return {b.permute(operand.value, permutation), order};
}

std::vector<int64_t> sizes_for(const std::string& letters, const std::map<char, int64_t>& sizes) {
  std::vector<int64_t> result;
  for (char letter : letters) result.push_back(sizes.at(letter));
  return result;
}

// Contracts two operands that have already lost every letter nobody needs; `keep` are the
// letters needed after this step (the output and the operands still to come).
Labeled contract(Builder& b, const Labeled& left, const Labeled& right, const std::string& keep,
                 const std::map<char, int64_t>& sizes) {
  std::string batch, contracted, left_free, right_free;
  for (char letter : left.letters) {
    if (!contains(right.letters, letter)) {
      left_free += letter;
    } else if (contains(keep, letter)) {
      batch += letter;
    } else {
      contracted += letter;
    }
  }
  for (char letter : right.letters) {
    if (!contains(left.letters, letter)) right_free += letter;
  }
  int64_t batch_size = product_of(sizes_for(batch, sizes));
  int64_t rows = product_of(sizes_for(left_free, sizes));
  int64_t inner = product_of(sizes_for(contracted, sizes));
  int64_t columns = product_of(sizes_for(right_free, sizes));
  ir::Shape left_shape = {rows, inner};
  ir::Shape right_shape = {inner, columns};
  if (!batch.empty()) {
    left_shape.insert(left_shape.begin(), batch_size);
    right_shape.insert(right_shape.begin(), batch_size);
  }
  ValueId left_matrix =
      b.reshape(permute_to(b, left, batch + left_free + contracted).value, left_shape);
  ValueId right_matrix =
      b.reshape(permute_to(b, right, batch + contracted + right_free).value, right_shape);
  ValueId product = b.matmul(left_matrix, right_matrix);
  std::string letters = batch + left_free + right_free;
  return {b.reshape(product, ir::from_ints(sizes_for(letters, sizes))), letters};
}

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

Equation parse_equation(const Builder& b, const std::string& text,
                        const std::vector<ValueId>& operands, std::map<char, int64_t>& sizes) {
  std::string equation;
  for (char c : text) {
    if (c != ' ') equation += c;
  }
  if (equation.find('.') != std::string::npos) {
    fail(b, ErrorKind::Unsupported, "einsum", "ellipsis ('...') is not supported");
  }
  Equation parsed;
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = inputs.find(',', start);
    parsed.inputs.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parsed.inputs.size() != operands.size()) {
    fail(b, ErrorKind::Value, "einsum",
         "the equation '" + text + "' names " + std::to_string(parsed.inputs.size()) +
             " operands but " + std::to_string(operands.size()) + " were given");
  }
  std::map<char, int> counts;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string& letters = parsed.inputs[i];
    std::vector<int64_t> shape = sizes_of(b, operands[i]);
    if (letters.size() != shape.size()) {
      fail(b, ErrorKind::Value, "einsum",
           "operand " + std::to_string(i) + " has " + std::to_string(shape.size()) +
               " dimensions but subscripts '" + letters + "'");
    }
    for (size_t axis = 0; axis < letters.size(); ++axis) {
      char letter = letters[axis];
      if (!std::isalpha(static_cast<unsigned char>(letter))) {
        fail(b, ErrorKind::Value, "einsum", std::string("invalid subscript '") + letter + "'");
      }
      ++counts[letter];
      auto [entry, inserted] = sizes.emplace(letter, shape[axis]);
      if (!inserted && entry->second != shape[axis]) {
        fail(b, ErrorKind::Value, "einsum",
             std::string("size of subscript '") + letter + "' is " + std::to_string(shape[axis]) +
                 " in operand " + std::to_string(i) + " but " + std::to_string(entry->second) +
                 " elsewhere");
      }
    }
  }
  if (arrow == std::string::npos) {
    // Implicit output: the letters that appear once, in alphabetical order.
    for (auto [letter, count] : counts) {
      if (count == 1) parsed.output += letter;
    }
    return parsed;
  }
  parsed.output = equation.substr(arrow + 2);
  for (size_t i = 0; i < parsed.output.size(); ++i) {
    char letter = parsed.output[i];
    if (!counts.contains(letter)) {
      fail(b, ErrorKind::Value, "einsum",
           std::string("output subscript '") + letter + "' does not appear in the inputs");
    }
    if (parsed.output.find(letter, i + 1) != std::string::npos) {
      fail(b, ErrorKind::Value, "einsum",
           std::string("output subscript '") + letter + "' appears more than once");
    }
  }
  return parsed;
}

std::string letters_after(const Equation& equation, size_t operand) {
  std::string letters = equation.output;
  for (size_t i = operand + 1; i < equation.inputs.size(); ++i) letters += equation.inputs[i];
  return letters;
}

}  // namespace

ValueId einsum(Builder& b, const std::string& equation_text, const std::vector<ValueId>& operands) {
  if (operands.empty()) fail(b, ErrorKind::Value, "einsum", "at least one operand is required");
  std::map<char, int64_t> sizes;
  Equation equation = parse_equation(b, equation_text, operands, sizes);
  std::vector<ValueId> promoted = operands;
  promote_operands(b, promoted);

  Labeled result;
  for (size_t i = 0; i < promoted.size(); ++i) {
    // Letters needed after this operand: the output's and those of operands still to come.
    std::string keep = letters_after(equation, i);
    Labeled operand = take_diagonals(b, {promoted[i], equation.inputs[i]});
    if (i == 0) {
      result = sum_unneeded(b, operand, keep);
      continue;
    }
    result = sum_unneeded(b, result, keep + operand.letters);
    operand = sum_unneeded(b, operand, keep + result.letters);
    result = contract(b, result, operand, keep, sizes);
  }
  result = sum_unneeded(b, result, equation.output);
  if (result.letters == equation.output) return result.value;
  return permute_to(b, result, equation.output).value;
}

ValueId tensordot(Builder& b, ValueId x, ValueId y, std::vector<int64_t> x_axes,
                  std::vector<int64_t> y_axes) {
  std::vector<ValueId> operands = {x, y};
  promote_operands(b, operands);
  x = operands[0];
  y = operands[1];
  std::vector<int64_t> x_sizes = sizes_of(b, x), y_sizes = sizes_of(b, y);
  if (x_axes.size() != y_axes.size()) {
    fail(b, ErrorKind::Value, "tensordot", "the two axis lists have different lengths");
  }
  // normalize_axes reads "no axes" as "all axes"; here no axes means an outer product.
  if (!x_axes.empty()) {
    x_axes = normalize_axes(b, x_axes, static_cast<int>(x_sizes.size()), "tensordot");
    y_axes = normalize_axes(b, y_axes, static_cast<int>(y_sizes.size()), "tensordot");
  }
  std::vector<int64_t> contracted_sizes;
  for (size_t i = 0; i < x_axes.size(); ++i) {
    int64_t size = x_sizes[static_cast<size_t>(x_axes[i])];
    if (size != y_sizes[static_cast<size_t>(y_axes[i])]) {
      fail(b, ErrorKind::Value, "tensordot",
           "shape-mismatch for sum: " + ir::shape_string(b.node(x).shape) + " and " +
               ir::shape_string(b.node(y).shape));
    }
    contracted_sizes.push_back(size);
  }
  auto free_axes = [](const std::vector<int64_t>& axes, size_t rank) {
    std::vector<int64_t> free;
    for (int64_t axis = 0; axis < static_cast<int64_t>(rank); ++axis) {
      if (std::find(axes.begin(), axes.end(), axis) == axes.end()) free.push_back(axis);
    }
    return free;
  };
  std::vector<int64_t> x_free = free_axes(x_axes, x_sizes.size());
  std::vector<int64_t> y_free = free_axes(y_axes, y_sizes.size());
  std::vector<int64_t> result_sizes;
  int64_t rows = 1, columns = 1, inner = product_of(contracted_sizes);
  for (int64_t axis : x_free) {
    rows *= x_sizes[static_cast<size_t>(axis)];
    result_sizes.push_back(x_sizes[static_cast<size_t>(axis)]);
  }
  for (int64_t axis : y_free) {
    columns *= y_sizes[static_cast<size_t>(axis)];
    result_sizes.push_back(y_sizes[static_cast<size_t>(axis)]);
  }
  std::vector<int64_t> x_order = x_free, y_order = y_axes;
  x_order.insert(x_order.end(), x_axes.begin(), x_axes.end());
  y_order.insert(y_order.end(), y_free.begin(), y_free.end());
  ValueId x_matrix = b.reshape(b.permute(x, x_order), {rows, inner});
  ValueId y_matrix = b.reshape(b.permute(y, y_order), {inner, columns});
  return b.reshape(b.matmul(x_matrix, y_matrix), ir::from_ints(result_sizes));
}

ValueId dot(Builder& b, ValueId x, ValueId y) {
  size_t x_rank = b.node(x).shape.size(), y_rank = b.node(y).shape.size();
  std::vector<ValueId> operands = {x, y};
  promote_operands(b, operands);
  if (x_rank == 0 || y_rank == 0) return b.binary(Op::mul, operands[0], operands[1]);
  if (x_rank == 2 && y_rank == 2) return b.matmul(operands[0], operands[1]);
  // The last axis of x against the only axis of a vector, else the second-to-last of y.
  int64_t y_axis = y_rank == 1 ? 0 : -2;
  return tensordot(b, operands[0], operands[1], {-1}, {y_axis});
}

ValueId inner(Builder& b, ValueId x, ValueId y) {
  std::vector<ValueId> operands = {x, y};
  promote_operands(b, operands);
  if (b.node(x).shape.empty() || b.node(y).shape.empty()) {
    return b.binary(Op::mul, operands[0], operands[1]);
  }
  return tensordot(b, operands[0], operands[1], {-1}, {-1});
}

ValueId outer(Builder& b, ValueId x, ValueId y) {
  std::vector<ValueId> operands = {x, y};
  promote_operands(b, operands);
  ValueId column = b.reshape(operands[0], {ir::element_count(b.node(x).shape), 1});
  ValueId row = b.reshape(operands[1], {1, ir::element_count(b.node(y).shape)});
  return b.binary(Op::mul, column, row);
}

}  // namespace kiln::decompose
