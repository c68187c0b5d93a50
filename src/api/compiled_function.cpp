#include "api/compiled_function.h"

#include <chrono>
#include <sstream>

#include "api/logging.h"
#include "api/trace.h"
#include "codegen/cpp/cpp_emitter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "api/runtime_checks.h"
#include "runtime/disk_cache.h"
#include "runtime/toolchain.h"
#include "sched/scheduler.h"

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln::detail {
namespace {

// The in-process cache key of a call: raw bytes of each input's dtype, shape and (for
// non-contiguous inputs) strides. Built on every call, so no formatting.
std::string signature(const std::vector<Array>& inputs) {
  std::string key;
  key.reserve(inputs.size() * 40);
  auto append = [&key](int64_t value) { key.append(reinterpret_cast<const char*>(&value), sizeof value); };
  for (const Array& a : inputs) {
    append(static_cast<int64_t>(a.dtype()) << 8 | a.ndim());
    for (int64_t e : a.shape()) append(e);
    bool contiguous = a.is_contiguous();
    append(contiguous);
    if (!contiguous)
      for (int64_t s : a.strides()) append(s);
  }
  return key;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& traced,
                                             const std::vector<std::vector<int64_t>>& input_strides,
                                             const Options& options, CompileStats& stats,
                                             std::vector<runtime::RuntimeCheck> checks) {
  auto result = std::make_unique<CompiledGraph>();
  ir::verify(traced, "trace");
  api::log(api::LogChannel::Graph, "traced graph:\n" + ir::print_graph(traced, true));
  result->graph = passes::run_graph_passes(traced);
  ir::verify(result->graph, "graph passes");
  result->graph_text = ir::print_graph(result->graph);

  sched::ScheduleOptions schedule_options;
  schedule_options.allow_reassociation = options.allow_reassociation;
  sched::Program program = sched::schedule(result->graph, input_strides, schedule_options);
  if (api::log_enabled(api::LogChannel::Schedule))
    api::log(api::LogChannel::Schedule, sched::print_program(program));

  codegen::CppEmitOptions emit_options;
  emit_options.allow_reassociation = options.allow_reassociation;
  codegen::CppSource source = codegen::emit_cpp(program, emit_options);
  result->source = std::move(source.text);

  // The key: canonical graph + input layouts + options + toolchain + kiln version.
  std::ostringstream layouts;
  for (const auto& strides : input_strides) {
    for (int64_t s : strides) layouts << s << ",";
    layouts << ";";
  }
  const runtime::Toolchain& toolchain = runtime::Toolchain::system();
  std::string key = runtime::cache_key({result->graph_text, layouts.str(), options.mode,
                                        options.allow_reassociation ? "reassociate" : "strict",
                                        toolchain.identity(), KILN_VERSION, result->source});
  runtime::DiskCache cache = runtime::DiskCache::open(options.cache_dir, options.disk_cache);
  int64_t misses_before = runtime::DiskCache::counters().misses;
  runtime::CachedObject object = cache.get_or_build(
      key, result->source, [&](const std::string& source_path, const std::string& object_path) {
        toolchain.compile_shared_object(source_path, object_path);
      });
  result->source_path = cache.source_path(key);
  bool built = runtime::DiskCache::counters().misses > misses_before;
  (built ? stats.disk_misses : stats.disk_hits)++;
  api::log(api::LogChannel::Cache, std::string(built ? "miss" : "hit") + " " + key + " -> " + object.path);
  api::log(api::LogChannel::OutputCode, "source: " + result->source_path + "\n" + result->source);
  stats.kernels = static_cast<int>(program.kernels.size());
  result->executable = std::make_unique<runtime::Executable>(
      std::move(program), std::move(source.kernels), runtime::SharedLibrary::open(object.path), std::move(checks));
  return result;
}

CompiledGraph& CompiledFunction::lookup(const std::vector<Array>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].defined())
      throw Error(ErrorKind::Value, "kiln: the compiled function's input " + std::to_string(k) +
                                        " is an undefined (default-constructed) kiln::Array");
  std::string key = signature(inputs);
  auto found = by_signature_.find(key);
  if (found != by_signature_.end()) return *found->second;

  if (static_cast<int>(inputs.size()) != arity_)
    throw Error(ErrorKind::Value, "kiln: the compiled function takes " + std::to_string(arity_) +
                                      " arrays, got " + std::to_string(inputs.size()));
  auto start = std::chrono::steady_clock::now();
  Trace trace;
  std::vector<Tensor> parameters;
  std::vector<std::vector<int64_t>> strides;
  for (const Array& a : inputs) {
    parameters.push_back(trace.input(a.dtype(), a.shape()));
    strides.push_back(a.is_contiguous() ? std::vector<int64_t>{} : a.strides());
  }
  std::vector<Tensor> results = trace_(parameters);
  std::vector<ir::ValueId> outputs;
  for (const Tensor& t : results) {
    if (t.trace() != &trace)
      throw Error(ErrorKind::Value, "kiln: the function returned a tensor it did not compute from its inputs");
    outputs.push_back(t.id());
  }
  std::vector<runtime::RuntimeCheck> checks = append_check_outputs(trace, outputs);
  trace.graph.set_outputs(outputs);
  ++stats_.traces;
  auto compiled = compile_graph(trace.graph, strides, options_, stats_, std::move(checks));
  stats_.compile_seconds = seconds_since(start);
  api::log(api::LogChannel::Perf, "compiled in " + std::to_string(stats_.compile_seconds) + " s");
  CompiledGraph& entry = *compiled;
  by_signature_[key] = std::move(compiled);
  return entry;
}

void CompiledFunction::run(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  CompiledGraph& entry = lookup(inputs);
  latest_ = &entry;
  entry.executable->run(inputs, outputs);
}

}  // namespace kiln::detail

namespace kiln {

Function::Function(detail::TraceFunction trace, int arity, Options options)
    : impl_(std::make_shared<detail::CompiledFunction>(std::move(trace), arity, std::move(options))) {}

std::vector<Array> Function::operator()(const std::vector<Array>& inputs) const {
  std::vector<Array> outputs;
  impl_->run(inputs, outputs);
  return outputs;
}

void Function::run(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
  impl_->run(inputs, outputs);
}

const CompileStats& Function::stats() const { return impl_->stats(); }

std::string Function::source() const { return impl_->latest() ? impl_->latest()->source : ""; }

std::string Function::graph_text() const {
  return impl_->latest() ? impl_->latest()->graph_text : "";
}

std::string list_mode_options() {
  return "default: fused C++/OpenMP kernels, heuristic launch parameters\n"
         "reduce-overhead: default + preplanned arena, no allocation per call but outputs\n"
         "max-autotune: default (autotuning of tile and split choices is not implemented yet)\n"
         "max-autotune-no-cudagraphs: same as max-autotune on the CPU\n";
}

std::string list_options() {
  return "mode: default | reduce-overhead | max-autotune | max-autotune-no-cudagraphs\n"
         "cache_dir: directory of the disk cache (default $KILN_CACHE_DIR or ~/.cache/kiln)\n"
         "disk_cache: keep compiled kernels on disk (default true)\n"
         "num_threads: OpenMP threads (0: OpenMP's default)\n"
         "allow_reassociation: vectorised float reductions (default true)\n";
}

}  // namespace kiln
