#include "ir/convolution_shape.h"

namespace kiln::ir {
namespace {

std::string list_text(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + (values.size() == 1 ? ",)" : ")");
}

// One entry per spatial dimension, or a single entry for all of them; nullopt otherwise.
std::optional<std::vector<int64_t>> expanded(const std::vector<int64_t>& values, size_t rank) {
  if (values.size() == rank) return values;
  if (values.size() == 1) return std::vector<int64_t>(rank, values[0]);
  return std::nullopt;
}

}  // namespace

std::vector<int64_t> ConvolutionGeometry::output_shape() const {
  std::vector<int64_t> shape{batch, out_channels};
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return shape;
}

std::string convolution_geometry(const std::vector<int64_t>& input_shape,
                                 const std::vector<int64_t>& weight_shape,
                                 const std::optional<std::vector<int64_t>>& bias_shape,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& padding,
                                 const std::vector<int64_t>& dilation, int64_t groups,
                                 ConvolutionGeometry& geometry) {
  const std::string shapes =
      "input " + list_text(input_shape) + ", weight " + list_text(weight_shape);
  if (input_shape.size() < 3 || input_shape.size() > 2 + kMaxConvolutionSpatialRank)
    return "the input must have rank 3, 4 or 5 (batch, channels, 1 to 3 spatial dimensions); "
           "got " +
           shapes;
  if (weight_shape.size() != input_shape.size())
    return "the weight must have the input's rank (out channels, in channels / groups, kernel "
           "sizes); got " +
           shapes;
  const size_t rank = input_shape.size() - 2;
  std::optional<std::vector<int64_t>> stride_list = expanded(strides, rank);
  std::optional<std::vector<int64_t>> padding_list = expanded(padding, rank);
  std::optional<std::vector<int64_t>> dilation_list = expanded(dilation, rank);
  if (!stride_list || !padding_list || !dilation_list)
    return "strides " + list_text(strides) + ", padding " + list_text(padding) + " and dilation " +
           list_text(dilation) + " need one entry (or " + std::to_string(rank) + ") for the " +
           std::to_string(rank) + " spatial dimensions of " + shapes;
  for (size_t d = 0; d < rank; ++d) {
    if ((*stride_list)[d] < 1) return "strides must be positive, got " + list_text(strides);
    if ((*dilation_list)[d] < 1) return "dilation must be positive, got " + list_text(dilation);
    if ((*padding_list)[d] < 0) return "padding must not be negative, got " + list_text(padding);
  }
  if (groups < 1) return "groups must be positive, got " + std::to_string(groups);
  for (int64_t size : input_shape)
    if (size < 0) return "negative dimension in " + shapes;
  for (int64_t size : weight_shape)
    if (size < 0) return "negative dimension in " + shapes;
  geometry.batch = input_shape[0];
  geometry.in_channels = input_shape[1];
  geometry.out_channels = weight_shape[0];
  geometry.groups = groups;
  if (geometry.in_channels != weight_shape[1] * groups)
    return "the input has " + std::to_string(geometry.in_channels) +
           " channels, but the weight "
           "expects " +
           std::to_string(weight_shape[1]) + " per group times " + std::to_string(groups) +
           " groups (" + shapes + ")";
  if (geometry.out_channels % groups != 0)
    return "the weight's " + std::to_string(geometry.out_channels) +
           " output channels are not divisible by " + std::to_string(groups) + " groups (" +
           shapes + ")";
  if (bias_shape && (bias_shape->size() != 1 || (*bias_shape)[0] != geometry.out_channels))
    return "the bias must have shape (" + std::to_string(geometry.out_channels) + ",), got " +
           list_text(*bias_shape);
  geometry.input_size.assign(input_shape.begin() + 2, input_shape.end());
  geometry.kernel_size.assign(weight_shape.begin() + 2, weight_shape.end());
  geometry.strides = *stride_list;
  geometry.padding = *padding_list;
  geometry.dilation = *dilation_list;
  geometry.output_size.clear();
  for (size_t d = 0; d < rank; ++d) {
    // Computed without overflow: a crafted dilation or padding must give an error, not a
    // wrapped size.
    int64_t reach = 0, padded = 0;
    bool overflow =
        __builtin_mul_overflow(geometry.dilation[d], geometry.kernel_size[d] - 1, &reach) ||
        __builtin_mul_overflow(geometry.padding[d], int64_t{2}, &padded) ||
        __builtin_add_overflow(padded, geometry.input_size[d], &padded);
    if (overflow) return "sizes overflow in " + shapes;
    if (geometry.kernel_size[d] == 0 || padded - reach - 1 < 0)
      return "the padded input size " + std::to_string(padded) + " of spatial dimension " +
             std::to_string(d) + " is smaller than the dilated kernel size " +
             std::to_string(reach + 1) + " (" + shapes + ")";
    geometry.output_size.push_back((padded - reach - 1) / geometry.strides[d] + 1);
  }
  return "";
}

std::vector<int64_t> channels_first_order(size_t rank) {
  std::vector<int64_t> order{0};
  if (rank < 2) return rank == 1 ? order : std::vector<int64_t>{};
  order.push_back(static_cast<int64_t>(rank) - 1);
  for (size_t d = 1; d + 1 < rank; ++d) order.push_back(static_cast<int64_t>(d));
  return order;
}

std::vector<int64_t> channels_last_order(size_t rank) {
  std::vector<int64_t> order{0};
  if (rank < 2) return rank == 1 ? order : std::vector<int64_t>{};
  for (size_t d = 2; d < rank; ++d) order.push_back(static_cast<int64_t>(d));
  order.push_back(1);
  return order;
}

std::vector<int64_t> permuted(const std::vector<int64_t>& values,
                              const std::vector<int64_t>& order) {
  std::vector<int64_t> result;
  for (int64_t k : order) result.push_back(values[static_cast<size_t>(k)]);
  return result;
}

std::string convolution_backward_geometry(const std::vector<int64_t>& grad_output_shape,
                                          const std::vector<int64_t>& input_shape,
                                          const std::vector<int64_t>& weight_shape,
                                          const std::vector<int64_t>& strides,
                                          const std::vector<int64_t>& padding,
                                          const std::vector<int64_t>& dilation, int64_t groups,
                                          ConvolutionGeometry& geometry) {
  std::string problem = convolution_geometry(input_shape, weight_shape, std::nullopt, strides,
                                             padding, dilation, groups, geometry);
  if (!problem.empty()) return problem;
  if (grad_output_shape != geometry.output_shape())
    return "grad_output has shape " + list_text(grad_output_shape) + ", but the convolution of " +
           "input " + list_text(input_shape) + " by weight " + list_text(weight_shape) +
           " gives " + list_text(geometry.output_shape());
  return "";
}

}  // namespace kiln::ir
