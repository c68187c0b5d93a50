// Cond nodes: the regions' signatures, the reference semantics and the factory.
#include "ir/cond.h"

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/loop.h"

namespace kiln::ir {
namespace {

std::string type_text(const Node& node) {
  return std::string(dtype_name(node.dtype)) + shape_string(node.shape);
}

// Why `region` does not take (carried, its invariants) and return the carried values.
std::string region_error(const char* name, const Graph& graph, const Node& node,
                         const Graph& region, size_t invariants_begin, size_t invariants_end) {
  const CondOperands operands = cond_operands(node);
  std::vector<ValueId> passed(node.inputs.begin() + long(operands.carried_begin),
                              node.inputs.begin() + long(operands.then_begin));
  passed.insert(passed.end(), node.inputs.begin() + long(invariants_begin),
                node.inputs.begin() + long(invariants_end));
  if (region.inputs().size() != passed.size())
    return std::string(name) + " region takes " + std::to_string(region.inputs().size()) +
           " parameters, the cond passes " + std::to_string(passed.size());
  size_t carried = operands.then_begin - operands.carried_begin;
  if (region.outputs().size() != carried)
    return std::string(name) + " region returns " + std::to_string(region.outputs().size()) +
           " values for " + std::to_string(carried) + " carried";
  for (size_t p = 0; p < passed.size(); ++p) {
    const Node& parameter = region.node(region.inputs()[p]);
    const Node& operand = graph.node(passed[p]);
    if (parameter.dtype != operand.dtype || parameter.shape != operand.shape)
      return std::string(name) + " region parameter " + std::to_string(p) + " is " +
             type_text(parameter) + ", its operand " + type_text(operand);
    if (p < carried) {
      const Node& result = region.node(region.outputs()[p]);
      if (result.dtype != parameter.dtype || result.shape != parameter.shape)
        return "carried value " + std::to_string(p) + " enters the " + name + " region as " +
               type_text(parameter) + " and leaves it as " + type_text(result);
    }
  }
  return "";
}

std::vector<ValueId> mapped_outputs(const Graph& graph, const std::vector<ValueId>& mapped) {
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(mapped[static_cast<size_t>(output)]);
  return outputs;
}

// `region` as a loop body: an unused int64 0-d induction variable before its parameters.
std::shared_ptr<const Graph> as_loop_body(const Graph& region) {
  auto body = std::make_shared<Graph>();
  Builder builder(*body);
  builder.parameter(DType::Int64, {});
  std::vector<ValueId> mapped(static_cast<size_t>(region.size()), -1);
  for (ValueId input : region.inputs()) {
    const Node& node = region.node(input);
    builder.set_location(node.location);
    mapped[static_cast<size_t>(input)] = builder.parameter(node.dtype, node.shape);
  }
  for (ValueId id = 0; id < region.size(); ++id) {
    const Node& node = region.node(id);
    if (node.op == Op::parameter) continue;
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(mapped[static_cast<size_t>(input)]);
    mapped[static_cast<size_t>(id)] = builder.copy_node(node, std::move(inputs));
  }
  body->set_outputs(mapped_outputs(region, mapped));
  return body;
}

Graph lower_conditionals_here(const Graph& graph) {
  Graph result;
  Builder builder(result);
  std::vector<ValueId> mapped(static_cast<size_t>(graph.size()), -1);
  auto inputs_of = [&](const Node& node, size_t begin, size_t end) {
    std::vector<ValueId> inputs;
    for (size_t k = begin; k < end; ++k)
      inputs.push_back(mapped[static_cast<size_t>(node.inputs[k])]);
    return inputs;
  };
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op != Op::cond) {
      mapped[static_cast<size_t>(id)] =
          builder.copy_node(node, inputs_of(node, 0, node.inputs.size()));
      continue;
    }
    const CondOperands positions = cond_operands(node);
    builder.set_location(node.location);
    ValueId predicate = mapped[static_cast<size_t>(node.inputs[0])];
    ValueId zero = builder.constant(Scalar::of_int(0), DType::Int64);
    ValueId then_trips = builder.cast(predicate, DType::Int64);
    ValueId else_trips = builder.cast(builder.unary(Op::logical_not, predicate), DType::Int64);
    std::vector<ValueId> carried = inputs_of(node, positions.carried_begin, positions.then_begin);
    ValueId then_loop = builder.loop(zero, then_trips, 1, carried,
                                     inputs_of(node, positions.then_begin, positions.else_begin),
                                     as_loop_body(*node.attrs.body));
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = builder.loop_result(then_loop, static_cast<int64_t>(k));
    // The cond token becomes the else loop's: its loop_result users read the right values.
    mapped[static_cast<size_t>(id)] = builder.loop(
        zero, else_trips, 1, carried, inputs_of(node, positions.else_begin, positions.end),
        as_loop_body(*node.attrs.else_body));
  }
  result.set_outputs(mapped_outputs(graph, mapped));
  return result;
}

}  // namespace

bool has_conditionals(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.op == Op::cond) return true;
    for (const Graph* region : {node.attrs.body.get(), node.attrs.else_body.get()})
      if (region != nullptr && has_conditionals(*region)) return true;
  }
  return false;
}

Graph lower_conditionals(const Graph& graph) {
  if (!has_conditionals(graph)) return graph;
  return lower_conditionals_here(map_loop_bodies(graph, lower_conditionals));
}

CondOperands cond_operands(const Node& node) {
  size_t carried_begin = 1;
  size_t then_begin = carried_begin + size_t(node.attrs.index);
  size_t else_begin = then_begin + size_t(node.attrs.axis);
  return {carried_begin, then_begin, else_begin, node.inputs.size()};
}

std::string cond_signature_error(const Graph& graph, const Node& node) {
  const Attrs& attrs = node.attrs;
  if (!attrs.body || !attrs.else_body) return "needs a then and an else region";
  if (attrs.index < 0 || attrs.axis < 0 ||
      node.inputs.size() < 1 + static_cast<size_t>(attrs.index) + static_cast<size_t>(attrs.axis))
    return "has fewer operands than its carried values and then invariants";
  const Node& predicate = graph.node(node.inputs[0]);
  if (predicate.dtype != DType::Bool || !predicate.shape.empty())
    return "the predicate must be bool 0-d, not " + type_text(predicate);
  const CondOperands operands = cond_operands(node);
  std::string error =
      region_error("then", graph, node, *attrs.body, operands.then_begin, operands.else_begin);
  if (error.empty())
    error = region_error("else", graph, node, *attrs.else_body, operands.else_begin, operands.end);
  return error;
}

std::vector<Array> interpret_cond(const Node& node, const std::vector<Array>& operands) {
  const CondOperands positions = cond_operands(node);
  bool taken = *operands[0].contiguous().data_as<bool>();
  std::vector<Array> inputs(operands.begin() + long(positions.carried_begin),
                            operands.begin() + long(positions.then_begin));
  size_t begin = taken ? positions.then_begin : positions.else_begin;
  size_t end = taken ? positions.else_begin : positions.end;
  inputs.insert(inputs.end(), operands.begin() + long(begin), operands.begin() + long(end));
  return interpret(taken ? *node.attrs.body : *node.attrs.else_body, inputs);
}

// ---- factory (builder.h) ----

ValueId Builder::cond(ValueId predicate, const std::vector<ValueId>& carried,
                      const std::vector<ValueId>& then_invariants,
                      const std::vector<ValueId>& else_invariants,
                      std::shared_ptr<const Graph> then_region,
                      std::shared_ptr<const Graph> else_region) {
  Attrs attrs;
  attrs.index = static_cast<int64_t>(carried.size());
  attrs.axis = static_cast<int64_t>(then_invariants.size());
  attrs.body = std::move(then_region);
  attrs.else_body = std::move(else_region);
  std::vector<ValueId> inputs{predicate};
  for (const std::vector<ValueId>* part : {&carried, &then_invariants, &else_invariants})
    inputs.insert(inputs.end(), part->begin(), part->end());
  Node node{Op::cond, DType::Bool, {}, inputs, attrs, location_};
  std::string error = cond_signature_error(graph_, node);
  if (!error.empty()) fail(ErrorKind::Value, Op::cond, error);
  return add(Op::cond, DType::Bool, {}, std::move(inputs), std::move(attrs));
}

}  // namespace kiln::ir
