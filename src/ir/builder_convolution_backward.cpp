// Checked factories for a convolution's gradients (op_list.h: convolution_backward_input,
// convolution_backward_weight). Extern calls like the forward: the operands keep their layout;
// the shape rule is convolution_shape.cpp's, shared with the verifier and the kernels. A
// symbolic batch passes through as the forward's does (a dynamic batch compiles once).
#include "ir/builder.h"
#include "ir/builder_checker.h"
#include "ir/convolution_shape.h"

namespace kiln::ir {
namespace {

using builder_detail::Checker;
using builder_detail::ValueType;

// Both operands float32 or float64, of one dtype: that dtype.
DType checked_dtype(const Checker& checker, const ValueType& grad_output, const ValueType& other,
                    const char* other_name) {
  for (const ValueType* operand : {&grad_output, &other}) {
    if (operand->dtype != DType::Float32 && operand->dtype != DType::Float64) {
      checker.fail(ErrorKind::Type, "unsupported dtype " + std::string(dtype_name(operand->dtype)) +
                                        " of the " +
                                        (operand == &grad_output ? "grad_output" : other_name) +
                                        "; convolution gradients need float32 or float64");
    }
  }
  if (grad_output.dtype != other.dtype) {
    checker.fail(ErrorKind::Type, std::string("the ") + other_name + " has dtype " +
                                      std::string(dtype_name(other.dtype)) + " but grad_output " +
                                      std::string(dtype_name(grad_output.dtype)) +
                                      "; they must agree");
  }
  return grad_output.dtype;
}

Attrs convolution_attrs(const ConvolutionGeometry& geometry, bool channels_last,
                        bool filters_last) {
  Attrs attrs;
  attrs.strides = geometry.strides;
  attrs.padding = geometry.padding;
  attrs.dilation = geometry.dilation;
  attrs.groups = geometry.groups;
  attrs.channels_last = channels_last;
  attrs.filters_last = filters_last;
  return attrs;
}

// An activation's (or a filter's) shape as the channels-first geometry reads it.
std::vector<int64_t> channels_first(const Shape& shape, bool channels_last) {
  std::vector<int64_t> ints = to_ints(shape);
  return channels_last ? permuted(ints, channels_first_order(ints.size())) : ints;
}

// An activation's shape with its batch (dimension 0) apart: a symbolic batch passes through,
// as the forward's does (Builder::convolution); every other size must be a number. `unbatched`
// is the shape the geometry is checked for: a symbolic batch there is 1.
struct SplitBatch {
  Dim batch;
  Shape unbatched;
};

SplitBatch split_batch(const Checker& checker, Shape shape) {
  Dim batch = shape.empty() ? Dim(1) : shape[0];
  if (!batch.is_constant()) shape[0] = Dim(1);
  checker.expect_static(shape);
  return {batch, std::move(shape)};
}

void expect_same_batch(const Checker& checker, const Dim& grad_output, const Dim& other,
                       const char* other_name) {
  if (!(grad_output == other)) {
    checker.fail(ErrorKind::Value, "grad_output's batch " + grad_output.to_string() +
                                       " differs from the " + other_name + "'s " +
                                       other.to_string());
  }
}

// `shape` with the batch `batch`.
Shape with_batch(const std::vector<int64_t>& shape, const Dim& batch) {
  Shape result = from_ints(shape);
  if (!result.empty()) result[0] = batch;
  return result;
}

void expect_layouts(Checker& checker, bool channels_last, bool filters_last) {
  if (filters_last && !channels_last)
    checker.fail(ErrorKind::Value, "channels-last filters need channels-last activations");
}

}  // namespace

ValueId Builder::convolution_backward_input(ValueId grad_output, ValueId weight,
                                            const Shape& input_shape,
                                            std::vector<int64_t> strides,
                                            std::vector<int64_t> padding,
                                            std::vector<int64_t> dilation, int64_t groups,
                                            bool channels_last, bool filters_last) {
  Checker checker(Op::convolution_backward_input, graph_, location_);
  expect_layouts(checker, channels_last, filters_last);
  ValueType gradient = checker.operand(grad_output);
  ValueType weights = checker.operand(weight);
  DType dtype = checked_dtype(checker, gradient, weights, "weight");
  SplitBatch gradients = split_batch(checker, gradient.shape);
  SplitBatch inputs = split_batch(checker, input_shape);
  expect_same_batch(checker, gradients.batch, inputs.batch, "input");
  checker.expect_static(weights.shape);
  ConvolutionGeometry geometry;
  const std::vector<int64_t> input_ints = to_ints(inputs.unbatched);
  std::string problem = convolution_backward_geometry(
      channels_first(gradients.unbatched, channels_last), input_ints,
      channels_first(weights.shape, filters_last), strides,
      padding, dilation, groups, geometry);
  if (!problem.empty()) checker.fail(ErrorKind::Value, problem);
  const std::vector<int64_t> shape =
      channels_last ? permuted(input_ints, channels_last_order(input_ints.size())) : input_ints;
  return add(Op::convolution_backward_input, dtype, with_batch(shape, inputs.batch),
             {grad_output, weight}, convolution_attrs(geometry, channels_last, filters_last));
}

ValueId Builder::convolution_backward_weight(ValueId grad_output, ValueId input,
                                             const std::vector<int64_t>& weight_shape,
                                             std::vector<int64_t> strides,
                                             std::vector<int64_t> padding,
                                             std::vector<int64_t> dilation, int64_t groups,
                                             bool channels_last, bool filters_last) {
  Checker checker(Op::convolution_backward_weight, graph_, location_);
  expect_layouts(checker, channels_last, filters_last);
  ValueType gradient = checker.operand(grad_output);
  ValueType inputs = checker.operand(input);
  DType dtype = checked_dtype(checker, gradient, inputs, "input");
  SplitBatch gradients = split_batch(checker, gradient.shape);
  SplitBatch activations = split_batch(checker, inputs.shape);
  expect_same_batch(checker, gradients.batch, activations.batch, "input");
  ConvolutionGeometry geometry;
  std::string problem = convolution_backward_geometry(
      channels_first(gradients.unbatched, channels_last),
      channels_first(activations.unbatched, channels_last), weight_shape, strides, padding,
      dilation, groups, geometry);
  if (!problem.empty()) checker.fail(ErrorKind::Value, problem);
  const std::vector<int64_t> shape =
      filters_last ? permuted(weight_shape, channels_last_order(weight_shape.size())) : weight_shape;
  return add(Op::convolution_backward_weight, dtype, from_ints(shape), {grad_output, input},
             convolution_attrs(geometry, channels_last, filters_last));
}

}  // namespace kiln::ir
