// Graph loops in the Program: the body, scheduled as a Program of its own, is appended to the
// enclosing Program between a LoopBegin and a LoopEnd step (loop_ir.h), its buffers renumbered:
// its inputs and outputs become the enclosing buffers the binding names, its intermediates and
// constants new buffers of the enclosing Program (the enclosing buffer plan places them).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

struct LoopBinding {
  int32_t start = -1, stop = -1;  // int64 0-d buffers, or -1: the constants below
  int64_t start_value = 0, stop_value = 0;
  int64_t step = 1;
  int32_t induction = -1;        // int64 0-d buffer: body input 0
  int32_t condition = -1;        // a while loop's condition buffer (carried value 0), or -1
  std::vector<int32_t> inputs;   // the enclosing buffer of each body input (by number)
  std::vector<int32_t> outputs;  // the enclosing buffer each body output is written to
  std::vector<std::pair<int32_t, int32_t>> swaps;  // (carried, next) after each iteration
};

// `constant_prefix` renames the body's constants ("kiln_const<loop>_"): symbol names of one
// library must not collide.
void append_loop(Program& program, const Program& body, const LoopBinding& binding,
                 const std::string& constant_prefix);

}  // namespace kiln::sched
