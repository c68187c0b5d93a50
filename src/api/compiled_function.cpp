#include "api/compiled_function.h"

#include <chrono>
#include <sstream>

#include "api/logging.h"
#include "api/runtime_checks.h"
#include "api/trace.h"

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

CompiledGraph& CompiledFunction::lookup(const std::vector<Array>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].defined())
      throw Error(ErrorKind::Value, "kiln: the compiled function's input " + std::to_string(k) +
                                        " is an undefined (default-constructed or moved-from) kiln::Array");
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

std::string Function::source() const { return impl_->latest() ? impl_->latest()->source_text() : ""; }

std::string Function::graph_text() const {
  return impl_->latest() ? impl_->latest()->graph_text() : "";
}

}  // namespace kiln
