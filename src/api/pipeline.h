// compile_graph: the compile pipeline after tracing, as one straight table of contents.
//
//   verify -> graph passes (simplify, cse, fold, dce) -> cache key
//     on a disk-cache miss: schedule -> loop passes of the target -> emit -> toolchain
//     on a hit (also in a fresh process): nothing of the above; the library carries its image
//   -> load -> Executable
//
// Every stage is named, timed (KILN_LOGS=perf) and logged after it runs (KILN_LOGS=passes,
// "unchanged" when it did nothing); the optional ones (graph and loop passes) are switched off
// by KILN_DISABLE_PASSES=name,... for bisecting a miscompile. KILN_LOGS=schedule prints the
// program and says why neighbouring kernels were not fused.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "passes/pipeline.h"
#include "codegen/cpp/translation_units.h"
#include "codegen/cuda/cuda_emitter.h"
#include "runtime/disk_cache.h"
#include "runtime/executable.h"
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::runtime::cuda {
class Module;
}

namespace kiln::detail {

// Everything the pipeline produced for one input signature.
struct CompiledGraph {
  ir::Graph graph;  // after the passes
  std::string source;  // empty after a disk hit: source_text() reads the entry's copy
  std::string source_path;
  std::unique_ptr<runtime::Executable> executable;

  std::string source_text() const;
  std::string graph_text() const;  // the graph, printed (made when asked: a new size skips it)
};

// The stages after tracing, usable on any graph (the Python frontend calls this too).
// input_strides: element strides of each graph input (empty: contiguous).
// checks: the graph's last outputs that are runtime checks (api/runtime_checks.h).
std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& traced,
                                             const std::vector<std::vector<int64_t>>& input_strides,
                                             const Options& options, CompileStats& stats,
                                             std::vector<runtime::RuntimeCheck> checks = {});

// The stages compile_graph runs, for the drivers that run them differently
// (api/size_generic_graph.h).
struct PreparedGraph {
  ir::Graph graph;  // lowered (conditionals, complex values) and through the graph passes
  std::vector<std::vector<int64_t>> strides;  // of the lowered graph's inputs
  std::vector<bool> complex_inputs, complex_outputs;  // runtime::ExecutionSettings
};
// record: passes::run_graph_passes's (a replay skips the trace's verification too).
PreparedGraph prepare_graph(const ir::Graph& traced,
                            const std::vector<std::vector<int64_t>>& input_strides,
                            const std::set<std::string>& disabled,
                            passes::PassRecord* record = nullptr);
// Scheduling and the target's loop passes: the Program the emitter prints; outputs written into
// the inputs `donated` to them where they can be (Options::donated): where the graph's last
// `checks` output pairs are runtime checks, on the CPU, when every check is computed before
// the first write into an input (the run tests them there). `decisions`: the
// program of the same graph at other sizes, whose choices made on sizes (parallel and SIMD
// loops, lane splits) this one keeps where their kernels have the same statements
// (size-generic code, api/size_generic_graph.h: a loop parallel at the hints stays parallel
// at sizes just below the work threshold, so that their code has one shape).
sched::Program schedule_program(const ir::Graph& graph,
                                const std::vector<std::vector<int64_t>>& input_strides,
                                const target::Target& target,
                                const std::set<std::string>& disabled,
                                const std::vector<int32_t>& donated = {}, size_t checks = 0,
                                const sched::Program* decisions = nullptr);
// Canonical graph (or source) text + input layouts + options + target + passes + toolchain
// (the host C++ compiler's for a CPU target) + kiln's build: all that decides the generated
// code, so a hit may skip scheduling and emission.
std::string compile_key(const std::string& graph_text,
                        const std::vector<std::vector<int64_t>>& input_strides,
                        const Options& options, const target::Target& target,
                        const std::set<std::string>& disabled);
// The line that compiles runtime::cache_key_marker(key) into the object built from a source
// (C++: a copy in each translation unit; CUDA: one program), which the disk cache checks
// before it loads the object.
std::string key_marker_source(const std::string& key, bool cuda);
// Refuses (kiln::Error Unsupported) a source past kiln's compile-work bounds.
void check_source_size(const codegen::SourceFile& file, const ir::Graph& graph);
runtime::ExecutionSettings execution_settings(const Options& options,
                                              const target::Target& target,
                                              const PreparedGraph& prepared,
                                              const std::string& tuning_file);

// The target of this process's CUDA device (Error Unsupported, saying why, without one).
target::Target cuda_target();
// `source` compiled by NVRTC in units of a few functions, each unit its own disk-cache entry
// under `key` (with NVRTC's and the driver's versions), read back on a hit; then loaded.
struct CudaModules {
  std::vector<std::shared_ptr<runtime::cuda::Module>> modules;
  bool all_hit = false;
  std::string source_path;  // the first unit's: the header and its functions
};
CudaModules build_cuda_modules(const codegen::CudaSource& source, const std::string& key,
                               runtime::DiskCache& cache, const target::Target& target);

// Every pass KILN_DISABLE_PASSES may name, graph passes then loop passes, in pipeline order.
std::vector<std::string> switchable_pass_names();
// KILN_DISABLE_PASSES as a set ("all": every switchable pass); an unknown name is an
// Error(Value) listing the valid ones. Read on every compile, so scripts can change it.
std::set<std::string> disabled_passes();
// The same for the CPU target, which also leaves out the passes made for cuDNN
// (channels_last_filters: oneDNN reorders any filter into its own blocked layout).
std::set<std::string> cpu_disabled_passes();

}  // namespace kiln::detail
