#include "sched/materialize.h"

#include <algorithm>
#include <vector>

#include "ir/size_choices.h"
#include "sched/strided_views.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

// Time-step loops of stencils: each step reads the previous one through several shifted views
// (u[2:], u[:-2], ...), so inlining k such steps computes the first one at about 2k+1 places.
// Along a chain of values read that way, every kStencilSteps-th is materialized: a kernel then
// runs a few fused steps, and the code grows with the steps, not with their square.
constexpr int kStencilSteps = 3;

bool read_through_shifted_views(const ir::Graph& graph,
                                const std::vector<std::vector<ValueId>>& users, ValueId id) {
  int views = 0;
  for (ValueId user : users[static_cast<size_t>(id)]) {
    Op op = graph.node(user).op;
    views += op == Op::slice || op == Op::pad || op == Op::gather;
  }
  return views >= 2;
}

void materialize_stencil_chains(const ir::Graph& graph, std::set<ValueId>& materialized) {
  std::vector<std::vector<ValueId>> users(static_cast<size_t>(graph.size()));
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) users[static_cast<size_t>(input)].push_back(id);
  std::vector<int> depth(static_cast<size_t>(graph.size()), 0);  // stencil steps inlined
  for (ValueId id = 0; id < graph.size(); ++id) {
    int deepest = 0;
    for (ValueId input : graph.node(id).inputs)
      if (!materialized.count(input))
        deepest = std::max(deepest, depth[static_cast<size_t>(input)]);
    bool stencil = read_through_shifted_views(graph, users, id);
    depth[static_cast<size_t>(id)] = deepest + (stencil ? 1 : 0);
    if (stencil && depth[static_cast<size_t>(id)] >= kStencilSteps) {
      materialized.insert(id);
      depth[static_cast<size_t>(id)] = 0;
    }
  }
}

// Inlining weighs recomputation against materialising: a value broadcast to many more elements
// than it has (a 0-d result of a long chain, multiplied into a matrix) would be recomputed for
// each of them. When its inlined work (ops since the last buffer, costly ones counted
// kCostlyWeight times) reaches kExpensive, or `elementwise` with no reduction inlined but
// through a broadcast (a reduction broadcast back over its rows stays in its kernel: softmax,
// layer norm), it gets a buffer of its own and is computed once.
// A source under kLeastElementwiseSource elements (a batch norm's per-channel scale) is cheaper
// to recompute than to give a kernel (a launch) of its own.
constexpr int64_t kExpensive = 16, kCostlyWeight = 4, kBroadcastFactor = 16;
constexpr int64_t kLeastElementwiseSource = int64_t(1) << 16;

// What computing `node` once costs, in the units above (a view: nothing).
int64_t own_work(const Node& node) {
  if (ir::op_info(node.op).kind == ir::OpKind::Structural) return 0;
  const bool costly = ir::is_reduction(node.op) ||
                      (ir::is_elementwise(node.op) && ir::op_info(node.op).cost != ir::Cost::Cheap);
  return costly ? kCostlyWeight : 1;
}

// Whether broadcast `node` expands only dimensions after all of its operand's others (a group
// norm's statistics (n, g, 1, 1) over each group's channels and pixels): a kernel over the
// result reads the operand at the index of its outer loops, which is where lowering places a
// reduction under it (once a row, sched/lowering.cpp), not once an element.
bool expands_inner_dimensions(const ir::Graph& graph, const Node& node) {
  const ir::Shape& from = graph.node(node.inputs[0]).shape;
  const size_t skip = node.shape.size() - from.size();
  bool expanded = false;
  for (size_t d = 0; d < node.shape.size(); ++d) {
    const bool unit = d < skip || (from[d - skip].is_constant() && from[d - skip].constant() == 1);
    const bool grows = unit && !(node.shape[d].is_constant() && node.shape[d].constant() == 1);
    if (!unit && expanded) return false;
    expanded = expanded || grows;
  }
  return true;
}

void materialize_expensive_broadcasts(const ir::Graph& graph, int64_t elementwise,
                                      std::set<ValueId>& materialized) {
  std::vector<int64_t> work(static_cast<size_t>(graph.size()), 0);
  std::vector<bool> reduces(static_cast<size_t>(graph.size()), false);  // a reduction inlined
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    int64_t total = own_work(node);
    bool reduction = ir::is_reduction(node.op);
    for (ValueId input : node.inputs)
      if (!materialized.count(input)) {
        total = std::min<int64_t>(total + work[static_cast<size_t>(input)], 1 << 20);
        reduction = reduction || reduces[static_cast<size_t>(input)];
      }
    work[static_cast<size_t>(id)] = total;
    // A reduction read through a broadcast gets a buffer anyway (lowering requests it), unless
    // the broadcast only adds inner dimensions: the reduction is then placed once a row too.
    reduces[static_cast<size_t>(id)] =
        reduction && (node.op != Op::broadcast || expands_inner_dimensions(graph, node));
    // A gather reading a computed table at more places than it has entries (a lookup table
    // t[img] of a uint8 image: t's pow per pixel, not per entry) is a broadcast whose indices
    // come from data: its table is computed once where it costs more than a load.
    if (node.op == Op::gather && !materialized.count(node.inputs[0])) {
      const ValueId table = node.inputs[0];
      const int64_t entries = std::max<int64_t>(ir::element_count(graph.node(table).shape), 1);
      if (ir::size_choice(ir::element_count(node.shape) >= kBroadcastFactor * entries &&
                          work[static_cast<size_t>(table)] >= kCostlyWeight)) {
        materialized.insert(table);
        const ValueId index = node.inputs[1];
        work[static_cast<size_t>(id)] =
            own_work(node) + (materialized.count(index) ? 0 : work[static_cast<size_t>(index)]);
      }
    }
    if (node.op != Op::broadcast || materialized.count(id)) continue;
    ValueId source = node.inputs[0];
    int64_t from = std::max<int64_t>(ir::element_count(graph.node(source).shape), 1);
    const int64_t source_work = work[static_cast<size_t>(source)];
    // A reduction broadcast back over its own rows (softmax, layer norm) is computed once a row
    // where the kernel reading it places it (sched/lowering.cpp), not once an element, whatever
    // its chain costs: softmax as exp(x - logsumexp(x)) stays one kernel. A 0-d one would sit
    // at the top of that kernel, before its loops: a long chain of it still gets a buffer.
    const bool reduces_rows = reduces[static_cast<size_t>(source)] && from > 1;
    const bool expensive = !reduces_rows &&
                           (source_work >= kExpensive ||
                            (source_work >= elementwise && from >= kLeastElementwiseSource &&
                             !reduces[static_cast<size_t>(source)]));
    if (!materialized.count(source) &&
        ir::size_choice(ir::element_count(node.shape) >= kBroadcastFactor * from && expensive)) {
      materialized.insert(source);
      work[static_cast<size_t>(id)] = 0;
      reduces[static_cast<size_t>(id)] = false;
    }
  }
}

// A value that holds a reduction inlined (its work grows with the reduced extent: a matrix-vector
// product feeding a subtraction) and that several nodes read would be recomputed, reduction and
// all, in each of their kernels (Gram-Schmidt's w = v - Q @ c, read by norm(w) and w / norm):
// from kSharedReduction reduced elements per output element on, it is computed once.
constexpr int64_t kSharedReduction = 64;

// For each value, the one graph output it feeds (by any path), kNoOutput or kSeveralOutputs.
constexpr ValueId kNoOutput = -1, kSeveralOutputs = -2;

std::vector<ValueId> sole_outputs(const ir::Graph& graph,
                                  const std::vector<std::vector<ValueId>>& users) {
  std::vector<ValueId> sole(static_cast<size_t>(graph.size()), kNoOutput);
  for (ValueId output : graph.outputs()) sole[static_cast<size_t>(output)] = output;
  auto join = [](ValueId a, ValueId b) {
    return a == kNoOutput ? b : b == kNoOutput || a == b ? a : kSeveralOutputs;
  };
  for (ValueId id = graph.size() - 1; id >= 0; --id)
    for (ValueId user : users[static_cast<size_t>(id)])
      sole[static_cast<size_t>(id)] =
          join(sole[static_cast<size_t>(id)], sole[static_cast<size_t>(user)]);
  return sole;
}

// For each value, whether every path from it to the graph's outputs passes a broadcast through
// elementwise ops only: a row value (a row's max, exp(-inf - max) of a masked softmax, the where
// that makes a fully masked row's shift 0) that its kernel computes once a row, at the loops
// outside the broadcast, however many of those ops read it.
std::vector<bool> read_per_row(const ir::Graph& graph,
                               const std::vector<std::vector<ValueId>>& users) {
  std::vector<bool> per_row(static_cast<size_t>(graph.size()), false);
  std::vector<bool> is_output(static_cast<size_t>(graph.size()), false);
  for (ValueId output : graph.outputs()) is_output[static_cast<size_t>(output)] = true;
  for (ValueId id = graph.size() - 1; id >= 0; --id) {  // readers come after what they read
    const std::vector<ValueId>& readers = users[static_cast<size_t>(id)];
    per_row[static_cast<size_t>(id)] =
        !is_output[static_cast<size_t>(id)] && !readers.empty() &&
        ir::is_elementwise(graph.node(id).op) &&
        std::all_of(readers.begin(), readers.end(), [&](ValueId reader) {
          return graph.node(reader).op == Op::broadcast || per_row[static_cast<size_t>(reader)];
        });
  }
  return per_row;
}

// The readers of `id` that would each compute it. A reduction, or elementwise work on one, that
// feeds one output only is read by one kernel, which places it once a row however many of its
// nodes read it (sched/lowering.cpp): its reshapes, broadcasts and the row values computed from
// it are not among them. logsumexp's max, read through a broadcast by the exp and directly by
// the final add; attention's max, read by isfinite and by the where of the shift; a masked
// softmax's exp(-inf - max), read by the row sum and by the division: one kernel each, where a
// buffer of its own made two, the second computing the max again.
size_t readers_computing(const ir::Graph& graph, const std::vector<std::vector<ValueId>>& users,
                         const std::vector<ValueId>& sole, const std::vector<bool>& per_row,
                         ValueId id) {
  const std::vector<ValueId>& readers = users[static_cast<size_t>(id)];
  const Op op = graph.node(id).op;
  if (!(ir::is_reduction(op) || ir::is_elementwise(op)) || sole[static_cast<size_t>(id)] < 0)
    return readers.size();
  return static_cast<size_t>(std::count_if(readers.begin(), readers.end(), [&](ValueId user) {
    const Op reader = graph.node(user).op;
    return reader != Op::reshape && reader != Op::broadcast &&
           !per_row[static_cast<size_t>(user)];
  }));
}

void materialize_shared_reductions(const ir::Graph& graph, std::set<ValueId>& materialized) {
  std::vector<int64_t> reduced(static_cast<size_t>(graph.size()), 0);
  std::vector<std::vector<ValueId>> users = graph.users();
  const std::vector<ValueId> sole = sole_outputs(graph, users);
  const std::vector<bool> per_row = read_per_row(graph, users);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    // A broadcast reads its operand at other indices: lowering gives such a reduction a buffer
    // anyway (requests), so nothing is recomputed through it.
    int64_t inlined = 0;
    if (node.op != Op::broadcast)
      for (ValueId input : node.inputs)
        if (!materialized.count(input))
          inlined = std::max(inlined, reduced[static_cast<size_t>(input)]);
    if (ir::is_reduction(node.op)) {
      int64_t in = ir::element_count(graph.node(node.inputs[0]).shape);
      int64_t out = std::max<int64_t>(ir::element_count(node.shape), 1);
      inlined = std::min<int64_t>(std::max<int64_t>(inlined, 1) * (in / out), 1 << 30);
    }
    reduced[static_cast<size_t>(id)] = inlined;
    if (readers_computing(graph, users, sole, per_row, id) >= 2 && !materialized.count(id) &&
        ir::size_choice(inlined >= kSharedReduction)) {
      materialized.insert(id);
      reduced[static_cast<size_t>(id)] = 0;
    }
  }
}

// A max or min compared with the values it reduced (x == x.max(): amax's gradient, a mask of
// the maxima) needs those values bit for bit as the reduction saw them. Work with a math
// library call inlined (erf, exp) is computed by libmvec where a loop is vectorised and by libm
// where it is not, which differ in the last bit: recomputed for the comparison, the maximum
// matched no element (an empty mask, a NaN gradient). Such a value is computed once.
bool calls_math_library(const ir::Graph& graph, const std::set<ValueId>& materialized,
                        ValueId id) {
  std::vector<ValueId> pending{id};
  std::set<ValueId> seen;
  while (!pending.empty()) {
    ValueId next = pending.back();
    pending.pop_back();
    const Node& node = graph.node(next);
    if (!seen.insert(next).second || (next != id && materialized.count(next))) continue;
    if (ir::is_elementwise(node.op) && ir::op_info(node.op).cost == ir::Cost::Call) return true;
    if (!ir::is_reduction(node.op)) pending.insert(pending.end(), node.inputs.begin(), node.inputs.end());
  }
  return false;
}

void materialize_compared_extrema(const ir::Graph& graph, std::set<ValueId>& materialized) {
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op != Op::eq && node.op != Op::ne && node.op != Op::lt && node.op != Op::le &&
        node.op != Op::gt && node.op != Op::ge)
      continue;
    for (int side = 0; side < 2; ++side) {
      const Node& extremum = graph.node(view_base(graph, node.inputs[static_cast<size_t>(side)]));
      if (extremum.op != Op::max && extremum.op != Op::min) continue;
      ValueId values = view_base(graph, extremum.inputs[0]);
      if (view_base(graph, node.inputs[static_cast<size_t>(1 - side)]) == values &&
          !materialized.count(values) && calls_math_library(graph, materialized, values))
        materialized.insert(values);
    }
  }
}

// A value read by several nodes is computed again in each kernel that reads it, with all the
// work inlined into it. Along a Python loop unrolled into a chain (an accumulator carried on,
// each iteration storing a row: out[i] = f(acc)) every store's kernel would repeat the chain from
// its start: source and run time quadratic in the iterations. A shared value whose inlined work
// (distinct values since the last buffer, weighted as above) reaches kLargeShared gets a buffer
// of its own, so no kernel repeats more than that (Inductor's realize_opcount_threshold).
// So does one whose inlined work reads more than kSharedReads buffers of about its size: a
// pre-norm transformer's residual stream (h + attention + MLP + ... over the layers, read by
// each layer's norm and by the next add) had each norm read every earlier layer's outputs
// again, GPT-2's last ones 24 of them (Inductor's realize_reads_threshold). Read by two
// kernels, k such reads cost 2k loads inlined and k + 3 with a buffer, and a buffer costs a
// launch.
constexpr int64_t kLargeShared = 48, kSharedReads = 4;

void materialize_large_shared_values(const ir::Graph& graph, std::set<ValueId>& materialized) {
  const std::vector<std::vector<ValueId>> users = graph.users();
  std::vector<ValueId> visited_by(static_cast<size_t>(graph.size()), -1);
  std::vector<ValueId> stack;
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (users[static_cast<size_t>(id)].size() < 2 || materialized.count(id)) continue;
    const int64_t elements = ir::element_count(graph.node(id).shape);
    int64_t work = 0, reads = 0;  // a walk of the inlined values, each once, until the bounds
    stack.assign(1, id);
    while (!stack.empty() && work < kLargeShared && reads <= kSharedReads) {
      const ValueId at = stack.back();
      stack.pop_back();
      if (visited_by[static_cast<size_t>(at)] == id) continue;
      visited_by[static_cast<size_t>(at)] = id;
      const Node& node = graph.node(at);
      work += own_work(node);
      for (ValueId input : node.inputs) {
        if (!materialized.count(input)) {
          stack.push_back(input);
        } else if (visited_by[static_cast<size_t>(input)] != id &&
                   graph.node(input).op != Op::constant &&
                   ir::size_choice(kBroadcastFactor * std::min(ir::element_count(node.shape),
                                                               ir::element_count(graph.node(input).shape)) >=
                                   elements)) {
          visited_by[static_cast<size_t>(input)] = id;
          ++reads;
        }
      }
    }
    if (work >= kLargeShared || reads > kSharedReads) materialized.insert(id);
  }
}

// A chain of single-use values (a Python loop of thousands of steps, x = x * a + b) is one
// value with all of it inlined, however long: one function the C++ compiler takes seconds,
// then minutes, on (its time grows faster than the function). Along such a chain, an
// elementwise value whose inlined work (weighted as above) reaches kLongestChain gets a buffer:
// one store and load per kLongestChain ops, and roots that kernel_groups.cpp can bound.
constexpr int64_t kLongestChain = 512;

void materialize_long_chains(const ir::Graph& graph, std::set<ValueId>& materialized) {
  std::vector<int64_t> work(static_cast<size_t>(graph.size()), 0);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    int64_t total = own_work(node);
    for (ValueId input : node.inputs)
      if (!materialized.count(input))
        total = std::min<int64_t>(total + work[static_cast<size_t>(input)], 1 << 30);
    work[static_cast<size_t>(id)] = total;
    if (total >= kLongestChain && ir::is_elementwise(node.op) && !materialized.count(id)) {
      materialized.insert(id);
      work[static_cast<size_t>(id)] = 0;
    }
  }
}

// The value whose buffer extern call `node` reads its operand `k` from: the value under the
// operand's chain of views, read in place through them (sched/strided_views.h), or the operand
// itself, computed in its own order with the work under it in the same kernel, where the call
// could not read the computed value in place: an operand that must lie packed (a channels-last
// filter) permuting a weight the graph computes (a scaled one), and one whose views strides
// cannot express (attention's heads, normalised, permuted back into a projection's rows),
// which a kernel storing the value and another copying it did in two passes. One of an input
// stays a view where that is packed (scheduler.cpp).
ValueId operand_buffer(const ir::Graph& graph, const Node& node, size_t k,
                       bool narrow_matmul_operands) {
  const ValueId operand = node.inputs[k];
  const bool through_casts = reads_narrow_operand(node, k, narrow_matmul_operands);
  const ValueId base = view_base(graph, operand, through_casts);
  const Node& under = graph.node(base);
  if (base == operand || under.op == ir::Op::parameter) return base;
  if (needs_packed_operand(node, k)) return operand;
  if (under.op == ir::Op::constant_array || !ir::is_static(under.shape)) return base;
  const bool in_place =
      strided_view(graph, operand, ir::contiguous_strides(under.shape), through_casts).has_value();
  return in_place ? base : operand;
}

}  // namespace

std::set<ValueId> initial_materialized(const ir::Graph& graph, int64_t elementwise_broadcast,
                                       bool narrow_matmul_operands) {
  std::set<ValueId> result(graph.outputs().begin(), graph.outputs().end());
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    switch (node.op) {
      case ir::Op::parameter:
      case ir::Op::constant_array:
      case ir::Op::scatter:
        result.insert(id);
        break;
      case ir::Op::matmul:  // extern: the result and what the operands view live in buffers
      case ir::Op::attention:
      case ir::Op::convolution:
      case ir::Op::convolution_backward_input:
      case ir::Op::convolution_backward_weight:
      case ir::Op::argsort:
      case ir::Op::sort:
      case ir::Op::solve:
        result.insert(id);
        for (size_t k = 0; k < node.inputs.size(); ++k)
          result.insert(operand_buffer(graph, node, k, narrow_matmul_operands));
        break;
      case ir::Op::loop:  // bounds and invariants in buffers; initial values are copied in
        result.insert(id);
        for (int bound = 0; bound < 2; ++bound)
          if (graph.node(node.inputs[static_cast<size_t>(bound)]).op != ir::Op::constant)
            result.insert(node.inputs[static_cast<size_t>(bound)]);
        for (size_t k = 2 + static_cast<size_t>(node.attrs.index); k < node.inputs.size(); ++k)
          if (!reshaped_input(graph, node.inputs[k])) result.insert(node.inputs[k]);
        break;
      case ir::Op::loop_result:  // the loop's carried buffer (build_loop)
        result.insert(id);
        break;
      default:
        if (ir::is_scan(node.op)) result.insert(id);
    }
  }
  materialize_stencil_chains(graph, result);
  materialize_expensive_broadcasts(graph, elementwise_broadcast, result);
  materialize_compared_extrema(graph, result);
  materialize_shared_reductions(graph, result);
  materialize_large_shared_values(graph, result);
  materialize_long_chains(graph, result);
  return result;
}

}  // namespace kiln::sched
