#include "sched/in_place.h"

#include <algorithm>

#include "ir/ops.h"
#include "ir/size_choices.h"
#include "sched/distinct_indices.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

// The values computed from `base` (through any ops) that must be computed into buffers of their
// own before `scatter` overwrites base's buffer: those read after the scatter (by a later node
// or as outputs: the later node must not recompute them from the overwritten buffer) and the
// scatter's own index (read while it writes; its values: scatter_value_reads). False when a node
// after the scatter reads base itself.
bool compute_before(const ir::Graph& graph, const std::vector<std::vector<ValueId>>& users,
                    const std::set<ValueId>& outputs, ValueId base, ValueId scatter,
                    std::vector<ValueId>& first, std::set<ValueId>& derived) {
  for (ValueId user : users[static_cast<size_t>(base)])
    if (user > scatter) return false;
  std::vector<ValueId> pending{base};
  while (!pending.empty()) {
    ValueId value = pending.back();
    pending.pop_back();
    bool read_later = value != base && outputs.count(value);
    for (ValueId user : users[static_cast<size_t>(value)]) {
      if (user == scatter) continue;
      if (user > scatter) {
        read_later = true;
      } else if (derived.insert(user).second) {
        pending.push_back(user);
      }
    }
    if (read_later) first.push_back(value);
  }
  const Node& node = graph.node(scatter);
  if (node.op == Op::scatter && derived.count(node.inputs[1])) first.push_back(node.inputs[1]);
  return true;
}

bool elementwise(const Node& node) {
  ir::OpKind kind = ir::op_info(node.op).kind;
  return kind == ir::OpKind::Unary || kind == ir::OpKind::Binary || kind == ir::OpKind::Ternary ||
         node.op == Op::cast;
}

// What a value computed first stands for: the value before the broadcasts and reshapes that
// spread it (those are index arithmetic in the kernels that read it).
ValueId unspread(const ir::Graph& graph, const std::set<ValueId>& derived, ValueId value) {
  while ((graph.node(value).op == Op::broadcast || graph.node(value).op == Op::reshape) &&
         derived.count(graph.node(value).inputs[0]))
    value = graph.node(value).inputs[0];
  return value;
}

// A masked update where(mask, new, base) written into base's buffer (sched/in_place.h): each of
// its elements may read base at its own position only (through elementwise ops of its shape,
// inlined), so every other read of base in mask and new (a row, a column: a gather or slice,
// then spread) is computed first, before it is spread.
void masked_update_reads(const ir::Graph& graph, const std::set<ValueId>& derived,
                         ValueId update, std::vector<ValueId>& first) {
  const Node& where = graph.node(update);
  std::vector<ValueId> pending{where.inputs[0], where.inputs[1]};
  std::set<ValueId> seen;
  while (!pending.empty()) {
    ValueId value = pending.back();
    pending.pop_back();
    if (!derived.count(value) || !seen.insert(value).second) continue;
    const Node& node = graph.node(value);
    if (elementwise(node) && node.shape == where.shape) {
      pending.insert(pending.end(), node.inputs.begin(), node.inputs.end());
      continue;
    }
    first.push_back(unspread(graph, derived, value));
  }
}

// Whether two shapes hold the same elements in the same order (they differ in unit dimensions
// only: a row (256,) and the (1, 256) it is stored as).
bool same_elements(const ir::Shape& a, const ir::Shape& b) {
  auto squeezed = [](const ir::Shape& shape) {
    ir::Shape kept;
    for (const ir::Dim& d : shape)
      if (d != ir::Dim(1)) kept.push_back(d);
    return kept;
  };
  return squeezed(a) == squeezed(b);
}

// A scatter's values (read while it writes): each element may read the base in its own column,
// a gather of the base along the scatter's axis at one position, through elementwise ops and
// reshapes of the values' elements (unit dimensions aside): at the scatter's own index
// (x[i, j] = v puts row i back as where(column == j, v, x[i]), kiln/_indexing.py: a masked
// update, sched/pin_masked_elements.h)
// or another (a recurrence's out[i] = f(out[i - 1])). Inlined, each element reads before it
// writes, and no other element writes what it reads. Every other read of the base in the
// values (a reduction of it, a shifted slice) is computed first.
void scatter_value_reads(const ir::Graph& graph, const std::set<ValueId>& derived,
                         ValueId scatter, std::vector<ValueId>& first) {
  const Node& node = graph.node(scatter);
  ValueId values = node.inputs[2];
  if (!one_position(graph.node(node.inputs[1]).shape) ||
      node.attrs.scatter_mode != ir::ScatterMode::Set) {
    if (derived.count(values)) first.push_back(values);
    return;
  }
  const ir::Shape& shape = graph.node(values).shape;
  std::vector<ValueId> pending{values};
  std::set<ValueId> seen;
  while (!pending.empty()) {
    ValueId value = pending.back();
    pending.pop_back();
    if (!derived.count(value) || !seen.insert(value).second) continue;
    const Node& read = graph.node(value);
    // A row (column, ...) of the base at one position along the axis, any one: its element k
    // is read only by the values' element k, which alone writes the position it is stored to
    // (out[i] = 0.9 * out[i - 1] + x[i]: each element reads its column of row i - 1).
    bool own_column = read.op == Op::gather && read.inputs[0] == node.inputs[0] &&
                      one_position(graph.node(read.inputs[1]).shape) &&
                      read.attrs.axis == node.attrs.axis && same_elements(read.shape, shape);
    if (own_column) continue;
    bool same_order = same_elements(read.shape, shape) &&
                      (elementwise(read) || (read.op == Op::reshape &&
                                             same_elements(graph.node(read.inputs[0]).shape, shape)));
    if (same_order) {
      pending.insert(pending.end(), read.inputs.begin(), read.inputs.end());
      continue;
    }
    first.push_back(unspread(graph, derived, value));
  }
}

}  // namespace

InPlacePlan plan_in_place(const ir::Graph& graph, const std::set<ValueId>& materialized,
                          const std::vector<int32_t>& donated) {
  InPlacePlan plan;
  plan.base_of.assign(static_cast<size_t>(graph.size()), -1);
  std::vector<std::vector<ValueId>> users = graph.users();
  std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  std::set<int64_t> donated_inputs(donated.begin(), donated.end());
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    // Masked updates of a loop's carried array (or of an update of it in place) only:
    // elsewhere a where fuses with its neighbours, which its own kernel would prevent.
    bool masked_update = false;
    if (node.op == Op::where && materialized.count(id)) {
      ValueId old_id = node.inputs[2];
      const Node& old_values = graph.node(old_id);
      bool carried = old_values.op == Op::parameter || plan.base_of[static_cast<size_t>(old_id)] >= 0;
      masked_update = carried && old_values.shape == node.shape && old_values.dtype == node.dtype;
    }
    if (node.op != Op::scatter && !masked_update) continue;
    ValueId base = node.inputs[masked_update ? 2 : 0];
    const Node& base_node = graph.node(base);
    bool own_buffer = base_node.op == Op::parameter
                          ? donated_inputs.count(base_node.attrs.index) != 0
                          : base_node.op != Op::constant_array && base_node.op != Op::loop_result;
    if (!own_buffer || !materialized.count(base) || outputs.count(base)) continue;
    // A scatter reading the base itself as its index or values (`a[p] = a`, add.at(a, p, a))
    // would read elements it has overwritten; the base has no other buffer to read them from.
    if (node.op == Op::scatter &&
        std::find(node.inputs.begin() + 1, node.inputs.end(), base) != node.inputs.end())
      continue;
    // What is computed from the base and needed after the write gets a buffer first (its
    // later readers must not recompute it from the overwritten buffer). When that is most of
    // the array (a stencil's interior), one pass into a new buffer is cheaper than in place;
    // values stored anyway (products, reductions, other scatters) cost nothing extra.
    std::vector<ValueId> first;
    std::set<ValueId> derived;
    if (!compute_before(graph, users, outputs, base, id, first, derived)) continue;
    if (masked_update) masked_update_reads(graph, derived, id, first);
    if (node.op == Op::scatter) scatter_value_reads(graph, derived, id, first);
    int64_t elements = 0;  // extra work: what gets a buffer only because of the write
    for (ValueId value : first)
      if (!materialized.count(value)) elements += ir::element_count(graph.node(value).shape);
    if (!ir::size_choice(2 * elements <= ir::element_count(node.shape))) continue;  // a heuristic
    plan.base_of[static_cast<size_t>(id)] = base;
    plan.compute_first.insert(first.begin(), first.end());
  }
  return plan;
}

}  // namespace kiln::sched
