// Algebraic simplification as a table of exact rewrite rules. Each rule looks at one node whose
// operands are already rewritten and either declines or names the value that replaces it (an
// existing value or a new node). Rules are exact: they never change a result, not even the sign
// of a zero, so `x + 0.0` stays (it turns -0.0 into +0.0) while `x + (-0.0)` goes.
#include <cmath>
#include <optional>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Builder;
using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

// One node being rewritten: the original node and its operands in the new graph.
struct Match {
  Builder& builder;
  const Node& node;
  const std::vector<ValueId>& inputs;

  // Copies: appending to the new graph invalidates references into it.
  Node input(size_t i) const { return builder.node(inputs[i]); }
  // A replacement must be indistinguishable from the node it replaces.
  bool same_type(ValueId value) const {
    const Node& replacement = builder.node(value);
    return replacement.dtype == node.dtype && replacement.shape == node.shape;
  }
  std::optional<ValueId> if_same_type(ValueId value) const {
    if (same_type(value)) return value;
    return std::nullopt;
  }
};

using Rule = std::optional<ValueId> (*)(const Match&);

// The scalar a value holds everywhere: a constant, or a broadcast of one (the builder broadcasts
// scalar operands of elementwise ops explicitly).
std::optional<ir::Scalar> scalar_value(const Builder& builder, ValueId value) {
  const Node* node = &builder.node(value);
  if (node->op == Op::broadcast) node = &builder.node(node->inputs[0]);
  if (node->op == Op::constant) return node->attrs.scalar;
  return std::nullopt;
}

bool is_constant(const Builder& builder, ValueId value) {
  return scalar_value(builder, value).has_value();
}

bool holds(const Match& match, size_t operand, double value) {
  std::optional<ir::Scalar> scalar = scalar_value(match.builder, match.inputs[operand]);
  return scalar && scalar->as_double() == value;
}

// Zero of the sign that makes `x + zero` exact: any integer 0, or floating -0.0.
bool holds_additive_identity(const Match& match, size_t operand) {
  std::optional<ir::Scalar> scalar = scalar_value(match.builder, match.inputs[operand]);
  if (!scalar || scalar->as_double() != 0) return false;
  return scalar->is_integer || std::signbit(scalar->f);
}

// x + 0 -> x (integers); x + (-0.0) -> x (floats); 0 + x -> x likewise.
std::optional<ValueId> add_zero(const Match& match) {
  if (match.node.op != Op::add) return std::nullopt;
  if (holds_additive_identity(match, 1)) return match.if_same_type(match.inputs[0]);
  if (holds_additive_identity(match, 0)) return match.if_same_type(match.inputs[1]);
  return std::nullopt;
}

// x - 0 -> x (integers); x - (+0.0) -> x (floats: -0.0 - 0.0 is -0.0).
std::optional<ValueId> subtract_zero(const Match& match) {
  if (match.node.op != Op::sub) return std::nullopt;
  std::optional<ir::Scalar> scalar = scalar_value(match.builder, match.inputs[1]);
  if (!scalar || scalar->as_double() != 0) return std::nullopt;
  if (!scalar->is_integer && std::signbit(scalar->f)) return std::nullopt;
  return match.if_same_type(match.inputs[0]);
}

// x * 1 -> x; 1 * x -> x.
std::optional<ValueId> multiply_one(const Match& match) {
  if (match.node.op != Op::mul) return std::nullopt;
  if (holds(match, 1, 1)) return match.if_same_type(match.inputs[0]);
  if (holds(match, 0, 1)) return match.if_same_type(match.inputs[1]);
  return std::nullopt;
}

// x * 0 -> 0 for integers (for floats NaN * 0 and inf * 0 are NaN).
std::optional<ValueId> multiply_zero(const Match& match) {
  if (match.node.op != Op::mul || !is_integer(match.node.dtype)) return std::nullopt;
  if (!holds(match, 0, 0) && !holds(match, 1, 0)) return std::nullopt;
  match.builder.set_location(match.node.location);
  return match.builder.constant(ir::Scalar::of_int(0), match.node.dtype, match.node.shape);
}

// x / 1 -> x.
std::optional<ValueId> divide_one(const Match& match) {
  if (match.node.op != Op::div || !holds(match, 1, 1)) return std::nullopt;
  return match.if_same_type(match.inputs[0]);
}

// -(-x) -> x (exact with wrap-around too: -(-INT_MIN) is INT_MIN).
std::optional<ValueId> double_negation(const Match& match) {
  if (match.node.op != Op::neg) return std::nullopt;
  Node operand = match.input(0);
  if (operand.op != Op::neg) return std::nullopt;
  return match.if_same_type(operand.inputs[0]);
}

// cast(x: T) to T -> x.
std::optional<ValueId> cast_to_own_dtype(const Match& match) {
  if (match.node.op != Op::cast) return std::nullopt;
  return match.if_same_type(match.inputs[0]);
}

// reshape(x) to x's shape -> x; permute(x, identity) -> x; broadcast(x) to x's shape -> x;
// slice(x) selecting everything -> x.
std::optional<ValueId> identity_movement(const Match& match) {
  Op op = match.node.op;
  if (op == Op::reshape || op == Op::broadcast) return match.if_same_type(match.inputs[0]);
  if (op == Op::permute) {
    const std::vector<int64_t>& permutation = match.node.attrs.permutation;
    for (size_t axis = 0; axis < permutation.size(); ++axis) {
      if (permutation[axis] != static_cast<int64_t>(axis)) return std::nullopt;
    }
    return match.if_same_type(match.inputs[0]);
  }
  if (op == Op::slice) {
    // With every start at 0, keeping all n elements means step 1 (or a dimension of size 1).
    for (int64_t start : match.node.attrs.starts) {
      if (start != 0) return std::nullopt;
    }
    return match.if_same_type(match.inputs[0]);
  }
  return std::nullopt;
}

// reshape(reshape(x)) -> reshape(x): row-major reinterpretation only depends on the element order.
std::optional<ValueId> reshape_of_reshape(const Match& match) {
  if (match.node.op != Op::reshape) return std::nullopt;
  Node operand = match.input(0);
  if (operand.op != Op::reshape) return std::nullopt;
  match.builder.set_location(match.node.location);
  return match.builder.reshape(operand.inputs[0], match.node.shape);
}

// permute(permute(x, p), q) -> permute(x, r) with r[i] = p[q[i]].
std::optional<ValueId> permute_of_permute(const Match& match) {
  if (match.node.op != Op::permute) return std::nullopt;
  Node operand = match.input(0);
  if (operand.op != Op::permute) return std::nullopt;
  std::vector<int64_t> composed;
  for (int64_t axis : match.node.attrs.permutation) {
    composed.push_back(operand.attrs.permutation[static_cast<size_t>(axis)]);
  }
  match.builder.set_location(match.node.location);
  return match.builder.permute(operand.inputs[0], composed);
}

// broadcast(broadcast(x)) -> broadcast(x): broadcasting composes.
std::optional<ValueId> broadcast_of_broadcast(const Match& match) {
  if (match.node.op != Op::broadcast) return std::nullopt;
  Node operand = match.input(0);
  if (operand.op != Op::broadcast) return std::nullopt;
  match.builder.set_location(match.node.location);
  return match.builder.broadcast(operand.inputs[0], match.node.shape);
}

// slice(slice(x)) -> slice(x): element i of the outer slice is element start + i * step of the
// inner one, so starts and steps compose (`x[::-1][:k]`, one slice: passes/sort_ends.cpp reads
// it as the last k of a sort, backwards).
std::optional<ValueId> slice_of_slice(const Match& match) {
  if (match.node.op != Op::slice) return std::nullopt;
  Node operand = match.input(0);
  if (operand.op != Op::slice) return std::nullopt;
  Node composed = match.node;
  for (const ir::Dim& extent : composed.shape)  // an empty slice's start may lie past the end
    if (extent.is_constant() && extent.constant() == 0) return std::nullopt;
  for (size_t d = 0; d < composed.shape.size(); ++d) {
    composed.attrs.starts[d] = operand.attrs.starts[d] + match.node.attrs.starts[d] * operand.attrs.steps[d];
    composed.attrs.steps[d] = operand.attrs.steps[d] * match.node.attrs.steps[d];
  }
  return match.builder.copy_node(composed, {operand.inputs[0]});
}

bool is_commutative(Op op) {
  switch (op) {
    case Op::add: case Op::mul: case Op::eq: case Op::ne: case Op::logical_and:
    case Op::logical_or: case Op::logical_xor: case Op::bitwise_and: case Op::bitwise_or:
    case Op::bitwise_xor:
      return true;
    default:
      return false;
  }
}

// c + x -> x + c (and the other commutative ops): one spelling, so CSE sees equal nodes.
// maximum/minimum stay: which NaN or which zero they return depends on the operand order.
std::optional<ValueId> constant_to_the_right(const Match& match) {
  if (!is_commutative(match.node.op)) return std::nullopt;
  if (!is_constant(match.builder, match.inputs[0]) || is_constant(match.builder, match.inputs[1])) {
    return std::nullopt;
  }
  return match.builder.copy_node(match.node, {match.inputs[1], match.inputs[0]});
}

// The 0-d condition a `where` condition broadcasts to the whole array, if it does.
std::optional<ValueId> uniform_condition(const Builder& builder, ValueId condition) {
  const Node& node = builder.node(condition);
  if (node.op != Op::broadcast || !builder.node(node.inputs[0]).shape.empty()) return std::nullopt;
  return node.inputs[0];
}

// A branch that updates a slice selects the slice, not the array, so that the update stays in
// place (sched/in_place.h); c is one condition for the whole array (a 0-d one broadcast):
//   where(c, scatter(x, i, v), x)              -> scatter(x, i, where(c, v, gather(x, i)))
//   where(c, x, scatter(x, i, v))              -> scatter(x, i, where(c, gather(x, i), v))
//   where(c, scatter(x, i, a), scatter(x, i, b)) -> scatter(x, i, where(c, a, b))
std::optional<ValueId> select_of_scatters(const Match& match) {
  if (match.node.op != Op::where) return std::nullopt;
  std::optional<ValueId> condition = uniform_condition(match.builder, match.inputs[0]);
  if (!condition) return std::nullopt;
  Node then = match.input(1), otherwise = match.input(2);
  auto updates = [&](const Node& scatter, ValueId base) {
    return scatter.op == Op::scatter && scatter.inputs[0] == base &&
           scatter.attrs.scatter_mode == ir::ScatterMode::Set;
  };
  const Node* scatter = nullptr;
  ValueId then_values = -1, else_values = -1;
  Builder& b = match.builder;
  b.set_location(match.node.location);
  if (then.op == Op::scatter && otherwise.op == Op::scatter && then.inputs[0] == otherwise.inputs[0] &&
      then.inputs[1] == otherwise.inputs[1] && then.attrs == otherwise.attrs) {
    scatter = &then;
    then_values = then.inputs[2];
    else_values = otherwise.inputs[2];
  } else if (updates(then, match.inputs[2]) || updates(otherwise, match.inputs[1])) {
    bool then_updates = updates(then, match.inputs[2]);
    scatter = then_updates ? &then : &otherwise;
    ValueId old = b.gather(scatter->inputs[0], scatter->inputs[1], scatter->attrs.axis);
    if (b.node(old).shape != b.node(scatter->inputs[2]).shape) return std::nullopt;
    then_values = then_updates ? scatter->inputs[2] : old;
    else_values = then_updates ? old : scatter->inputs[2];
  } else {
    return std::nullopt;
  }
  Node chosen = *scatter;  // copies: the builder appends below
  ValueId mask = b.broadcast(*condition, b.node(then_values).shape);
  ValueId values = b.where(mask, then_values, else_values);
  return b.scatter(chosen.inputs[0], chosen.inputs[1], values, chosen.attrs.axis, chosen.attrs.scatter_mode);
}

// A branch that writes one element of a row (`if c: T[i, j] = a else: T[i, j] = b` in a
// captured loop: each side a select of the row by the mask of column j) selects the element,
// not the row, so that the mask alone decides where the row changes and the kernel visits
// only column j (sched trim_loops), not the whole row on every iteration:
//   where(c, where(m, a, x), where(m, b, x)) -> where(m, where(c, a, b), x)
//   where(c, where(m, a, x), x)              -> where(m, where(c, a, x), x)
//   where(c, x, where(m, b, x))              -> where(m, where(c, x, b), x)
// Exact elementwise (m ? (c ? a : b) : x). Only for one condition of the whole array (a 0-d c
// broadcast) over a mask that is not one: the rewritten select is not matched again.
std::optional<ValueId> select_of_masked_selects(const Match& match) {
  if (match.node.op != Op::where) return std::nullopt;
  Builder& b = match.builder;
  if (!uniform_condition(b, match.inputs[0])) return std::nullopt;
  const ValueId then = match.inputs[1], otherwise = match.inputs[2];
  auto masked_select = [&](ValueId value) -> std::optional<Node> {
    const Node& node = b.node(value);
    if (node.op != Op::where || node.shape != match.node.shape ||
        b.node(node.inputs[0]).shape != match.node.shape || uniform_condition(b, node.inputs[0]))
      return std::nullopt;
    return node;
  };
  const std::optional<Node> then_select = masked_select(then);
  const std::optional<Node> else_select = masked_select(otherwise);
  ValueId mask, base, then_value, else_value;
  if (then_select && else_select && then_select->inputs[0] == else_select->inputs[0] &&
      then_select->inputs[2] == else_select->inputs[2]) {
    mask = then_select->inputs[0], base = then_select->inputs[2];
    then_value = then_select->inputs[1], else_value = else_select->inputs[1];
  } else if (then_select && then_select->inputs[2] == otherwise) {
    mask = then_select->inputs[0], base = otherwise;
    then_value = then_select->inputs[1], else_value = otherwise;
  } else if (else_select && else_select->inputs[2] == then) {
    mask = else_select->inputs[0], base = then;
    then_value = then, else_value = else_select->inputs[1];
  } else {
    return std::nullopt;
  }
  b.set_location(match.node.location);
  const ValueId chosen = b.where(match.inputs[0], then_value, else_value);
  return match.if_same_type(b.where(mask, chosen, base));
}

// where(c, x, x) -> x: both sides the same value (a window assigned its own update twice).
std::optional<ValueId> select_of_same(const Match& match) {
  if (match.node.op != Op::where || match.inputs[1] != match.inputs[2]) return std::nullopt;
  return match.if_same_type(match.inputs[1]);
}

// What a full-size operand broadcasts: the input of a broadcast, or nullopt.
std::optional<ValueId> broadcast_source(const Builder& builder, ValueId value) {
  const Node& node = builder.node(value);
  if (node.op != Op::broadcast) return std::nullopt;
  return node.inputs[0];
}

// An elementwise op of a select whose branch is a broadcast (and, for a binary op, whose
// other operand is one too) computes that branch at its own size, once:
//   f(where(c, a, broadcast(s)))                 -> where(c, f(a), broadcast(f(s)))
//   g(where(c, a, broadcast(s)), broadcast(t))   -> where(c, g(a, broadcast(t)), broadcast(g(s, t)))
// (either branch, either operand). Exact: a select commutes with elementwise ops. What it buys:
// a masked-out branch (attention's -inf before the softmax's exp) no longer flows through the
// full-size math, where libmvec's vector exp takes its slow scalar path for every lane of -inf.
std::optional<ValueId> elementwise_through_select(const Match& match) {
  ir::OpKind kind = ir::op_info(match.node.op).kind;
  if (kind != ir::OpKind::Unary && kind != ir::OpKind::Binary) return std::nullopt;
  Builder& b = match.builder;
  for (size_t operand = 0; operand < match.inputs.size(); ++operand) {
    Node select = match.input(operand);
    if (select.op != Op::where) continue;
    std::optional<ValueId> other_source;  // the binary op's other operand, at its own size
    if (kind == ir::OpKind::Binary) {
      other_source = broadcast_source(b, match.inputs[1 - operand]);
      if (!other_source) continue;
    }
    for (size_t branch = 1; branch <= 2; ++branch) {
      std::optional<ValueId> source = broadcast_source(b, select.inputs[branch]);
      if (!source) continue;
      ir::Shape small_shape = b.node(*source).shape;
      if (other_source && !ir::broadcast_shapes(small_shape, b.node(*other_source).shape, small_shape))
        continue;
      if (small_shape == match.node.shape) continue;  // no smaller after all
      auto apply = [&](ValueId value, std::optional<ValueId> other) {
        if (!other) return b.unary(match.node.op, value);
        return operand == 0 ? b.binary(match.node.op, value, *other) : b.binary(match.node.op, *other, value);
      };
      b.set_location(match.node.location);
      ValueId small = b.broadcast(apply(*source, other_source), match.node.shape);
      std::optional<ValueId> other_full;
      if (other_source) other_full = match.inputs[1 - operand];
      ValueId full = apply(select.inputs[3 - branch], other_full);
      return branch == 1 ? b.where(select.inputs[0], small, full)
                         : b.where(select.inputs[0], full, small);
    }
  }
  return std::nullopt;
}

// x and false -> false, x or true -> true; x and true, x or false -> x where x is a bool of
// the node's shape (a branch's test or a check's flag that a Python constant decides).
std::optional<ValueId> logic_with_a_constant(const Match& match) {
  Op op = match.node.op;
  if (op != Op::logical_and && op != Op::logical_or) return std::nullopt;
  const bool absorbing = op == Op::logical_or;  // the value that decides: or's true
  for (size_t operand = 0; operand < 2; ++operand) {
    std::optional<ir::Scalar> scalar = scalar_value(match.builder, match.inputs[operand]);
    if (!scalar) continue;
    const bool value = scalar->as_double() != 0;  // (NaN is true, as in logical_and)
    if (value == absorbing) {
      match.builder.set_location(match.node.location);
      return match.builder.constant(ir::Scalar::of_int(absorbing ? 1 : 0), match.node.dtype,
                                    match.node.shape);
    }
    return match.if_same_type(match.inputs[1 - operand]);
  }
  return std::nullopt;
}

// where(true, a, b) -> a, where(false, a, b) -> b, where the side has the node's type.
std::optional<ValueId> select_of_a_constant(const Match& match) {
  if (match.node.op != Op::where) return std::nullopt;
  std::optional<ir::Scalar> condition = scalar_value(match.builder, match.inputs[0]);
  if (!condition) return std::nullopt;
  return match.if_same_type(match.inputs[condition->as_double() != 0 ? 1 : 2]);
}

// Tried in order; the first rule that applies wins (the pipeline repeats the pass, so a
// rewritten node is looked at again in the next round).
constexpr Rule kRules[] = {
    add_zero,           subtract_zero,      multiply_one,       multiply_zero,
    divide_one,         double_negation,    cast_to_own_dtype,  identity_movement,
    reshape_of_reshape, permute_of_permute, broadcast_of_broadcast, slice_of_slice,
    constant_to_the_right,
    select_of_scatters, select_of_same,     select_of_masked_selects, elementwise_through_select,
    logic_with_a_constant, select_of_a_constant,
};

}  // namespace

ir::Graph simplify(const ir::Graph& graph) {
  ir::Graph result;
  Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
    Match match{builder, node, inputs};
    std::optional<ValueId> rewritten;
    for (Rule rule : kRules) {
      rewritten = rule(match);
      if (rewritten) break;
    }
    replacement[static_cast<size_t>(id)] =
        rewritten ? *rewritten : builder.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) {
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  }
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
