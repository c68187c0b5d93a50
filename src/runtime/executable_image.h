// What an Executable needs besides its library: the Program and how each kernel is called.
// Serialised into the generated library itself (symbol kiln_executable_image), so the disk
// cache's checksum covers it and a hit in a fresh process loads without scheduling or emitting.
#pragma once
#include <functional>
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
// The address of a symbol of the library the image came from (which exports the constant
// arrays under their buffer names), expected to hold `bytes` bytes.
using SymbolLookup = std::function<const void*(const std::string& name, int64_t bytes)>;
ExecutableImage deserialize_image(std::string_view bytes, const SymbolLookup& find_symbol);

}  // namespace kiln::runtime
