#include "sched/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

#include "ir/printer.h"
#include "kiln/error.h"
#include "sched/buffer_plan.h"
#include "sched/distinct_indices.h"
#include "ir/loop.h"
#include "sched/division_splits.h"
#include "sched/fusion_rules.h"
#include "sched/kernel_groups.h"
#include "sched/in_place.h"
#include "sched/loop_schedule.h"
#include "sched/strided_views.h"
#include "sched/loop_in_place.h"
#include "sched/loop_nest.h"
#include "sched/lowering.h"
#include "sched/materialize.h"
#include "sched/scatter_stores.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::ValueId;

// The integer attributes an extern call needs at run time (ExternCall::parameters).
std::vector<int64_t> extern_parameters(const Node& node) {
  // A matmul with an epilogue (a bias operand): whether a ReLU follows it.
  if (node.op == ir::Op::matmul) return node.inputs.size() > 2 ? std::vector<int64_t>{node.attrs.relu} : std::vector<int64_t>{};
  // sorts: {axis, descending, the positions it picks (passes/sort_picks.cpp)}
  if (ir::is_sort(node.op)) {
    std::vector<int64_t> parameters{node.attrs.axis, node.attrs.descending ? 1 : 0};
    parameters.insert(parameters.end(), node.attrs.starts.begin(), node.attrs.starts.end());
    return parameters;
  }
  if (node.op == ir::Op::attention) return {node.attrs.causal ? 1 : 0};
  if (node.op != ir::Op::convolution && node.op != ir::Op::convolution_backward_input &&
      node.op != ir::Op::convolution_backward_weight)
    return {};
  std::vector<int64_t> parameters = node.attrs.strides;
  parameters.insert(parameters.end(), node.attrs.padding.begin(), node.attrs.padding.end());
  parameters.insert(parameters.end(), node.attrs.dilation.begin(), node.attrs.dilation.end());
  parameters.push_back(node.attrs.groups);
  // The layout: 0 channels-first, 1 channels-last activations, 2 channels-last filters too.
  parameters.push_back(node.attrs.filters_last ? 2 : node.attrs.channels_last ? 1 : 0);
  return parameters;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const ir::Graph& graph, const std::set<ValueId>& materialized,
                 std::vector<std::string>* fusion_notes, std::set<ValueId>& requests,
                 const InPlacePlan& in_place, const std::vector<int32_t>& donated,
                 const ScheduleHints& hints)
      : graph_(graph), materialized_(materialized), fusion_notes_(fusion_notes), requests_(requests),
        buffer_of_(static_cast<size_t>(graph.size()), -1), base_of_(in_place.base_of),
        donated_(donated), uses_(use_counts(graph)), hints_(hints) {}

  Program build(const std::vector<std::vector<int64_t>>& input_strides);

 private:
  int32_t add_buffer(BufferRole role, int32_t number, const Node& node, std::string name);
  Step extern_step(const Node& node, int32_t output);
  void build_pointwise_kernel(const std::vector<Root>& group);
  void build_scan_kernel(const Root& root);
  void build_scatter_kernel(const Root& root);
  void build_loop(const Root& root);
  int32_t reusable_output(ValueId init, ValueId result) const;
  // Top-level statements from `ordered_from` on must run in order (Kernel::ordered_from).
  void finish_kernel(Kernel& kernel, const Lowering& lowering, size_t ordered_from = SIZE_MAX);
  template <class Build>
  void build_refined(size_t rank, Build&& build);

  const ir::Graph& graph_;
  const std::set<ValueId>& materialized_;
  std::vector<std::string>* fusion_notes_;  // why neighbouring roots got separate kernels
  std::set<ValueId>& requests_;
  std::vector<int32_t> buffer_of_;
  std::vector<ValueId> base_of_;  // in-place scatters (sched/in_place.h): the base they overwrite
  const std::vector<int32_t>& donated_;
  const std::vector<int32_t> uses_;  // Lowering's use counts, computed once
  const ScheduleHints hints_;
  void place_in_place_outputs();
  std::set<int32_t> replaced_outputs_;  // outputs a loop result replaced in place: not copied
  Program program_;
};

int32_t ProgramBuilder::add_buffer(BufferRole role, int32_t number, const Node& node,
                                   std::string name) {
  Buffer buffer;
  buffer.role = role;
  buffer.number = number;
  buffer.dtype = node.dtype;
  buffer.shape = ir::to_ints(node.shape);
  buffer.strides = ir::contiguous_strides(node.shape);
  buffer.name = std::move(name);
  buffer.origin = std::string(ir::op_name(node.op)) +
                  (node.location.empty() ? "" : " at " + node.location);
  program_.buffers.push_back(std::move(buffer));
  return static_cast<int32_t>(program_.buffers.size() - 1);
}

Program ProgramBuilder::build(const std::vector<std::vector<int64_t>>& input_strides) {
  for (size_t k = 0; k < graph_.inputs().size(); ++k) {
    ValueId id = graph_.inputs()[k];
    int32_t b = add_buffer(BufferRole::Input, static_cast<int32_t>(k), graph_.node(id), "in" + std::to_string(k));
    if (k < input_strides.size() && !input_strides[k].empty())
      program_.buffers[static_cast<size_t>(b)].strides = input_strides[k];
    buffer_of_[static_cast<size_t>(id)] = b;
  }
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    if (node.op != ir::Op::constant_array) continue;
    // The generated library exports the array under this name (a C symbol).
    int32_t b = add_buffer(BufferRole::Constant, 0, node, "kiln_const" + std::to_string(id));
    program_.buffers[static_cast<size_t>(b)].constant_data = node.attrs.data;
    buffer_of_[static_cast<size_t>(id)] = b;
  }
  std::vector<Root> copies;
  for (size_t k = 0; k < graph_.outputs().size(); ++k) {
    ValueId id = graph_.outputs()[k];
    int32_t b = add_buffer(BufferRole::Output, static_cast<int32_t>(k), graph_.node(id), "out" + std::to_string(k));
    program_.output_buffers.push_back(b);
    if (buffer_of_[static_cast<size_t>(id)] >= 0 || graph_.node(id).op == ir::Op::loop_result) {
      copies.push_back({id, b, true});
    } else {
      buffer_of_[static_cast<size_t>(id)] = b;
    }
  }
  place_in_place_outputs();
  std::vector<Root> roots;
  for (ValueId id : materialized_) {
    const Node& node = graph_.node(id);
    if (node.op == ir::Op::parameter || node.op == ir::Op::constant_array ||
        node.op == ir::Op::loop_result)
      continue;
    if (node.op == ir::Op::loop) {
      roots.push_back({id, -1, false});
      continue;
    }
    ValueId base = base_of_[static_cast<size_t>(id)];
    if (buffer_of_[static_cast<size_t>(id)] < 0 && base >= 0)
      buffer_of_[static_cast<size_t>(id)] = buffer_of_[static_cast<size_t>(base)];
    if (buffer_of_[static_cast<size_t>(id)] < 0)
      buffer_of_[static_cast<size_t>(id)] =
          add_buffer(BufferRole::Intermediate, 0, node, "buf" + std::to_string(id));
    roots.push_back({id, buffer_of_[static_cast<size_t>(id)], false});
  }
  roots.insert(roots.end(), copies.begin(), copies.end());
  std::vector<bool> in_arena;
  for (const Buffer& buffer : program_.buffers)
    in_arena.push_back(buffer.role == BufferRole::Intermediate);
  const std::vector<KernelGroup> groups =
      group_roots(graph_, buffer_of_, base_of_, in_arena, roots, *fusion_notes_);
  for (const KernelGroup& group : groups) {
    const Root& root = group.roots.front();
    const Node& node = graph_.node(root.node);
    if (!group.alone) {
      std::vector<Root> kept;  // no copy of a loop result the loop left in its output buffer
      for (const Root& member : group.roots)
        if (!(member.copy && (replaced_outputs_.count(member.buffer) ||
                              buffer_of_[static_cast<size_t>(member.node)] == member.buffer)))
          kept.push_back(member);
      if (!kept.empty()) build_pointwise_kernel(kept);
    } else if (node.op == ir::Op::where) {
      build_pointwise_kernel({root});
    } else if (node.op == ir::Op::loop) {
      build_loop(root);
    } else if (node.op == ir::Op::scatter) {
      build_scatter_kernel(root);
    } else if (ir::is_scan(node.op)) {
      build_scan_kernel(root);
    } else {
      program_.steps.push_back(extern_step(node, root.buffer));
    }
  }
  return std::move(program_);
}

// An output that ends a chain of in-place scatters: the whole chain is computed in the output's
// buffer, or in the input donated to that output (the output then is that input's buffer).
void ProgramBuilder::place_in_place_outputs() {
  for (size_t k = 0; k < graph_.outputs().size(); ++k) {
    ValueId output = graph_.outputs()[k];
    int32_t buffer = program_.output_buffers[k];
    if (base_of_[static_cast<size_t>(output)] < 0 || buffer_of_[static_cast<size_t>(output)] != buffer)
      continue;
    std::vector<ValueId> chain{output};
    while (base_of_[static_cast<size_t>(chain.back())] >= 0)
      chain.push_back(base_of_[static_cast<size_t>(chain.back())]);
    const Node& bottom = graph_.node(chain.back());
    if (bottom.op == ir::Op::parameter) {
      bool donated_here = k < donated_.size() && donated_[k] == bottom.attrs.index;
      if (!donated_here) {  // the input is donated to another output: copy it here
        base_of_[static_cast<size_t>(chain[chain.size() - 2])] = -1;
        chain.pop_back();
      } else {
        buffer = buffer_of_[static_cast<size_t>(chain.back())];
        program_.output_buffers[k] = buffer;
      }
    }
    for (ValueId member : chain)
      if (graph_.node(member).op != ir::Op::parameter) buffer_of_[static_cast<size_t>(member)] = buffer;
  }
}

// An extern call reads each operand from its own buffer or, when it is a chain of views, in
// place from the buffer under the chain; a view strides cannot express, or one that must be
// packed and is not, is materialized instead (requested for the next round).
Step ProgramBuilder::extern_step(const Node& node, int32_t output) {
  Step step;
  step.kind = StepKind::Extern;
  step.call.op = node.op;
  for (ValueId input : node.inputs) {
    int32_t buffer = buffer_of_[static_cast<size_t>(input)];
    std::optional<StridedView> view;
    if (buffer < 0) {
      const bool through_casts = reads_narrow_operand(node, step.call.inputs.size(),
                                                      hints_.narrow_matmul_operands);
      buffer = buffer_of_[static_cast<size_t>(view_base(graph_, input, through_casts))];
      view = strided_view(graph_, input, program_.buffers[static_cast<size_t>(buffer)].strides,
                          through_casts);
      if (!view || (needs_packed_operand(node, step.call.inputs.size()) && !packed_view(*view)))
        requests_.insert(input);
    }
    step.call.inputs.push_back(buffer);
    step.call.views.push_back(std::move(view));
  }
  step.call.output = output;
  step.call.parameters = extern_parameters(node);
  return step;
}

// The permutation every root of `group` applies (each a permute, in the same order), when one
// of them permutes a value computed in the kernel (not a buffer's); else empty. Such a group
// iterates in the order of what it permutes: the work inlined under the permutes (a
// channels-last pooling window, passes/channels_last.cpp) then loads contiguously and only the
// stores stride. A plain transpose keeps its contiguous stores.
std::vector<int64_t> shared_permutation(const ir::Graph& graph, const std::vector<Root>& group,
                                        const std::vector<int32_t>& buffer_of) {
  const std::vector<int64_t>& first = graph.node(group.front().node).attrs.permutation;
  bool computes = false;
  for (const Root& root : group) {
    const Node& node = graph.node(root.node);
    if (node.op != ir::Op::permute || node.attrs.permutation != first) return {};
    computes = computes || buffer_of[static_cast<size_t>(node.inputs[0])] < 0;
  }
  return computes ? first : std::vector<int64_t>{};
}

// The index of an element of `shape` at `index` of `from`, where the two shapes differ only in
// dimensions of extent 1 (fusion_rules.h): the same element, in the same order.
std::vector<ExprId> index_in_shape(KernelBuilder& builder, const ir::Shape& from,
                                   const std::vector<ExprId>& index, const ir::Shape& shape) {
  if (from == shape) return index;
  std::vector<ExprId> kept;
  for (size_t d = 0; d < from.size(); ++d)
    if (!from[d].is_constant() || from[d].constant() != 1) kept.push_back(index[d]);
  std::vector<ExprId> result;
  size_t next = 0;
  for (const ir::Dim& d : shape)
    result.push_back(d.is_constant() && d.constant() == 1 ? builder.index_constant(0)
                                                          : kept.at(next++));
  return result;
}

// Builds a kernel with `build` (which fills it and returns its ordered_from, or SIZE_MAX), once
// as it is and, where that divided an index by a constant, a second time over the finer nest
// that makes the divisions exact (sched/division_splits.h); then finishes it.
template <class Build>
void ProgramBuilder::build_refined(size_t rank, Build&& build) {
  LoopSplits splits(rank);
  for (bool refined = false;; refined = true) {
    Kernel kernel;
    KernelBuilder builder(kernel);
    std::set<ValueId> requests;
    Lowering lowering(graph_, buffer_of_, program_.buffers, builder, requests, uses_);
    lowering.push_scope(&kernel.body, {});
    std::vector<int32_t> dimension_loops;
    const size_t ordered_from = build(kernel, builder, lowering, splits, dimension_loops);
    if (!refined && any_split(splits = division_splits(builder, dimension_loops))) continue;
    lowering.pop_scope();
    requests_.insert(requests.begin(), requests.end());
    finish_kernel(kernel, lowering, ordered_from);
    return;
  }
}

void ProgramBuilder::build_pointwise_kernel(const std::vector<Root>& group) {
  const Node& front = graph_.node(group.front().node);
  const std::vector<int64_t> permutation = shared_permutation(graph_, group, buffer_of_);
  // Loops over the roots' shape, or over the shape of what they permute.
  const std::vector<int64_t> shape = ir::to_ints(
      permutation.empty() ? front.shape : graph_.node(front.inputs[0]).shape);
  build_refined(shape.size(), [&](Kernel& kernel, KernelBuilder& builder, Lowering& lowering,
                                  const LoopSplits& splits, std::vector<int32_t>& dimension_loops) {
    Stmt block = split_nest(builder, lowering, shape, splits, dimension_loops,
                            [&](std::vector<Stmt>& body, std::vector<ExprId> index) {
      if (!permutation.empty()) {  // the roots' index: out[d] = in[permutation[d]]
        std::vector<ExprId> root_index;
        for (int64_t axis : permutation) root_index.push_back(index[static_cast<size_t>(axis)]);
        index = std::move(root_index);
      }
      // All values first, then the stores: reductions placed while lowering stay adjacent, so
      // sibling reductions (mean and var of one input) merge into one pass.
      for (const Root& root : group)
        if (!root.copy) lowering.stored_here.insert(root.node);
      std::vector<Stmt> stores;
      for (const Root& root : group) {
        const Node& node = graph_.node(root.node);
        if (!root.copy && node.op == ir::Op::scatter) {  // a group's last: its one element
          const ir::Shape& values_shape = graph_.node(node.inputs[2]).shape;
          stores.push_back(scatter_store(graph_, root.node, root.buffer, builder, lowering,
                                         index_in_shape(builder, front.shape, index, values_shape)));
          continue;
        }
        const std::vector<ExprId> root_index =
            index_in_shape(builder, front.shape, index, node.shape);
        Stmt store;
        store.kind = StmtKind::Store;
        store.buffer = root.buffer;
        store.index = lowering.offset(root.buffer, root_index);
        store.value = lowering.value(root.node, root_index, /*compute=*/!root.copy);
        stores.push_back(std::move(store));
      }
      for (Stmt& store : stores) body.push_back(std::move(store));
    });
    for (Stmt& s : block.body) kernel.body.push_back(std::move(s));
    return SIZE_MAX;
  });
}

void ProgramBuilder::build_scan_kernel(const Root& root) {
  const Node& node = graph_.node(root.node);
  Kernel kernel;
  KernelBuilder builder(kernel);
  Lowering lowering(graph_, buffer_of_, program_.buffers, builder, requests_, uses_);
  lowering.push_scope(&kernel.body, {});
  size_t axis = static_cast<size_t>(node.attrs.axis);
  std::vector<int64_t> shape = ir::to_ints(node.shape), outer_shape = shape;
  outer_shape.erase(outer_shape.begin() + static_cast<long>(axis));
  std::vector<int32_t> loops;
  Stmt block = loop_nest(builder, lowering, outer_shape, loops, [&](std::vector<Stmt>& body) {
    Stmt scan;
    scan.kind = StmtKind::Scan;
    int32_t loop = builder.new_loop(shape[axis]);
    scan.reduce_loops.push_back(Loop{loop, shape[axis]});
    std::vector<ExprId> index = lowering.loop_index(loops);
    index.insert(index.begin() + static_cast<long>(axis), builder.loop_var(loop));
    lowering.push_scope(&scan.body, {loop});
    Accumulation accumulation;
    accumulation.op = node.op;
    accumulation.dtype = node.dtype;
    accumulation.local = builder.new_local({});
    accumulation.value = lowering.value(node.inputs[0], index);
    lowering.pop_scope();
    scan.accumulations.push_back(accumulation);
    scan.buffer = root.buffer;
    scan.index = lowering.offset(root.buffer, index);
    body.push_back(std::move(scan));
  });
  for (Stmt& s : block.body) kernel.body.push_back(std::move(s));
  lowering.pop_scope();
  finish_kernel(kernel, lowering);
}

void ProgramBuilder::build_scatter_kernel(const Root& root) {
  const Node& node = graph_.node(root.node);
  const std::vector<int64_t> values_shape = ir::to_ints(graph_.node(node.inputs[2]).shape);
  // The scattered values' nest is the one refined (max-pool's gradient scatters a flattened
  // activation).
  build_refined(values_shape.size(), [&](Kernel& kernel, KernelBuilder& builder,
                                         Lowering& lowering, const LoopSplits& splits,
                                         std::vector<int32_t>& dimension_loops) {
    const size_t axis = static_cast<size_t>(node.attrs.axis);
    const int64_t size = node.shape[axis].constant();
    const std::optional<SliceIndex> slice = slice_index(graph_, node.inputs[1], size);
    // First the unchanged elements (unless the scatter updates its base's buffer in place),
    // then the scattered ones in index order (later wins / adds).
    if (base_of_[static_cast<size_t>(root.node)] < 0) {
      // The base's elements along the axis from `from`, `count` of them.
      auto copy_range = [&](int64_t from, int64_t count) {
        if (count <= 0) return;
        std::vector<int64_t> shape = ir::to_ints(node.shape);
        shape[axis] = count;
        std::vector<int32_t> loops;
        Stmt copy = loop_nest(builder, lowering, shape, loops, [&](std::vector<Stmt>& body) {
          std::vector<ExprId> index = lowering.loop_index(loops);
          if (from > 0) index[axis] = builder.add(index[axis], builder.index_constant(from));
          Stmt store;
          store.kind = StmtKind::Store;
          store.buffer = root.buffer;
          store.index = lowering.offset(root.buffer, index);
          store.value = lowering.value(node.inputs[0], index);
          body.push_back(std::move(store));
        });
        for (Stmt& s : copy.body) kernel.body.push_back(std::move(s));
      };
      // A slice assignment of step 1 (u[1:-1] = ...) copies only what the slice leaves (a copy
      // of everything, the slice written over it, moved the slice's elements twice: a heat
      // equation's step).
      const int64_t extent = values_shape[axis];
      if (slice && slice->slope == 1) {
        copy_range(0, slice->offset);
        copy_range(slice->offset + extent, size - slice->offset - extent);
      } else {
        copy_range(0, size);
      }
    }
    Stmt scatter = split_nest(builder, lowering, values_shape, splits, dimension_loops,
                              [&](std::vector<Stmt>& body, std::vector<ExprId> index) {
      body.push_back(scatter_store(graph_, root.node, root.buffer, builder, lowering, index));
    });
    size_t ordered_from = kernel.body.size();
    for (Stmt& s : scatter.body) kernel.body.push_back(std::move(s));
    if (distinct_indices(graph_, node.inputs[1], size)) return SIZE_MAX;  // any order
    return ordered_from;  // duplicates must apply in order
  });
}

// The loop's carried values live in one buffer each (the loop_result nodes read it after the
// loop), filled from the initial values first; the body, scheduled on its own, writes each
// next value into a second buffer, swapped with the first after every iteration.
void ProgramBuilder::build_loop(const Root& root) {
  const Node& node = graph_.node(root.node);
  const ir::Graph& body = *node.attrs.body;
  size_t carried = static_cast<size_t>(node.attrs.index);
  std::string suffix = std::to_string(root.node);
  // The body first: which carried values it updates in place decides their buffers.
  std::vector<std::vector<int64_t>> strides(1 + carried);
  std::vector<int32_t> invariants, donated;  // each carried value is dead after the body
  for (size_t j = 2 + carried; j < node.inputs.size(); ++j) {
    ValueId input = node.inputs[j];
    int32_t buffer = buffer_of_[static_cast<size_t>(input)];
    if (buffer < 0) {  // reshapes of an input (materialize.cpp): its buffer, where strides can say it
      int32_t base = buffer_of_[static_cast<size_t>(view_base(graph_, input))];
      std::optional<StridedView> view =
          strided_view(graph_, input, program_.buffers[static_cast<size_t>(base)].strides);
      if (view && view->offset == 0) {
        invariants.push_back(base);
        strides.push_back(view->strides);
        continue;
      }
      buffer = add_buffer(BufferRole::Intermediate, 0, graph_.node(input), "buf" + std::to_string(input));
      build_pointwise_kernel({{input, buffer, false}});
      buffer_of_[static_cast<size_t>(input)] = buffer;
    }
    invariants.push_back(buffer);
    strides.push_back(program_.buffers[static_cast<size_t>(buffer)].strides);
  }
  for (size_t k = 0; k < carried; ++k) donated.push_back(static_cast<int32_t>(k + 1));
  Program body_program = schedule(body, strides, fusion_notes_, donated, hints_);

  std::vector<ValueId> results(carried, -1);
  for (ValueId id = root.node + 1; id < graph_.size(); ++id) {
    const Node& user = graph_.node(id);
    if (user.op == ir::Op::loop_result && user.inputs[0] == root.node)
      results[static_cast<size_t>(user.attrs.index)] = id;
  }
  LoopBinding binding;
  binding.start = buffer_of_[static_cast<size_t>(node.inputs[0])];
  binding.stop = buffer_of_[static_cast<size_t>(node.inputs[1])];
  binding.start_value = graph_.node(node.inputs[0]).attrs.scalar.i;  // when constant (no buffer)
  binding.stop_value = graph_.node(node.inputs[1]).attrs.scalar.i;
  binding.step = node.attrs.steps[0];
  binding.induction = add_buffer(BufferRole::Intermediate, 0, body.node(body.inputs()[0]), "index" + suffix);
  binding.inputs.push_back(binding.induction);
  for (size_t k = 0; k < carried; ++k) {
    const Buffer& result = body_program.buffers[static_cast<size_t>(body_program.output_buffers[k])];
    bool in_place = result.role == BufferRole::Input;
    // A value updated in place that the graph returns lives in the output buffer throughout.
    int32_t state = -1;
    auto output = std::find(graph_.outputs().begin(), graph_.outputs().end(), results[k]);
    if (in_place && results[k] >= 0 && output != graph_.outputs().end())
      state = program_.output_buffers[static_cast<size_t>(output - graph_.outputs().begin())];
    ValueId init = node.inputs[2 + k];
    int32_t reused = in_place ? reusable_output(init, results[k]) : -1;
    if (reused >= 0) {  // the enclosing body's donated buffer: no copy in, none out
      state = buffer_of_[static_cast<size_t>(init)];
      replaced_outputs_.insert(program_.output_buffers[static_cast<size_t>(reused)]);
      program_.output_buffers[static_cast<size_t>(reused)] = state;
      binding.inputs.push_back(state);
      buffer_of_[static_cast<size_t>(results[k])] = state;
      binding.outputs.push_back(state);
      continue;
    }
    if (state < 0)
      state = add_buffer(BufferRole::Intermediate, 0, graph_.node(init), "carried" + suffix + "_" + std::to_string(k));
    build_pointwise_kernel({{init, state, true}});
    binding.inputs.push_back(state);
    if (results[k] >= 0) buffer_of_[static_cast<size_t>(results[k])] = state;
    if (in_place) {  // nothing to swap
      binding.outputs.push_back(state);
      continue;
    }
    int32_t next = add_buffer(BufferRole::Intermediate, 0, body.node(body.outputs()[k]),
                              "next" + suffix + "_" + std::to_string(k));
    binding.outputs.push_back(next);
    binding.swaps.emplace_back(state, next);
  }
  binding.inputs.insert(binding.inputs.end(), invariants.begin(), invariants.end());
  if (ir::is_while_loop(node)) binding.condition = binding.inputs[1];
  append_loop(program_, body_program, binding, "kiln_const" + suffix + "_");
}

// A loop nested in a loop body, updating in place a carried value of that body: when it is the
// body's parameter, read by this loop alone or before it (loop_in_place.h), and the body returns
// the loop's result as the output donated that parameter, the loop updates that buffer itself:
// the output number (else -1). Else each outer iteration copied the array in and out (doitgen).
int32_t ProgramBuilder::reusable_output(ValueId init, ValueId result) const {
  const Node& source = graph_.node(init);
  if (result < 0 || source.op != ir::Op::parameter || (uses_[static_cast<size_t>(init)] != 1 &&
      !read_only_before_loop(graph_, init, graph_.node(result).inputs[0])))
    return -1;
  for (size_t o = 0; o < graph_.outputs().size(); ++o)
    if (graph_.outputs()[o] == result && o < donated_.size() &&
        donated_[o] == source.attrs.index)
      return static_cast<int32_t>(o);
  return -1;
}

void ProgramBuilder::finish_kernel(Kernel& kernel, const Lowering& lowering,
                                   size_t ordered_from) {
  int number = static_cast<int>(program_.kernels.size());
  std::vector<std::string> names;
  for (ValueId id : lowering.visited) {
    const Node& node = graph_.node(id);
    if (node.op == ir::Op::parameter || node.op == ir::Op::constant || node.op == ir::Op::broadcast ||
        node.op == ir::Op::reshape || node.op == ir::Op::constant_array)
      continue;
    std::string name(ir::op_name(node.op));
    if (std::find(names.begin(), names.end(), name) == names.end() && names.size() < 4) names.push_back(name);
    kernel.comments.push_back(ir::print_node(graph_, id, /*with_location=*/true));
  }
  kernel.name = "kernel" + std::to_string(number);
  for (const std::string& name : names) kernel.name += "_" + name;
  std::set<int32_t> read, written;
  for (const Expr& e : kernel.exprs)
    if (e.kind == ExprKind::Load) read.insert(e.buffer);
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Store || s.kind == StmtKind::Scan) written.insert(s.buffer);
      if (s.kind == StmtKind::Store && s.accumulate) read.insert(s.buffer);
      walk(s.body);
    }
  };
  walk(kernel.body);
  kernel.buffers_read.assign(read.begin(), read.end());
  kernel.buffers_written.assign(written.begin(), written.end());
  if (ordered_from != SIZE_MAX) kernel.ordered_from = static_cast<int32_t>(ordered_from);
  program_.kernels.push_back(std::move(kernel));
  Step step;
  step.kernel = number;
  program_.steps.push_back(step);
}

}  // namespace

ScheduleHints schedule_hints(const target::Target& target) {
  ScheduleHints hints;
  if (target.kind == target::DeviceKind::Cuda) hints.elementwise_broadcast = 4;
  hints.narrow_matmul_operands = target.kind == target::DeviceKind::Cpu;
  return hints;
}

Program schedule(const ir::Graph& graph, const std::vector<std::vector<int64_t>>& input_strides,
                 std::vector<std::string>* fusion_notes, const std::vector<int32_t>& donated,
                 const ScheduleHints& hints) {
  std::set<ValueId> materialized =
      initial_materialized(graph, hints.elementwise_broadcast, hints.narrow_matmul_operands);
  for (int round = 0; round < 256; ++round) {
    InPlacePlan in_place = plan_in_place(graph, materialized, donated);
    bool grew = false;
    for (ValueId id : in_place.compute_first) grew |= materialized.insert(id).second;
    if (grew) continue;
    std::set<ValueId> requests;
    std::vector<std::string> notes;
    Program program = ProgramBuilder(graph, materialized, &notes, requests, in_place, donated,
                                     hints)
                          .build(input_strides);
    for (ValueId id : requests) grew |= materialized.insert(id).second;
    if (!grew) {
      plan_buffers(program);
      if (fusion_notes != nullptr) *fusion_notes = std::move(notes);
      return program;
    }
  }
  throw Error(ErrorKind::Internal, "kiln: scheduler: materialization did not converge");
}

}  // namespace kiln::sched
