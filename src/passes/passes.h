// The graph passes, each a function Graph -> Graph in its own file. The pipeline (pipeline.h)
// runs them in order; each can be switched off with KILN_DISABLE_PASSES=name,name to bisect a
// miscompile. None changes results beyond the floating-point reassociation options allow.
#pragma once
#include <set>

#include "ir/builder.h"
#include "ir/graph.h"

namespace kiln::passes {

// Algebraic simplification and canonicalisation by rewrite rules: x+0, x*1, x*0 (integers),
// double negation, cast to the same dtype, reshape/permute/broadcast/slice chains collapsed,
// identity slices/permutes/reshapes removed, constant operands moved right for commutative ops.
ir::Graph simplify(const ir::Graph& graph);
// Common-subexpression elimination: identical (op, dtype, shape, inputs, attrs) nodes merged.
ir::Graph eliminate_common_subexpressions(const ir::Graph& graph);
// Dead-code elimination: only nodes reachable from the outputs are kept (parameters always).
ir::Graph eliminate_dead_code(const ir::Graph& graph);
// Work that only a branch (a loop of at most one iteration: a lowered cond, a side the tracer
// captured) reads, moved into it: it runs only when the branch is taken.
ir::Graph sink_into_branches(const ir::Graph& graph);
// A sort's values read at the positions of an argsort of the same operand, axis, direction and
// extent (one sort where a graph uses both results).
ir::Graph share_sorts(const ir::Graph& graph);
// A sort or argsort read only at one end of its rows (np.argsort(x)[-n:], argpartition's first
// n) as a top-k of that end.
ir::Graph sort_ends(const ir::Graph& graph);
// A sort or argsort read only at a few single positions of its rows (np.median, np.quantile,
// np.partition(x, k)[k]) as a selection of those positions (nth_element, not a full sort).
ir::Graph sort_picks(const ir::Graph& graph);
// Constant folding: nodes whose operands are all constants and whose result is small
// (<= 4096 elements) are evaluated by the interpreter and replaced by constants.
ir::Graph fold_constants(const ir::Graph& graph);
// Matmul canonicalisation: matrix-vector, dot and tiny products as a generated
// multiply-sum (but large float matrix-vector products of an input matrix: BLAS's gemv); a
// batch of products with one right matrix as one GEMM over the merged rows.
ir::Graph canonicalize_matmul(const ir::Graph& graph);
// Every matrix-vector product as a generated multiply-sum (GPU only: the generated reductions
// stream the matrix there; the CPU keeps canonicalize_matmul's gemv calls).
ir::Graph inline_matrix_vector_products(const ir::Graph& graph);
// Every integer product as a generated multiply-sum (GPU only: no cuBLAS GEMM computes them).
ir::Graph inline_integer_matmuls(const ir::Graph& graph);
// a [.., M, K] @ b [.., K, N] as a multiply and a sum over K (a generated reduction).
ir::ValueId inline_product(ir::Builder& b, const ir::Shape& result_shape, ir::ValueId left,
                           ir::ValueId right);
// `graph` with the matmuls `chosen` as inline products (max-autotune's choices).
ir::Graph inline_matmuls(const ir::Graph& graph, const std::set<ir::ValueId>& chosen);
// Pointwise work on a transposed value that only a matmul operand reads (attention's kᵀ · s)
// computed in its operands' order, the matmul reading the result transposed.
ir::Graph order_matmul_operands(const ir::Graph& graph);
// Depthwise convolutions of three spatial dimensions as a sum of the kernel's taps over strided
// views (GPU only: cuDNN runs grouped 3-d convolutions one group at a time).
ir::Graph depthwise_convolutions(const ir::Graph& graph);
// Channels-last convolutions: float32 convolutions compute in (N, *spatial, C), oneDNN's
// layout, and the pointwise work, pooling windows and reductions after them follow it, so that
// activations pass from one convolution to the next without reorders.
ir::Graph channels_last(const ir::Graph& graph);
// The same, with a training graph's convolution gradients channels-last too (grad_output, the
// saved input and the input gradient).
ir::Graph channels_last_gradients(const ir::Graph& graph);
// cuDNN's filters channels-last (Attrs::filters_last): each channels-last convolution and
// gradient takes its weight, and gives the weight's gradient, as (O, *kernel, C); on CUDA only
// (oneDNN reorders any filter into its own blocked layout).
ir::Graph channels_last_filters(const ir::Graph& graph);
// Matmul epilogues (CUDA only): a float product of matrices plus a bias along its rows, and a
// ReLU of that, as one matmul node (bias operand, Attrs::relu) that cuBLASLt computes whole.
ir::Graph fuse_matmul_epilogues(const ir::Graph& graph);

}  // namespace kiln::passes
