// The pipeline reads like its table of contents: each round runs the passes in order, verifies
// and logs each result, and stops as soon as every pass has left the graph unchanged since it
// last changed.
#include "passes/pipeline.h"

#include <algorithm>
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
  static const std::vector<NamedPass>& passes = *new std::vector<NamedPass>{
      {"simplify", simplify},
      {"canonicalize_matmul", canonicalize_matmul},
      {"matrix_vector_inline", inline_matrix_vector_products},  // GPU only
      {"integer_matmul_inline", inline_integer_matmuls},  // GPU only
      {"matmul_operand_order", order_matmul_operands},
      {"depthwise_convolutions", depthwise_convolutions},  // GPU only; before channels_last
      {"channels_last", channels_last},
      {"channels_last_gradients", channels_last_gradients},
      {"channels_last_filters", channels_last_filters},
      {"matmul_epilogues", fuse_matmul_epilogues},
      {"cse", eliminate_common_subexpressions},
      {"fold", fold_constants},
      {"dce", eliminate_dead_code},
      {"sink_into_branches", sink_into_branches},  // after dce: every read is a live one
      {"sort_ends", sort_ends},      // after dce: only the reads left, before share_sorts
      {"sort_picks", sort_picks},    // after sort_ends (its heap for one end), before share_sorts
      {"share_sorts", share_sorts},  // after dce: an argsort nothing reads is gone
  };
  return passes;
}

// Whether a pass left the graph as it was: the same nodes, outputs and regions. (Comparing
// printed graphs took more of a compile than the passes themselves: a size-generic graph runs
// them for every new size.)
bool same_graph(const ir::Graph& a, const ir::Graph& b) {
  if (a.size() != b.size() || a.outputs() != b.outputs() || a.symbol_hints() != b.symbol_hints())
    return false;
  auto same_region = [](const std::shared_ptr<const ir::Graph>& x,
                        const std::shared_ptr<const ir::Graph>& y) {
    return x == y || (x && y && same_graph(*x, *y));
  };
  for (ir::ValueId id = 0; id < a.size(); ++id) {
    const ir::Node& x = a.node(id);
    const ir::Node& y = b.node(id);
    if (x.op != y.op || x.dtype != y.dtype || x.shape != y.shape || x.inputs != y.inputs)
      return false;
    ir::Attrs x_attrs = x.attrs, y_attrs = y.attrs;  // regions compared by content
    if (!same_region(x_attrs.body, y_attrs.body) ||
        !same_region(x_attrs.else_body, y_attrs.else_body))
      return false;
    x_attrs.body = y_attrs.body, x_attrs.else_body = y_attrs.else_body;
    if (!(x_attrs == y_attrs)) return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& graph_pass_names() {
  static const std::vector<std::string>& names = *new std::vector<std::string>([] {
    std::vector<std::string> result;
    for (const NamedPass& pass : pipeline()) result.push_back(pass.name);
    return result;
  }());
  return names;
}

ir::Graph run_graph_passes(const ir::Graph& input, const std::set<std::string>& disabled,
                           PassRecord* record) {
  bool logging = api::log_enabled(api::LogChannel::Passes);
  bool timing = api::log_enabled(api::LogChannel::Perf);
  auto run = [&](const NamedPass& pass, const ir::Graph& graph, const std::string& when) {
    auto start = std::chrono::steady_clock::now();
    const bool regions = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                                     [](const ir::Node& node) { return node.attrs.body; });
    ir::Graph next = regions ? pass.run(ir::map_loop_bodies(graph, pass.run))  // bodies first
                             : pass.run(graph);
    if (timing)
      api::log(api::LogChannel::Perf, pass.name + ": " + api::milliseconds_text(start) + " (" + when + ")");
    return next;
  };
  if (record && record->replaying) {
    ir::Graph graph;
    const ir::Graph* current = &input;  // not copied: every pass makes a new graph
    for (size_t index : record->changed) {
      graph = run(pipeline()[index], *current, "replayed");
      current = &graph;
      if (logging)
        api::log(api::LogChannel::Passes, pipeline()[index].name + " (replayed):\n" + ir::print_graph(graph));
    }
    return current == &input ? input : graph;
  }
  ir::Graph graph = input;
  const size_t enabled = static_cast<size_t>(std::count_if(
      pipeline().begin(), pipeline().end(),
      [&](const NamedPass& pass) { return !disabled.contains(pass.name); }));
  if (record) record->changed.clear();
  size_t unchanged = 0;  // passes run since the graph last changed
  for (int round = 1; round <= kMaxRounds; ++round) {
    for (size_t index = 0; index < pipeline().size(); ++index) {
      const NamedPass& pass = pipeline()[index];
      // Every pass has seen this graph and left it: a fixed point.
      if (unchanged == enabled) return graph;
      if (disabled.contains(pass.name)) continue;
      ir::Graph next = run(pass, graph, "round " + std::to_string(round));
      ir::verify(next, pass.name);
      bool pass_changed = !same_graph(graph, next);
      if (pass_changed && record) record->changed.push_back(index);
      if (logging) {
        std::string header = pass.name + " (round " + std::to_string(round) + ")";
        api::log(api::LogChannel::Passes, pass_changed ? header + ":\n" + ir::print_graph(next)
                                                       : header + ": unchanged");
      }
      unchanged = pass_changed ? 0 : unchanged + 1;
      graph = std::move(next);
    }
  }
  return graph;
}

}  // namespace kiln::passes
