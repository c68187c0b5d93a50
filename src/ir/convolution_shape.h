// The shape rule of the convolution op (op_list.h), shared by the builder (user errors), the
// verifier (kiln's own bugs), the reference interpreter and the library kernel, so that all four
// agree on what a convolution's operands and result look like.
//
// Layout as in torch's aten.convolution (forward, not transposed): input (N, C, *spatial),
// weight (O, C / groups, *kernel), optional bias (O,), result (N, O, *output) with, per spatial
// dimension, output = floor((in + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

struct ConvolutionGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;   // C, all groups
  int64_t out_channels = 0;  // O, all groups
  int64_t groups = 1;
  std::vector<int64_t> input_size;                  // spatial
  std::vector<int64_t> kernel_size;                 // spatial
  std::vector<int64_t> output_size;                 // spatial
  std::vector<int64_t> strides, padding, dilation;  // one per spatial dimension

  size_t spatial_rank() const { return input_size.size(); }
  std::vector<int64_t> output_shape() const;  // (N, O, *output)
};

// Spatial dimensions the convolution op supports (oneDNN's range: 1-d, 2-d and 3-d).
constexpr size_t kMaxConvolutionSpatialRank = 3;

// Fills `geometry` from the operand shapes and attributes, or returns why they do not make a
// convolution (the text of a user error; empty on success). A strides, padding or dilation list
// of one entry applies to every spatial dimension, as torch allows; `geometry` holds them
// expanded.
std::string convolution_geometry(const std::vector<int64_t>& input_shape,
                                 const std::vector<int64_t>& weight_shape,
                                 const std::optional<std::vector<int64_t>>& bias_shape,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& padding,
                                 const std::vector<int64_t>& dilation, int64_t groups,
                                 ConvolutionGeometry& geometry);

// Channels-last layout (attrs.channels_last): the orders that turn a shape (or strides) of one
// layout into the other's, as `permuted(values, order)[d] = values[order[d]]` (a permute op's
// permutation): (N, *spatial, C) -> (N, C, *spatial) and back.
std::vector<int64_t> channels_first_order(size_t rank);  // (0, rank-1, 1, .., rank-2)
std::vector<int64_t> channels_last_order(size_t rank);   // (0, 2, .., rank-1, 1)
std::vector<int64_t> permuted(const std::vector<int64_t>& values,
                              const std::vector<int64_t>& order);

// The shape rule of the gradient ops (convolution_backward_input, convolution_backward_weight):
// the forward convolution they differentiate, from its input and weight shapes (one of which is
// the gradient's own shape), checked against grad_output's shape. Empty on success, else the
// text of a user error.
std::string convolution_backward_geometry(const std::vector<int64_t>& grad_output_shape,
                                          const std::vector<int64_t>& input_shape,
                                          const std::vector<int64_t>& weight_shape,
                                          const std::vector<int64_t>& strides,
                                          const std::vector<int64_t>& padding,
                                          const std::vector<int64_t>& dilation, int64_t groups,
                                          ConvolutionGeometry& geometry);

}  // namespace kiln::ir
