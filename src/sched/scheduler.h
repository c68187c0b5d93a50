// The scheduler: turns a graph into a Program of fused kernels and extern calls.
//
// Which nodes get a buffer ("materialized"): graph inputs and outputs, constant arrays, scans,
// scatters, extern ops (matmul) and their operands, and any reduction that cannot be placed
// inside its consumer's loops without recomputation (lowering.h). Everything else is inlined.
// Materialized nodes of equal shape that follow each other and do not read one another share
// one kernel (one loop nest, several stores), so sibling reductions run in one pass.
// Target-neutral: parallel loops, SIMD and hoisting are the target's loop passes
// (loop_passes.h), run after this.
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

// What the scheduler's choices depend on in the target.
struct ScheduleHints {
  // The inlined work (ops since the last buffer, costly ones counted 4 times) of an
  // elementwise value, no reduction in it, at which the value is computed once into a buffer
  // rather than inlined into each element of a broadcast of it (sched/materialize.h). The CPU
  // needs none: its loops hoist what an inner loop does not change (cpu::hoist_invariants). A
  // GPU thread per element recomputes what is inlined: one division is enough (numpy_fn's
  // normalised rows, broadcast against each other, were divided 409600 times per row).
  int64_t elementwise_broadcast = std::numeric_limits<int64_t>::max();
  // The CPU's matmul reads bfloat16 operands of a float32 product in place (oneDNN's bfloat16
  // kernels, extern/matmul.h): a bfloat16 linear layer's operands are not cast into float32
  // buffers first (a 2048x512 weight, transposed, on every call: 11x eager's time).
  bool narrow_matmul_operands = false;
};
ScheduleHints schedule_hints(const target::Target& target);

// input_strides[k]: element strides of graph input k (empty: row-major contiguous).
// fusion_notes (optional): one line per pair of neighbouring kernels that could not be one,
// saying why (KILN_LOGS=schedule).
// donated[k]: the input number output k may overwrite in place (sched/in_place.h), or -1.
Program schedule(const ir::Graph& graph, const std::vector<std::vector<int64_t>>& input_strides,
                 std::vector<std::string>* fusion_notes = nullptr,
                 const std::vector<int32_t>& donated = {}, const ScheduleHints& hints = {});

}  // namespace kiln::sched
