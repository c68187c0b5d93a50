// Matmul canonicalisation: each matmul becomes the form that runs fastest.
// - Matrix-vector products and dot products (M or N is 1) and tiny products (at most
//   kInlineProducts multiply-adds) become a multiply and a sum, which the scheduler fuses into
//   one generated reduction with its producers and consumers: a BLAS call has no data to reuse
//   there and costs a call, a buffer for each operand and, inside a loop, the loop's compiled
//   form (loop_ir.h: only loops of kernels compile whole).
// - Except a float matrix-vector product whose matrix is large (kLibraryMatrixElements) and
//   a graph input BLAS reads where it lies (through a transpose, a slice, a reshape of it as it
//   lies): no producer fuses into it, and BLAS's gemv (extern/matmul.cpp) streamed the matrix
//   1.6-1.9x faster per thread than the generated reduction (1500x1800 float64 on one core of
//   a 2-core EPYC: 0.33 ms against 0.52-0.67 ms, A @ x and x @ A). On a GPU
//   (inline_matrix_vector_products) every matrix-vector product stays generated.
// - Larger integer products stay matmuls on the CPU: no BLAS computes them, and
//   extern/integer_matmul.cpp runs them in the order i, k, j (b read stride-1, the result row
//   accumulated in cache); the generated reduction's i, j, k read b down its columns (int64
//   256^3: 29 ms against eager torch's 3.9). The GPU inlines them (inline_integer_matmuls:
//   cuBLAS has no int64 GEMM).
// - A batched product whose right operand is one matrix ((NR, NQ, M, K) @ (K, N)) becomes one
//   GEMM over the merged batch rows ((NR * NQ * M, K) @ (K, N)), not one small GEMM per batch.
#include <algorithm>

#include "ir/builder.h"
#include "ir/size_choices.h"
#include "passes/passes.h"
#include "passes/rewrite_nodes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

constexpr int64_t kInlineProducts = 4096;
// Matrices of fewer elements than this stay generated reductions: there (cache-resident) the
// two forms took the same time (362x362 float64 on one core: 10-11 us each way), below it the
// call and the buffers cost more than the generated loop loses.
constexpr int64_t kLibraryMatrixElements = int64_t{1} << 17;

int64_t extent(const ir::Shape& shape, size_t from_end) {
  return shape[shape.size() - from_end].constant();
}

// `graph` with each matmul replaced by what `rewrite` builds from its (mapped) operands.
template <class Rewrite>
ir::Graph rewrite_matmuls(const ir::Graph& graph, Rewrite&& rewrite) {
  return rewrite_nodes(graph, [&](ir::Builder& b, ValueId id, const Node& node,
                                  std::vector<ValueId> inputs) -> std::optional<ValueId> {
    if (node.op != Op::matmul || node.inputs.size() != 2) return std::nullopt;  // an epilogue's
    return rewrite(b, id, node, std::move(inputs));
  });
}

// The dimensions K is made of: those a reshape of the left operand merged into it (a
// tensordot's (j, i, k) -> (j, i * k)), else K alone. Summed over one by one, each loop reads
// with its own stride; over the merged K, every element read computed i // n and i % n.
ir::Shape depth_dimensions(const ir::Builder& b, ValueId left) {
  const Node& node = b.node(left);
  const ir::Shape whole{node.shape.back()};
  if (node.op != Op::reshape || !node.shape.back().is_constant()) return whole;
  const ir::Shape& source = b.node(node.inputs[0]).shape;
  const size_t kept = node.shape.size() - 1;  // [batch.., M] stay as they are
  if (source.size() < kept + 2 || !std::equal(node.shape.begin(), node.shape.end() - 1,
                                              source.begin()))
    return whole;
  int64_t product = 1;
  for (size_t d = kept; d < source.size(); ++d) {
    if (!source[d].is_constant()) return whole;
    product *= source[d].constant();
  }
  if (product != node.shape.back().constant()) return whole;
  return ir::Shape(source.begin() + static_cast<std::ptrdiff_t>(kept), source.end());
}

// Whether `id` is a graph input (or constant array) that BLAS reads in place: the value itself
// or a chain of views on it, reshapes of it as it lies (row-major, so any reshape is strides)
// under transposes and unit-step slices. A computed matrix is left to the generated reduction,
// which fuses its producer rather than writing it out for the library.
bool library_operand(const ir::Graph& graph, ValueId id) {
  bool reshaped = false;  // a reshape above: a permute or slice under it would need a copy
  for (;;) {
    const Node& node = graph.node(id);
    switch (node.op) {
      case Op::parameter:
      case Op::constant_array: return true;
      case Op::reshape: reshaped = true; break;
      case Op::permute:
        if (reshaped) return false;
        break;
      case Op::slice:
        for (int64_t step : node.attrs.steps)
          if (step != 1) return false;
        if (reshaped) return false;
        break;
      default: return false;
    }
    id = node.inputs[0];
  }
}

// Whether the matrix-vector product `node` (M or N is 1) of `left` and `right` runs as BLAS's
// gemv: float, no batch, its matrix (left when N is 1, right when M is 1) large and an input
// read in place.
bool library_matrix_vector(ir::Builder& b, const Node& node, ValueId left, ValueId right) {
  if (node.dtype != DType::Float32 && node.dtype != DType::Float64) return false;
  const bool one_column = extent(node.shape, 1) == 1, one_row = extent(node.shape, 2) == 1;
  if (one_row == one_column || node.shape.size() != 2 || b.node(left).shape.size() != 2 ||
      b.node(right).shape.size() != 2)
    return false;  // a dot product (nothing to stream), or batched
  const ValueId matrix = one_column ? left : right;
  return ir::size_choice(ir::element_count(b.node(matrix).shape) >= kLibraryMatrixElements) &&
         library_operand(b.graph(), matrix);
}

}  // namespace

// a [.., M, K] @ b [.., K, N] as sum_k a[.., M, K, 1] * b[.., 1, K, N] (K as the dimensions a
// reshape merged into it, where it did).
ValueId inline_product(ir::Builder& b, const ir::Shape& result_shape, ValueId left,
                       ValueId right) {
  const ir::Shape depth = depth_dimensions(b, left);
  ir::Shape left_shape = b.node(left).shape, right_shape = b.node(right).shape;
  left_shape.pop_back();
  left_shape.insert(left_shape.end(), depth.begin(), depth.end());
  left_shape.push_back(ir::Dim(1));
  right_shape.erase(right_shape.end() - 2);
  right_shape.insert(right_shape.end() - 1, ir::Dim(1));
  right_shape.insert(right_shape.end() - 1, depth.begin(), depth.end());
  ir::Shape full = result_shape;  // [batch.., M, N] -> [batch.., M, K.., N]
  full.insert(full.end() - 1, depth.begin(), depth.end());
  ValueId product = b.binary(Op::mul, b.broadcast(b.reshape(left, left_shape), full),
                             b.broadcast(b.reshape(right, right_shape), full));
  std::vector<int64_t> axes;
  for (size_t k = 0; k < depth.size(); ++k)
    axes.push_back(static_cast<int64_t>(full.size() - 1 - depth.size() + k));
  return b.reduce(Op::sum, product, axes, false);
}

ir::Graph canonicalize_matmul(const ir::Graph& graph) {
  return rewrite_matmuls(graph, [](ir::Builder& b, ValueId, const Node& node,
                                   std::vector<ValueId> inputs) {
    const ir::Shape& left = b.node(inputs[0]).shape;
    const ir::Shape& right = b.node(inputs[1]).shape;
    int64_t rows = extent(node.shape, 2), columns = extent(node.shape, 1), depth = extent(left, 1);
    int64_t products = ir::element_count(node.shape) * depth;
    if (ir::size_choice(products <= kInlineProducts) ||
        ((rows == 1 || columns == 1) &&
         !library_matrix_vector(b, node, inputs[0], inputs[1])))
      return inline_product(b, node.shape, inputs[0], inputs[1]);
    if (left.size() > 2 && right.size() == 2) {
      int64_t batch_rows = ir::element_count(left) / depth;
      ValueId merged = b.reshape(inputs[0], {ir::Dim(batch_rows), ir::Dim(depth)});
      return b.reshape(b.matmul(merged, inputs[1]), node.shape);
    }
    return b.copy_node(node, std::move(inputs));
  });
}

ir::Graph inline_matrix_vector_products(const ir::Graph& graph) {
  return rewrite_matmuls(graph, [](ir::Builder& b, ValueId, const Node& node,
                                   std::vector<ValueId> inputs) {
    if (extent(node.shape, 2) == 1 || extent(node.shape, 1) == 1)
      return inline_product(b, node.shape, inputs[0], inputs[1]);
    return b.copy_node(node, std::move(inputs));
  });
}

ir::Graph inline_integer_matmuls(const ir::Graph& graph) {
  return rewrite_matmuls(graph, [](ir::Builder& b, ValueId, const Node& node,
                                   std::vector<ValueId> inputs) {
    if (is_integer(node.dtype)) return inline_product(b, node.shape, inputs[0], inputs[1]);
    return b.copy_node(node, std::move(inputs));
  });
}

ir::Graph inline_matmuls(const ir::Graph& graph, const std::set<ValueId>& chosen) {
  return rewrite_matmuls(graph, [&](ir::Builder& b, ValueId id, const Node& node,
                                    std::vector<ValueId> inputs) {
    if (chosen.count(id)) return inline_product(b, node.shape, inputs[0], inputs[1]);
    return b.copy_node(node, std::move(inputs));
  });
}

}  // namespace kiln::passes
