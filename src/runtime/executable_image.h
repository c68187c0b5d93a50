// What an Executable needs besides its library: the Program and how each kernel is called.
// Serialised into the generated library itself (symbol kiln_executable_image), so the disk
// cache's checksum covers it and a hit in a fresh process loads without scheduling or emitting.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel_call.h"
#include "sched/loop_ir.h"

namespace kiln::runtime {

struct ExecutableImage {
  sched::Program program;
  std::vector<KernelCall> kernels;  // by Program::kernels index
};

// The library symbols that hold the image's bytes and their count.
inline constexpr const char* kImageSymbol = "kiln_executable_image";
inline constexpr const char* kImageSizeSymbol = "kiln_executable_image_size";

std::string serialize_image(const sched::Program& program, const std::vector<KernelCall>& kernels);
ExecutableImage deserialize_image(std::string_view bytes);

}  // namespace kiln::runtime
