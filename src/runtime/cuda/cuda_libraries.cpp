#include "runtime/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include <cstdlib>

#include "runtime/library_loading.h"

namespace kiln::runtime::cuda::detail {
namespace {

// The folders searched, in order; "" is the system's search path (and the loaded libraries).
std::vector<std::string> folders(const std::vector<std::string>& wheel_folders) {
  std::vector<std::string> result = {""};
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home && *cuda_home)
    result.push_back(std::string(cuda_home) + "/lib64");
  result.push_back("/usr/local/cuda/lib64");
  if (const char* list = std::getenv("KILN_NVRTC_DIR"); list && *list) {
    std::string text = list;
    for (size_t begin = 0; begin <= text.size();) {
      size_t end = text.find(':', begin);
      if (end == std::string::npos) end = text.size();
      std::string folder = text.substr(begin, end - begin);
      if (!folder.empty()) {
        result.push_back(folder);
        for (const std::string& wheel : wheel_folders) result.push_back(folder + "/" + wheel);
      }
      begin = end + 1;
    }
  }
  return result;
}

}  // namespace

void* open_nvidia_library(const std::vector<std::string>& names,
                          const std::vector<std::string>& wheel_folders, std::string& path,
                          std::string& tried, std::string (*accept)(void* handle)) {
  tried.clear();
  for (const std::string& folder : folders(wheel_folders))
    for (const std::string& name : names) {
      std::string candidate = folder.empty() ? name : folder + "/" + name;
      void* library = open_library(candidate, RTLD_NOW | RTLD_LOCAL);
      std::string refusal = library == nullptr ? "" : accept ? accept(library) : "";
      if (library != nullptr && refusal.empty()) {
        path = candidate;
        return library;
      }
      tried += (tried.empty() ? "" : ", ") + candidate + (refusal.empty() ? "" : " (" + refusal + ")");
    }
  return nullptr;
}

}  // namespace kiln::runtime::cuda::detail
