// Where NVIDIA's libraries are found: NVRTC, cuBLAS and cuDNN are opened with dlopen on first
// use, like the driver (cuda_driver.h), so one build of kiln runs with or without them.
// Internal to src/runtime/cuda/.
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

namespace kiln::runtime::cuda::detail {

// Opens the first of `names` (sonames, newest first) that loads, looking in order in: the
// process (a library torch or CuPy loaded already is found by its soname) and the system's
// library path; $CUDA_HOME/lib64; /usr/local/cuda/lib64; each folder of $KILN_NVRTC_DIR
// (':'-separated library folders or Python site-packages, under which pip's NVIDIA wheels keep
// their libraries in `wheel_folders`, e.g. "nvidia/cu13/lib"). Never dlclose'd. `accept(handle)`
// may reject a candidate (a missing symbol) by returning why; the search goes on.
// Returns the handle and sets `path`, or returns nullptr and sets `tried` to every candidate
// with its reason.
void* open_nvidia_library(const std::vector<std::string>& names,
                          const std::vector<std::string>& wheel_folders, std::string& path,
                          std::string& tried,
                          std::string (*accept)(void* handle) = nullptr);

// Resolves `symbol` of `library` into `function`; on failure names it in `missing` (the first
// one missing) and returns false.
template <typename Function>
bool resolve_symbol(void* library, const char* symbol, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (function == nullptr && missing.empty()) missing = symbol;
  return function != nullptr;
}

}  // namespace kiln::runtime::cuda::detail
