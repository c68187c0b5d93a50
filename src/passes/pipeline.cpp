// The pipeline reads like its table of contents: each round runs the passes in order, verifies
// and logs each result, and stops as soon as a whole round leaves the graph unchanged.
#include "passes/pipeline.h"

#include <cstdlib>
#include <set>
#include <sstream>

#include "api/logging.h"
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
      {"cse", eliminate_common_subexpressions},
      {"fold", fold_constants},
      {"dce", eliminate_dead_code},
  };
  return passes;
}

// KILN_DISABLE_PASSES, read on every call so tests and bisection scripts can change it.
std::set<std::string> disabled_passes() {
  std::set<std::string> names;
  const char* text = std::getenv("KILN_DISABLE_PASSES");
  if (text == nullptr) return names;
  std::stringstream stream(text);
  std::string name;
  while (std::getline(stream, name, ',')) {
    size_t first = name.find_first_not_of(" \t");
    size_t last = name.find_last_not_of(" \t");
    if (first == std::string::npos) continue;
    name = name.substr(first, last - first + 1);
    // Names this pipeline does not know are harmless: later stages may read the variable too.
    names.insert(name);
  }
  return names;
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

ir::Graph run_graph_passes(const ir::Graph& input) {
  std::set<std::string> disabled = disabled_passes();
  bool logging = api::log_enabled(api::LogChannel::Passes);
  ir::Graph graph = input;
  std::string text = ir::print_graph(graph);
  for (int round = 1; round <= kMaxRounds; ++round) {
    bool changed = false;
    for (const NamedPass& pass : pipeline()) {
      if (disabled.contains(pass.name) || disabled.contains("all")) continue;
      ir::Graph next = pass.run(graph);
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
