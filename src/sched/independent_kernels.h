// Horizontal fusion: independent elementwise kernels become one kernel (Inductor's combo and
// foreach kernels). A compiled optimizer step is one small kernel per parameter shape (62
// parameters of resnet18: 46 kernels), each a launch that a CUDA graph still runs one after
// another, most too small to fill the GPU; as parts of one kernel, the CUDA emitter gives them
// one launch whose blocks are split between them (codegen/cuda: combined launches).
//
// A kernel joins the earliest of the last few kernels (heads) when both are loops of plain
// stores (no reductions, scans, scatter-adds or ordered stores) and moving it up to the head's
// place changes nothing: it reads no memory that the head or a step between writes, and writes
// no memory they read or write (SharedMemory: the buffer plan may have given a buffer that dies
// between them the same arena bytes). Graph loops end the search.
#pragma once
#include "sched/loop_ir.h"

namespace kiln::sched {

// The most kernels one kernel takes in: each a part of its launch's code.
constexpr size_t kMostJoinedKernels = 64;
// The most kernels a later one may join at a time, the latest ones (an optimizer step's
// parameter updates read the step counts that an earlier kernel increments: they join one
// another, after it).
constexpr size_t kMostOpenHeads = 8;

// Whether two buffers may share memory: the same buffer, or arena buffers whose bytes meet,
// a graph loop's swapped buffers counted as either's bytes (after the loop a carried value's
// buffer points at whichever of the two its last iteration wrote). The two buffers of a swap
// that neither is in another never share: each points at one of the two allocations, never
// both at the same one.
class SharedMemory {
 public:
  explicit SharedMemory(const Program& program);
  bool operator()(int32_t a, int32_t b) const;

 private:
  std::vector<std::vector<std::pair<int64_t, int64_t>>> bytes_;  // by buffer
  std::vector<int32_t> partner_;  // by buffer: its one swap's other buffer, or -1
};

// Whether `body` is loops of plain stores only (no reductions, scans, scatter-adds).
bool elementwise(const std::vector<Stmt>& body);

// Returns whether any kernel joined another.
bool join_independent_kernels(Program& program);

// Each top-level store of `kernel` (a 0-d value: an optimizer's step count) as a loop of one
// iteration: the CUDA emitter runs a kernel with a statement that is not a loop as one block,
// statement after statement (its reductions feed the statements after them); as loops,
// independent stores are parts of one combined launch.
void wrap_top_level_stores(Kernel& kernel);

// Appends `from`'s statements to `into`'s, its expressions, loops, reductions and local arrays
// renumbered after `into`'s.
void append_kernel(Kernel& into, const Kernel& from);

}  // namespace kiln::sched
