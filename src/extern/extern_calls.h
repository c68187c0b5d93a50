// Extern ops are dispatched through one table, by op: each entry runs a library kernel on whole
// buffers. Adding one (convolution, sort, FFT) is one entry here plus its implementation file.
#pragma once
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::externs {

// Runs `call` on the buffers' memory (`table[b]`: buffer b's data). Error(Internal) for an op
// without an entry.
void run_extern_call(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table);

}  // namespace kiln::externs
