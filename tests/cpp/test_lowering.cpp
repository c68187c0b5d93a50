// Where sched/lowering.cpp places reductions: every result a kernel reads is computed by a
// Reduce before it, in its block or an enclosing one (else the generated C++ names a variable
// it never declared), and the compiled results match the interpreter.
#include <functional>

#include "compile_test_util.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;
using sched::ExprId;
using sched::Stmt;
using sched::StmtKind;

// The locals `kernel` reads where no Reduce before the read, in its block or an enclosing one,
// computes them.
std::vector<int32_t> locals_read_out_of_scope(const sched::Kernel& kernel) {
  std::vector<int32_t> computed, misplaced;
  auto check = [&](ExprId root) {
    if (root < 0) return;
    sched::any_subexpr(kernel, root, [&](const sched::Expr& e) {
      bool known = std::find(computed.begin(), computed.end(), e.variable) != computed.end();
      if (e.kind == sched::ExprKind::Local && !known) misplaced.push_back(e.variable);
      return false;
    });
  };
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      const size_t outer = computed.size();
      check(s.guard);
      walk(s.body);  // a Reduce's accumulations read what its body computes
      for (const sched::Accumulation& a : s.accumulations) check(a.value), check(a.position);
      if (s.kind == StmtKind::Store) check(s.index), check(s.value);
      computed.resize(outer);
      if (s.kind == StmtKind::Reduce)
        for (const sched::Accumulation& a : s.accumulations) computed.push_back(a.local);
    }
  };
  walk(kernel.body);
  return misplaced;
}

// An attention gradient's shape, on x of shape (n, 2, n) ([i, c, j]), as concat(P, Q) along c:
// Q = sum_j x; R = sum_j (x @ x^T per c) * x, the product a reduction nested in R's; and
// P = sum_j x * R. Lowered last part first, Q is a Reduce over j; P tries to join it, and R,
// which P reads, does join it: the product must be computed inside that Reduce.
ValueId concat_of_joined_reductions(ir::Builder& b, ValueId x, int64_t n) {
  const ir::Shape pairs = {n, 2, n, n};
  ValueId rows = b.broadcast(b.reshape(x, {n, 2, 1, n}), pairs);  // [i, c, j, k] = x[i, c, k]
  ValueId columns = b.broadcast(b.reshape(b.permute(x, {1, 0, 2}), {1, 2, n, n}), pairs);
  ValueId product = b.reduce(Op::sum, b.binary(Op::mul, rows, columns), {3}, false);
  ValueId q = b.reduce(Op::sum, x, {2}, false);
  ValueId r = b.reduce(Op::sum, b.binary(Op::mul, product, x), {2}, true);
  ValueId p = b.reduce(Op::sum, b.binary(Op::mul, x, b.broadcast(r, {n, 2, n})), {2}, false);
  return b.concat({p, q}, 1);
}

TEST(Lowering, AReductionJoiningASiblingPassKeepsItsNestedReductions) {
  for (int64_t n : {4, 5, 8}) {
    ir::Graph graph;
    ir::Builder b(graph);
    graph.set_outputs({concat_of_joined_reductions(b, b.parameter(DType::Float64, {n, 2, n}), n)});
    sched::Program program = sched::schedule(graph, {});
    for (const sched::Kernel& kernel : program.kernels)
      EXPECT_TRUE(locals_read_out_of_scope(kernel).empty()) << sched::print_program(program);
  }
}

TEST(Lowering, ConcatenatedReductionsSharingPassesMatchTheInterpreter) {
  for (int64_t n : {4, 5, 8, 16}) {
    GraphCase g;
    const size_t count = static_cast<size_t>(2 * n * n);
    ValueId x = g.input(make_array(DType::Float64, {n, 2, n}, pseudo_random(count, -1, 1, 11)));
    g.output(concat_of_joined_reductions(g.builder, x, n), "concat(P, Q), n=" + std::to_string(n));
    g.check();
  }
}

// z = A @ (v * sum(v)); z * sum(z): sum(z) is over n as sum(v) is, so it may join sum(v)'s
// pass, but its element is a product whose own reduction reads sum(v): the join must be refused
// (the nested Reduce read sum(v) inside the pass computing it: C++ that did not compile).
ValueId scaled_product_scaled_by_its_sum(ir::Builder& b, ValueId A, ValueId v, int64_t n) {
  ValueId u = b.binary(Op::mul, v, b.broadcast(b.reduce(Op::sum, v, {0}, true), {n}));
  ValueId z = b.reduce(Op::sum, b.binary(Op::mul, A, b.broadcast(b.reshape(u, {1, n}), {n, n})),
                       {1}, false);
  return b.binary(Op::mul, z, b.broadcast(b.reduce(Op::sum, z, {0}, true), {n}));
}

TEST(Lowering, AReductionWhoseNestedReductionReadsASiblingDoesNotJoinIt) {
  for (int64_t n : {2, 5, 8}) {
    ir::Graph graph;
    ir::Builder b(graph);
    graph.set_outputs({scaled_product_scaled_by_its_sum(
        b, b.parameter(DType::Float64, {n, n}), b.parameter(DType::Float64, {n}), n)});
    sched::Program program = sched::schedule(graph, {});
    for (const sched::Kernel& kernel : program.kernels)
      EXPECT_TRUE(locals_read_out_of_scope(kernel).empty()) << sched::print_program(program);
  }
  for (int64_t n : {2, 5, 16}) {
    GraphCase g;
    const size_t count = static_cast<size_t>(n);
    ValueId A = g.input(make_array(DType::Float64, {n, n}, pseudo_random(count * count, -1, 1, 3)));
    ValueId v = g.input(make_array(DType::Float64, {n}, pseudo_random(count, -1, 1, 4)));
    g.output(scaled_product_scaled_by_its_sum(g.builder, A, v, n), "n=" + std::to_string(n));
    g.check();
  }
}

}  // namespace
}  // namespace kiln::test
