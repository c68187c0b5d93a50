#include "sched/lowering.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::sched {

using ir::Node;
using ir::ValueId;

std::vector<int32_t> use_counts(const ir::Graph& graph) {
  std::vector<int32_t> uses(static_cast<size_t>(graph.size()), 0);
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) ++uses[static_cast<size_t>(input)];
  return uses;
}

Lowering::Lowering(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                   const std::vector<Buffer>& buffers, KernelBuilder& builder,
                   std::set<ValueId>& materialize_requests, const std::vector<int32_t>& uses)
    : graph_(graph),
      buffer_of_(buffer_of),
      buffers_(buffers),
      builder_(builder),
      materialize_requests_(materialize_requests),
      uses_(uses) {}

void Lowering::push_scope(std::vector<Stmt>* statements, std::vector<int32_t> bound_loops) {
  scopes_.push_back(Scope{statements, std::move(bound_loops), {}});
}

void Lowering::pop_scope() { scopes_.pop_back(); }

ExprId Lowering::offset(int32_t buffer, const std::vector<ExprId>& index) {
  const Buffer& b = buffers_[static_cast<size_t>(buffer)];
  ExprId result = builder_.index_constant(0);
  for (size_t d = 0; d < index.size() && d < b.strides.size(); ++d) {
    if (b.shape[d] == 1) continue;
    result = builder_.add(result, builder_.mul(index[d], b.strides[d]));
  }
  return result;
}

std::vector<ExprId> Lowering::loop_index(const std::vector<int32_t>& loops) {
  std::vector<ExprId> index;
  for (int32_t loop : loops) index.push_back(builder_.loop_var(loop));
  return index;
}

ExprId Lowering::value(ValueId id, const std::vector<ExprId>& given, bool compute) {
  // A dimension of extent 1 has one index, 0: its uses share one memo entry whatever
  // expression they reach it by.
  std::vector<ExprId> index = given;
  const ir::Shape& shape = graph_.node(id).shape;
  for (size_t d = 0; d < index.size() && d < shape.size(); ++d)
    if (shape[d].is_constant() && shape[d].constant() == 1) index[d] = builder_.index_constant(0);
  const bool here = stored_here.count(id) > 0;
  auto key = std::make_pair(id, index);
  if (!compute || here) {
    for (const Scope& scope : scopes_)
      if (auto found = scope.lowered.find(key); found != scope.lowered.end()) return found->second;
  }
  ExprId result = lower(id, index, compute || here);
  if ((!compute || here) && !scopes_.empty()) scopes_.back().lowered[key] = result;
  note_recomputation(id, index);
  return result;
}

void Lowering::note_recomputation(ValueId id, const std::vector<ExprId>& index) {
  ir::OpKind kind = ir::op_info(graph_.node(id).op).kind;
  bool computes = kind == ir::OpKind::Unary || kind == ir::OpKind::Binary ||
                  kind == ir::OpKind::Ternary;  // views of buffers are only loads
  if (!computes || buffer_of_[static_cast<size_t>(id)] >= 0 || uses_[static_cast<size_t>(id)] < 2)
    return;
  std::set<std::vector<ExprId>>& indices = computed_at_[id];
  indices.insert(index);
  if (indices.size() > kMostRecomputations) materialize_requests_.insert(id);
}

ExprId Lowering::lower(ValueId id, const std::vector<ExprId>& index, bool compute) {
  const Node& node = graph_.node(id);
  visited.insert(id);
  int32_t buffer = buffer_of_[static_cast<size_t>(id)];
  if (buffer >= 0 &&
      (!compute || node.op == ir::Op::parameter || node.op == ir::Op::constant_array)) {
    return builder_.load(buffer, node.dtype, offset(buffer, index));
  }
  const ir::OpInfo& info = ir::op_info(node.op);
  switch (info.kind) {
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Ternary: {
      std::vector<ExprId> operands;
      for (ValueId input : node.inputs) {
        const Node& in = graph_.node(input);
        // The builder broadcasts operands explicitly; tolerate rank/size-1 differences anyway.
        std::vector<ExprId> in_index(in.shape.size());
        size_t skip = node.shape.size() - in.shape.size();
        for (size_t d = 0; d < in.shape.size(); ++d)
          in_index[d] = in.shape[d].constant() == 1 ? builder_.index_constant(0) : index[d + skip];
        operands.push_back(value(input, in_index));
      }
      return builder_.elementwise(node.op, node.dtype, std::move(operands));
    }
    case ir::OpKind::Reduce:
      return reduction(id, index);
    case ir::OpKind::Scan:
      break;
    case ir::OpKind::Structural:
      switch (node.op) {
        case ir::Op::constant:
          return builder_.constant(node.attrs.scalar, node.dtype);
        case ir::Op::iota:
          return builder_.cast(index[static_cast<size_t>(node.attrs.axis)], node.dtype);
        case ir::Op::random_uniform:
        case ir::Op::random_normal: {
          std::vector<int64_t> strides = ir::contiguous_strides(node.shape);
          ExprId flat = builder_.index_constant(0);
          for (size_t d = 0; d < index.size(); ++d)
            flat = builder_.add(flat, builder_.mul(index[d], strides[d]));
          ExprId key = value(node.inputs[0], {});
          return builder_.random(node.op, node.dtype, node.attrs.seed, flat, key);
        }
        case ir::Op::cast:
          return builder_.cast(value(node.inputs[0], index), node.dtype);
        case ir::Op::matmul:
        case ir::Op::attention:
        case ir::Op::convolution:
        case ir::Op::convolution_backward_input:
        case ir::Op::convolution_backward_weight:
        case ir::Op::argsort:
        case ir::Op::sort:
        case ir::Op::solve:
        case ir::Op::scatter:
        case ir::Op::loop:
        case ir::Op::loop_result:
        case ir::Op::parameter:
        case ir::Op::constant_array:
          break;
        default:
          return movement(node, index);
      }
      break;
  }
  // Scans, externs and scatters are always materialized by the scheduler: reaching here means
  // a node is needed in a kernel before its buffer exists.
  materialize_requests_.insert(id);
  return builder_.constant(Scalar::of_int(0), node.dtype);
}

ExprId Lowering::movement(const Node& node, const std::vector<ExprId>& index) {
  const Node& in = graph_.node(node.inputs[0]);
  const size_t rank = in.shape.size();
  auto extent = [&](size_t d) { return in.shape[d].constant(); };
  auto clamp = [&](ExprId i, int64_t size) {
    return builder_.minimum(builder_.maximum(i, builder_.index_constant(0)),
                            builder_.index_constant(size - 1));
  };
  std::vector<ExprId> in_index(rank);
  switch (node.op) {
    case ir::Op::broadcast: {
      size_t skip = node.shape.size() - rank;
      for (size_t d = 0; d < rank; ++d)
        in_index[d] = extent(d) == 1 ? builder_.index_constant(0) : index[d + skip];
      break;
    }
    case ir::Op::reshape: {
      // A size-0 reshape has no element to compute, and its zero extents and strides would
      // divide by zero below (SIGFPE at compile time).
      if (ir::element_count(in.shape) == 0) {
        for (size_t d = 0; d < rank; ++d) in_index[d] = builder_.index_constant(0);
        break;
      }
      std::vector<int64_t> out_strides = ir::contiguous_strides(node.shape);
      std::vector<int64_t> in_strides = ir::contiguous_strides(in.shape);
      ExprId flat = builder_.index_constant(0);
      for (size_t d = 0; d < index.size(); ++d)
        flat = builder_.add(flat, builder_.mul(index[d], out_strides[d]));
      for (size_t d = 0; d < rank; ++d)
        in_index[d] = builder_.mod(builder_.floordiv(flat, in_strides[d]), extent(d));
      break;
    }
    case ir::Op::permute:
      for (size_t d = 0; d < index.size(); ++d)
        in_index[static_cast<size_t>(node.attrs.permutation[d])] = index[d];
      break;
    case ir::Op::slice:
      for (size_t d = 0; d < rank; ++d)
        in_index[d] = builder_.add(builder_.index_constant(node.attrs.starts[d]),
                                   builder_.mul(index[d], node.attrs.steps[d]));
      break;
    case ir::Op::flip:
      in_index = index;
      for (int64_t axis : node.attrs.axes) {
        size_t d = static_cast<size_t>(axis);
        in_index[d] =
            builder_.add(builder_.index_constant(extent(d) - 1), builder_.mul(index[d], -1));
      }
      break;
    case ir::Op::pad: {
      ExprId inside = -1;  // bool: every dimension within the source
      for (size_t d = 0; d < rank; ++d) {
        ExprId j = builder_.add(index[d], builder_.index_constant(-node.attrs.pad_low[d]));
        ExprId n = builder_.index_constant(extent(d));
        if (node.attrs.pad_mode == ir::PadMode::Reflect) {
          // One reflection without repeating the edge: -j below, 2(n-1)-j above.
          ExprId below = builder_.mul(j, -1);
          ExprId above =
              builder_.add(builder_.index_constant(2 * (extent(d) - 1)), builder_.mul(j, -1));
          ExprId reflected = builder_.select(builder_.less(j, builder_.index_constant(0)), below,
                                             builder_.select(builder_.less(j, n), j, above));
          in_index[d] = clamp(reflected, extent(d));
        } else {
          in_index[d] = clamp(j, extent(d));
        }
        if (node.attrs.pad_mode == ir::PadMode::Constant) {
          ExprId ok = builder_.elementwise(
              ir::Op::logical_and, DType::Bool,
              {builder_.less(builder_.index_constant(-1), j), builder_.less(j, n)});
          inside = inside < 0
                       ? ok
                       : builder_.elementwise(ir::Op::logical_and, DType::Bool, {inside, ok});
        }
      }
      ExprId source = value(node.inputs[0], in_index);
      if (inside < 0) return source;
      return builder_.select(inside, source, builder_.constant(node.attrs.scalar, node.dtype));
    }
    case ir::Op::concat: {
      size_t axis = static_cast<size_t>(node.attrs.axis);
      std::vector<int64_t> starts;
      int64_t start = 0;
      for (ValueId input : node.inputs) {
        starts.push_back(start);
        start += graph_.node(input).shape[axis].constant();
      }
      ExprId result = -1;
      for (size_t k = node.inputs.size(); k-- > 0;) {
        const Node& part = graph_.node(node.inputs[k]);
        if (part.shape[axis].constant() == 0) continue;
        std::vector<ExprId> part_index = index;
        part_index[axis] = clamp(builder_.add(index[axis], builder_.index_constant(-starts[k])),
                                 part.shape[axis].constant());
        ExprId part_value = value(node.inputs[k], part_index);
        result = result < 0 ? part_value
                            : builder_.select(builder_.less(index[axis],
                                                            builder_.index_constant(starts[k + 1])),
                                              part_value, result);
      }
      return result < 0 ? builder_.constant(Scalar::of_int(0), node.dtype) : result;
    }
    case ir::Op::gather: {
      const Node& indices = graph_.node(node.inputs[1]);
      size_t axis = static_cast<size_t>(node.attrs.axis);
      size_t index_rank = indices.shape.size();
      std::vector<ExprId> position(index.begin() + static_cast<long>(axis),
                                   index.begin() + static_cast<long>(axis + index_rank));
      ExprId i = builder_.cast(value(node.inputs[1], position), DType::Int64);
      ExprId size = builder_.index_constant(extent(axis));
      // Negative indices count from the end (once); out-of-range indices are clamped.
      ExprId wrapped =
          builder_.select(builder_.less(i, builder_.index_constant(0)), builder_.add(i, size), i);
      for (size_t d = 0; d < axis; ++d) in_index[d] = index[d];
      in_index[axis] = clamp(wrapped, extent(axis));
      for (size_t d = axis + 1; d < rank; ++d) in_index[d] = index[d + index_rank - 1];
      break;
    }
    default:
      throw Error(ErrorKind::Internal, std::string("kiln: scheduler: no lowering for op ") +
                                           std::string(ir::op_name(node.op)));
  }
  return value(node.inputs[0], in_index);
}

bool Lowering::uses_local(ExprId id, const std::set<int32_t>& locals) {
  std::vector<ExprId> stack{id};
  std::set<ExprId> seen;
  while (!stack.empty()) {
    ExprId e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    const Expr& expr = builder_.expr(e);
    if (expr.kind == ExprKind::Local && locals.count(expr.variable)) return true;
    stack.insert(stack.end(), expr.operands.begin(), expr.operands.end());
  }
  return false;
}

bool Lowering::statements_use_local(const std::vector<Stmt>& statements,
                                    const std::set<int32_t>& locals) {
  for (const Stmt& s : statements) {
    for (ExprId e : {s.guard, s.index, s.value})
      if (e >= 0 && uses_local(e, locals)) return true;
    for (const Accumulation& a : s.accumulations)
      for (ExprId e : {a.value, a.position})
        if (e >= 0 && uses_local(e, locals)) return true;
    if (statements_use_local(s.body, locals)) return true;
  }
  return false;
}

ExprId Lowering::reduction(ValueId id, const std::vector<ExprId>& index) {
  const Node& node = graph_.node(id);

  // Placement: the shallowest scope whose bound loops cover the index's dependencies. If that
  // scope binds more loops than the index uses, placing here would recompute the reduction
  // for every iteration of the extra loops: ask for a kernel of its own instead.
  std::set<int32_t> needed;
  for (ExprId e : index) {
    const auto& deps = builder_.dependencies(e);
    needed.insert(deps.begin(), deps.end());
  }
  std::set<int32_t> bound;
  size_t depth = scopes_.size();
  for (size_t s = 0; s < scopes_.size(); ++s) {
    // A loop of extent 1 reads as the constant 0 (KernelBuilder::loop_var), so no index ever
    // depends on it: counting it as bound made every reduction in a kernel with a size-1
    // output dimension ask for a kernel of its own, and a graph output got the placeholder 0.
    for (int32_t loop : scopes_[s].bound_loops)
      if (builder_.loop_extent(loop) != 1) bound.insert(loop);
    if (std::includes(bound.begin(), bound.end(), needed.begin(), needed.end())) {
      depth = s;
      break;
    }
  }
  if (depth == scopes_.size() || bound != needed) {
    materialize_requests_.insert(id);
    return builder_.constant(Scalar::of_int(0), node.dtype);
  }
  auto key = std::make_pair(id, index);
  if (auto found = scopes_[depth].placed.find(key); found != scopes_[depth].placed.end())
    return found->second;

  // The Reduce goes into scope `depth`, so its element is lowered in a scope nested right in
  // that one: the deeper scopes do not enclose it in the generated code, and what they place or
  // remember must stay out of sight meanwhile. (A trial join below binds the loops of the Reduce
  // it may join; a reduction its element reads may join that same Reduce, and the reductions
  // nested in that one went into the trial's statements, dropped when the trial failed.)
  std::vector<Scope> deeper(std::make_move_iterator(scopes_.begin() + static_cast<long>(depth) + 1),
                            std::make_move_iterator(scopes_.end()));
  scopes_.resize(depth + 1);
  ExprId result = place_reduction(id, index, needed);
  for (Scope& scope : deeper) scopes_.push_back(std::move(scope));
  return result;
}

ExprId Lowering::place_reduction(ValueId id, const std::vector<ExprId>& index,
                                 const std::set<int32_t>& needed) {
  const Node& node = graph_.node(id);
  const Node& in = graph_.node(node.inputs[0]);
  const size_t depth = scopes_.size() - 1;
  const auto key = std::make_pair(id, index);

  std::vector<int64_t> extents;
  for (int64_t axis : node.attrs.axes)
    extents.push_back(in.shape[static_cast<size_t>(axis)].constant());
  // A reduction over no axes (of a 0-d operand) still combines its one element: give it a
  // one-iteration loop, since the emitter expects at least one reduction loop.
  if (extents.empty()) extents.push_back(1);
  const bool arg_index = ir::op_info(node.op).accumulator == ir::Accumulator::ArgIndex;

  // Lowers the reduced element with the given reduction loops into `body`.
  auto lower_element = [&](const std::vector<int32_t>& loops, std::vector<Stmt>& body,
                           ExprId& element, ExprId& position) {
    std::vector<ExprId> in_index(in.shape.size());
    size_t next_loop = 0, next_out = 0;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      bool reduced = std::find(node.attrs.axes.begin(), node.attrs.axes.end(), int64_t(d)) !=
                     node.attrs.axes.end();
      if (reduced) {
        in_index[d] = builder_.loop_var(loops[next_loop++]);
        if (node.attrs.keepdims) ++next_out;
      } else {
        in_index[d] = index[next_out++];
      }
    }
    push_scope(&body, loops);
    element = value(node.inputs[0], in_index);
    pop_scope();
    position = -1;
    if (arg_index) {
      position = builder_.index_constant(0);
      for (size_t k = 0; k < loops.size(); ++k)
        position = builder_.add(builder_.mul(position, extents[k]), builder_.loop_var(loops[k]));
    }
  };

  Accumulation accumulation;
  accumulation.op = node.op;
  accumulation.dtype = arg_index ? in.dtype : node.dtype;
  accumulation.ddof = node.attrs.ddof;
  accumulation.local = builder_.new_local(needed);
  ExprId result = builder_.local(accumulation.local, node.dtype);

  // Sibling reductions over the same domain share one pass: try to join the last Reduce in
  // this scope, unless this element depends on that Reduce's own results.
  std::vector<Stmt>& statements = *scopes_[depth].statements;
  const size_t count_before = statements.size();
  if (!statements.empty() && statements.back().kind == StmtKind::Reduce) {
    const Stmt& candidate = statements.back();
    bool same_domain = candidate.reduce_loops.size() == extents.size();
    for (size_t k = 0; same_domain && k < extents.size(); ++k)
      same_domain = candidate.reduce_loops[k].extent == extents[k];
    if (same_domain) {
      std::vector<int32_t> loops;
      std::set<int32_t> candidate_locals;
      for (const Loop& loop : candidate.reduce_loops) loops.push_back(loop.variable);
      std::vector<Stmt> trial;
      lower_element(loops, trial, accumulation.value, accumulation.position);
      // Read the candidate's locals after lowering: a reduction this element needs (the max of
      // sum(x - max(x))) may itself have joined the candidate just now, and must not be read
      // inside the pass that computes it, by the element or by a reduction nested in it (the
      // matrix-vector product in sum(A @ (v * sum(v)))).
      for (const Accumulation& a : statements.back().accumulations)
        candidate_locals.insert(a.local);
      if (statements.size() == count_before && !uses_local(accumulation.value, candidate_locals) &&
          !statements_use_local(trial, candidate_locals)) {
        Stmt& target = statements.back();
        for (Stmt& s : trial) target.body.push_back(std::move(s));
        target.accumulations.push_back(accumulation);
        scopes_[depth].placed[key] = result;
        return result;
      }
    }
  }

  Stmt reduce;
  reduce.kind = StmtKind::Reduce;
  std::vector<int32_t> loops;
  for (int64_t e : extents) {
    int32_t loop = builder_.new_loop(e);
    loops.push_back(loop);
    reduce.reduce_loops.push_back(Loop{loop, e});
  }
  lower_element(loops, reduce.body, accumulation.value, accumulation.position);
  reduce.accumulations.push_back(accumulation);
  scopes_[depth].statements->push_back(std::move(reduce));
  scopes_[depth].placed[key] = result;
  return result;
}

}  // namespace kiln::sched
