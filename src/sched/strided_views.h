// Operands of extern calls read in place: a chain of view ops (permute, slice, broadcast,
// reshape) over a value that has a buffer is one strided view of that buffer, so BLAS reads
// `x.T` or `w[:, :k]` where it lies instead of a copy made by a kernel first (a linear layer's
// transposed weight, torch's `addmm(b, x, w.t())`, would otherwise be copied on every call).
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kiln::sched {

// An operand as the extern call reads it: `offset` elements into its buffer, then `shape` with
// element `strides` (zero for broadcast dimensions).
struct StridedView {
  int64_t offset = 0;
  std::vector<int64_t> shape, strides;
  bool operator==(const StridedView& other) const = default;
};

// The value under the chain of view ops that ends at `id` (`id` itself when it is no view).
// `through_casts`: the chain may hold a cast of bfloat16 to float32 too, which the CPU's matmul
// reads in place (extern/matmul.h; ScheduleHints::narrow_matmul_operands).
ir::ValueId view_base(const ir::Graph& graph, ir::ValueId id, bool through_casts = false);

// `id` as a view of `view_base(graph, id, through_casts)`, whose buffer has `base_strides`;
// nullopt when a reshape in the chain cannot be expressed with strides (it would need a copy).
std::optional<StridedView> strided_view(const ir::Graph& graph, ir::ValueId id,
                                        const std::vector<int64_t>& base_strides,
                                        bool through_casts = false);

// Whether `id` is reshapes only (one or more) of a graph input: a loop reads such an invariant
// in the input's buffer, with the strides strided_view() gives (sched/scheduler.cpp), rather
// than from a copy (forward substitution's lower.reshape(-1)[i * n + i]: 8 MB per call).
bool reshaped_input(const ir::Graph& graph, ir::ValueId id);

// Whether operand `k` of extern call `node` must lie packed in its own (row-major) order: the
// filter and the activations (or gradients) of a convolution computed channels-last with
// channels-last filters (Attrs::filters_last: cuDNN's NHWC kernels), which cuDNN would reorder
// on every call from any other strides, slower than kiln's transposes (a channels-first image
// fed to resnet18: 34 us of cuDNN's nchwToNhwc on an H200, twice in a training step), and a
// matmul's bias, which cuBLASLt reads as a packed vector.
bool needs_packed_operand(const ir::Node& node, size_t k);

// Whether operand `k` of extern call `node` is read through a widening cast of bfloat16
// (view_base's through_casts): a matmul's two factors, where `narrow_matmul_operands`.
bool reads_narrow_operand(const ir::Node& node, size_t k, bool narrow_matmul_operands);
// Whether `view` is packed row-major (extents of 1 aside).
bool packed_view(const StridedView& view);
// Whether `strides` lay `shape` out row-major (dimensions of extent 1 may have any stride).
bool row_major(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

}  // namespace kiln::sched
