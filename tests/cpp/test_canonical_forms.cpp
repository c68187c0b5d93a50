// Canonical forms that keep work cheap: matmul canonicalisation (GEMV, dot and tiny products
// generated inline; a batch against one matrix as one GEMM; max-autotune's chosen products
// inline) and the select of in-place scatters
// (a branch that updates one slice keeps the update in place). Each rewrite is checked for
// its shape and against the interpreter.
#include <gtest/gtest.h>

#include "compile_test_util.h"
#include "ir/printer.h"
#include "passes/passes.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

int count_ops(const ir::Graph& graph, Op op) {
  int count = 0;
  for (const ir::Node& node : graph.nodes()) count += node.op == op;
  return count;
}

void expect_same_values(const ir::Graph& before, const ir::Graph& after,
                        const std::vector<Array>& inputs) {
  std::vector<Array> expected = ir::interpret(before, inputs);
  std::vector<Array> actual = ir::interpret(after, inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t k = 0; k < expected.size(); ++k)
    expect_array_matches(actual[k], expected[k], default_tolerance(expected[k].dtype()),
                         "output " + std::to_string(k), inputs);
}

TEST(CanonicalForms, MatrixVectorAndDotProductsAreGeneratedInline) {
  GraphCase g;
  ValueId m = g.input(make_array(DType::Float64, {300, 200}, pseudo_random(60000, -1, 1, 1)));
  ValueId v = g.input(make_array(DType::Float64, {200}, pseudo_random(200, -1, 1, 2)));
  ValueId w = g.input(make_array(DType::Float64, {300}, pseudo_random(300, -1, 1, 3)));
  g.output(g.builder.matmul(m, v), "m @ v");
  g.output(g.builder.matmul(w, m), "w @ m");
  g.output(g.builder.matmul(w, w), "w @ w");
  g.graph.set_outputs(g.outputs);
  ir::Graph canonical = passes::canonicalize_matmul(g.graph);
  EXPECT_EQ(count_ops(canonical, Op::matmul), 0) << ir::print_graph(canonical);
  expect_same_values(g.graph, canonical, g.inputs);
  g.check();
}

// A large float matrix-vector product of an input matrix BLAS reads in place (as it is,
// transposed, sliced) stays a matmul, BLAS's gemv on the CPU; a computed matrix, whose
// producer fuses into the generated reduction, does not, nor any on the GPU
// (inline_matrix_vector_products).
TEST(CanonicalForms, LargeMatrixVectorProductsOfInputsStayWithBlas) {
  GraphCase g;
  ValueId m = g.input(make_array(DType::Float64, {600, 400}, pseudo_random(240000, -1, 1, 8)));
  ValueId v = g.input(make_array(DType::Float64, {400}, pseudo_random(400, -1, 1, 9)));
  ValueId w = g.input(make_array(DType::Float64, {600}, pseudo_random(600, -1, 1, 10)));
  g.output(g.builder.matmul(m, v), "m @ v");
  g.output(g.builder.matmul(w, m), "w @ m");
  g.output(g.builder.matmul(g.builder.permute(m, {1, 0}), w), "m.T @ w");
  ValueId part = g.builder.slice(m, {0, 50}, {600, 400}, {1, 1});
  g.output(g.builder.matmul(w, part), "w @ m[:, 50:]");
  g.output(g.builder.matmul(g.builder.binary(Op::mul, m, m), v), "(m * m) @ v");
  // a reshape of a transpose is no strided view (it would be copied): generated too
  ValueId merged = g.builder.reshape(g.builder.permute(m, {1, 0}), ir::from_ints({200, 1200}));
  ValueId long_vector = g.builder.reshape(g.builder.slice(m, {0, 0}, {3, 400}, {1, 1}),
                                          ir::from_ints({1200}));
  g.output(g.builder.matmul(merged, long_vector), "m.T.reshape(200, 1200) @ m[:3].ravel()");
  g.graph.set_outputs(g.outputs);
  ir::Graph canonical = passes::canonicalize_matmul(g.graph);
  EXPECT_EQ(count_ops(canonical, Op::matmul), 4) << ir::print_graph(canonical);
  expect_same_values(g.graph, canonical, g.inputs);
  EXPECT_EQ(count_ops(passes::inline_matrix_vector_products(canonical), Op::matmul), 0);
  g.check();  // the CPU's gemv calls against the interpreter
}

TEST(CanonicalForms, BatchAgainstOneMatrixIsOneGemm) {
  GraphCase g;
  ValueId x = g.input(make_array(DType::Float32, {6, 5, 3, 40}, pseudo_random(3600, -1, 1, 4)));
  ValueId w = g.input(make_array(DType::Float32, {40, 40}, pseudo_random(1600, -1, 1, 5)));
  g.output(g.builder.matmul(x, w), "x @ w");
  g.graph.set_outputs(g.outputs);
  ir::Graph canonical = passes::canonicalize_matmul(g.graph);
  ASSERT_EQ(count_ops(canonical, Op::matmul), 1);
  for (const ir::Node& node : canonical.nodes())
    if (node.op == Op::matmul) EXPECT_EQ(ir::shape_string(node.shape), "(90, 40)");
  expect_same_values(g.graph, canonical, g.inputs);
  g.check();
}

TEST(CanonicalForms, LargeProductsStayWithBlas) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float32, {64, 64});
  ValueId y = b.parameter(DType::Float32, {2, 64, 64});
  graph.set_outputs({b.matmul(x, y)});  // batched on the right: left as it is
  EXPECT_EQ(count_ops(passes::canonicalize_matmul(graph), Op::matmul), 1);
}

// Integer products past the tiny ones stay matmuls on the CPU (extern/integer_matmul.cpp: rows
// accumulated with b read stride-1, as a generated reduction over k did not), wrapping like
// the interpreter: odd sizes, a transposed (packed) and a batched operand, int8 overflowing.
// The GPU's inline_integer_matmuls makes them generated reductions.
TEST(CanonicalForms, IntegerProductsStayMatmulsOnTheCpu) {
  GraphCase g;
  ValueId a = g.input(make_array(DType::Int64, {37, 53}, pseudo_random(37 * 53, -500, 500, 11)));
  ValueId b = g.input(make_array(DType::Int64, {53, 301}, pseudo_random(53 * 301, -500, 500, 12)));
  ValueId t =
      g.input(make_array(DType::Int32, {3, 29, 45}, pseudo_random(3 * 29 * 45, -99, 99, 13)));
  ValueId s = g.input(make_array(DType::Int8, {70, 90}, pseudo_random(70 * 90, -120, 120, 14)));
  g.output(g.builder.matmul(a, b), "int64 (37, 53) @ (53, 301)");
  g.output(g.builder.matmul(g.builder.permute(b, {1, 0}), g.builder.permute(a, {1, 0})),
           "int64 b.T @ a.T");
  g.output(g.builder.matmul(t, g.builder.permute(t, {0, 2, 1})), "int32 batch of 3");
  g.output(g.builder.matmul(s, g.builder.permute(s, {1, 0})), "int8 (70, 90) @ its transpose");
  g.graph.set_outputs(g.outputs);
  ir::Graph canonical = passes::canonicalize_matmul(g.graph);
  EXPECT_EQ(count_ops(canonical, Op::matmul), 4) << ir::print_graph(canonical);
  EXPECT_EQ(count_ops(passes::inline_integer_matmuls(canonical), Op::matmul), 0);
  expect_same_values(g.graph, passes::inline_integer_matmuls(canonical), g.inputs);
  g.check();  // the CPU's integer matmul calls against the interpreter
}

// max-autotune's rewrite of the products it times faster as generated reductions: only those.
TEST(CanonicalForms, ChosenProductsAreGeneratedInline) {
  GraphCase g;
  ValueId a = g.input(make_array(DType::Float64, {12, 8, 64}, pseudo_random(6144, -1, 1, 6)));
  ValueId b = g.input(make_array(DType::Float64, {12, 64, 8}, pseudo_random(6144, -1, 1, 7)));
  ValueId first = g.builder.matmul(a, b);
  g.output(first, "a @ b");
  g.output(g.builder.matmul(b, a), "b @ a");
  g.graph.set_outputs(g.outputs);
  ir::Graph chosen = passes::inline_matmuls(g.graph, {first});
  EXPECT_EQ(count_ops(chosen, Op::matmul), 1) << ir::print_graph(chosen);
  EXPECT_EQ(count_ops(chosen, Op::sum), 1);
  expect_same_values(g.graph, chosen, g.inputs);
}

// where(c, scatter(x, i, v), x): the branch selects the updated rows, not the whole array.
TEST(CanonicalForms, SelectOfAScatterSelectsTheSlice) {
  for (bool taken : {false, true}) {
    GraphCase g;
    ValueId x = g.input(make_array(DType::Float64, {50, 4}, pseudo_random(200, -1, 1, 6)));
    ValueId v = g.input(make_array(DType::Float64, {1, 4}, pseudo_random(4, -1, 1, 7)));
    ValueId index = g.builder.constant(ir::Scalar::of_int(7), DType::Int64, {1});
    ValueId updated = g.builder.scatter(x, index, v, 0, ir::ScatterMode::Set);
    ValueId condition = g.builder.constant(ir::Scalar::of_int(taken ? 1 : 0), DType::Bool);
    ValueId where = g.builder.where(g.builder.broadcast(condition, {50, 4}), updated, x);
    g.output(where, taken ? "taken" : "not taken");
    g.graph.set_outputs(g.outputs);
    ir::Graph simplified = passes::simplify(g.graph);
    const ir::Node& result = simplified.node(simplified.outputs()[0]);
    EXPECT_EQ(result.op, Op::scatter) << ir::print_graph(simplified);
    expect_same_values(g.graph, simplified, g.inputs);
    g.check();
  }
}

}  // namespace
}  // namespace kiln::test
