// Outputs written into the inputs donated to them (sched/donated_outputs.h, Options::donated):
// each case against the interpreter on the inputs as they were, and whether the output lives
// in its input after the run.
#include <gtest/gtest.h>

#include "compile_test_util.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

ValueId scaled(ir::Builder& b, ValueId x, double factor) {
  const ir::Node& node = b.graph().node(x);
  return b.binary(Op::mul, x, b.constant(ir::Scalar::of(factor), node.dtype, node.shape));
}

ValueId plus(ir::Builder& b, ValueId x, ValueId y) { return b.binary(Op::add, x, y); }

// The program's outputs that live in an input after the run: (output, input).
std::vector<std::pair<size_t, size_t>> in_place(const CompiledRun& run) {
  return run.compiled->executable->in_place_outputs();
}

// An Adam-like step: three outputs, each the new value of the input donated to it, computed in
// one kernel that reads all four inputs element by element.
void check_adam_step(DType dtype, const std::vector<int64_t>& shape, int threads) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  ValueId p = graph.input(make_array(dtype, shape, pseudo_random(n, -1, 1, 1)));
  ValueId g = graph.input(make_array(dtype, shape, pseudo_random(n, -1, 1, 2)));
  ValueId m = graph.input(make_array(dtype, shape, pseudo_random(n, -1, 1, 3)));
  ValueId v = graph.input(make_array(dtype, shape, pseudo_random(n, 0, 1, 4)));
  ValueId m_next = plus(b, scaled(b, m, 0.9), scaled(b, g, 0.1));
  ValueId v_next = plus(b, scaled(b, v, 0.999), scaled(b, b.binary(Op::mul, g, g), 0.001));
  ValueId step = b.binary(Op::div, m_next, plus(b, b.unary(Op::sqrt, v_next), scaled(b, v, 0.0)));
  ValueId p_next = b.binary(Op::sub, p, scaled(b, step, 0.01));
  graph.output(m_next, "m");
  graph.output(v_next, "v");
  graph.output(p_next, "p");
  std::vector<Array> given = graph.inputs;
  Options options = test_options();
  options.num_threads = threads;
  options.donated = {2, 3, 0};
  CompiledRun run = graph.check(options);
  EXPECT_EQ(in_place(run), (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 3}, {2, 0}}));
  for (const auto& [output, input] : in_place(run))
    EXPECT_EQ(run.outputs[output].data(), given[input].data()) << "output " << output;
  for (const sched::Buffer& buffer : run.compiled->executable->program().buffers)
    EXPECT_NE(buffer.role, sched::BufferRole::Output) << buffer.name;
}

TEST(DonatedOutputs, AdamStepWritesEachResultIntoItsInput) {
  check_adam_step(DType::Float32, {3, 100}, 1);
  check_adam_step(DType::Float32, {400, 100}, 2);  // parallel and SIMD loops
  check_adam_step(DType::Float64, {257, 100}, 2);
  // dimensions of extent 1 (a 1x1 convolution's weight): loops whose index leaves them out
  check_adam_step(DType::Float32, {64, 32, 1, 1}, 2);
  check_adam_step(DType::Float32, {1, 300}, 1);
  check_adam_step(DType::Float64, {7, 1, 100}, 2);
}

// Where the old values are still needed the output gets its own memory: read at another
// element (a flip), read by a later step (a product), or written where no input was donated.
TEST(DonatedOutputs, OldValuesReadElsewhereKeepTheirInput) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId p = graph.input(make_array(DType::Float32, {64, 64}, pseudo_random(4096, -1, 1, 5)));
  ValueId q = graph.input(make_array(DType::Float32, {64, 64}, pseudo_random(4096, -1, 1, 6)));
  ValueId r = graph.input(make_array(DType::Float32, {64, 64}, pseudo_random(4096, -1, 1, 7)));
  graph.output(plus(b, p, b.flip(p, {0})), "p + flip(p)");
  graph.output(scaled(b, q, 2.0), "2q");
  graph.output(b.matmul(q, r), "q @ r");
  graph.output(plus(b, r, q), "r + q");
  Options options = test_options();
  options.donated = {0, 1, -1, -1};
  CompiledRun run = graph.check(options);
  for (const auto& [output, input] : in_place(run)) {
    EXPECT_NE(output, 0u) << "p + flip(p) reads p where it writes other elements";
    EXPECT_NE(output, 1u) << "the product reads q after 2q is computed";
  }
}

// Two outputs of one kernel read the donated input; the one written into it is stored last.
TEST(DonatedOutputs, SiblingOutputsReadTheOldValues) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId p = graph.input(make_array(DType::Float64, {33, 65}, pseudo_random(33 * 65, -1, 1, 8)));
  graph.output(scaled(b, p, 3.0), "3p");
  graph.output(plus(b, p, p), "p + p");
  graph.output(b.unary(Op::exp, p), "exp(p)");
  Options options = test_options();
  options.donated = {0, -1, -1};
  CompiledRun run = graph.check(options);
  EXPECT_EQ(in_place(run), (std::vector<std::pair<size_t, size_t>>{{0, 0}}));
}

// m' = m + v and v' = v - m each read what the other overwrites: no order of the two stores
// serves both, and each keeps its own buffer.
TEST(DonatedOutputs, OutputsReadingEachOthersInputsKeepTheirBuffers) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId m = graph.input(make_array(DType::Float32, {16, 40}, pseudo_random(640, -1, 1, 11)));
  ValueId v = graph.input(make_array(DType::Float32, {16, 40}, pseudo_random(640, -1, 1, 12)));
  ValueId p = graph.input(make_array(DType::Float32, {16, 40}, pseudo_random(640, -1, 1, 13)));
  graph.output(plus(b, m, v), "m + v");
  graph.output(b.binary(Op::sub, v, m), "v - m");
  graph.output(b.binary(Op::mul, p, plus(b, m, v)), "p (m + v)");
  Options options = test_options();
  options.donated = {0, 1, 2};
  CompiledRun run = graph.check(options);
  EXPECT_EQ(in_place(run), (std::vector<std::pair<size_t, size_t>>{{2, 2}}));
}

// Steps after the kernel that read the new value (a product, a reduction) read it in the
// input's memory.
TEST(DonatedOutputs, LaterStepsReadTheNewValueWhereItWasWritten) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId p = graph.input(make_array(DType::Float32, {24, 24}, pseudo_random(576, -1, 1, 14)));
  ValueId w = graph.input(make_array(DType::Float32, {24, 24}, pseudo_random(576, -1, 1, 15)));
  ValueId s = graph.input(make_array(DType::Float32, {}, {3.0}));
  ValueId p_next = plus(b, scaled(b, p, 2.0), b.broadcast(s, {24, 24}));
  ValueId s_next = plus(b, s, b.constant(ir::Scalar::of(1.0), DType::Float32));
  graph.output(p_next, "2p + s");
  graph.output(s_next, "s + 1");
  graph.output(b.matmul(p_next, w), "(2p + s) @ w");
  graph.output(b.reduce(Op::sum, b.binary(Op::mul, p_next, b.broadcast(s_next, {24, 24})), {1},
                        false), "sum((2p + s)(s + 1))");
  Options options = test_options();
  options.donated = {0, 2, -1, -1};
  CompiledRun run = graph.check(options);
  EXPECT_EQ(in_place(run), (std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 2}}));
}

// A scatter into a donated input writes into it (sched/in_place.h), with no copy of the rest.
TEST(DonatedOutputs, ScatterIntoDonatedInput) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId cache = graph.input(make_array(DType::Float32, {8, 32}, pseudo_random(256, -1, 1, 9)));
  ValueId index = graph.input(make_array(DType::Int64, {2}, {5, 1}));
  ValueId values = graph.input(make_array(DType::Float32, {2, 32}, pseudo_random(64, -1, 1, 10)));
  graph.output(b.scatter(cache, index, values, 0, ir::ScatterMode::Set), "cache[index] = values");
  Options options = test_options();
  options.donated = {0};
  CompiledRun run = graph.check(options);
  EXPECT_EQ(in_place(run), (std::vector<std::pair<size_t, size_t>>{{0, 0}}));
}

// A scatter whose values or index is its own base (`a[p] = a`, np.add.at(a, p, a)) reads the
// old values while it writes: it keeps a buffer of its own, never written into the input.
TEST(DonatedOutputs, ScatterOfTheInputIntoItselfKeepsItsOwnBuffer) {
  for (ir::ScatterMode mode : {ir::ScatterMode::Set, ir::ScatterMode::Add}) {
    GraphCase graph;
    ir::Builder& b = graph.builder;
    ValueId x = graph.input(make_array(DType::Int64, {8}, {1, 2, 3, 4, 5, 6, 7, 0}));
    ValueId p = graph.input(make_array(DType::Int64, {8}, {1, 2, 3, 4, 5, 6, 7, 0}));
    graph.output(b.scatter(x, p, x, 0, mode), "x[p] = x");
    graph.output(b.scatter(p, p, x, 0, mode), "p[p] = x");
    Options options = test_options();
    options.donated = {0, 1};
    CompiledRun run = graph.check(options);
    EXPECT_TRUE(in_place(run).empty());
  }
}

}  // namespace
}  // namespace kiln::test
