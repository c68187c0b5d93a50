// Which reductions are long enough to split across SIMD lanes (Stmt::split_lanes: independent
// accumulators, four registers' worth, merged at the end) and which float sums long enough to
// add in blocks (Stmt::blocked_sum). A decision on sizes, made here rather than in the emitter
// so that code for other sizes can follow the hints' (api/size_generic_graph.h); the emitter
// splits where its code allows (no body statements, not inside a SIMD loop).
#pragma once
#include <cstdint>

#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Float sums take kBlockSteps steps per lane in each block (codegen/cpp/reduce_emitter.cpp).
constexpr int64_t kBlockSteps = 64;

// The lanes of a reduction statement's split: four SIMD registers of its widest accumulator.
int64_t reduction_lanes(const Stmt& s, const target::Target& target);

// The lanes of a blocked sum whose last loop is too short to split (one register's worth): its
// passes share them until they hold a block.
int64_t short_pass_lanes(const Stmt& s, const target::Target& target);

// Returns whether any reduction was marked.
bool mark_reduction_lanes(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
