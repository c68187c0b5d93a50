// kiln::compile: trace a C++ callable over kiln::Tensor once per input signature (dtypes and
// shapes), compile it to native kernels (cached in memory and on disk), and return a callable on
// kiln::Array.
//
//   auto step = kiln::compile([](kiln::Tensor X, kiln::Tensor means) {
//     return kiln::argmin(kiln::norm(X - kiln::expand_dims(means, 1), "2", {2}), 0);
//   });
//   kiln::Array labels = step(X, means)[0];
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/array.h"
#include "kiln/tensor.h"

namespace kiln {

// The settings behind the mode words (DESIGN §2). `mode` picks defaults; explicit fields win.
struct Options {
  std::string mode = "default";  // default | reduce-overhead | max-autotune | max-autotune-no-cudagraphs
  std::string cache_dir;         // empty: $KILN_CACHE_DIR, else ~/.cache/kiln
  bool disk_cache = true;
  int num_threads = 0;           // 0: OpenMP's default
  bool allow_reassociation = true;  // vectorised float reductions (DESIGN §3)
  std::string device = "cpu";       // cpu | cuda (needs an NVIDIA GPU and its driver)
  // By output: the input whose memory it may be written into, or -1 (JAX's donation). The
  // caller gives that input up: after a run it holds the output, or anything (a run returns
  // the output as that input's array where kiln wrote it there, sched/donated_outputs.h).
  std::vector<int32_t> donated;
};

// Text of the settings each mode selects and of every option, as kiln.list_* print them.
std::string list_mode_options();
std::string list_options();

namespace detail {
using TraceFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

template <class Result>
std::vector<Tensor> flatten_result(Result&& result) {
  using R = std::decay_t<Result>;
  if constexpr (std::is_same_v<R, Tensor>) {
    return {result};
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return result;
  } else {
    return std::apply([](auto&&... items) { return std::vector<Tensor>{Tensor(items)...}; },
                      std::forward<Result>(result));
  }
}

template <class F, size_t... I>
TraceFunction make_trace_function(F f, std::index_sequence<I...>) {
  return [f](const std::vector<Tensor>& inputs) { return flatten_result(f(inputs[I]...)); };
}

template <class T>
struct arity : arity<decltype(&T::operator())> {};
template <class C, class R, class... A>
struct arity<R (C::*)(A...) const> : std::integral_constant<size_t, sizeof...(A)> {};
template <class C, class R, class... A>
struct arity<R (C::*)(A...)> : std::integral_constant<size_t, sizeof...(A)> {};
template <class R, class... A>
struct arity<R (*)(A...)> : std::integral_constant<size_t, sizeof...(A)> {};

class CompiledFunction;  // src/api/compiled_function.h
}  // namespace detail

// Counters for tests and explain: how the last calls were served.
struct CompileStats {
  int traces = 0;           // graphs traced (one per new input signature)
  int disk_hits = 0;        // binaries loaded from the disk cache
  int disk_misses = 0;      // binaries compiled
  int kernels = 0;          // kernels in the most recent graph
  double compile_seconds = 0;  // trace + passes + codegen + toolchain of the most recent graph
};

class Function {
 public:
  Function(detail::TraceFunction trace, int arity, Options options);
  // Runs on the given inputs; returns newly allocated outputs.
  std::vector<Array> operator()(const std::vector<Array>& inputs) const;
  template <class... A>
  std::vector<Array> operator()(const Array& first, const A&... rest) const {
    return (*this)(std::vector<Array>{first, rest...});
  }
  // Writes into caller-provided outputs (shapes and dtypes must match).
  void run(const std::vector<Array>& inputs, std::vector<Array>& outputs) const;

  const CompileStats& stats() const;
  // The generated C++ source of the most recent graph (for inspection and tests).
  std::string source() const;
  // The canonical graph text of the most recent graph, after the passes.
  std::string graph_text() const;

 private:
  std::shared_ptr<detail::CompiledFunction> impl_;
};

template <class F>
Function compile(F f, Options options = {}) {
  constexpr size_t n = detail::arity<std::decay_t<F>>::value;
  return Function(detail::make_trace_function(f, std::make_index_sequence<n>{}), int(n),
                  std::move(options));
}

}  // namespace kiln
