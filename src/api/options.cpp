#include "api/options.h"

#include "kiln/error.h"

namespace kiln::api {

const std::vector<ModeSettings>& modes() {
  static const std::vector<ModeSettings>& table = *new std::vector<ModeSettings>{
      {"default",
       "fused C++/OpenMP kernels, heuristic parallel and SIMD choices; on a GPU, a function "
       "whose calls are host-bound (queueing its launches takes longer than running them) "
       "replays a CUDA graph",
       false, false, CudaGraphs::WhenHostBound},
      {"reduce-overhead",
       "default + outputs from a per-executable pool of recycled buffers and the shortest "
       "call path (no allocation per call in steady state); on a GPU, every call replays a "
       "CUDA graph",
       true, false, CudaGraphs::Always},
      {"max-autotune",
       "reduce-overhead + each kernel timed with one thread and with all threads on the first "
       "call; the faster choice is kept and stored in the cache entry",
       true, true, CudaGraphs::Always},
      {"max-autotune-no-cudagraphs", "max-autotune without CUDA graphs on a GPU", true, true,
       CudaGraphs::Never},
  };
  return table;
}

const ModeSettings& mode_settings(const std::string& mode) {
  std::string valid;
  for (const ModeSettings& settings : modes()) {
    if (settings.name == mode) return settings;
    valid += (valid.empty() ? "" : ", ") + std::string(settings.name);
  }
  throw Error(ErrorKind::Value, "kiln: unknown mode '" + mode + "' (valid: " + valid + ")");
}

const std::vector<OptionDescription>& option_descriptions() {
  static const std::vector<OptionDescription>& table = *new std::vector<OptionDescription>{
      {"mode", "default | reduce-overhead | max-autotune | max-autotune-no-cudagraphs"},
      {"cache_dir", "directory of the disk cache (default $KILN_CACHE_DIR, else ~/.cache/kiln)"},
      {"disk_cache",
       "keep compiled kernels on disk across processes (default true; false: a private "
       "directory removed at exit)"},
      {"num_threads",
       "threads of parallel loops (0: the usable cores, capped by OMP_NUM_THREADS; 1: no "
       "OpenMP regions at all)"},
      {"allow_reassociation", "vectorised float reductions (default true)"},
      {"device",
       "'cpu' (default) or 'cuda': where the compiled kernels run (CUDA: NVRTC-compiled "
       "kernels on the GPU, NumPy arrays copied in and out)"},
      {"unsupported_ops",
       "torch.compile backend: 'eager' (default) runs ATen ops kiln cannot convert in PyTorch "
       "between compiled parts; 'error' raises kiln.Unsupported naming them"},
  };
  return table;
}

void check_options(const Options& options) {
  mode_settings(options.mode);
  if (options.num_threads < 0)
    throw Error(ErrorKind::Value, "kiln: num_threads must be >= 0 (0: every usable core), got " +
                                      std::to_string(options.num_threads));
  if (options.device != "cpu" && options.device != "cuda")
    throw Error(ErrorKind::Value, "kiln: unknown device '" + options.device + "' (valid: cpu, cuda)");
}

}  // namespace kiln::api

namespace kiln {

std::string list_mode_options() {
  std::string text;
  for (const api::ModeSettings& settings : api::modes())
    text += std::string(settings.name) + ": " + std::string(settings.description) + "\n";
  return text;
}

std::string list_options() {
  std::string text;
  for (const api::OptionDescription& option : api::option_descriptions())
    text += std::string(option.name) + ": " + std::string(option.description) + "\n";
  return text;
}

}  // namespace kiln
