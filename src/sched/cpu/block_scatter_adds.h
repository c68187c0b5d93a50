// Scatter-adds in blocks. A loop whose body is one scatter-add (np.add.at, a histogram's
// counts) is not vectorized, since two iterations may add to one element; so the index and the
// value of each add, often most of its work (a histogram's bin, computed from the data), were
// computed one element at a time too. Here each block of kScatterBlock iterations first
// computes its indices and values into stack arrays in a SIMD loop, then adds them one by one
// in the original order; the iterations left over after the last whole block run as before.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

constexpr int64_t kScatterBlock = 256;

// Returns whether any loop was split into blocks.
bool block_scatter_adds(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
