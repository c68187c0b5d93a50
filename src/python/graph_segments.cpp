#include "python/graph_segments.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ir/printer.h"

namespace kiln::python {

Segment extract_segment(detail::Trace& trace, const std::vector<Tensor>& outputs) {
  std::vector<ir::ValueId> ids;
  for (const Tensor& output : outputs) {
    if (output.trace() != &trace)
      throw Error(ErrorKind::Value, error_message("compile", trace.default_location,
                                                  "an output was not computed in this trace"));
    ids.push_back(output.id());
  }
  Segment segment;
  segment.checks = detail::append_check_outputs(trace, ids);
  const ir::Graph& graph = trace.graph;
  std::vector<bool> live(static_cast<size_t>(graph.size()), false);
  for (ir::ValueId id : ids) live[static_cast<size_t>(id)] = true;
  for (ir::ValueId id = graph.size() - 1; id >= 0; --id)  // nodes read only earlier nodes
    if (live[static_cast<size_t>(id)])
      for (ir::ValueId input : graph.node(id).inputs) live[static_cast<size_t>(input)] = true;
  std::vector<int64_t> position(static_cast<size_t>(graph.size()), -1);
  for (ir::ValueId input : graph.inputs()) {
    if (!live[static_cast<size_t>(input)]) continue;
    position[static_cast<size_t>(input)] = static_cast<int64_t>(segment.inputs.size());
    segment.inputs.push_back(graph.node(input).attrs.index);
  }
  std::vector<ir::ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    if (!live[static_cast<size_t>(id)]) continue;
    ir::Node node = graph.node(id);
    for (ir::ValueId& input : node.inputs) input = replacement[static_cast<size_t>(input)];
    if (node.op == ir::Op::parameter) node.attrs.index = position[static_cast<size_t>(id)];
    replacement[static_cast<size_t>(id)] = segment.graph.append(std::move(node));
  }
  for (ir::ValueId& id : ids) id = replacement[static_cast<size_t>(id)];
  segment.graph.set_outputs(std::move(ids));
  segment.graph.set_symbol_hints(graph.symbol_hints());
  return segment;
}

void bind_graph_segments(nb::module_& module) {
  module.def(
      "segment_of",
      [](detail::Trace& trace, const std::vector<Tensor>& outputs) {
        Segment segment = extract_segment(trace, outputs);
        return std::make_pair(ir::print_graph(segment.graph, true), segment.inputs);
      },
      nb::arg("trace"), nb::arg("outputs"),
      "(text, input positions) of the segment of `trace` these outputs make (its checks' "
      "values included): the memo key of a graph break's graph.");
  module.def(
      "computed_tensors",
      [](detail::Trace& trace, const std::vector<Tensor>& tensors) {
        std::vector<Tensor> computed;
        for (const Tensor& tensor : tensors) {
          const ir::Op op = trace.graph.node(tensor.id()).op;
          if (tensor.trace() == &trace && op != ir::Op::parameter && op != ir::Op::constant &&
              op != ir::Op::constant_array)
            computed.push_back(tensor);
        }
        return computed;
      },
      nb::arg("trace"), nb::arg("tensors"),
      "The tensors whose values the trace computes (not inputs or constants): what a cut feeds.");
  module.def(
      "cut_trace",
      [](detail::Trace& trace, const std::vector<Tensor>& tensors) {
        if (!trace.regions.empty() || !trace.cond_sides.empty())
          throw Error(ErrorKind::Internal, "kiln: a graph break inside a loop body or branch");
        for (const Tensor& tensor : tensors)
          trace.graph.make_parameter(tensor.id(),
                                     static_cast<int64_t>(trace.graph.inputs().size()));
        trace.checks.clear();  // the segment that computed them checked them
      },
      nb::arg("trace"), nb::arg("tensors"),
      "Makes each tensor the next graph input (its value fed by the caller from now on) and "
      "drops the checks recorded so far: a graph break's cut, after its segment ran.");
}

}  // namespace kiln::python
