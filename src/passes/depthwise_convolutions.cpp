// Depthwise convolutions of three spatial dimensions (GPU only) as generated code: the sum over
// the kernel's taps of a strided view of the padded input times each channel's weight, one
// pointwise kernel that the scheduler fuses with the work around it. cuDNN runs a grouped 3-d
// convolution one group at a time: mvit_v2_s's attention pools (96-768 channels, 3x3x3 kernels)
// took 4,608 launches and 51 ms a call on an H200, where eager PyTorch's own depthwise kernel
// took 0.5 ms. Two spatial dimensions stay cuDNN's, which has depthwise kernels for them.
#include "ir/builder.h"
#include "passes/passes.h"
#include "passes/rewrite_nodes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

constexpr size_t kSpatial = 3;

// A channels-first float convolution of one input channel per group and one output channel a
// group, every size a number.
bool is_depthwise_3d(const ir::Graph& graph, const Node& node) {
  if (node.op != Op::convolution || node.attrs.channels_last || node.attrs.filters_last ||
      !is_float(node.dtype))
    return false;
  const ir::Shape& input = graph.node(node.inputs[0]).shape;
  const ir::Shape& weight = graph.node(node.inputs[1]).shape;
  if (input.size() != kSpatial + 2 || weight.size() != kSpatial + 2) return false;
  for (const ir::Shape* shape : {&input, &weight, &node.shape})
    for (const ir::Dim& dim : *shape)
      if (!dim.is_constant()) return false;
  const int64_t channels = input[1].constant();
  return node.attrs.groups == channels && channels > 1 && weight[0].constant() == channels &&
         weight[1].constant() == 1;
}

ValueId tap_sum(ir::Builder& b, const Node& node, const std::vector<ValueId>& inputs) {
  const ir::Shape& input = b.node(inputs[0]).shape;
  const ir::Shape& weight = b.node(inputs[1]).shape;
  const ir::Attrs& attrs = node.attrs;
  const int64_t batch = input[0].constant(), channels = input[1].constant();
  std::vector<int64_t> low(kSpatial + 2, 0);
  bool padded = false;
  for (size_t d = 0; d < kSpatial; ++d) {
    low[d + 2] = attrs.padding[d];
    padded = padded || attrs.padding[d] != 0;
  }
  const ValueId source =
      padded ? b.pad(inputs[0], low, low, ir::PadMode::Constant) : inputs[0];
  const ir::Shape per_channel{1, channels, 1, 1, 1};
  auto channel_values = [&](ValueId value) {
    return b.broadcast(b.reshape(value, per_channel), node.shape);
  };
  ValueId total = -1;
  for (int64_t a = 0; a < weight[2].constant(); ++a)
    for (int64_t c = 0; c < weight[3].constant(); ++c)
      for (int64_t e = 0; e < weight[4].constant(); ++e) {
        const int64_t tap[kSpatial] = {a, c, e};
        std::vector<int64_t> starts{0, 0}, stops{batch, channels}, steps{1, 1};
        for (size_t d = 0; d < kSpatial; ++d) {
          const int64_t begin = tap[d] * attrs.dilation[d];
          starts.push_back(begin);
          stops.push_back(begin + (node.shape[d + 2].constant() - 1) * attrs.strides[d] + 1);
          steps.push_back(attrs.strides[d]);
        }
        const ValueId view = b.slice(source, starts, stops, steps);
        const ValueId tap_weight =
            b.slice(inputs[1], {0, 0, a, c, e}, {channels, 1, a + 1, c + 1, e + 1}, {1, 1, 1, 1, 1});
        const ValueId term = b.binary(Op::mul, view, channel_values(tap_weight));
        total = total < 0 ? term : b.binary(Op::add, total, term);
      }
  if (inputs.size() > 2) total = b.binary(Op::add, total, channel_values(inputs[2]));
  return total;
}

}  // namespace

ir::Graph depthwise_convolutions(const ir::Graph& graph) {
  return rewrite_nodes(graph, [&](ir::Builder& b, ValueId, const Node& node,
                                  const std::vector<ValueId>& inputs) -> std::optional<ValueId> {
    if (!is_depthwise_3d(graph, node)) return std::nullopt;
    return tap_sum(b, node, inputs);
  });
}

}  // namespace kiln::passes
