#include "api/matmul_choice.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "api/logging.h"
#include "api/pipeline.h"
#include "ir/builder.h"
#include "ir/printer.h"
#include "passes/passes.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_executable.h"

namespace kiln::detail {
namespace {

using ir::Node;
using ir::ValueId;

constexpr int64_t kMostTunedProducts = int64_t(1) << 22;

bool is_candidate(const ir::Graph& graph, const Node& node) {
  if (node.op != ir::Op::matmul || node.inputs.size() != 2 || !is_float(node.dtype) ||
      !ir::is_static(node.shape))
    return false;
  const ir::Node& left = graph.node(node.inputs[0]);
  return ir::element_count(node.shape) * left.shape.back().constant() <= kMostTunedProducts;
}

Array random_operand(DType dtype, const std::vector<int64_t>& shape, std::mt19937& generator) {
  Array array = Array::empty(dtype, shape);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int64_t k = 0; k < array.size(); ++k) {
    if (dtype == DType::Float32) array.data_as<float>()[k] = static_cast<float>(uniform(generator));
    else array.data_as<double>()[k] = uniform(generator);
  }
  return array;
}

// Seconds per run of `compiled` on `inputs`: the best of three timings of enough runs to take
// about a millisecond (on a GPU, until the device has finished them).
double seconds_per_run(CompiledGraph& compiled, const std::vector<Array>& inputs, bool on_gpu) {
  using Clock = std::chrono::steady_clock;
  std::vector<Array> outputs;
  auto timed = [&](int runs) {
    auto start = Clock::now();
    for (int k = 0; k < runs; ++k) {
      outputs.clear();
      compiled.executable->run(inputs, outputs);
    }
    if (on_gpu) runtime::cuda::synchronize(runtime::cuda_stream());
    return std::chrono::duration<double>(Clock::now() - start).count() / runs;
  };
  const double once = timed(1);
  const int runs = static_cast<int>(std::clamp(1e-3 / std::max(once, 1e-9), 1.0, 1000.0));
  double best = once;
  for (int trial = 0; trial < 3; ++trial) best = std::min(best, timed(runs));
  return best;
}

// Whether the generated reduction beat the library on the product `node` describes.
bool generated_wins(const ir::Graph& graph, const Node& node, const Options& options) {
  const Node& left = graph.node(node.inputs[0]);
  const Node& right = graph.node(node.inputs[1]);
  std::mt19937 generator(7);
  const bool on_gpu = options.device == "cuda";
  const Device device = on_gpu ? Device::Cuda : Device::Cpu;
  const std::vector<Array> inputs{
      random_operand(left.dtype, ir::to_ints(left.shape), generator).to(device),
      random_operand(right.dtype, ir::to_ints(right.shape), generator).to(device)};
  Options alone = options;
  alone.mode = "default";  // no tuning inside the tuning
  double seconds[2];
  for (int generated = 0; generated < 2; ++generated) {
    ir::Graph product;
    ir::Builder b(product);
    ValueId a = b.parameter(left.dtype, left.shape), c = b.parameter(right.dtype, right.shape);
    product.set_outputs({generated ? passes::inline_product(b, node.shape, a, c) : b.matmul(a, c)});
    CompileStats stats;
    std::unique_ptr<CompiledGraph> compiled = compile_graph(product, {}, alone, stats);
    seconds[generated] = seconds_per_run(*compiled, inputs, on_gpu);
  }
  if (api::log_enabled(api::LogChannel::Perf)) {
    char times[96];
    std::snprintf(times, sizeof times, ": library %.2f us, generated %.2f us -> %s",
                  seconds[0] * 1e6, seconds[1] * 1e6,
                  seconds[1] < seconds[0] ? "generated" : "library");
    api::log(api::LogChannel::Perf, "max-autotune: matmul " + ir::shape_string(left.shape) +
                                        " @ " + ir::shape_string(right.shape) + " " +
                                        std::string(dtype_name(node.dtype)) + times);
  }
  return seconds[1] < seconds[0];
}

}  // namespace

ir::Graph choose_matmul_kernels(const ir::Graph& graph, const Options& options,
                                MatmulChoices& decided) {
  std::set<ValueId> inlined;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (!is_candidate(graph, node)) continue;
    const std::string problem = std::string(dtype_name(node.dtype)) +
                                ir::shape_string(graph.node(node.inputs[0]).shape) +
                                ir::shape_string(graph.node(node.inputs[1]).shape);
    auto found = decided.find(problem);
    if (found == decided.end())
      found = decided.emplace(problem, generated_wins(graph, node, options)).first;
    if (found->second) inlined.insert(id);
  }
  return inlined.empty() ? graph : passes::inline_matmuls(graph, inlined);
}

std::string matmul_choices_text(const MatmulChoices& choices) {
  std::string text = "kiln-matmul-choices 1\n";
  for (const auto& [problem, generated] : choices) text += problem + "\t" + (generated ? "1" : "0") + "\n";
  return text;
}

bool read_matmul_choices(const std::string& text, MatmulChoices& choices) {
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != "kiln-matmul-choices 1") return false;
  MatmulChoices read;
  while (std::getline(lines, line)) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos || tab + 2 != line.size() || (line[tab + 1] != '0' && line[tab + 1] != '1'))
      return false;
    read[line.substr(0, tab)] = line[tab + 1] == '1';
  }
  choices = std::move(read);
  return true;
}

}  // namespace kiln::detail
