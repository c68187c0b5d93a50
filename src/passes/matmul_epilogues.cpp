// Matmul epilogues (CUDA): a float product of two matrices whose only use adds a bias vector
// along its rows, `x @ W.T + b` (a Linear layer), becomes one matmul node with the bias as its
// third operand, and a float32 ReLU of that sum (used nowhere else) joins it (Attrs::relu):
// cuBLASLt applies both as the product's epilogue, so the sum and the activation need no kernel
// and no pass over memory of their own. Its ReLU keeps NaN as torch's does (checked on an H200:
// rows of NaN and infinities, the same NaN as eager torch's); float16 and bfloat16 ReLUs were
// not checked and stay kernels. GELU stays a generated kernel: cuBLASLt's is the tanh
// approximation, not torch's default erf form.
#include <vector>

#include "ir/builder.h"
#include "ir/size_choices.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

bool is_zero(const ir::Graph& graph, ValueId id) {
  const Node& node = graph.node(id);
  if (node.op == Op::broadcast) return is_zero(graph, node.inputs[0]);
  return node.op == Op::constant && node.attrs.scalar.as_double() == 0.0;
}

// Products of at most this many rows stay as they are: on the GPU they are generated kernels
// that stream the weight (codegen/cuda/skinny_matmul.cpp), twice cuBLAS's speed there, and
// their sums join the kernel after them.
constexpr int64_t kMostSkinnyRows = 16;

bool epilogue_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

// The vector `id` broadcasts along the rows of a (rows, n) sum: broadcast(v) with v of n
// elements (shape (n) or (1, n)), of `dtype`; -1 otherwise.
ValueId row_bias(const ir::Graph& graph, ValueId id, const ir::Dim& n, DType dtype) {
  const Node& node = graph.node(id);
  if (node.op != Op::broadcast || node.dtype != dtype) return -1;
  const ir::Shape& shape = graph.node(node.inputs[0]).shape;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    if (shape[d] != ir::Dim(1)) return -1;
  return !shape.empty() && shape.back() == n ? node.inputs[0] : -1;
}

}  // namespace

ir::Graph fuse_matmul_epilogues(const ir::Graph& graph) {
  std::vector<int> uses(static_cast<size_t>(graph.size()), 0);
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) ++uses[static_cast<size_t>(input)];
  for (ValueId output : graph.outputs()) ++uses[static_cast<size_t>(output)];
  // The plan: by add node, its product and bias vector; by ReLU node, the add it takes.
  std::vector<ValueId> product_of(static_cast<size_t>(graph.size()), -1);
  std::vector<ValueId> bias_of(static_cast<size_t>(graph.size()), -1);
  std::vector<ValueId> relu_of_add(static_cast<size_t>(graph.size()), -1);
  std::vector<bool> fused_away(static_cast<size_t>(graph.size()), false);
  bool any = false;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op == Op::add) {
      for (size_t side = 0; side < 2 && product_of[static_cast<size_t>(id)] < 0; ++side) {
        // The product, or a reshape of it that keeps its rows' length (canonicalize_matmul
        // makes a batch of rows against one weight one product of their rows).
        ValueId m = node.inputs[side];
        ValueId reshaped = -1;
        if (graph.node(m).op == Op::reshape && uses[static_cast<size_t>(m)] == 1 &&
            graph.node(graph.node(m).inputs[0]).op == Op::matmul &&
            graph.node(m).shape.back() == graph.node(graph.node(m).inputs[0]).shape.back())
          reshaped = m, m = graph.node(m).inputs[0];
        const Node& product = graph.node(m);
        // Sizes of a graph with size symbols follow the large sizes' choice of the generated
        // kernel for few rows (ir/size_choices.h).
        if (product.op != Op::matmul || product.inputs.size() != 2 || product.attrs.relu ||
            product.shape.size() != 2 || !ir::is_static(product.shape) ||
            graph.node(product.inputs[0]).shape.back() == ir::Dim(0) ||
            !epilogue_dtype(product.dtype) || uses[static_cast<size_t>(m)] != 1 ||
            !ir::size_choice(product.shape[0].constant() > kMostSkinnyRows))
          continue;
        const ValueId bias = row_bias(graph, node.inputs[1 - side], product.shape[1], product.dtype);
        if (bias < 0) continue;
        product_of[static_cast<size_t>(id)] = m, bias_of[static_cast<size_t>(id)] = bias;
        fused_away[static_cast<size_t>(m)] = true;
        if (reshaped >= 0) fused_away[static_cast<size_t>(reshaped)] = true;
        any = true;
      }
    }
    if (node.op == Op::maximum && node.dtype == DType::Float32) {
      for (size_t side = 0; side < 2; ++side) {
        const ValueId sum = node.inputs[side];
        if (product_of[static_cast<size_t>(sum)] >= 0 && uses[static_cast<size_t>(sum)] == 1 &&
            is_zero(graph, node.inputs[1 - side])) {
          relu_of_add[static_cast<size_t>(id)] = sum;
          fused_away[static_cast<size_t>(sum)] = true;
          break;
        }
      }
    }
  }
  if (!any) return graph;
  ir::Graph result;
  ir::Builder b(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  auto fused = [&](ValueId sum, bool relu) {  // as the sum's shape
    const Node& product = graph.node(product_of[static_cast<size_t>(sum)]);
    const ValueId bias = bias_of[static_cast<size_t>(sum)];
    b.set_location(graph.node(bias).location);
    ValueId vector = replacement[static_cast<size_t>(bias)];
    if (graph.node(bias).shape.size() != 1) vector = b.reshape(vector, {product.shape[1]});
    Node node = product;
    node.attrs.relu = relu;
    const ValueId with_epilogue =
        b.copy_node(node, {replacement[static_cast<size_t>(product.inputs[0])],
                           replacement[static_cast<size_t>(product.inputs[1])], vector});
    const ir::Shape& shape = graph.node(sum).shape;
    return shape == product.shape ? with_epilogue : b.reshape(with_epilogue, shape);
  };
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    ValueId& mapped = replacement[static_cast<size_t>(id)];
    if (relu_of_add[static_cast<size_t>(id)] >= 0) {
      mapped = fused(relu_of_add[static_cast<size_t>(id)], true);
    } else if (fused_away[static_cast<size_t>(id)]) {
      continue;  // made with the node that uses it
    } else if (product_of[static_cast<size_t>(id)] >= 0) {
      mapped = fused(id, false);
    } else {
      std::vector<ValueId> inputs;
      for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
      mapped = b.copy_node(node, std::move(inputs));
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(replacement[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
