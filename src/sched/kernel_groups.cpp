#include "sched/kernel_groups.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/ops.h"
#include "ir/shape.h"
#include "ir/size_choices.h"
#include "sched/fusion_rules.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::ValueId;

// What the grouping reads of the program being formed.
struct Grouping {
  const ir::Graph& graph;
  const std::vector<int32_t>& buffer_of;
  const std::vector<ValueId>& base_of;
  const std::vector<bool>& in_arena;
  std::vector<int32_t> buffer_values;  // how many values share each buffer (in-place chains)
  int32_t values(int32_t buffer) const { return buffer_values[static_cast<size_t>(buffer)]; }
};

// The latest kernel group that `root`, refused by the last one, can join instead: one
// after the groups computing what root reads, whose roots fusion_refusal lets root join. Only a
// root whose buffer and every buffer it reads belong to one value alone (no in-place chain
// shares them), so that computing it earlier reads no buffer before its last write; and one
// that holds little memory longer: of few bytes, or computed into an output (not the arena's
// memory): a batch norm's weight gradient joins the kernel of its reductions, resnet18's 20
// running-count increments one kernel, an optimizer's new moments and parameter of one tensor
// one loop (foreach updates list every tensor's moments before any parameter). Looks back a
// bounded number of groups (a graph unrolled from a Python loop has thousands). -1 when none.
int32_t earlier_group(const Grouping& in, const std::vector<KernelGroup>& groups,
                      const std::vector<int32_t>& group_of, const Root& root) {
  constexpr int64_t kMostHoistedBytes = 64 << 10;
  constexpr size_t kMostGroupsBack = 64;
  const Node& node = in.graph.node(root.node);
  const std::optional<int64_t> bytes = ir::checked_byte_size(node.shape, node.dtype);
  if (!ir::is_static(node.shape) || !bytes || in.base_of[static_cast<size_t>(root.node)] >= 0 ||
      in.values(root.buffer) != 1)
    return -1;
  // A threshold on sizes: every size of a graph with size symbols makes its choice
  // (ir/size_choices.h), or a small size's kernels would have another shape than a large one's.
  const bool in_arena = in.in_arena[static_cast<size_t>(root.buffer)];
  if (in_arena && !ir::size_choice(*bytes <= kMostHoistedBytes)) return -1;
  int32_t ready = -1;  // the last group computing a value root reads
  std::vector<ValueId> stack(node.inputs.begin(), node.inputs.end());
  std::set<ValueId> seen;
  while (!stack.empty()) {
    ValueId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const ir::Op read_op = in.graph.node(id).op;
    // A loop's results live in its carried buffers, which no root names yet: a root reading
    // them must stay after the loop (hoisted, it read the loop's initial values).
    if (read_op == ir::Op::loop || read_op == ir::Op::loop_result) return -1;
    const int32_t buffer = in.buffer_of[static_cast<size_t>(id)];
    if (buffer < 0) {
      const Node& inlined = in.graph.node(id);
      stack.insert(stack.end(), inlined.inputs.begin(), inlined.inputs.end());
      continue;
    }
    const ir::Op op = in.graph.node(id).op;
    const int32_t group = group_of[static_cast<size_t>(id)];
    if (in.values(buffer) != 1 || in.base_of[static_cast<size_t>(id)] >= 0 ||
        (group < 0 && op != ir::Op::parameter && op != ir::Op::constant_array))
      return -1;  // shared, or written by a step that is no root's (a loop's results)
    ready = std::max(ready, group);
  }
  const ir::Shape elements = ir::without_unit_dims(node.shape);
  // The last group refused root already, or is not a group (an extern call).
  for (size_t back = 1; back <= kMostGroupsBack && back <= groups.size(); ++back) {
    const size_t k = groups.size() - back;
    if (back == 1 && !groups[k].alone && !groups[k].closed) continue;
    if (static_cast<int64_t>(k) < ready) break;
    const KernelGroup& group = groups[k];
    if (group.alone || group.closed ||
        ir::without_unit_dims(in.graph.node(group.roots.front().node).shape) != elements)
      continue;
    if (fusion_refusal(in.graph, in.buffer_of, group.nodes, group.roots.front().node, root.node,
                       false).empty())
      return static_cast<int32_t>(k);
  }
  return -1;
}

// Whether `root` is a scatter of one element into its base's buffer (sched/in_place.h) that may
// end `open`, a group whose roots have one element too: a triangular solve's x[i] = (b[i] -
// L[i] @ x) / L[i, i] stores its element in the kernel of the dot product it divides, not a
// kernel of its own an iteration. With one element there is one iteration: the group's values,
// its reductions' reads of the base among them, all come before the kernel's stores (a
// reduction's store waits for every thread's part), so the scatter overwrites the base after
// they read it. The group then takes no more roots (KernelGroup::closed).
bool one_element_scatter(const Grouping& in, const KernelGroup& open, const Root& root) {
  const Node& node = in.graph.node(root.node);
  if (root.copy || node.op != ir::Op::scatter || in.base_of[static_cast<size_t>(root.node)] < 0)
    return false;
  auto one_element = [](const ir::Shape& shape) { return ir::without_unit_dims(shape).empty(); };
  return one_element(in.graph.node(node.inputs[2]).shape) &&
         one_element(in.graph.node(open.roots.front().node).shape);
}

// The C++ compiler's time grows faster than a function's size: a Python loop of thousands of
// steps, unrolled into roots of one domain that all joined one kernel, took minutes to compile
// (2,500 steps of np.where on an accumulator: 3.7 MB of source in one function, 209 s). A kernel
// takes roots until they inline kMostKernelOps graph nodes; the next root starts a kernel of
// its own, so compile time grows with the steps, not faster.
constexpr int64_t kMostKernelOps = 1024;

// How many graph nodes computing `root` inlines (those with no buffer it reaches through its
// inputs, and itself), counted up to just past the bound.
int64_t inlined_ops(const Grouping& in, ValueId root) {
  int64_t count = 0;
  std::vector<ValueId> stack{root};
  std::set<ValueId> seen;
  while (!stack.empty() && count <= kMostKernelOps) {
    const ValueId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    ++count;
    for (ValueId input : in.graph.node(id).inputs)
      if (in.buffer_of[static_cast<size_t>(input)] < 0) stack.push_back(input);
  }
  return count;
}

}  // namespace

std::vector<KernelGroup> group_roots(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                                     const std::vector<ValueId>& base_of,
                                     const std::vector<bool>& in_arena,
                                     const std::vector<Root>& roots,
                                     std::vector<std::string>& notes) {
  Grouping in{graph, buffer_of, base_of, in_arena, std::vector<int32_t>(in_arena.size(), 0)};
  for (int32_t buffer : buffer_of)
    if (buffer >= 0) ++in.buffer_values[static_cast<size_t>(buffer)];
  std::vector<KernelGroup> groups;
  std::vector<int32_t> group_of(static_cast<size_t>(graph.size()), -1);
  for (const Root& root : roots) {
    const Node& node = graph.node(root.node);
    if (root.copy && buffer_of[static_cast<size_t>(root.node)] == root.buffer) continue;
    const bool in_base = !root.copy && node.op == ir::Op::where &&
                         base_of[static_cast<size_t>(root.node)] >= 0;
    const bool is_extern = ir::is_extern(node.op);
    // A masked update in its base's buffer (sched/in_place.h) is alone in its kernel, where no
    // other root reads the base while it is overwritten; extern calls, scatters, loops and
    // scans are steps of their own.
    const bool alone = in_base || (!root.copy && (is_extern || node.op == ir::Op::scatter ||
                                                  node.op == ir::Op::loop || ir::is_scan(node.op)));
    KernelGroup* open =
        groups.empty() || groups.back().alone || groups.back().closed ? nullptr : &groups.back();
    const int64_t ops = root.copy ? 1 : inlined_ops(in, root.node);
    if (open && one_element_scatter(in, *open, root) && open->ops + ops <= kMostKernelOps) {
      open->add(root, ops);
      open->closed = true;
      group_of[static_cast<size_t>(root.node)] = static_cast<int32_t>(groups.size() - 1);
      continue;
    }
    std::string refusal =
        open ? fusion_refusal(graph, buffer_of, open->nodes, open->roots.front().node,
                              root.node, root.copy)
             : "";
    if (open && refusal.empty() && open->ops + ops > kMostKernelOps)
      refusal = "the kernel would inline more than " + std::to_string(kMostKernelOps) +
                " ops (its compile time)";
    if (open && !alone && refusal.empty()) {
      open->add(root, ops);
      group_of[static_cast<size_t>(root.node)] = static_cast<int32_t>(groups.size() - 1);
      continue;
    }
    int32_t earlier = root.copy || alone ? -1 : earlier_group(in, groups, group_of, root);
    if (earlier >= 0 && groups[static_cast<size_t>(earlier)].ops + ops > kMostKernelOps)
      earlier = -1;
    if (earlier >= 0) {
      groups[static_cast<size_t>(earlier)].add(root, ops);
      group_of[static_cast<size_t>(root.node)] = earlier;
      continue;
    }
    if (open)
      notes.push_back(describe_value(graph, open->roots.back().node) + " and " +
                      describe_value(graph, root.node) + ": separate kernels: " + refusal);
    groups.push_back(KernelGroup{});
    groups.back().alone = alone;
    groups.back().add(root, ops);
    group_of[static_cast<size_t>(root.node)] = static_cast<int32_t>(groups.size() - 1);
  }
  return groups;
}

}  // namespace kiln::sched
