// The buffer plan: assigns every intermediate buffer a byte offset in one arena, reusing memory
// of buffers whose last reader has run (first-fit by liveness over the program's steps).
#pragma once
#include "sched/loop_ir.h"

namespace kiln::sched {

// Fills Buffer::arena_offset for intermediates and Program::arena_bytes.
void plan_buffers(Program& program);

}  // namespace kiln::sched
