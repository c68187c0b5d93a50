// Checked factories for data movement (reshape, permute, broadcast, slice, pad, concat, flip,
// gather, scatter), matmul, convolution, and the raw node copy used by passes. Same contract as builder.cpp:
// every failure is a kiln::Error naming the op, the user's location and the shapes involved.
#include <algorithm>
#include <limits>

#include "ir/builder.h"
#include "ir/builder_checker.h"
#include "ir/convolution_shape.h"

namespace kiln::ir {
namespace {

using builder_detail::all_axes;
using builder_detail::canonical_scalar;
using builder_detail::Checker;
using builder_detail::list_string;
using builder_detail::ValueType;

// The smallest value a dimension can take (symbols stand for sizes >= 2); 0 when a negative
// coefficient leaves it unknown.
int64_t smallest_size(const Dim& dim) {
  for (const SizeTerm& term : dim.terms())
    if (term.coefficient < 0) return 0;
  return dim.evaluate(std::vector<int64_t>(static_cast<size_t>(dim.symbol_bound()), 2));
}

// Python's slice.indices(): the first index and the element count of start:stop:step over a
// dimension of `size` elements.
void python_slice(int64_t start, int64_t stop, int64_t step, int64_t size, int64_t& first,
                  int64_t& count) {
  auto clamp = [&](int64_t bound) {
    if (bound < 0) {
      bound = bound < -size ? -1 : bound + size;  // compared first: bound + size cannot overflow
      if (bound < 0) bound = step < 0 ? -1 : 0;
    } else if (bound >= size) {
      bound = step < 0 ? size - 1 : size;
    }
    return bound;
  };
  start = clamp(start);
  stop = clamp(stop);
  if (step > 0) {
    count = stop > start ? (stop - start - 1) / step + 1 : 0;
  } else {
    // step > INT64_MIN was checked; -step cannot overflow.
    count = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
  }
  first = start;
}

}  // namespace

ValueId Builder::reshape(ValueId a, const Shape& shape) {
  Checker checker(Op::reshape, graph_, location_);
  ValueType type = checker.operand(a);
  Dim size = element_count_dim(type.shape);
  int unknown = -1;
  Dim known_count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    // A symbolic target dimension is a size, never -1.
    int64_t dim = shape[d].is_constant() ? shape[d].constant() : 0;
    if (dim == -1 && unknown >= 0) {
      checker.fail(ErrorKind::Value, "can only specify one unknown dimension, got shape " +
                                         shape_string(shape));
    }
    if (dim < -1) {
      checker.fail(ErrorKind::Value, "negative dimensions are not allowed: " +
                                         shape_string(shape));
    }
    if (dim == -1) unknown = static_cast<int>(d);
    if (dim != -1) known_count = known_count * shape[d];
  }
  Shape result = shape;
  // With a zero-size known part, -1 could be anything: NumPy refuses it too. With size symbols
  // the counts must agree as polynomials (sizes that agree only for some values of the symbols
  // are refused: the front end specialises them).
  std::optional<Dim> inferred;
  if (unknown >= 0 && known_count != Dim(0)) inferred = size.divided_by(known_count);
  bool fits = unknown < 0 ? known_count == size : inferred.has_value();
  if (!fits) {
    checker.fail(ErrorKind::Value, "cannot reshape array of size " + size.to_string() +
                                       " (shape " + shape_string(type.shape) + ") into shape " +
                                       shape_string(shape));
  }
  if (unknown >= 0) result[static_cast<size_t>(unknown)] = *inferred;
  return add(Op::reshape, type.dtype, std::move(result), {a});
}

ValueId Builder::permute(ValueId a, std::vector<int64_t> permutation) {
  Checker checker(Op::permute, graph_, location_);
  ValueType type = checker.operand(a);
  if (static_cast<int>(permutation.size()) != type.rank()) {
    checker.fail(ErrorKind::Value, "axes " + list_string(permutation) +
                                       " don't match array of shape " + shape_string(type.shape));
  }
  std::vector<bool> seen(permutation.size(), false);
  Shape shape;
  for (int64_t& axis : permutation) {
    axis = checker.axis(axis, type.shape);
    if (seen[static_cast<size_t>(axis)]) {
      checker.fail(ErrorKind::Value, "repeated axis in permutation " + list_string(permutation) +
                                         " of shape " + shape_string(type.shape));
    }
    seen[static_cast<size_t>(axis)] = true;
    shape.push_back(type.shape[static_cast<size_t>(axis)]);
  }
  Attrs attrs;
  attrs.permutation = std::move(permutation);
  return add(Op::permute, type.dtype, std::move(shape), {a}, std::move(attrs));
}

ValueId Builder::broadcast(ValueId a, const Shape& shape) {
  Checker checker(Op::broadcast, graph_, location_);
  ValueType type = checker.operand(a);
  checker.expect_valid_shape(shape);
  bool fits = shape.size() >= type.shape.size();
  size_t offset = fits ? shape.size() - type.shape.size() : 0;
  for (size_t d = 0; fits && d < type.shape.size(); ++d) {
    fits = type.shape[d] == shape[offset + d] || type.shape[d] == Dim(1);
  }
  if (!fits) {
    checker.fail(ErrorKind::Value, "cannot broadcast an array of shape " +
                                       shape_string(type.shape) + " to shape " +
                                       shape_string(shape));
  }
  return add(Op::broadcast, type.dtype, shape, {a});
}

ValueId Builder::slice(ValueId a, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& stops, const std::vector<int64_t>& steps) {
  return slice_to(a, starts, from_ints(stops), steps);
}

ValueId Builder::slice_to(ValueId a, const std::vector<int64_t>& starts, const Shape& stops,
                       const std::vector<int64_t>& steps) {
  Checker checker(Op::slice, graph_, location_);
  ValueType type = checker.operand(a);
  size_t rank = type.shape.size();
  if (starts.size() != rank || stops.size() != rank || steps.size() != rank) {
    checker.fail(ErrorKind::Value, "needs one start, stop and step per dimension of shape " +
                                       shape_string(type.shape) + ", got " +
                                       std::to_string(starts.size()) + ", " +
                                       std::to_string(stops.size()) + " and " +
                                       std::to_string(steps.size()));
  }
  Attrs attrs;
  Shape shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t step = steps[d];
    if (step == 0) checker.fail(ErrorKind::Value, "slice step cannot be zero");
    // Any step this large selects at most one element; keeping -step representable.
    if (step == std::numeric_limits<int64_t>::min()) step = -std::numeric_limits<int64_t>::max();
    int64_t first = 0;
    int64_t count = 0;
    if (!type.shape[d].is_constant() || !stops[d].is_constant()) {
      // Size symbols: `start:` of a symbolic axis, or `start:stop` with a symbolic stop the axis
      // holds (torch guards it), start >= 0 and step 1. A size that comes out negative or past
      // the axis fails when the symbols get their values (ir::specialize).
      bool to_end = stops[d].is_constant() &&
                    stops[d].constant() >= std::numeric_limits<int64_t>::max() / 2;
      // A fixed stop within every size the axis can have (x[:, 0] of an axis of s0 >= 2).
      bool within = stops[d].is_constant() && !to_end && stops[d].constant() >= starts[d] &&
                    stops[d].constant() <= smallest_size(type.shape[d]);
      if (step != 1 || starts[d] < 0 || (stops[d].is_constant() && !to_end && !within)) {
        checker.fail(ErrorKind::Unsupported,
                     "slices axis " + std::to_string(d) + " of shape " +
                         shape_string(type.shape) + " from " + std::to_string(starts[d]) +
                         " to " + stops[d].to_string() +
                         ": with size symbols, only start: and start:stop (step 1, a symbolic "
                         "stop) are kept symbolic");
      }
      attrs.starts.push_back(starts[d]);
      attrs.steps.push_back(1);
      shape.push_back((to_end ? type.shape[d] : stops[d]) - starts[d]);
      continue;
    }
    python_slice(starts[d], stops[d].constant(), step, type.shape[d].constant(), first, count);
    // One spelling per selection, so equal slices compare and print equal.
    if (count <= 1) step = 1;
    if (count == 0) first = 0;
    attrs.starts.push_back(first);
    attrs.steps.push_back(step);
    shape.push_back(count);
  }
  return add(Op::slice, type.dtype, std::move(shape), {a}, std::move(attrs));
}

ValueId Builder::pad(ValueId a, std::vector<int64_t> low, std::vector<int64_t> high,
                     PadMode mode, Scalar fill) {
  Checker checker(Op::pad, graph_, location_);
  ValueType type = checker.operand(a);
  if (low.size() != type.shape.size() || high.size() != type.shape.size()) {
    checker.fail(ErrorKind::Value, "needs a low and a high width per dimension of shape " +
                                       shape_string(type.shape) + ", got " + list_string(low) +
                                       " and " + list_string(high));
  }
  Shape shape;
  for (size_t d = 0; d < type.shape.size(); ++d) {
    int64_t widest = std::max(low[d], high[d]);
    if (!type.shape[d].is_constant()) {
      // A size symbol is >= 2: edge padding always has an element, reflect one of width 1.
      if (mode == PadMode::Reflect && widest > 1) {
        checker.fail(ErrorKind::Unsupported,
                     "reflect padding of width " + std::to_string(widest) + " needs a fixed size "
                     "on axis " + std::to_string(d) + " of shape " + shape_string(type.shape));
      }
      shape.push_back(type.shape[d] + low[d] + high[d]);
      continue;
    }
    int64_t size = type.shape[d].constant();
    if (std::min(low[d], high[d]) < 0) {
      checker.fail(ErrorKind::Value, "pad widths " + list_string(low) + " " + list_string(high) +
                                         " contain negative values (shape " +
                                         shape_string(type.shape) + ")");
    }
    if (mode == PadMode::Edge && size == 0 && widest > 0) {
      checker.fail(ErrorKind::Value, "can't extend the empty axis " + std::to_string(d) +
                                         " of shape " + shape_string(type.shape) +
                                         " with edge padding");
    }
    if (mode == PadMode::Reflect && widest > 0 && size <= widest) {
      checker.fail(ErrorKind::Value, "reflect padding of width " + std::to_string(widest) +
                                         " needs axis " + std::to_string(d) +
                                         " to be longer than the width; shape " +
                                         shape_string(type.shape));
    }
    shape.push_back(size + low[d] + high[d]);
  }
  Attrs attrs;
  attrs.pad_low = std::move(low);
  attrs.pad_high = std::move(high);
  attrs.pad_mode = mode;
  // The fill value means nothing for edge and reflect: leave it at the default.
  if (mode == PadMode::Constant) attrs.scalar = canonical_scalar(fill, type.dtype);
  return add(Op::pad, type.dtype, std::move(shape), {a}, std::move(attrs));
}

ValueId Builder::concat(const std::vector<ValueId>& values, int64_t axis) {
  Checker checker(Op::concat, graph_, location_);
  if (values.empty()) checker.fail(ErrorKind::Value, "need at least one array to concatenate");
  ValueType first = checker.operand(values[0]);
  if (first.rank() == 0) {
    checker.fail(ErrorKind::Value, "zero-dimensional arrays cannot be concatenated");
  }
  int concat_axis = checker.axis(axis, first.shape);
  Shape shape = first.shape;
  for (size_t i = 1; i < values.size(); ++i) {
    ValueType type = checker.operand(values[i]);
    checker.expect_same_dtype(first, type);
    bool fits = type.rank() == first.rank();
    for (size_t d = 0; fits && d < first.shape.size(); ++d) {
      fits = static_cast<int>(d) == concat_axis || type.shape[d] == first.shape[d];
    }
    if (!fits) {
      checker.fail(ErrorKind::Value, "all input array dimensions except for the concatenation "
                                     "axis " + std::to_string(concat_axis) + " must match, got " +
                                         shape_string(first.shape) + " and " +
                                         shape_string(type.shape));
    }
    shape[static_cast<size_t>(concat_axis)] =
        shape[static_cast<size_t>(concat_axis)] + type.shape[static_cast<size_t>(concat_axis)];
  }
  Attrs attrs;
  attrs.axis = concat_axis;
  return add(Op::concat, first.dtype, std::move(shape), values, std::move(attrs));
}

ValueId Builder::flip(ValueId a, std::vector<int64_t> axes) {
  Checker checker(Op::flip, graph_, location_);
  ValueType type = checker.operand(a);
  Attrs attrs;
  // As np.flip: no axes flips them all, and naming an axis twice flips it once.
  attrs.axes = axes.empty() ? all_axes(type.rank()) : checker.axes(axes, type.shape, true);
  return add(Op::flip, type.dtype, type.shape, {a}, std::move(attrs));
}

ValueId Builder::gather(ValueId a, ValueId index, int64_t axis) {
  Checker checker(Op::gather, graph_, location_);
  ValueType type = checker.operand(a);
  ValueType index_type = checker.operand(index);
  if (!is_integer(index_type.dtype)) {
    checker.fail(ErrorKind::Type, "indices must be integers, got " +
                                      std::string(dtype_name(index_type.dtype)) + " (shape " +
                                      shape_string(index_type.shape) + ")");
  }
  size_t gather_axis = static_cast<size_t>(checker.axis(axis, type.shape));
  if (type.shape[gather_axis] == Dim(0) && element_count_dim(index_type.shape) != Dim(0)) {
    // Every index is out of bounds there: NumPy's (and torch's) IndexError.
    checker.fail(ErrorKind::Index, "cannot take indices of shape " +
                                       shape_string(index_type.shape) + " from the empty axis " +
                                       std::to_string(gather_axis) + " of shape " +
                                       shape_string(type.shape) + ": index out of bounds for axis " +
                                       std::to_string(gather_axis) + " with size 0");
  }
  Shape shape(type.shape.begin(), type.shape.begin() + static_cast<ptrdiff_t>(gather_axis));
  shape.insert(shape.end(), index_type.shape.begin(), index_type.shape.end());
  shape.insert(shape.end(), type.shape.begin() + static_cast<ptrdiff_t>(gather_axis) + 1,
               type.shape.end());
  Attrs attrs;
  attrs.axis = static_cast<int64_t>(gather_axis);
  return add(Op::gather, type.dtype, std::move(shape), {a, index}, std::move(attrs));
}

ValueId Builder::scatter(ValueId a, ValueId index, ValueId values, int64_t axis,
                         ScatterMode mode) {
  Checker checker(Op::scatter, graph_, location_);
  ValueType type = checker.operand(a);
  ValueType index_type = checker.operand(index);
  ValueType values_type = checker.operand(values);
  if (!is_integer(index_type.dtype)) {
    checker.fail(ErrorKind::Type, "indices must be integers, got " +
                                      std::string(dtype_name(index_type.dtype)) + " (shape " +
                                      shape_string(index_type.shape) + ")");
  }
  if (index_type.rank() != 1) {
    checker.fail(ErrorKind::Value, "indices must be one-dimensional, got shape " +
                                       shape_string(index_type.shape));
  }
  checker.expect_same_dtype(type, values_type);
  size_t scatter_axis = static_cast<size_t>(checker.axis(axis, type.shape));
  Shape expected = type.shape;
  expected[scatter_axis] = index_type.shape[0];
  if (values_type.shape != expected) {
    checker.fail(ErrorKind::Value, "values of shape " + shape_string(values_type.shape) +
                                       " do not fit array of shape " + shape_string(type.shape) +
                                       " at indices of shape " + shape_string(index_type.shape) +
                                       " along axis " + std::to_string(scatter_axis) +
                                       "; expected " + shape_string(expected));
  }
  if (type.shape[scatter_axis] == Dim(0) && index_type.shape[0] != Dim(0)) {
    checker.fail(ErrorKind::Value, "cannot index the empty axis " + std::to_string(scatter_axis) +
                                       " of shape " + shape_string(type.shape));
  }
  Attrs attrs;
  attrs.axis = static_cast<int64_t>(scatter_axis);
  attrs.scatter_mode = mode;
  return add(Op::scatter, type.dtype, type.shape, {a, index, values}, std::move(attrs));
}

// NumPy matmul: a 1-D left operand is a row (1, k) and a 1-D right operand a column (k, 1);
// both get explicit reshapes, and the result loses those dimensions again. The matmul node
// itself sees operands of rank >= 2 and broadcasts their batch dimensions (it is an extern
// call: materialising broadcast operands would copy whole matrices).
ValueId Builder::matmul(ValueId a, ValueId b) {
  Checker checker(Op::matmul, graph_, location_);
  ValueType left = checker.operand(a);
  ValueType right = checker.operand(b);
  for (const ValueType* type : {&left, &right}) {
    if (type->rank() == 0) {
      checker.fail(ErrorKind::Value, "operand " + std::to_string(type == &left ? 0 : 1) +
                                         " does not have enough dimensions (shapes " +
                                         shape_string(left.shape) + " " +
                                         shape_string(right.shape) + ")");
    }
  }
  checker.expect_same_dtype(left, right);
  if (left.dtype == DType::Bool) {
    checker.fail(ErrorKind::Type, "unsupported dtype bool; matmul needs a numeric dtype");
  }
  bool left_is_vector = left.rank() == 1;
  bool right_is_vector = right.rank() == 1;
  Shape left_matrix = left.shape;
  Shape right_matrix = right.shape;
  if (left_is_vector) left_matrix.insert(left_matrix.begin(), Dim(1));
  if (right_is_vector) right_matrix.push_back(Dim(1));
  Dim inner_left = left_matrix.back();
  Dim inner_right = right_matrix[right_matrix.size() - 2];
  if (inner_left != inner_right) {
    checker.fail(ErrorKind::Value, "operand 1 has a mismatch in its core dimension 0 (size " +
                                       inner_right.to_string() + " is different from " +
                                       inner_left.to_string() + "): shapes " +
                                       shape_string(left.shape) + " " + shape_string(right.shape));
  }
  Shape left_batch(left_matrix.begin(), left_matrix.end() - 2);
  Shape right_batch(right_matrix.begin(), right_matrix.end() - 2);
  Shape shape;
  if (!broadcast_shapes(left_batch, right_batch, shape)) {
    checker.fail(ErrorKind::Value, "batch dimensions could not be broadcast together with shapes " +
                                       shape_string(left.shape) + " " + shape_string(right.shape));
  }
  Shape squeezed = shape;
  shape.push_back(left_matrix[left_matrix.size() - 2]);
  shape.push_back(right_matrix.back());
  if (!left_is_vector) squeezed.push_back(shape[shape.size() - 2]);
  if (!right_is_vector) squeezed.push_back(shape.back());
  ValueId left_input = left_is_vector ? reshape(a, left_matrix) : a;
  ValueId right_input = right_is_vector ? reshape(b, right_matrix) : b;
  ValueId product = add(Op::matmul, left.dtype, shape, {left_input, right_input});
  return squeezed == shape ? product : reshape(product, squeezed);
}

// An extern call (oneDNN): the operands keep whatever layout they have; the shape rule lives in
// convolution_shape.cpp so that the verifier and the kernels apply the same one.
ValueId Builder::convolution(ValueId input, ValueId weight, std::optional<ValueId> bias,
                             std::vector<int64_t> strides, std::vector<int64_t> padding,
                             std::vector<int64_t> dilation, int64_t groups,
                             bool channels_last, bool filters_last) {
  Checker checker(Op::convolution, graph_, location_);
  if (filters_last && !channels_last)
    checker.fail(ErrorKind::Value, "channels-last filters need channels-last activations");
  std::vector<ValueType> operands{checker.operand(input), checker.operand(weight)};
  if (bias) operands.push_back(checker.operand(*bias));
  static const char* const kNames[] = {"input", "weight", "bias"};
  for (size_t k = 0; k < operands.size(); ++k) {
    DType dtype = operands[k].dtype;
    if (dtype != DType::Float32 && dtype != DType::Float64) {
      checker.fail(ErrorKind::Type, "unsupported dtype " + std::string(dtype_name(dtype)) +
                                        " of the " + kNames[k] +
                                        "; convolution needs float32 or float64");
    }
    if (dtype != operands[0].dtype) {
      checker.fail(ErrorKind::Type, std::string("the ") + kNames[k] + " has dtype " +
                                        std::string(dtype_name(dtype)) + " but the input " +
                                        std::string(dtype_name(operands[0].dtype)) +
                                        "; they must agree");
    }
  }
  // A symbolic batch passes through; the geometry needs every other size as a number.
  Shape batchless = operands[0].shape;
  Dim batch = batchless.empty() ? Dim(1) : batchless[0];
  if (!batchless.empty()) batchless[0] = 1;
  checker.expect_static(batchless);
  for (size_t k = 1; k < operands.size(); ++k) checker.expect_static(operands[k].shape);
  ConvolutionGeometry geometry;
  std::optional<std::vector<int64_t>> bias_shape;
  if (bias) bias_shape = to_ints(operands[2].shape);
  std::vector<int64_t> input_shape = to_ints(batchless);
  if (channels_last) input_shape = permuted(input_shape, channels_first_order(input_shape.size()));
  std::vector<int64_t> weight_shape = to_ints(operands[1].shape);
  if (filters_last) weight_shape = permuted(weight_shape, channels_first_order(weight_shape.size()));
  std::string problem = convolution_geometry(input_shape, weight_shape, bias_shape,
                                             strides, padding, dilation, groups, geometry);
  if (!problem.empty()) checker.fail(ErrorKind::Value, problem);
  Attrs attrs;
  attrs.strides = geometry.strides;
  attrs.padding = geometry.padding;
  attrs.dilation = geometry.dilation;
  attrs.groups = groups;
  attrs.channels_last = channels_last;
  attrs.filters_last = filters_last;
  std::vector<int64_t> output_shape = geometry.output_shape();
  if (channels_last) output_shape = permuted(output_shape, channels_last_order(output_shape.size()));
  std::vector<ValueId> inputs{input, weight};
  if (bias) inputs.push_back(*bias);
  Shape shape = from_ints(output_shape);
  if (!shape.empty()) shape[0] = batch;
  return add(Op::convolution, operands[0].dtype, std::move(shape), std::move(inputs),
             std::move(attrs));
}

ValueId Builder::copy_node(const Node& node, std::vector<ValueId> inputs) {
  Checker checker(node.op, graph_, node.location);
  int arity = op_info(node.op).arity;
  bool arity_fits = arity < 0 ? !inputs.empty() : static_cast<int>(inputs.size()) == arity;
  if (!arity_fits) {
    checker.fail(ErrorKind::Internal, "copy_node got " + std::to_string(inputs.size()) +
                                          " inputs for an op of arity " + std::to_string(arity));
  }
  for (ValueId input : inputs) {
    if (input < 0 || input >= graph_.size()) {
      checker.fail(ErrorKind::Internal, "copy_node input %" + std::to_string(input) +
                                            " is not a value of this graph");
    }
  }
  Node copy = node;
  copy.inputs = std::move(inputs);
  return graph_.append(std::move(copy));
}

}  // namespace kiln::ir
