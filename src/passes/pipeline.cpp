// The pipeline reads like its table of contents: each round runs the passes in order, verifies
// and logs each result, and stops as soon as a whole round leaves the graph unchanged.
#include "passes/pipeline.h"

#include <chrono>

#include "api/logging.h"
#include "ir/loop.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "kiln/error.h"
#include "passes/passes.h"

namespace kiln::passes {

namespace {

constexpr int kMaxRounds = 4;

struct NamedPass {
  std::string name;
  ir::Graph (*run)(const ir::Graph&);
};

const std::vector<NamedPass>& pipeline() {
  static const std::vector<NamedPass> passes = {
      {"simplify", simplify},
      {"canonicalize_matmul", canonicalize_matmul},
      {"channels_last", channels_last},
      {"channels_last_gradients", channels_last_gradients},
      {"channels_last_filters", channels_last_filters},
      {"matmul_epilogues", fuse_matmul_epilogues},
      {"cse", eliminate_common_subexpressions},
      {"fold", fold_constants},
      {"dce", eliminate_dead_code},
  };
  return passes;
}

}  // namespace

const std::vector<std::string>& graph_pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> result;
    for (const NamedPass& pass : pipeline()) result.push_back(pass.name);
    return result;
  }();
  return names;
}

ir::Graph run_graph_passes(const ir::Graph& input, const std::set<std::string>& disabled) {
  bool logging = api::log_enabled(api::LogChannel::Passes);
  bool timing = api::log_enabled(api::LogChannel::Perf);
  ir::Graph graph = input;
  std::string text = ir::print_graph(graph);
  for (int round = 1; round <= kMaxRounds; ++round) {
    bool changed = false;
    for (const NamedPass& pass : pipeline()) {
      if (disabled.contains(pass.name)) continue;
      auto start = std::chrono::steady_clock::now();
      ir::Graph next = pass.run(ir::map_loop_bodies(graph, pass.run));  // bodies first
      if (timing)
        api::log(api::LogChannel::Perf,
                 pass.name + ": " + api::milliseconds_text(start) + " (round " + std::to_string(round) + ")");
      ir::verify(next, pass.name);
      std::string next_text = ir::print_graph(next);
      bool pass_changed = next_text != text;
      if (logging) {
        std::string header = pass.name + " (round " + std::to_string(round) + ")";
        api::log(api::LogChannel::Passes,
                 pass_changed ? header + ":\n" + next_text : header + ": unchanged");
      }
      changed = changed || pass_changed;
      graph = std::move(next);
      text = std::move(next_text);
    }
    if (!changed) break;
  }
  return graph;
}

}  // namespace kiln::passes
