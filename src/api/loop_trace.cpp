#include "api/loop_trace.h"

#include <algorithm>
#include <map>

#include "ir/printer.h"

namespace kiln::detail {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

Trace::Region& open_region(Trace& trace, const char* op) {
  if (trace.regions.empty())
    throw Error(ErrorKind::Internal, std::string("kiln: ") + op + ": no loop body is open");
  return trace.regions.back();
}

// Whether each node from `mark` on depends on one of `sources` (grown to the graph's size).
void extend_dependence(const ir::Graph& graph, ValueId mark, const std::vector<ValueId>& sources,
                       std::vector<char>& dependent) {
  size_t begin = dependent.size();
  dependent.resize(static_cast<size_t>(graph.size()), 0);
  for (ValueId id = static_cast<ValueId>(begin); id < graph.size(); ++id) {
    if (id < mark) continue;
    bool depends = std::binary_search(sources.begin(), sources.end(), id);  // made in order
    for (ValueId input : graph.node(id).inputs)
      depends = depends || (input >= mark && dependent[static_cast<size_t>(input)]);
    dependent[static_cast<size_t>(id)] = depends;
  }
}

// A value made from scalar constants and iotas by cheap elementwise and movement ops (an index
// array i + 1 of a slice assignment): copied into a body rather than passed in, so that its
// kernels compute it inline (an affine index, not a load of a buffer of indices).
bool is_cheap_constant(const ir::Graph& graph, ValueId id, int depth = 0) {
  const Node& node = graph.node(id);
  if (node.op == Op::constant || node.op == Op::iota) return true;
  bool cheap = node.op == Op::broadcast || node.op == Op::reshape || node.op == Op::cast ||
               node.op == Op::slice ||
               (ir::is_elementwise(node.op) && ir::op_info(node.op).cost == ir::Cost::Cheap);
  if (!cheap || depth > 8) return false;
  for (ValueId input : node.inputs)
    if (!is_cheap_constant(graph, input, depth + 1)) return false;
  return true;
}

std::string type_text(const Node& node) {
  return std::string(dtype_name(node.dtype)) + ir::shape_string(node.shape);
}

}  // namespace

Tensor begin_loop_body(Trace& trace, const std::optional<Tensor>& start,
                       const std::optional<Tensor>& stop, int64_t step) {
  std::optional<std::pair<int64_t, int64_t>> range;
  if (start && stop && step != 0) {
    auto first = integer_range(trace, start->id()), end = integer_range(trace, stop->id());
    // range(start, stop, step) stays in [start, stop) (step > 0) or (stop, start] (step < 0).
    if (first && end && step > 0 && end->second > INT64_MIN) range = {{first->first, end->second - 1}};
    if (first && end && step < 0 && end->first < INT64_MAX) range = {{end->first + 1, first->second}};
  }
  trace.builder.set_location(trace.default_location);
  ValueId mark = trace.graph.size();
  ValueId induction = trace.builder.placeholder(DType::Int64, {});
  trace.regions.push_back({mark, {induction}, range});
  return Tensor(&trace, induction);
}

std::optional<std::pair<int64_t, int64_t>> integer_range(const Trace& trace, ValueId id) {
  const ir::Node& node = trace.graph.node(id);
  if (!node.shape.empty() || !(is_integer(node.dtype) || node.dtype == DType::Bool))
    return std::nullopt;
  using Range = std::pair<int64_t, int64_t>;
  auto operand = [&](size_t k) { return integer_range(trace, node.inputs[k]); };
  switch (node.op) {
    case ir::Op::constant:
      if (!node.attrs.scalar.is_integer) return std::nullopt;
      return Range{node.attrs.scalar.i, node.attrs.scalar.i};
    case ir::Op::placeholder:
      for (const Trace::Region& region : trace.regions) {
        if (region.placeholders[0] == id) return region.induction_range;
        auto unchanged = region.unchanged.find(id);
        if (unchanged != region.unchanged.end()) return integer_range(trace, unchanged->second);
      }
      return std::nullopt;
    case ir::Op::cast: {  // widening only: the value is unchanged
      const ir::Node& from = trace.graph.node(node.inputs[0]);
      if (node.dtype != DType::Int64 || !is_integer(from.dtype)) return std::nullopt;
      return operand(0);
    }
    case ir::Op::add:
    case ir::Op::sub:
    case ir::Op::mul: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b || node.dtype != DType::Int64) return std::nullopt;
      int64_t corners[4];
      int count = 0;
      for (int64_t x : {a->first, a->second})
        for (int64_t y : {b->first, b->second}) {
          int64_t value;
          bool overflow = node.op == ir::Op::add   ? __builtin_add_overflow(x, y, &value)
                          : node.op == ir::Op::mul ? __builtin_mul_overflow(x, y, &value)
                                                   : __builtin_sub_overflow(x, y, &value);
          if (overflow) return std::nullopt;
          corners[count++] = value;
        }
      // x - y is lowest at (x low, y high): the corners cover every case.
      return Range{*std::min_element(corners, corners + 4), *std::max_element(corners, corners + 4)};
    }
    default:
      return std::nullopt;
  }
}

Tensor loop_placeholder(Trace& trace, DType dtype, const std::vector<int64_t>& shape) {
  Trace::Region& region = open_region(trace, "loop_placeholder");
  ValueId id = trace.builder.placeholder(dtype, ir::from_ints(shape));
  region.placeholders.push_back(id);
  return Tensor(&trace, id);
}

void abandon_loop_body(Trace& trace) {
  ValueId mark = open_region(trace, "abandon_loop_body").mark;
  trace.regions.pop_back();
  // Checks recorded by the abandoned body: unrolling records them again where they apply.
  std::erase_if(trace.checks, [&](const Trace::Check& check) { return check.flag >= mark; });
}

namespace {

using CutRegion = Trace::CutRegion;

// Index checks recorded in the closing body that its bounds keep in range, now that the values
// it carries unchanged are known to be their initial ones (a loop's read-only `k` in `x[k - j]`):
// dropped, so the loop carries no flag for them.
void drop_checks_in_range(Trace& trace, const std::vector<Tensor>& init,
                          const std::vector<Tensor>& results) {
  Trace::Region& region = trace.regions.back();
  for (size_t k = 0; k < init.size() && k < results.size() && k + 1 < region.placeholders.size(); ++k)
    if (results[k].id() == region.placeholders[k + 1])
      region.unchanged[region.placeholders[k + 1]] = init[k].id();
  std::erase_if(trace.checks, [&](const Trace::Check& check) {
    if (check.flag < region.mark || check.index < 0) return false;
    std::optional<std::pair<int64_t, int64_t>> range = integer_range(trace, check.index);
    return range && range->first >= -check.size && range->second < check.size;
  });
}

// Nodes of the closing body that vary from one iteration to the next: those depending on the
// induction variable or on a carried value the body changes. Work on values a loop carries
// unchanged (an array it only reads: every array a Python loop's body names is carried) is the
// same in every iteration.
std::vector<char> varying_nodes(const ir::Graph& graph, const Trace::Region& region,
                                const std::vector<ValueId>& result_ids, bool while_loop) {
  std::vector<ValueId> sources = {region.placeholders[0]};
  for (size_t k = 0; k < result_ids.size(); ++k) {
    ValueId placeholder = region.placeholders[k + 1];
    if (result_ids[k] != placeholder || (while_loop && k == 0)) sources.push_back(placeholder);
  }
  std::sort(sources.begin(), sources.end());
  std::vector<char> varying;
  extend_dependence(graph, region.mark, sources, varying);
  return varying;
}

// `id` (a node of the closing body that varies with no iteration) rebuilt after the body on the
// initial values of the carried values it reads, which stand for them: loop-invariant work
// computed once, outside the loop (a time loop that solved a fixed system factored its matrix
// every step). `outside` maps body ids to their rebuilt values.
ValueId rebuilt_outside(Trace& trace, const Trace::Region& region,
                        const std::vector<char>& dependent, std::map<ValueId, ValueId>& outside,
                        ValueId id) {
  if (id < region.mark || !dependent[static_cast<size_t>(id)]) return id;
  auto found = outside.find(id);
  if (found != outside.end()) return found->second;
  ir::Node node = trace.graph.node(id);  // a copy: building appends to the graph
  std::vector<ValueId> inputs;
  for (ValueId input : node.inputs)
    inputs.push_back(rebuilt_outside(trace, region, dependent, outside, input));
  trace.builder.set_location(node.location);
  ValueId copy = trace.builder.copy_node(node, std::move(inputs));
  outside[id] = copy;
  return copy;
}

// The slots of a for loop's per-iteration check arrays: its stop, where the range's bounds are
// constants the trace knows, 0 <= start, a step up, and the arrays stay small; else 0.
int64_t check_slots(const Trace& trace, const Tensor& start, const Tensor& stop, int64_t step,
                    bool while_loop) {
  constexpr int64_t kMostCheckSlots = int64_t{1} << 20;
  const Node& first = trace.graph.node(start.id());
  const Node& last = trace.graph.node(stop.id());
  if (while_loop || step <= 0 || first.op != Op::constant || last.op != Op::constant ||
      !first.shape.empty() || !last.shape.empty() || !first.attrs.scalar.is_integer ||
      !last.attrs.scalar.is_integer || first.attrs.scalar.i < 0)
    return 0;
  const int64_t stop_value = last.attrs.scalar.i;
  return stop_value > 0 && stop_value <= kMostCheckSlots ? stop_value : 0;
}

// `check_slots` > 0: the checks the body records go to slot i of arrays the loop carries (a
// flag each, and the values: scatters at the induction value i), and after the loop the first
// failing slot is the check (end_loop). Iterations that write only their own slots
// stay independent of each other (sched/independent_iterations.h: a block or thread each),
// where a carried "failed before, or now" and its first value chain each to the one before.
// Other loops (while loops, bounds known only at run time) carry the pair.
CutRegion cut_region(Trace& trace, const std::vector<Tensor>& init,
                     const std::vector<Tensor>& results, bool while_loop, bool hoist_read_only,
                     int64_t check_slots = 0) {
  if (!trace.regions.empty()) drop_checks_in_range(trace, init, results);
  Trace::Region region = open_region(trace, "end_loop");
  ir::Graph& graph = trace.graph;
  ir::Builder& builder = trace.builder;
  builder.set_location(trace.default_location);
  if (init.size() != results.size() || init.size() + 1 != region.placeholders.size())
    throw Error(ErrorKind::Internal, "kiln: end_loop: carried values do not match placeholders");
  CutRegion cut;
  std::vector<ValueId>& init_ids = cut.init_ids;
  std::vector<ValueId>& result_ids = cut.result_ids;
  for (size_t k = 0; k < init.size(); ++k) {
    init_ids.push_back(init[k].id());
    result_ids.push_back(results[k].id());
  }
  std::vector<char> dependent;
  extend_dependence(graph, region.mark, region.placeholders, dependent);

  // Checks recorded inside the body become carried: "failed before, or now" and the first value.
  for (size_t c = 0; c < trace.checks.size(); ++c) {
    Trace::Check& check = trace.checks[c];
    if (check.flag < region.mark || !(dependent[static_cast<size_t>(check.flag)] ||
                                      dependent[static_cast<size_t>(check.value)]))
      continue;
    const ir::Node& value = builder.node(check.value);
    DType value_dtype = value.dtype;
    ir::Shape value_shape = value.shape;
    if (check_slots > 0) {
      ir::Shape slots_shape = {ir::Dim(check_slots)}, update_shape = {ir::Dim(1)};
      slots_shape.insert(slots_shape.end(), value_shape.begin(), value_shape.end());
      update_shape.insert(update_shape.end(), value_shape.begin(), value_shape.end());
      ValueId flags = builder.placeholder(DType::Bool, {ir::Dim(check_slots)});
      ValueId values = builder.placeholder(value_dtype, slots_shape);
      region.placeholders.insert(region.placeholders.end(), {flags, values});
      const ValueId slot = builder.reshape(region.placeholders[0], {ir::Dim(1)});
      const ValueId flag = builder.reshape(check.flag, {ir::Dim(1)});
      result_ids.push_back(builder.scatter(flags, slot, flag, 0, ir::ScatterMode::Set));
      result_ids.push_back(builder.scatter(values, slot, builder.reshape(check.value, update_shape),
                                           0, ir::ScatterMode::Set));
      const ir::Scalar zero = ir::Scalar::of_int(0);
      init_ids.push_back(builder.constant(zero, DType::Bool, {ir::Dim(check_slots)}));
      init_ids.push_back(builder.constant(zero, value_dtype, slots_shape));
      cut.carried_checks.push_back(c);
      continue;
    }
    ValueId failed = builder.placeholder(DType::Bool, {});
    ValueId first = builder.placeholder(value_dtype, value_shape);
    region.placeholders.insert(region.placeholders.end(), {failed, first});
    result_ids.push_back(builder.binary(Op::logical_or, failed, check.flag));
    result_ids.push_back(builder.where(failed, first, check.value));
    init_ids.push_back(builder.constant(ir::Scalar::of_int(0), DType::Bool));
    init_ids.push_back(builder.constant(ir::Scalar::of_int(0), value_dtype, value_shape));
    cut.carried_checks.push_back(c);
  }
  extend_dependence(graph, region.mark, region.placeholders, dependent);
  std::vector<char> varying = hoist_read_only
                                  ? varying_nodes(graph, region, result_ids, while_loop)
                                  : dependent;
  std::map<ValueId, ValueId> outside;
  for (size_t k = 0; k < result_ids.size(); ++k)
    if (!varying[static_cast<size_t>(region.placeholders[k + 1])])
      outside[region.placeholders[k + 1]] = init_ids[k];

  // The body: varying nodes the results need. Other values it reads are invariants (rebuilt
  // outside where they read carried values: rebuilt_outside), except cheap constants
  // (is_cheap_constant), which are copied in: the body's kernels compute them.
  std::vector<char> needed(static_cast<size_t>(graph.size()), 0);
  std::vector<ValueId>& invariants = cut.invariants;
  std::vector<ValueId> stack = result_ids;
  std::map<ValueId, ValueId> mapped;  // trace id -> body id
  std::vector<std::pair<ValueId, ValueId>> hoisted;  // body id, its invariant rebuilt outside
  while (!stack.empty()) {
    ValueId id = stack.back();
    stack.pop_back();
    if (needed[static_cast<size_t>(id)]) continue;
    needed[static_cast<size_t>(id)] = 1;
    const Node& node = graph.node(id);
    bool placeholder = std::find(region.placeholders.begin(), region.placeholders.end(), id) !=
                       region.placeholders.end();
    if (placeholder) continue;
    if (!varying[static_cast<size_t>(id)] && !is_cheap_constant(graph, id)) {
      ValueId invariant = rebuilt_outside(trace, region, dependent, outside, id);
      invariants.push_back(invariant);
      if (invariant != id) hoisted.emplace_back(id, invariant);
      continue;
    }
    stack.insert(stack.end(), node.inputs.begin(), node.inputs.end());
  }
  needed.resize(static_cast<size_t>(graph.size()), 0);  // (rebuilding appended nodes)
  builder.set_location(trace.default_location);
  std::sort(invariants.begin(), invariants.end());

  // Type checks first; a carried value the body leaves as it is becomes an invariant (its
  // placeholder reads the initial value), so that the loop copies nothing for it.
  for (size_t k = 0; k < result_ids.size(); ++k) {
    const Node& placeholder = graph.node(region.placeholders[k + 1]);
    const Node& result = graph.node(result_ids[k]);
    if (placeholder.dtype != result.dtype || placeholder.shape != result.shape)
      throw Error(
          ErrorKind::Type,
          error_message("loop", trace.default_location,
                        "carried value " + std::to_string(k) + " enters the body as " +
                            type_text(placeholder) + " and leaves it as " + type_text(result)));
    bool condition = while_loop && k == 0;  // stays carried value 0
    (result_ids[k] == region.placeholders[k + 1] && !condition ? cut.unchanged : cut.changed)
        .push_back(k);
  }
  cut.body = std::make_shared<ir::Graph>();
  ir::Builder body_builder(*cut.body);
  auto add_parameter = [&](ValueId id) {
    const Node& node = graph.node(id);
    body_builder.set_location(node.location);
    mapped[id] = body_builder.parameter(node.dtype, node.shape);
  };
  add_parameter(region.placeholders[0]);
  for (size_t k : cut.changed) add_parameter(region.placeholders[k + 1]);
  for (size_t k : cut.unchanged) add_parameter(region.placeholders[k + 1]);
  for (ValueId id : invariants) add_parameter(id);
  for (auto [id, invariant] : hoisted) mapped[id] = mapped.at(invariant);
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (!needed[static_cast<size_t>(id)] || mapped.count(id)) continue;
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(mapped.at(input));
    mapped[id] = body_builder.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (size_t k : cut.changed) outputs.push_back(mapped.at(result_ids[k]));
  cut.body->set_outputs(std::move(outputs));
  trace.regions.pop_back();
  return cut;
}

// A side's cut body as a cond region (ir/cond.h): parameters are the carried values in `kept`
// order, then the other carried values and the side's invariants (cond_invariants); outputs
// are the kept values after the side (unchanged ones passed through).
std::shared_ptr<const ir::Graph> cond_region(const CutRegion& cut, const std::vector<size_t>& kept) {
  const ir::Graph& body = *cut.body;
  const std::vector<ValueId>& parameters = body.inputs();  // induction, changed, unchanged, inv
  auto parameter_of = [&](size_t k) {
    auto changed = std::find(cut.changed.begin(), cut.changed.end(), k);
    if (changed != cut.changed.end()) return parameters[1 + size_t(changed - cut.changed.begin())];
    auto unchanged = std::find(cut.unchanged.begin(), cut.unchanged.end(), k);
    return parameters[1 + cut.changed.size() + size_t(unchanged - cut.unchanged.begin())];
  };
  std::vector<ValueId> order;  // body parameters in the region's order
  for (size_t k : kept) order.push_back(parameter_of(k));
  for (size_t k = 0; k < cut.init_ids.size(); ++k)
    if (std::find(kept.begin(), kept.end(), k) == kept.end()) order.push_back(parameter_of(k));
  order.insert(order.end(), parameters.begin() + long(1 + cut.init_ids.size()), parameters.end());

  auto region = std::make_shared<ir::Graph>();
  ir::Builder builder(*region);
  std::vector<ValueId> mapped(static_cast<size_t>(body.size()), -1);
  for (ValueId parameter : order) {
    const Node& node = body.node(parameter);
    builder.set_location(node.location);
    mapped[static_cast<size_t>(parameter)] = builder.parameter(node.dtype, node.shape);
  }
  // A region has no induction variable; the one its side's trace made is never read.
  mapped[static_cast<size_t>(parameters[0])] =
      builder.constant(ir::Scalar::of_int(0), DType::Int64);
  for (ValueId id = 0; id < body.size(); ++id) {
    const Node& node = body.node(id);
    if (node.op == Op::parameter) continue;
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(mapped[static_cast<size_t>(input)]);
    mapped[static_cast<size_t>(id)] = builder.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (size_t k : kept) {
    auto changed = std::find(cut.changed.begin(), cut.changed.end(), k);
    ValueId value = changed != cut.changed.end()
                        ? body.outputs()[size_t(changed - cut.changed.begin())]
                        : parameter_of(k);
    outputs.push_back(mapped[static_cast<size_t>(value)]);
  }
  region->set_outputs(std::move(outputs));
  return region;
}

// The operands a side's region takes after the kept carried values.
std::vector<ValueId> cond_invariants(const CutRegion& cut, const std::vector<size_t>& kept) {
  std::vector<ValueId> operands;
  for (size_t k = 0; k < cut.init_ids.size(); ++k)
    if (std::find(kept.begin(), kept.end(), k) == kept.end()) operands.push_back(cut.init_ids[k]);
  operands.insert(operands.end(), cut.invariants.begin(), cut.invariants.end());
  return operands;
}

}  // namespace

std::vector<Tensor> end_loop(Trace& trace, const Tensor& start, const Tensor& stop, int64_t step,
                             const std::vector<Tensor>& init, const std::vector<Tensor>& results,
                             bool while_loop) {
  const int64_t slots = check_slots(trace, start, stop, step, while_loop);
  CutRegion cut = cut_region(trace, init, results, while_loop, true, slots);
  std::vector<ValueId> loop_init, loop_invariants;
  for (size_t k : cut.changed) loop_init.push_back(cut.init_ids[k]);
  for (size_t k : cut.unchanged) loop_invariants.push_back(cut.init_ids[k]);
  loop_invariants.insert(loop_invariants.end(), cut.invariants.begin(), cut.invariants.end());
  ValueId loop = trace.builder.loop(start.id(), stop.id(), step, loop_init, loop_invariants,
                                    std::move(cut.body), while_loop);
  std::vector<Tensor> after(cut.result_ids.size());
  for (size_t k : cut.unchanged) after[k] = Tensor(&trace, cut.init_ids[k]);
  for (size_t c = 0; c < cut.changed.size(); ++c)
    after[cut.changed[c]] = Tensor(&trace, trace.builder.loop_result(loop, static_cast<int64_t>(c)));
  for (size_t c = 0; c < cut.carried_checks.size(); ++c) {
    Trace::Check& check = trace.checks[cut.carried_checks[c]];
    check.flag = after[init.size() + 2 * c].id();
    check.value = after[init.size() + 2 * c + 1].id();
    if (slots > 0) {  // the first failing slot's
      ir::Builder& builder = trace.builder;
      const ValueId flags = check.flag, values = check.value;
      const ir::Shape& slots_shape = builder.node(values).shape;
      const ir::Shape shape(slots_shape.begin() + 1, slots_shape.end());
      const ValueId first_failed = builder.reduce(Op::argmax, flags, {0}, false);
      const ValueId first = builder.reshape(first_failed, {ir::Dim(1)});
      check.flag = builder.reduce(Op::any, flags, {0}, false);
      check.value = builder.reshape(builder.gather(values, first, 0), shape);
    }
  }
  after.resize(init.size());
  return after;
}

void end_cond_side(Trace& trace, const std::vector<Tensor>& init,
                   const std::vector<Tensor>& results) {
  // A side that recorded run-time checks runs as loops instead (which carry them, each
  // applying only where its side ran): the side's body and its checks are dropped as an
  // abandoned loop body's are. (Checks left behind named the side's placeholders outside it.)
  const ValueId mark = open_region(trace, "end_cond_side").mark;
  if (std::any_of(trace.checks.begin(), trace.checks.end(),
                  [&](const Trace::Check& check) { return check.flag >= mark; })) {
    abandon_loop_body(trace);
    throw Error(ErrorKind::Unsupported,
                "kiln: a branch side with run-time checks runs as loops, not as one cond");
  }
  // (a side's work on values it leaves as they are stays in it: only the side taken runs)
  trace.cond_sides.push_back(cut_region(trace, init, results, false, false));
}

std::vector<Tensor> end_cond(Trace& trace, const Tensor& predicate) {
  if (trace.cond_sides.size() < 2)
    throw Error(ErrorKind::Internal, "kiln: end_cond: both sides must be closed first");
  CutRegion otherwise = std::move(trace.cond_sides.back());
  trace.cond_sides.pop_back();
  CutRegion then = std::move(trace.cond_sides.back());
  trace.cond_sides.pop_back();
  if (then.init_ids.size() != otherwise.init_ids.size())
    throw Error(ErrorKind::Internal, "kiln: end_cond: the sides carry different values");
  std::vector<size_t> kept;  // carried values that either side changes
  for (size_t k = 0; k < then.init_ids.size(); ++k) {
    bool changed = std::count(then.changed.begin(), then.changed.end(), k) +
                   std::count(otherwise.changed.begin(), otherwise.changed.end(), k);
    if (changed) kept.push_back(k);
  }
  std::vector<Tensor> after;
  for (ValueId init : then.init_ids) after.push_back(Tensor(&trace, init));
  if (kept.empty()) return after;
  std::vector<ValueId> carried;
  for (size_t k : kept) carried.push_back(then.init_ids[k]);
  trace.builder.set_location(trace.default_location);
  ValueId cond = trace.builder.cond(predicate.id(), carried, cond_invariants(then, kept),
                                    cond_invariants(otherwise, kept), cond_region(then, kept),
                                    cond_region(otherwise, kept));
  for (size_t c = 0; c < kept.size(); ++c)
    after[kept[c]] = Tensor(&trace, trace.builder.loop_result(cond, static_cast<int64_t>(c)));
  return after;
}

}  // namespace kiln::detail
