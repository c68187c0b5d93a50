// Checked factories for a convolution's gradients (op_list.h: convolution_backward_input,
// convolution_backward_weight). Extern calls like the forward: the operands keep their layout;
// the shape rule is convolution_shape.cpp's, shared with the verifier and the kernels.
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

void expect_layouts(Checker& checker, bool channels_last, bool filters_last) {
  if (filters_last && !channels_last)
    checker.fail(ErrorKind::Value, "channels-last filters need channels-last activations");
}

}  // namespace

ValueId Builder::convolution_backward_input(ValueId grad_output, ValueId weight,
                                            const std::vector<int64_t>& input_shape,
                                            std::vector<int64_t> strides,
                                            std::vector<int64_t> padding,
                                            std::vector<int64_t> dilation, int64_t groups,
                                            bool channels_last, bool filters_last) {
  Checker checker(Op::convolution_backward_input, graph_, location_);
  expect_layouts(checker, channels_last, filters_last);
  ValueType gradient = checker.operand(grad_output);
  ValueType weights = checker.operand(weight);
  DType dtype = checked_dtype(checker, gradient, weights, "weight");
  checker.expect_static(gradient.shape);
  checker.expect_static(weights.shape);
  ConvolutionGeometry geometry;
  std::string problem = convolution_backward_geometry(
      channels_first(gradient.shape, channels_last), input_shape,
      channels_first(weights.shape, filters_last), strides,
      padding, dilation, groups, geometry);
  if (!problem.empty()) checker.fail(ErrorKind::Value, problem);
  const std::vector<int64_t> shape =
      channels_last ? permuted(input_shape, channels_last_order(input_shape.size())) : input_shape;
  return add(Op::convolution_backward_input, dtype, from_ints(shape), {grad_output, weight},
             convolution_attrs(geometry, channels_last, filters_last));
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
  checker.expect_static(gradient.shape);
  checker.expect_static(inputs.shape);
  ConvolutionGeometry geometry;
  std::string problem = convolution_backward_geometry(
      channels_first(gradient.shape, channels_last), channels_first(inputs.shape, channels_last),
      weight_shape, strides, padding, dilation, groups, geometry);
  if (!problem.empty()) checker.fail(ErrorKind::Value, problem);
  const std::vector<int64_t> shape =
      filters_last ? permuted(weight_shape, channels_last_order(weight_shape.size())) : weight_shape;
  return add(Op::convolution_backward_weight, dtype, from_ints(shape), {grad_output, input},
             convolution_attrs(geometry, channels_last, filters_last));
}

}  // namespace kiln::ir
