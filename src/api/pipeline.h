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
#include "runtime/executable.h"

namespace kiln::detail {

// Everything the pipeline produced for one input signature.
struct CompiledGraph {
  ir::Graph graph;  // after the passes
  std::string graph_text;
  std::string source;  // empty after a disk hit: source_text() reads the entry's copy
  std::string source_path;
  std::unique_ptr<runtime::Executable> executable;

  std::string source_text() const;
};

// The stages after tracing, usable on any graph (the Python frontend calls this too).
// input_strides: element strides of each graph input (empty: contiguous).
// checks: the graph's last outputs that are runtime checks (api/runtime_checks.h).
std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& traced,
                                             const std::vector<std::vector<int64_t>>& input_strides,
                                             const Options& options, CompileStats& stats,
                                             std::vector<runtime::RuntimeCheck> checks = {});

// Every pass KILN_DISABLE_PASSES may name, graph passes then loop passes, in pipeline order.
std::vector<std::string> switchable_pass_names();
// KILN_DISABLE_PASSES as a set ("all": every switchable pass); an unknown name is an
// Error(Value) listing the valid ones. Read on every compile, so scripts can change it.
std::set<std::string> disabled_passes();

}  // namespace kiln::detail
