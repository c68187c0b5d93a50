// Loop nodes: trip counts, the body's signature, the reference semantics and region mapping.
#include "ir/loop.h"

#include "ir/builder.h"
#include "ir/interpreter.h"

namespace kiln::ir {

int64_t loop_trip_count(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 && start < stop)
    return static_cast<int64_t>((static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) /
                                static_cast<uint64_t>(step)) +
           1;
  if (step < 0 && start > stop)
    return static_cast<int64_t>((static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) /
                                (0 - static_cast<uint64_t>(step))) +
           1;
  return 0;
}

std::string loop_signature_error(const Graph& graph, const Node& node) {
  const Attrs& attrs = node.attrs;
  if (!attrs.body) return "has no body";
  const Graph& body = *attrs.body;
  if (attrs.steps.size() != 1 || attrs.steps[0] == 0) return "needs one non-zero step";
  int64_t carried = attrs.index;
  if (carried < 0 || node.inputs.size() < 2 + static_cast<size_t>(carried))
    return "has fewer operands than its carried values";
  if (attrs.axis != 0 && attrs.axis != 1) return "axis must be 0 (for) or 1 (while)";
  if (is_while_loop(node)) {
    if (carried < 1) return "a while loop carries its condition";
    const Node& condition = graph.node(node.inputs[2]);
    if (condition.dtype != DType::Bool || !condition.shape.empty())
      return "a while loop's condition (carried value 0) must be bool 0-d";
  }
  for (int k = 0; k < 2; ++k) {
    const Node& bound = graph.node(node.inputs[static_cast<size_t>(k)]);
    if (bound.dtype != DType::Int64 || !bound.shape.empty()) return "bounds must be int64 0-d";
  }
  size_t parameters = node.inputs.size() - 1;  // the induction variable replaces start, stop
  if (body.inputs().size() != parameters)
    return "body takes " + std::to_string(body.inputs().size()) + " parameters, the loop passes " +
           std::to_string(parameters);
  if (body.outputs().size() != static_cast<size_t>(carried))
    return "body returns " + std::to_string(body.outputs().size()) + " values for " +
           std::to_string(carried) + " carried";
  const Node& induction = body.node(body.inputs()[0]);
  if (induction.dtype != DType::Int64 || !induction.shape.empty())
    return "the induction variable must be int64 0-d";
  for (size_t p = 1; p < parameters; ++p) {
    const Node& parameter = body.node(body.inputs()[p]);
    const Node& operand = graph.node(node.inputs[p + 1]);
    if (parameter.dtype != operand.dtype || parameter.shape != operand.shape)
      return "body parameter " + std::to_string(p) + " is " +
             std::string(dtype_name(parameter.dtype)) + shape_string(parameter.shape) +
             ", its operand " + std::string(dtype_name(operand.dtype)) +
             shape_string(operand.shape);
    if (p <= static_cast<size_t>(carried)) {
      const Node& result = body.node(body.outputs()[p - 1]);
      if (result.dtype != parameter.dtype || result.shape != parameter.shape)
        return "carried value " + std::to_string(p - 1) + " enters as " +
               std::string(dtype_name(parameter.dtype)) + shape_string(parameter.shape) +
               " and leaves the body as " + std::string(dtype_name(result.dtype)) +
               shape_string(result.shape);
    }
  }
  return "";
}

std::vector<Array> interpret_loop(const Node& node, const std::vector<Array>& operands) {
  int64_t carried = node.attrs.index;
  int64_t step = node.attrs.steps.at(0);
  int64_t start = *operands[0].contiguous().data_as<int64_t>();
  int64_t stop = *operands[1].contiguous().data_as<int64_t>();
  std::vector<Array> inputs(operands.begin() + 1, operands.end());
  int64_t trips = loop_trip_count(start, stop, step);
  for (int64_t k = 0; k < trips; ++k) {
    if (is_while_loop(node) && *inputs[1].contiguous().data_as<bool>() == false) break;
    inputs[0] = Array::from_vector(std::vector<int64_t>{start + k * step}, {});
    std::vector<Array> next = interpret(*node.attrs.body, inputs);
    for (int64_t c = 0; c < carried; ++c)
      inputs[static_cast<size_t>(c + 1)] = next[static_cast<size_t>(c)];
  }
  return {inputs.begin() + 1, inputs.begin() + 1 + carried};
}

Graph map_loop_bodies(const Graph& graph, Graph (*pass)(const Graph&)) {
  bool any = false;
  for (const Node& node : graph.nodes()) any = any || node.attrs.body != nullptr;
  if (!any) return graph;
  Graph result;
  Builder builder(result);
  for (const Node& node : graph.nodes()) {
    if (!node.attrs.body) {
      builder.copy_node(node, node.inputs);
      continue;
    }
    Node copy = node;
    copy.attrs.body = std::make_shared<const Graph>(pass(map_loop_bodies(*node.attrs.body, pass)));
    if (node.attrs.else_body)
      copy.attrs.else_body =
          std::make_shared<const Graph>(pass(map_loop_bodies(*node.attrs.else_body, pass)));
    builder.copy_node(copy, node.inputs);
  }
  result.set_outputs(graph.outputs());
  return result;
}

// ---- factories (builder.h) ----

ValueId Builder::loop(ValueId start, ValueId stop, int64_t step, const std::vector<ValueId>& init,
                      const std::vector<ValueId>& invariants, std::shared_ptr<const Graph> body,
                      bool while_loop) {
  Attrs attrs;
  attrs.axis = while_loop ? 1 : 0;
  attrs.index = static_cast<int64_t>(init.size());
  attrs.steps = {step};
  attrs.body = std::move(body);
  std::vector<ValueId> inputs{start, stop};
  inputs.insert(inputs.end(), init.begin(), init.end());
  inputs.insert(inputs.end(), invariants.begin(), invariants.end());
  Node node{Op::loop, DType::Bool, {}, inputs, attrs, location_};
  std::string error = loop_signature_error(graph_, node);
  if (!error.empty()) fail(ErrorKind::Value, Op::loop, error);
  return add(Op::loop, DType::Bool, {}, std::move(inputs), std::move(attrs));
}

ValueId Builder::loop_result(ValueId loop, int64_t index) {
  const Node& node = graph_.node(loop);
  if ((node.op != Op::loop && node.op != Op::cond) || index < 0 || index >= node.attrs.index)
    fail(ErrorKind::Value, Op::loop_result, "not a carried value of a loop or cond");
  const Node& result =
      node.attrs.body->node(node.attrs.body->outputs()[static_cast<size_t>(index)]);
  Attrs attrs;
  attrs.index = index;
  return add(Op::loop_result, result.dtype, result.shape, {loop}, std::move(attrs));
}

ValueId Builder::placeholder(DType dtype, const Shape& shape) {
  return add(Op::placeholder, dtype, shape, {});
}

}  // namespace kiln::ir
