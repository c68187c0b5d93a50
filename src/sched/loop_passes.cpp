#include "sched/loop_passes.h"

#include "sched/cpu/block_scatter_adds.h"
#include "sched/cpu/hoist_invariants.h"
#include "sched/cpu/interchange_reductions.h"
#include "sched/cpu/interleave_scans.h"
#include "sched/cpu/mark_parallel.h"
#include "sched/cpu/mark_reduction_lanes.h"
#include "sched/cpu/mark_vector_loops.h"
#include "sched/cpu/parallel_scatter_adds.h"
#include "sched/cpu/parallel_iterations.h"
#include "sched/cpu/peel_clamps.h"
#include "sched/guard_reductions.h"
#include "sched/induction_ranges.h"
#include "sched/merge_loops.h"
#include "sched/pin_masked_elements.h"
#include "sched/split_wide_loops.h"
#include "sched/trim_loops.h"

namespace kiln::sched {

const std::vector<LoopPass>& loop_passes(const target::Target& target) {
  // Interchange first: it builds the lane loops that the marking passes then see. Hoisting
  // last: the arrays it adds are per thread when placed inside a parallel loop.
  static const std::vector<LoopPass>& cpu = *new std::vector<LoopPass>{
      // Target-neutral, first: indexing by a graph loop's index, what a reduction must visit.
      {"fold_induction_clamps", nullptr, fold_induction_clamps},
      {"trim_loops", trim_loops},
      {"guard_reductions", guard_reductions},
      {"merge_reduction_loops", merge_reduction_loops},
      {"merge_short_inner_loops", merge_short_inner_loops},
      {"peel_clamps", cpu::peel_clamps},
      {"interchange_reductions", cpu::interchange_reductions},
      {"interleave_scans", cpu::interleave_scans},
      {"mark_parallel", cpu::mark_parallel},
      {"parallel_scatter_adds", nullptr, cpu::parallel_scatter_adds},
      {"mark_vector_loops", cpu::mark_vector_loops},
      {"block_scatter_adds", cpu::block_scatter_adds},
      {"mark_reduction_lanes", cpu::mark_reduction_lanes},
      {"hoist_invariants", cpu::hoist_invariants},
      {"parallel_iterations", nullptr, cpu::parallel_iterations},
  };
  // The GPU's emitter decides threads, vectors and splits itself, from the loops as merged.
  static const std::vector<LoopPass>& cuda = *new std::vector<LoopPass>{
      // One element's store where a mask names it: one thread's work (the CPU's trim_loops
      // bounds the same loop to [j, j + 1) at run time and drops the mask instead).
      {"pin_masked_elements", pin_masked_elements},
      {"merge_loops", merge_loops},
      {"split_wide_loops", split_wide_loops},
  };
  return target.kind == target::DeviceKind::Cpu ? cpu : cuda;
}

}  // namespace kiln::sched
