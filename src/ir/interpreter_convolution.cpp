// The reference convolution: the definition written as loops, one output element at a time,
// accumulated in double. Plain rather than fast: it is the oracle the oneDNN kernel is tested
// against, so it shares no code with it beyond the shape rule (convolution_shape.h).
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

}  // namespace

Array permuted_view(const Array& array, const std::vector<int64_t>& order) {
  return Array::borrow(array.data(), array.dtype(), permuted(array.shape(), order),
                       permuted(array.strides(), order));
}

Array evaluate_convolution(const Node& node, const std::vector<Array>& operands) {
  if (node.attrs.channels_last) {  // the channels-first definition on permuted views
    Node first = node;
    first.attrs.channels_last = first.attrs.filters_last = false;
    first.shape = from_ints(permuted(to_ints(node.shape), channels_first_order(node.shape.size())));
    std::vector<Array> channels_first = operands;
    channels_first[0] = permuted_view(operands[0], channels_first_order(node.shape.size()));
    if (node.attrs.filters_last)
      channels_first[1] = permuted_view(operands[1], channels_first_order(node.shape.size()));
    Array result = evaluate_convolution(first, channels_first);
    return permuted_view(result, channels_last_order(node.shape.size())).contiguous();
  }
  View input = view_of(operands[0]);
  View weight = view_of(operands[1]);
  std::optional<View> bias;
  if (operands.size() > 2) bias = view_of(operands[2]);
  std::optional<std::vector<int64_t>> bias_shape;
  if (bias) bias_shape = bias->shape;
  ConvolutionGeometry g;
  const Attrs& attrs = node.attrs;
  std::string problem = convolution_geometry(input.shape, weight.shape, bias_shape, attrs.strides,
                                             attrs.padding, attrs.dilation, attrs.groups, g);
  if (!problem.empty()) fail(node, ErrorKind::Internal, problem);
  if (g.output_shape() != to_ints(node.shape) || input.dtype != node.dtype ||
      weight.dtype != node.dtype || (bias && bias->dtype != node.dtype)) {
    fail(node, ErrorKind::Internal, "operands do not give the result " + shape_string(node.shape));
  }
  Array output = Array::empty(node.dtype, g.output_shape());
  const size_t rank = g.spatial_rank();
  const int64_t group_in = g.in_channels / g.groups;
  const int64_t group_out = g.out_channels / g.groups;
  visit_dtype(node.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    auto* out = output.data_as<typename Traits::Storage>();
    int64_t written = 0;
    if (has_zero(g.output_shape())) return;
    std::vector<int64_t> position(rank, 0), tap(rank, 0);
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t o = 0; o < g.out_channels; ++o) {
        const int64_t group = o / group_out;
        std::fill(position.begin(), position.end(), 0);
        do {
          double sum =
              bias ? static_cast<double>(load<Traits>(bias->data, o * bias->strides[0])) : 0.0;
          for (int64_t c = 0; c < group_in && !has_zero(g.kernel_size); ++c) {
            const int64_t channel = group * group_in + c;
            std::fill(tap.begin(), tap.end(), 0);
            do {
              int64_t input_offset = n * input.strides[0] + channel * input.strides[1];
              int64_t weight_offset = o * weight.strides[0] + c * weight.strides[1];
              bool inside = true;
              for (size_t d = 0; d < rank; ++d) {
                int64_t at = position[d] * g.strides[d] - g.padding[d] + tap[d] * g.dilation[d];
                inside = inside && at >= 0 && at < g.input_size[d];
                input_offset += at * input.strides[2 + d];
                weight_offset += tap[d] * weight.strides[2 + d];
              }
              if (!inside) continue;  // zero padding
              sum += static_cast<double>(load<Traits>(input.data, input_offset)) *
                     static_cast<double>(load<Traits>(weight.data, weight_offset));
            } while (next_index(tap, g.kernel_size));
          }
          out[written++] = convert<Traits::dtype>(sum);
        } while (next_index(position, g.output_size));
      }
    }
  });
  return output;
}

}  // namespace kiln::ir::interpreter_detail
