// The loop-IR Program's serialised form (versioned binary), stored inside the compiled library
// (runtime/executable_image.h) so that a disk-cache hit in a fresh process runs without
// scheduling or emitting again.
// Reading checks every id and count: damaged bytes are an Error(Value), never a wild read.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

std::string serialize_program(const Program& program);
Program deserialize_program(std::string_view bytes);

// One kernel's code without its name and comments (the structural key of kernel_hash.h).
std::string serialize_kernel(const Kernel& kernel);

}  // namespace kiln::sched
