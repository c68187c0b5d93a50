// The reference gradients of a convolution: the forward's definition walked term by term, each
// product grad_output[n, o, y] * weight[o, c, k] added to the input gradient at the input
// position it read (and grad_output[n, o, y] * input[n, c, x] to the weight gradient), in
// double. Plain rather than fast: the oracle of the library kernels
// (extern/convolution_backward.cpp), sharing nothing with them beyond the shape rule.
#include <algorithm>

#include "ir/convolution_shape.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interpreter_detail {
namespace {

// Row-major walk over a spatial index (any number of dimensions); false once past the end.
bool next_index(std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < sizes[d]) return true;
    index[d] = 0;
  }
  return false;
}

bool has_zero(const std::vector<int64_t>& sizes) {
  for (int64_t size : sizes)
    if (size == 0) return true;
  return false;
}

int64_t row_major_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + index[d];
  return offset;
}

// Calls visit(grad_output offset, input index, weight index) for every product of the forward
// convolution whose input element lies inside the input (not in the zero padding); the indices
// are full (N, C, *spatial) and (O, C / groups, *kernel) positions.
template <class Visit>
void each_product(const ConvolutionGeometry& g, const View& grad_output, Visit&& visit) {
  if (has_zero(g.output_shape()) || has_zero(g.kernel_size)) return;
  const size_t rank = g.spatial_rank();
  const int64_t group_in = g.in_channels / g.groups;
  const int64_t group_out = g.out_channels / g.groups;
  std::vector<int64_t> position(rank, 0), tap(rank, 0);
  std::vector<int64_t> input_index(2 + rank), weight_index(2 + rank);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      std::fill(position.begin(), position.end(), 0);
      do {
        int64_t gradient_offset = n * grad_output.strides[0] + o * grad_output.strides[1];
        for (size_t d = 0; d < rank; ++d)
          gradient_offset += position[d] * grad_output.strides[2 + d];
        for (int64_t c = 0; c < group_in; ++c) {
          input_index[0] = n;
          input_index[1] = (o / group_out) * group_in + c;
          weight_index[0] = o;
          weight_index[1] = c;
          std::fill(tap.begin(), tap.end(), 0);
          do {
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              int64_t at = position[d] * g.strides[d] - g.padding[d] + tap[d] * g.dilation[d];
              inside = inside && at >= 0 && at < g.input_size[d];
              input_index[2 + d] = at;
              weight_index[2 + d] = tap[d];
            }
            if (inside) visit(gradient_offset, input_index, weight_index);
          } while (next_index(tap, g.kernel_size));
        }
      } while (next_index(position, g.output_size));
    }
  }
}

int64_t strided_offset(const View& view, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * view.strides[d];
  return offset;
}

}  // namespace

Array evaluate_convolution_backward(const Node& node, const std::vector<Array>& operands) {
  const bool for_input = node.op == Op::convolution_backward_input;
  if (node.attrs.channels_last) {  // the channels-first definition on permuted views
    Node first = node;
    first.attrs.channels_last = first.attrs.filters_last = false;
    const std::vector<int64_t> order = channels_first_order(operands[0].shape().size());
    std::vector<Array> channels_first = operands;
    channels_first[0] = permuted_view(operands[0], order);
    if (!for_input || node.attrs.filters_last)  // the input, or a channels-last filter
      channels_first[1] = permuted_view(operands[1], order);
    const bool permuted_result = for_input || node.attrs.filters_last;
    if (!permuted_result) return evaluate_convolution_backward(first, channels_first);
    first.shape = from_ints(permuted(to_ints(node.shape), order));
    Array result = evaluate_convolution_backward(first, channels_first);
    return permuted_view(result, channels_last_order(order.size())).contiguous();
  }
  View grad_output = view_of(operands[0]);
  View other = view_of(operands[1]);  // the weight (input gradient) or the input
  std::vector<int64_t> own = to_ints(node.shape);
  ConvolutionGeometry g;
  const Attrs& attrs = node.attrs;
  std::string problem = convolution_backward_geometry(
      grad_output.shape, for_input ? own : other.shape, for_input ? other.shape : own,
      attrs.strides, attrs.padding, attrs.dilation, attrs.groups, g);
  if (!problem.empty()) fail(node, ErrorKind::Internal, problem);
  if (grad_output.dtype != node.dtype || other.dtype != node.dtype)
    fail(node, ErrorKind::Internal, "operands of another dtype than the result");
  int64_t count = 1;
  for (int64_t size : own) count *= size;
  std::vector<double> sums(static_cast<size_t>(count), 0.0);
  Array output = Array::empty(node.dtype, own);
  visit_dtype(node.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    each_product(
        g, grad_output,
        [&](int64_t gradient_offset, const std::vector<int64_t>& input,
            const std::vector<int64_t>& weight) {
          const double gradient =
              static_cast<double>(load<Traits>(grad_output.data, gradient_offset));
          const std::vector<int64_t>& read = for_input ? weight : input;  // the other operand's
          const std::vector<int64_t>& written = for_input ? input : weight;
          sums[static_cast<size_t>(row_major_offset(own, written))] +=
              gradient * static_cast<double>(load<Traits>(other.data, strided_offset(other, read)));
        });
    auto* out = output.data_as<typename Traits::Storage>();
    for (size_t k = 0; k < sums.size(); ++k) out[k] = convert<Traits::dtype>(sums[k]);
  });
  return output;
}

}  // namespace kiln::ir::interpreter_detail
