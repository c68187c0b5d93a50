// Matmul epilogues (CUDA): a float product of two matrices whose only use adds a bias vector
// along its rows, `x @ W.T + b` (a Linear layer), becomes one matmul node with the bias as its
// third operand, which cuBLASLt adds as the product's epilogue: the sum needs no kernel and no
// pass over memory of its own. Activations stay generated kernels: cuBLASLt's ReLU epilogue is
// not known to keep NaN as torch's ReLU does, and its GELU is the tanh approximation, not
// torch's default erf form.
#include <vector>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

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

// A product an epilogue can join: two float matrices of static shape, more than a few rows,
// a non-empty inner dimension, no epilogue yet, used once.
bool fusable_product(const ir::Graph& graph, ValueId id, const std::vector<int>& uses) {
  const Node& product = graph.node(id);
  return product.op == Op::matmul && product.inputs.size() == 2 && product.shape.size() == 2 &&
         ir::is_static(product.shape) && product.shape[0].constant() > kMostSkinnyRows &&
         graph.node(product.inputs[0]).shape.back() != ir::Dim(0) &&
         epilogue_dtype(product.dtype) && uses[static_cast<size_t>(id)] == 1;
}

}  // namespace

ir::Graph fuse_matmul_epilogues(const ir::Graph& graph) {
  std::vector<int> uses(static_cast<size_t>(graph.size()), 0);
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) ++uses[static_cast<size_t>(input)];
  for (ValueId output : graph.outputs()) ++uses[static_cast<size_t>(output)];
  // The plan, by add node: its product and bias vector.
  std::vector<ValueId> product_of(static_cast<size_t>(graph.size()), -1);
  std::vector<ValueId> bias_of(static_cast<size_t>(graph.size()), -1);
  std::vector<bool> fused_away(static_cast<size_t>(graph.size()), false);
  bool any = false;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op != Op::add) continue;
    for (size_t side = 0; side < 2 && product_of[static_cast<size_t>(id)] < 0; ++side) {
      // The product, or a reshape of it that keeps its rows' length (canonicalize_matmul makes
      // a batch of rows against one weight one product of their rows).
      ValueId m = node.inputs[side];
      ValueId reshaped = -1;
      if (graph.node(m).op == Op::reshape && uses[static_cast<size_t>(m)] == 1 &&
          graph.node(graph.node(m).inputs[0]).op == Op::matmul &&
          graph.node(m).shape.back() == graph.node(graph.node(m).inputs[0]).shape.back())
        reshaped = m, m = graph.node(m).inputs[0];
      if (!fusable_product(graph, m, uses)) continue;
      const Node& product = graph.node(m);
      const ValueId bias = row_bias(graph, node.inputs[1 - side], product.shape[1], product.dtype);
      if (bias < 0) continue;
      product_of[static_cast<size_t>(id)] = m, bias_of[static_cast<size_t>(id)] = bias;
      fused_away[static_cast<size_t>(m)] = true;
      if (reshaped >= 0) fused_away[static_cast<size_t>(reshaped)] = true;
      any = true;
    }
  }
  if (!any) return graph;
  ir::Graph result;
  ir::Builder b(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    ValueId& mapped = replacement[static_cast<size_t>(id)];
    if (fused_away[static_cast<size_t>(id)]) continue;  // made with the sum that uses it
    if (product_of[static_cast<size_t>(id)] < 0) {
      std::vector<ValueId> inputs;
      for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
      mapped = b.copy_node(node, std::move(inputs));
      continue;
    }
    const Node& product = graph.node(product_of[static_cast<size_t>(id)]);
    const ValueId bias = bias_of[static_cast<size_t>(id)];
    b.set_location(graph.node(bias).location);
    ValueId vector = replacement[static_cast<size_t>(bias)];
    if (graph.node(bias).shape.size() != 1) vector = b.reshape(vector, {product.shape[1]});
    const ValueId with_bias =
        b.copy_node(product, {replacement[static_cast<size_t>(product.inputs[0])],
                              replacement[static_cast<size_t>(product.inputs[1])], vector});
    mapped = node.shape == product.shape ? with_bias : b.reshape(with_bias, node.shape);
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(replacement[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
