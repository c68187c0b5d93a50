// How many SIMD lanes each reduction is split across (Stmt::split_lanes: independent
// accumulators, merged at the end) and which float sums add in blocks (Stmt::blocked_sum). A
// row takes four registers' worth of lanes, or for a short row the most registers (four, two,
// one) that it fills twice: a softmax over 100 keys runs two registers of float32 lanes, not
// scalar code. A decision on sizes, made here rather than in the emitter so that code for other
// sizes can follow the hints' (api/size_generic_graph.h); the emitter splits where its code
// allows (no body statements, not inside a SIMD loop).
#pragma once
#include <cstdint>

#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Float sums take kBlockSteps steps per lane in each block (codegen/cpp/reduce_emitter.cpp).
constexpr int64_t kBlockSteps = 64;

// Four SIMD registers of a reduction statement's widest accumulator: a long row's split.
int64_t reduction_lanes(const Stmt& s, const target::Target& target);

// The lanes of a blocked sum whose last loop is too short to split (one register's worth): its
// passes share them until they hold a block.
int64_t short_pass_lanes(const Stmt& s, const target::Target& target);

// Returns whether any reduction was marked.
bool mark_reduction_lanes(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
