// Horizontal fusion: independent elementwise kernels become one kernel (Inductor's combo and
// foreach kernels). A compiled optimizer step is one small kernel per parameter shape (62
// parameters of resnet18: 46 kernels), each a launch that a CUDA graph still runs one after
// another, most too small to fill the GPU; as parts of one kernel, the CUDA emitter gives them
// one launch whose blocks are split between them (codegen/cuda: combined launches).
//
// A kernel joins an earlier one (the head) when both are loops of plain stores (no reductions,
// scans, scatter-adds or ordered stores) and moving it up to the head's place changes nothing:
// it reads nothing that the head or a step between writes, writes nothing they read or write,
// and the arena bytes it writes are not those of a buffer they use (the buffer plan may have
// given a buffer that dies between them the same bytes). Graph loops end the search.
#pragma once
#include "sched/loop_ir.h"

namespace kiln::sched {

// The most kernels one kernel takes in: each a part of its launch's code.
constexpr size_t kMostJoinedKernels = 64;

// Whether `body` is loops of plain stores only (no reductions, scans, scatter-adds).
bool elementwise(const std::vector<Stmt>& body);

// Returns whether any kernel joined another.
bool join_independent_kernels(Program& program);

// Appends `from`'s statements to `into`'s, its expressions, loops, reductions and local arrays
// renumbered after `into`'s.
void append_kernel(Kernel& into, const Kernel& from);

}  // namespace kiln::sched
