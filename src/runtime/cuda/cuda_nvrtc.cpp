// NVRTC, the CUDA runtime compiler, opened with dlopen on first use. It needs no GPU, so kernels
// compile (and their compile errors are found) on machines without one.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_libraries.h"
#include "runtime/library_loading.h"
#include "runtime/private_files.h"
#include "runtime/process.h"

namespace kiln::runtime::cuda {
namespace {

using nvrtcResult = int;
using nvrtcProgram = struct nvrtcProgram_st*;

constexpr nvrtcResult kNvrtcSuccess = 0;  // NVRTC_SUCCESS
constexpr size_t kMaxLogInMessage = 4000;
constexpr size_t kMaxSourceBytes = size_t(64) << 20;  // past what kiln generates for a unit

struct NvrtcApi {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  const char* (*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name,
                                    int header_count, const char* const* headers,
                                    const char* const* include_names);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int option_count,
                                     const char* const* options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin);
};

struct NvrtcState {
  NvrtcApi api{};
  std::string unavailable_reason;  // empty when loaded
  int version = 0;
  std::string library_path;  // the file loaded, for kiln-nvrtc
};

std::string& chosen_library() {  // use_nvrtc_library's
  static std::string& path = *new std::string();
  return path;
}

bool resolve_all(void* library, NvrtcApi& api, std::string& missing) {
  return detail::resolve_symbol(library, "nvrtcVersion", api.nvrtcVersion, missing) &&
         detail::resolve_symbol(library, "nvrtcGetErrorString", api.nvrtcGetErrorString, missing) &&
         detail::resolve_symbol(library, "nvrtcCreateProgram", api.nvrtcCreateProgram, missing) &&
         detail::resolve_symbol(library, "nvrtcDestroyProgram", api.nvrtcDestroyProgram, missing) &&
         detail::resolve_symbol(library, "nvrtcCompileProgram", api.nvrtcCompileProgram, missing) &&
         detail::resolve_symbol(library, "nvrtcGetProgramLogSize", api.nvrtcGetProgramLogSize, missing) &&
         detail::resolve_symbol(library, "nvrtcGetProgramLog", api.nvrtcGetProgramLog, missing) &&
         detail::resolve_symbol(library, "nvrtcGetCUBINSize", api.nvrtcGetCUBINSize, missing) &&
         detail::resolve_symbol(library, "nvrtcGetCUBIN", api.nvrtcGetCUBIN, missing);
}

// NVRTC opens its builtins library (libnvrtc-builtins.so.<major>.<minor>) by name at its first
// compile, through the system's search path, which does not know a folder kiln found NVRTC in:
// loading it from there first makes that dlopen find the copy already loaded.
void preload_builtins(const std::string& nvrtc_path) {
  size_t slash = nvrtc_path.rfind('/');
  if (slash == std::string::npos) return;  // found through the search path: so are its builtins
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(nvrtc_path.substr(0, slash), error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("libnvrtc-builtins.so.", 0) == 0)
      open_library(entry.path().string(), RTLD_NOW | RTLD_GLOBAL);
  }
}

// Never throws: a failure becomes unavailable_reason, naming every candidate tried.
void load_nvrtc(NvrtcState& state) {
  static NvrtcApi* api = &state.api;  // for the candidate check, which takes no context
  auto accept = [](void* handle) {
    std::string missing;
    if (!resolve_all(handle, *api, missing)) return "lacks " + missing;
    int major = 0, minor = 0;
    return api->nvrtcVersion(&major, &minor) == kNvrtcSuccess ? std::string()
                                                              : std::string("nvrtcVersion failed");
  };
  std::string path, tried;
  void* library = nullptr;
  if (!chosen_library().empty()) {
    path = tried = chosen_library();
    library = open_library(path, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr && !accept(library).empty()) library = nullptr;
  } else {
    library = detail::open_nvidia_library({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
                                          {"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"}, path,
                                          tried, accept);
  }
  if (library == nullptr) {
    state.unavailable_reason =
        "kiln: NVRTC (the CUDA runtime compiler) not found; tried " + tried +
        ". Install the CUDA toolkit or the pip package nvidia-cuda-nvrtc, and point $CUDA_HOME "
        "or $KILN_NVRTC_DIR (a library folder or site-packages) at it";
    return;
  }
  int major = 0, minor = 0;
  state.api.nvrtcVersion(&major, &minor);
  state.version = major * 1000 + minor * 10;
  state.unavailable_reason.clear();
  Dl_info info{};
  state.library_path = dladdr(reinterpret_cast<void*>(state.api.nvrtcVersion), &info) != 0 &&
                               info.dli_fname != nullptr
                           ? info.dli_fname
                           : path;
  preload_builtins(path);
}

const NvrtcState& nvrtc() {
  static std::once_flag once;
  static NvrtcState* state = nullptr;  // never destroyed
  std::call_once(once, [] {
    auto* loaded = new NvrtcState;
    try {
      load_nvrtc(*loaded);
    } catch (...) {
      loaded->unavailable_reason = "kiln: loading NVRTC failed";
    }
    state = loaded;
  });
  if (!state->unavailable_reason.empty()) {
    throw Error(ErrorKind::Unsupported, state->unavailable_reason);
  }
  return *state;
}

// Destroys the program when compile_cubin returns or throws.
class ProgramGuard {
 public:
  ProgramGuard(const NvrtcApi& api, nvrtcProgram program) : api_(api), program_(program) {}
  ~ProgramGuard() { api_.nvrtcDestroyProgram(&program_); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_;
};

void check_nvrtc(const NvrtcApi& api, nvrtcResult result, const std::string& call) {
  if (result == kNvrtcSuccess) return;
  throw Error(ErrorKind::Internal,
              "kiln: " + call + " failed: " + api.nvrtcGetErrorString(result));
}

std::string program_log(const NvrtcApi& api, nvrtcProgram program) {
  size_t size = 0;
  if (api.nvrtcGetProgramLogSize(program, &size) != kNvrtcSuccess || size <= 1) return "";
  std::string log(size, '\0');
  if (api.nvrtcGetProgramLog(program, log.data()) != kNvrtcSuccess) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// A failed compile's log without its warnings (unused variables: many), which would push the
// errors out of the message: each diagnostic starts at a line "<file>(<line>): <kind> ...".
std::string errors_only(const std::string& log) {
  std::istringstream lines(log);
  std::string line, kept;
  bool keeping = true;
  while (std::getline(lines, line)) {
    const size_t colon = line.find("): ");
    if (colon != std::string::npos && line.find('(') < colon)
      keeping = line.compare(colon + 3, 5, "error") == 0 ||
                line.compare(colon + 3, 18, "catastrophic error") == 0;
    else if (line.rfind("Remark", 0) == 0)
      keeping = false;
    else if (line.find(" detected in the compilation") != std::string::npos)
      keeping = true;
    if (keeping) kept += line + "\n";
  }
  return kept.empty() ? log : kept;
}

}  // namespace

int nvrtc_version() { return nvrtc().version; }

void use_nvrtc_library(const std::string& path) { chosen_library() = path; }

const std::string& nvrtc_helper_path() {
  static const std::string& path = *new std::string([] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtc_version), &info) == 0 || info.dli_fname == nullptr)
      return std::string();
    const std::string library = info.dli_fname;
    const size_t slash = library.rfind('/');
    const std::string candidate =
        slash == std::string::npos ? "" : library.substr(0, slash) + "/kiln-nvrtc";
    return !candidate.empty() && is_executable_file(candidate) ? candidate : std::string();
  }());
  return path;
}

void compile_cubin_file(const std::string& source_path, const std::string& object_path,
                        int architecture, const std::vector<std::string>& extra_options) {
  std::string source, why;
  const Descriptor file = open_private_file(source_path, &why);
  if (!file.valid() || !read_all(file.get(), source, kMaxSourceBytes))
    throw Error(ErrorKind::Internal,
                "kiln: cannot read the CUDA source " + source_path + " " + why);
  write_private_file(object_path,
                     compile_cubin(source, "kernel.cu", architecture, extra_options));
}

const std::string& nvrtc_library_path() { return nvrtc().library_path; }

const std::vector<std::string>& kernel_options() {
  static const std::vector<std::string>& options = *new std::vector<std::string>({"-std=c++17", "--fmad=false"});
  return options;
}

std::string compiler_identity() {
  std::string identity = "nvrtc " + std::to_string(nvrtc_version());
  for (const std::string& option : kernel_options()) identity += " " + option;
  return identity;
}

std::string compile_cubin(const std::string& source, const std::string& name, int architecture,
                          const std::vector<std::string>& extra_options) {
  if (architecture < 10 || architecture > 999) {
    throw Error(ErrorKind::Value, "kiln: cannot compile " + name + " for architecture " +
                                      std::to_string(architecture) +
                                      " (expected compute capability major*10 + minor, e.g. 90)");
  }
  const NvrtcApi& api = nvrtc().api;
  nvrtcProgram program = nullptr;
  check_nvrtc(api,
              api.nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram for " + name);
  ProgramGuard guard(api, program);

  std::vector<std::string> options = {"--gpu-architecture=sm_" + std::to_string(architecture)};
  options.insert(options.end(), kernel_options().begin(), kernel_options().end());
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());

  nvrtcResult result = api.nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()),
                                               option_pointers.data());
  if (result != kNvrtcSuccess) {
    std::string log = errors_only(program_log(api, program));
    if (log.empty()) log = api.nvrtcGetErrorString(result);
    if (log.size() > kMaxLogInMessage) {
      log = log.substr(0, kMaxLogInMessage) + "\n... (" +
            std::to_string(log.size() - kMaxLogInMessage) + " more characters of log)";
    }
    throw Error(ErrorKind::Internal, "kiln: NVRTC could not compile " + name + ": " + log);
  }

  size_t size = 0;
  check_nvrtc(api, api.nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize for " + name);
  std::string cubin(size, '\0');
  check_nvrtc(api, api.nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN for " + name);
  return cubin;
}

}  // namespace kiln::runtime::cuda
