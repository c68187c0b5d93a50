// The one list of mode words and the one list of options (DESIGN §2): kiln.list_mode_options(),
// kiln.list_options(), the Python options dict and the compile driver all read these tables.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kiln/compile.h"

namespace kiln::api {

// When a GPU run replays a captured CUDA graph (runtime/cuda/cuda_executable.h).
enum class CudaGraphs { Never, WhenHostBound, Always };

struct ModeSettings {
  std::string_view name;
  std::string_view description;
  bool reduce_overhead = false;  // outputs from a reused pool, no per-call allocation
  bool autotune = false;         // time candidate schedules on first compile, cache the winner
  CudaGraphs cuda_graphs = CudaGraphs::WhenHostBound;
};

const std::vector<ModeSettings>& modes();
// Throws Error(Value) naming the valid words for an unknown mode.
const ModeSettings& mode_settings(const std::string& mode);

struct OptionDescription {
  std::string_view name;
  std::string_view description;
};
const std::vector<OptionDescription>& option_descriptions();

// Throws Error(Value) for settings that cannot work (unknown mode, negative threads).
void check_options(const Options& options);

}  // namespace kiln::api
