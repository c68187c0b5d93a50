// kiln::Function's driver. Per input signature (dtypes, shapes, strides) it traces the user's
// function once, runs the pipeline (api/pipeline.h) and keeps the resulting Executable in
// memory (the in-process cache level).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/pipeline.h"
#include "kiln/compile.h"

namespace kiln::detail {

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
