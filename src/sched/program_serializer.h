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

// Constant buffers' bytes: in the serialised form, or left out because they travel elsewhere
// (the generated library exports them under their buffer names). A program read back without
// them has null constant_data until the reader restores it.
enum class ConstantBytes : uint8_t { Included, Elsewhere };

std::string serialize_program(const Program& program,
                              ConstantBytes constants = ConstantBytes::Included);
Program deserialize_program(std::string_view bytes);

// One kernel's code without its name and comments (the structural key of kernel_hash.h).
std::string serialize_kernel(const Kernel& kernel);

}  // namespace kiln::sched
