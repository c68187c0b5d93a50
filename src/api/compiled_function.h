// The compile driver behind kiln::Function. Per input signature (dtypes, shapes, strides) it
// traces the user's function once and runs the pipeline, one straight line of stages:
//   trace -> graph passes -> verify -> schedule -> emit C++ -> disk cache / toolchain -> load
// and keeps the resulting Executable in memory (the in-process cache level).
#pragma once
#include <map>
#include <memory>
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
  std::string source;
  std::string source_path;
  std::unique_ptr<runtime::Executable> executable;
};

// The stages after tracing, usable on any graph (the Python frontend calls this too).
// input_strides: element strides of each graph input (empty: contiguous).
// checks: the graph's last outputs that are runtime checks (api/runtime_checks.h).
std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& traced,
                                             const std::vector<std::vector<int64_t>>& input_strides,
                                             const Options& options, CompileStats& stats,
                                             std::vector<runtime::RuntimeCheck> checks = {});

class CompiledFunction {
 public:
  CompiledFunction(TraceFunction trace, int arity, Options options)
      : trace_(std::move(trace)), arity_(arity), options_(std::move(options)) {}

  void run(const std::vector<Array>& inputs, std::vector<Array>& outputs);
  const CompileStats& stats() const { return stats_; }
  const CompiledGraph* latest() const { return latest_; }

 private:
  CompiledGraph& lookup(const std::vector<Array>& inputs);

  TraceFunction trace_;
  int arity_;
  Options options_;
  CompileStats stats_;
  std::map<std::string, std::unique_ptr<CompiledGraph>> by_signature_;
  CompiledGraph* latest_ = nullptr;
};

}  // namespace kiln::detail
