// Scatters whose indices never repeat: their stores may run in any order, on many threads at
// once. NumPy's basic-indexing assignment (`u[1:-1] = ...`, `x[::2] = ...`) traces as a scatter
// at `step * iota + start`; a scatter is ordered only because a repeated index must take its
// last update, and these have none. (Ordered, a 1-D heat equation's time step ran on one GPU
// thread: 18 ms a step for a million elements.)
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace kiln::sched {

// Whether `index`, a scatter's index input into an axis of `size` elements, never repeats: one
// index (`out[i] = row` in a loop, whatever i is at run time), or a * iota + b with a != 0
// (through casts, reshapes and broadcasts that keep its one dimension), its values all in
// [0, size) or all in [-size, 0): distinct positions after NumPy's wrap of negative indices,
// none clamped.
bool distinct_indices(const ir::Graph& graph, ir::ValueId index, int64_t size);

// Whether an index of this shape names one position: 0-d, or every dimension 1.
bool one_position(const ir::Shape& index_shape);

// index = slope * iota + offset, as distinct_indices proves it; nullopt where it does not.
struct SliceIndex {
  int64_t slope = 0, offset = 0;
};
std::optional<SliceIndex> slice_index(const ir::Graph& graph, ir::ValueId index, int64_t size);

}  // namespace kiln::sched
