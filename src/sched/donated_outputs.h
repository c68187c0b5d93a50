// write_donated_outputs: an output computed element by element from the input it replaces is
// written into that input's memory (the caller donated it: an optimizer's parameters and
// moments, batch norm's running statistics, what AOTAutograd's graphs return as the new value
// of an input they mutate). The caller then copies nothing back, and the program reads and
// writes each element once (an Adam step moved 13 arrays' worth of memory where 7 do).
//
// Output k may go into donated input j (same dtype and shape, both row-major) when:
//   - one kernel writes the output, with plain stores at one index I, in a nest of loops with
//     no run-time bounds whose variables I all uses (but for loops of one iteration: an
//     extent-1 dimension, as a 1x1 convolution's weight has) and whose iterations are as many
//     as the output's elements: each element is written once;
//   - that kernel reads the input only at I and never reads the output;
//   - no later step touches the input (nothing else needs its old values);
//   - the program has no graph loops (their steps repeat).
// The output's stores then write the input's buffer and move to the end of their loop body, so
// that every read of the old value in an iteration comes before the write; the output's own
// buffer is dropped and the program's output k is input j's buffer (sched::Program).
// Scatters into a donated input are made in place earlier (sched/in_place.h).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "sched/loop_ir.h"

namespace kiln::sched {

// `donated` (by output: the input it may take, or -1) where output and input may share memory:
// an input given once, of the output's dtype and static shape, row-major (`input_strides`: []
// for contiguous), in a graph without loops (their steps repeat; loop bodies have their own
// in-place rules). Empty when none may.
std::vector<int32_t> usable_donations(const ir::Graph& graph,
                                      const std::vector<std::vector<int64_t>>& input_strides,
                                      const std::vector<int32_t>& donated);

// donated[k]: the input number output k may be written into, or -1. Returns whether any was.
bool write_donated_outputs(Program& program, const std::vector<int32_t>& donated);

// The first step that writes an input's buffer (program.steps.size(): none).
size_t first_input_write(const Program& program);
// Whether the runtime checks of the program's last `checks` output pairs (api/runtime_checks.h)
// are all computed before its first write into an input, in a program without graph loops: a
// run tests them there and raises before the caller's arrays change, as eager code would. An
// extern call that raises as it runs (solve's singular matrix) is such a check too.
bool checks_precede_input_writes(const Program& program, size_t checks);

}  // namespace kiln::sched
