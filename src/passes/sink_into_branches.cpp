// Work that only a branch reads, moved into the branch. A branch reaches the graph passes as
// loops of 0 or 1 iterations (a cond lowered by ir/cond.h, or a side the NumPy tracer captured
// as such a loop); the tracer passes a side's loop what does not vary in it (its invariants),
// computed before it, so that work ran whether or not the side was taken: a sieve's
// `if s[i]: for j in range(i * i, n, i)` divided for the inner range's length at every i, where
// only primes need it (H100: most of the loop's 22 ms). Inside the side it runs only when
// taken, as Python runs it; an op that raises on data (a singular matrix) raises only then.
// Nothing is computed more often: the side runs at most once where the work ran once.
#include <algorithm>
#include <map>

#include "ir/loop.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Graph;
using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

// A loop that runs at most once: constant bounds of one trip or none, or a trip count made of
// a truth value (a branch side: range(0, int(taken))).
bool at_most_one_iteration(const Graph& graph, const Node& loop) {
  if (loop.op != Op::loop || ir::is_while_loop(loop)) return false;
  const Node& start = graph.node(loop.inputs[0]);
  const Node& stop = graph.node(loop.inputs[1]);
  const int64_t step = loop.attrs.steps.at(0);
  if (start.op != Op::constant || !start.attrs.scalar.is_integer) return false;
  const int64_t first = start.attrs.scalar.i;
  if (stop.op == Op::constant && stop.attrs.scalar.is_integer)
    return ir::loop_trip_count(first, stop.attrs.scalar.i, step) <= 1;
  return stop.op == Op::cast && graph.node(stop.inputs[0]).dtype == DType::Bool && first >= 0 &&
         step > 0;
}

// The first operand of `loop` that its body takes as an invariant.
size_t first_invariant(const Node& loop) { return 2 + static_cast<size_t>(loop.attrs.index); }

// Whether each invariant of `loop` goes unread by its body (the NumPy tracer passes both sides
// of a branch what either reads).
std::vector<bool> unread_invariants(const Node& loop) {
  const Graph& body = *loop.attrs.body;
  const std::vector<std::vector<ValueId>> users = body.users();
  const std::vector<ValueId>& parameters = body.inputs();
  std::vector<bool> unread;
  for (size_t p = first_invariant(loop) - 1; p < parameters.size(); ++p) {
    const ValueId parameter = parameters[p];
    const std::vector<ValueId>& outputs = body.outputs();
    unread.push_back(users[static_cast<size_t>(parameter)].empty() &&
                     std::find(outputs.begin(), outputs.end(), parameter) == outputs.end());
  }
  return unread;
}

// For each node, the one-trip loop it moves into (-1: it stays): a node moves when every read
// of it is an invariant operand of that loop or a node that moves into it, and it is no output
// of the graph and no parameter (nor a loop's result whose loop stays). A staying loop's
// invariant that its body never reads is no read (the operand is dropped).
std::vector<ValueId> owners(const Graph& graph) {
  const size_t n = static_cast<size_t>(graph.size());
  std::vector<ValueId> owner(n, -1);
  std::vector<bool> branch(n, false), kept(n, false);  // kept: read where it cannot move
  for (ValueId output : graph.outputs()) kept[static_cast<size_t>(output)] = true;
  std::vector<ValueId> reader(n, -1);  // the loop every read so far moves it into
  for (ValueId id = graph.size() - 1; id >= 0; --id) {
    const Node& node = graph.node(id);
    const size_t k = static_cast<size_t>(id);
    branch[k] = at_most_one_iteration(graph, node);
    if (!kept[k] && reader[k] >= 0 && node.op != Op::parameter) owner[k] = reader[k];
    const std::vector<bool> unread =
        node.op == Op::loop && owner[k] < 0 ? unread_invariants(node) : std::vector<bool>();
    for (size_t p = 0; p < node.inputs.size(); ++p) {
      const size_t input = static_cast<size_t>(node.inputs[p]);
      if (!unread.empty() && p >= first_invariant(node) && unread[p - first_invariant(node)])
        continue;
      // (a branch that itself moves takes what it reads along; a later round sinks it further)
      const ValueId into =
          branch[k] && owner[k] < 0 && p >= first_invariant(node) ? id : owner[k];
      if (into < 0 || (reader[input] >= 0 && reader[input] != into))
        kept[input] = true;
      else
        reader[input] = into;
    }
  }
  // A loop's token is no value a body may take: its results move only with the loop.
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    ValueId& moves_into = owner[static_cast<size_t>(id)];
    if (node.op == Op::loop_result && owner[static_cast<size_t>(node.inputs[0])] != moves_into)
      moves_into = -1;
  }
  return owner;
}

// The body of loop `id` with the nodes that move into it (`moving`, ids of `graph`, in order)
// computed at its start: the invariants they were become those nodes, and invariants that moved
// elsewhere (unread) are gone; what the moving nodes read from outside becomes invariants,
// appended to `invariants` (the operands, ids of `graph`) after the ones that stay.
std::shared_ptr<const Graph> body_with(const Graph& graph, ValueId id,
                                       const std::vector<ValueId>& owner,
                                       const std::vector<ValueId>& moving,
                                       std::vector<ValueId>& invariants) {
  const Node& loop = graph.node(id);
  const Graph& body = *loop.attrs.body;
  const size_t first = first_invariant(loop);
  auto moves = [&](ValueId node) { return owner[static_cast<size_t>(node)] == id; };
  auto elsewhere = [&](ValueId node) { return owner[static_cast<size_t>(node)] >= 0; };
  auto result = std::make_shared<Graph>();
  ir::Builder b(*result);
  std::vector<ValueId> mapped(static_cast<size_t>(body.size()), -1);  // body id -> new id
  std::map<ValueId, ValueId> inside;                                   // graph id -> new id
  auto parameter = [&](ValueId body_id) {
    const Node& node = body.node(body_id);
    b.set_location(node.location);
    return b.parameter(node.dtype, node.shape);
  };
  const std::vector<ValueId>& parameters = body.inputs();
  for (size_t p = 0; p < first - 1; ++p)  // the induction variable, the carried values
    mapped[static_cast<size_t>(parameters[p])] = parameter(parameters[p]);
  for (size_t p = first - 1; p < parameters.size(); ++p) {
    const ValueId operand = loop.inputs[p + 1];
    if (elsewhere(operand)) continue;  // (moving in: mapped below; else unread)
    mapped[static_cast<size_t>(parameters[p])] = parameter(parameters[p]);
    invariants.push_back(operand);
    inside.emplace(operand, mapped[static_cast<size_t>(parameters[p])]);
  }
  std::vector<ValueId> constants;  // copied in, not passed: the body's kernels inline them
  for (ValueId node : moving)
    for (ValueId input : graph.node(node).inputs) {
      const Node& outside = graph.node(input);
      if (moves(input) || inside.count(input)) continue;
      if (outside.op == Op::constant || outside.op == Op::iota) {
        constants.push_back(input);
        inside.emplace(input, -1);
        continue;
      }
      b.set_location(outside.location);
      inside.emplace(input, b.parameter(outside.dtype, outside.shape));
      invariants.push_back(input);
    }
  for (ValueId constant : constants) {
    b.set_location(graph.node(constant).location);
    inside[constant] = b.copy_node(graph.node(constant), {});
  }
  for (ValueId node_id : moving) {
    const Node& node = graph.node(node_id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(inside.at(input));
    b.set_location(node.location);
    inside[node_id] = b.copy_node(node, std::move(inputs));
  }
  for (size_t p = first - 1; p < parameters.size(); ++p)
    if (moves(loop.inputs[p + 1]))
      mapped[static_cast<size_t>(parameters[p])] = inside.at(loop.inputs[p + 1]);
  for (ValueId body_id = 0; body_id < body.size(); ++body_id) {
    const Node& node = body.node(body_id);
    if (node.op == Op::parameter) continue;
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(mapped[static_cast<size_t>(input)]);
    b.set_location(node.location);
    mapped[static_cast<size_t>(body_id)] = b.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : body.outputs()) outputs.push_back(mapped[static_cast<size_t>(output)]);
  result->set_outputs(std::move(outputs));
  return result;
}

}  // namespace

Graph sink_into_branches(const Graph& graph) {
  const std::vector<ValueId> owner = owners(graph);
  if (std::all_of(owner.begin(), owner.end(), [](ValueId o) { return o < 0; })) return graph;
  std::map<ValueId, std::vector<ValueId>> moving;  // by loop, in order
  for (ValueId id = 0; id < graph.size(); ++id)
    if (owner[static_cast<size_t>(id)] >= 0) moving[owner[static_cast<size_t>(id)]].push_back(id);
  Graph result;
  ir::Builder b(result);
  std::vector<ValueId> mapped(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (owner[static_cast<size_t>(id)] >= 0) continue;  // copied into its loop's body
    const Node& node = graph.node(id);
    b.set_location(node.location);
    auto found = moving.find(id);
    auto moved = [&](ValueId input) { return owner[static_cast<size_t>(input)] >= 0; };
    const bool unread_moved =  // (an invariant its body never reads, moved into a branch)
        node.op == Op::loop &&
        std::any_of(node.inputs.begin() + static_cast<ptrdiff_t>(first_invariant(node)),
                    node.inputs.end(), moved);
    if (found == moving.end() && !unread_moved) {
      std::vector<ValueId> inputs;
      for (ValueId input : node.inputs) inputs.push_back(mapped[static_cast<size_t>(input)]);
      mapped[static_cast<size_t>(id)] = b.copy_node(node, std::move(inputs));
      continue;
    }
    std::vector<ValueId> invariants;
    Node loop = node;
    loop.attrs.body = body_with(graph, id, owner,
                               found == moving.end() ? std::vector<ValueId>() : found->second,
                               invariants);
    std::vector<ValueId> inputs(node.inputs.begin(),
                                node.inputs.begin() + static_cast<ptrdiff_t>(first_invariant(node)));
    inputs.insert(inputs.end(), invariants.begin(), invariants.end());
    for (ValueId& input : inputs) input = mapped[static_cast<size_t>(input)];
    mapped[static_cast<size_t>(id)] = b.copy_node(loop, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(mapped[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
