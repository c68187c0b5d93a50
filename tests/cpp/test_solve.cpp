// solve (an extern op: LAPACK's gesv, src/extern/solve.h): the reference interpreter on a
// hand-checked system, the compiled CPU call against the interpreter (float32 and float64,
// batches, several right-hand sides, operands read through strided views), a singular matrix's
// LinAlg error in both, and the builder's errors.
#include <gtest/gtest.h>

#include "compile_test_util.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

// Diagonally dominant systems (well conditioned): count matrices of n x n.
std::vector<double> dominant(int64_t count, int64_t n, uint64_t seed) {
  std::vector<double> values = pseudo_random(static_cast<size_t>(count * n * n), -1, 1, seed);
  for (int64_t t = 0; t < count; ++t)
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>((t * n + i) * n + i)] += 2.0 * n;
  return values;
}

TEST(Solve, InterpreterSolvesAHandCheckedSystem) {
  ir::Graph graph;
  ir::Builder b(graph);
  // 2x + y = 5, x + 3y = 10 (x = 1, y = 3); the first pivot is a row swap's
  ValueId a = b.parameter(DType::Float64, ir::from_ints({2, 2}));
  ValueId rhs = b.parameter(DType::Float64, ir::from_ints({2, 1}));
  graph.set_outputs({b.solve(a, rhs)});
  std::vector<Array> out = ir::interpret(
      graph, {make_array(DType::Float64, {2, 2}, {1, 3, 2, 1}),
              make_array(DType::Float64, {2, 1}, {10, 5})});
  const double* x = static_cast<const double*>(out[0].data());
  EXPECT_NEAR(x[0], 1.0, 1e-14);
  EXPECT_NEAR(x[1], 3.0, 1e-14);
}

TEST(Solve, CompiledAgreesWithTheInterpreter) {
  GraphCase g;
  ir::Builder& b = g.builder;
  ValueId a64 = g.input(make_array(DType::Float64, {3, 40, 40}, dominant(3, 40, 1)));
  ValueId b64 = g.input(make_array(DType::Float64, {3, 40, 5}, pseudo_random(600, -1, 1, 2)));
  g.output(b.solve(a64, b64), "float64, a batch of 3, 5 right-hand sides");
  // a transposed matrix and a column of a wider b: strided views the call reads in place
  g.output(b.solve(b.permute(a64, {0, 2, 1}), b.slice(b64, {0, 0, 2}, {3, 40, 3}, {1, 1, 1})),
           "float64, transposed, one column");
  ValueId a32 = g.input(make_array(DType::Float32, {7, 7}, dominant(1, 7, 3)));
  ValueId b32 = g.input(make_array(DType::Float32, {7, 2}, pseudo_random(14, -1, 1, 4)));
  g.output(b.solve(a32, b32), "float32", {1e-5, 1e-5, 4});
  g.check();
}

TEST(Solve, ASingularMatrixIsALinAlgErrorWhenTheGraphRuns) {
  GraphCase g;
  ValueId a = g.input(make_array(DType::Float64, {2, 2, 2}, {2, 0, 0, 2, 1, 2, 2, 4}));
  ValueId rhs = g.input(make_array(DType::Float64, {2, 2, 1}, {1, 1, 1, 1}));
  g.output(g.builder.solve(a, rhs), "x");
  g.graph.set_outputs(g.outputs);
  for (bool compiled : {false, true}) {
    try {
      if (compiled)
        compile_and_run(g.graph, g.inputs);
      else
        ir::interpret(g.graph, g.inputs);
      ADD_FAILURE() << "no error, compiled " << compiled;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::LinAlg) << error.what();
      EXPECT_NE(std::string(error.what()).find("Singular matrix"), std::string::npos);
    }
  }
}

TEST(Solve, TheBuilderRefusesWhatItCannotSolve) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId square = b.parameter(DType::Float64, ir::from_ints({3, 3}));
  ValueId wide = b.parameter(DType::Float64, ir::from_ints({3, 4}));
  ValueId rhs = b.parameter(DType::Float64, ir::from_ints({3, 2}));
  ValueId vector = b.parameter(DType::Float64, ir::from_ints({3}));
  ValueId other_batch = b.parameter(DType::Float64, ir::from_ints({2, 3, 2}));
  ValueId narrow = b.parameter(DType::Float32, ir::from_ints({3, 2}));
  ValueId integers = b.parameter(DType::Int64, ir::from_ints({3, 3}));
  EXPECT_THROW(b.solve(wide, rhs), Error);
  EXPECT_THROW(b.solve(square, vector), Error);  // the Tensor API makes a vector a column
  EXPECT_THROW(b.solve(square, other_batch), Error);  // and broadcasts batches
  EXPECT_THROW(b.solve(square, narrow), Error);
  EXPECT_THROW(b.solve(integers, b.cast(rhs, DType::Int64)), Error);
  EXPECT_EQ(ir::shape_string(graph.node(b.solve(square, rhs)).shape), "(3, 2)");
}

}  // namespace
}  // namespace kiln::test
