// Extern ops are dispatched through one table, by op: each entry runs a library kernel on whole
// buffers. Adding one (convolution, sort, FFT) is one entry here plus its implementation file.
#pragma once
#include <vector>

#include "extern/strided_operand.h"
#include "sched/loop_ir.h"

namespace kiln::externs {

// Runs `call` on the buffers' memory (`table[b]`: buffer b's data). Error(Internal) for an op
// without an entry.
// Input k of `call` in memory `table`: its buffer, or the strided view of it the scheduler chose.
StridedOperand extern_operand(const sched::ExternCall& call,
                              const std::vector<sched::Buffer>& buffers, char* const* table,
                              size_t k);

void run_extern_call(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table);

}  // namespace kiln::externs
