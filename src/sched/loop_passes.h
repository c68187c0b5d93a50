// The loop-IR passes of a target, in the order they run: what depends on the machine
// (parallel axes, SIMD loops, loop interchange for SIMD lanes, hoisting into stack arrays) is
// decided here, after the target-neutral scheduler. The compile driver runs them one by one,
// named, logged, timed and switchable (KILN_DISABLE_PASSES) like the graph passes.
#pragma once
#include <string>
#include <vector>

#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

struct LoopPass {
  std::string name;
  // Rewrites one kernel in place; returns whether it changed anything.
  bool (*run)(Kernel& kernel, const target::Target& target);
  // Or, for a pass over the steps (graph loops), rewrites the whole program.
  bool (*run_program)(Program& program, const target::Target& target) = nullptr;
};

const std::vector<LoopPass>& loop_passes(const target::Target& target);

}  // namespace kiln::sched
