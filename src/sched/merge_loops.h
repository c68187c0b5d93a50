// merge_loops: two adjacent loops that only ever index memory as one longer loop become that
// loop.
//
//   for n < 16: for p < 3136: ... x[n * 200704 + p * 64 + c] ...
//
// becomes `for p < 50176: ... x[p * 64 + c] ...` when every index that uses n and p weighs n by
// exactly 3136 times p's weight (a channels-last batch norm's rows, a contiguous block of a
// pointwise kernel). A GPU thread then finds its element from one flat index with fewer 64-bit
// divisions (each ~20 instructions), and a column reduction's rows become one loop with no
// division at all: the generated kernels of resnet18's training step went from 1265 to 1199 us
// of GPU time a step on an H200. Perfectly nested Loop statements and neighbouring loops of a
// Reduce are merged; a variable used in any other way (an iota, a division, a comparison)
// keeps its loop. Target-neutral, run for CUDA only: on the CPU its loop passes were tuned on
// the loops as they are (two of resnet18's kernels ran 20-60% slower merged).
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

bool merge_loops(Kernel& kernel, const target::Target& target);

// Only the neighbouring loops of each Reduce (run for the CPU too): a reduction over (H, W) of
// contiguous data, an instance norm's statistics, becomes one loop of H * W, long enough for
// the SIMD lane split and its blocks (the lanes of a 32-element loop were refilled per row).
bool merge_reduction_loops(Kernel& kernel, const target::Target& target);

// Only innermost loops of stores shorter than 4 vectors (run for the CPU): a pointwise kernel
// over a conv weight (64, 3, 7, 7) or a 7x7 activation ran its SIMD loop over 7 or 3 elements
// (resnet18's Adam step 3x Inductor's time); merged, over 147 or 49.
bool merge_short_inner_loops(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched
