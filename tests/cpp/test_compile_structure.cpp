// Movement, indexing, creation and extern ops compiled end to end and compared with the
// interpreter: the index arithmetic the scheduler derives (views, reshapes of permutes, negative
// steps, padding modes, clamped gather indices, scatter collisions), inputs that are strided or
// reversed views of caller memory, graphs whose outputs are inputs, duplicates or constants,
// 0-d and size-0 arrays, and whole functions written against the Tensor API.
#include <gtest/gtest.h>

#include <algorithm>

#include "compile_test_util.h"
#include "sched/scheduler.h"
#include "target/target.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();  // slice bound "to the end"
constexpr int64_t kNoneBack = std::numeric_limits<int64_t>::min();  // "to the start" (step < 0)

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(CompileStructure, MovementOps) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = graph.input(make_array(DType::Float64, {2, 3, 4}, pseudo_random(24, -5, 5, 1)));
  ValueId row = graph.input(make_array(DType::Float64, {3, 1}, {1, -2, 3}));
  ValueId bytes = graph.input(make_integer_array(
      DType::UInt8, {3, 4}, {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255}));
  graph.output(builder.reshape(x, {4, 6}), "reshape (4,6)");
  graph.output(builder.reshape(x, {-1}), "reshape flat");
  graph.output(builder.reshape(x, {3, 1, 8}), "reshape (3,1,8)");
  graph.output(builder.permute(x, {1, 2, 0}), "permute 1,2,0");
  graph.output(builder.reshape(builder.permute(x, {2, 0, 1}), {8, 3}), "reshape of permute");
  graph.output(builder.permute(builder.reshape(x, {6, 4}), {1, 0}), "permute of reshape");
  // Attention heads merged: the kernel loops over a finer nest (sched/division_splits.h).
  ValueId heads = graph.input(make_array(DType::Float32, {2, 3, 4, 5}, pseudo_random(120, -5, 5, 2)));
  ValueId merged = builder.permute(heads, {0, 2, 1, 3});
  graph.output(builder.unary(Op::exp, builder.reshape(merged, {8, 15})), "heads merged");
  graph.output(builder.reshape(merged, {4, 30}), "heads merged, rows split");
  graph.output(builder.reshape(merged, {6, 20}), "heads merged, uneven splits");
  graph.output(builder.reshape(builder.permute(heads, {3, 1, 0, 2}), {15, 8}), "permute and merge");
  graph.output(builder.broadcast(row, {2, 3, 4}), "broadcast (3,1)->(2,3,4)");
  graph.output(builder.binary(Op::add, x, builder.broadcast(row, {2, 3, 4})), "x + broadcast");
  graph.output(builder.slice(x, {kNone, kNone, kNone}, {kNoneBack, kNoneBack, kNoneBack},
                             {-1, -1, -1}),
               "slice [::-1, ::-1, ::-1]");
  graph.output(builder.slice(x, {0, 2, -1}, {2, 0, kNoneBack}, {1, -2, -3}),
               "slice [0:2, 2:0:-2, -1::-3]");
  graph.output(builder.slice(x, {1, -10, 1}, {10, 10, 3}, {3, 2, 1}), "slice clamped bounds");
  graph.output(builder.slice(x, {0, 2, 0}, {2, 1, 4}, {1, 1, 1}), "slice empty");
  graph.output(builder.reshape(builder.slice(x, {0, 0, 1}, {2, 3, 4}, {1, 1, 2}), {12}),
               "reshape of strided slice");
  graph.output(builder.pad(x, {1, 0, 2}, {0, 2, 1}, ir::PadMode::Constant, ir::Scalar::of(1.5)),
               "pad constant");
  graph.output(builder.pad(x, {1, 2, 3}, {2, 0, 1}, ir::PadMode::Edge), "pad edge");
  graph.output(builder.pad(x, {1, 2, 3}, {1, 1, 2}, ir::PadMode::Reflect), "pad reflect");
  graph.output(builder.pad(bytes, {1, 1}, {0, 2}, ir::PadMode::Constant, ir::Scalar::of_int(7)),
               "pad uint8 constant");
  graph.output(builder.concat({x, x, builder.flip(x, {0})}, 0), "concat axis 0");
  graph.output(builder.concat({builder.slice(x, {0, 0, 0}, {2, 3, 1}, {1, 1, 1}), x}, 2),
               "concat axis 2");
  graph.output(builder.flip(x, {1}), "flip 1");
  graph.output(builder.flip(x, {}), "flip all");
  graph.output(builder.flip(bytes, {-1}), "flip uint8");
  graph.check();
}

// Inputs that are views of caller memory: transposed, reversed (negative strides), stepped.
TEST(CompileStructure, NonContiguousInputViews) {
  std::vector<double> base = pseudo_random(48, -4, 4, 2);
  std::vector<float> single(base.begin(), base.end());
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  // (6, 4) transpose of a (4, 6) row-major block.
  Array transposed = Array::borrow(base.data(), DType::Float64, {6, 4}, {1, 6});
  // Rows reversed: starts at the last row, stride -6.
  Array reversed = Array::borrow(base.data() + 18, DType::Float64, {4, 6}, {-6, 1});
  // Every other element of every other row, columns backwards.
  Array stepped = Array::borrow(single.data() + 11, DType::Float32, {4, 3}, {12, -2});
  ValueId t = graph.input(transposed), r = graph.input(reversed), s = graph.input(stepped);
  graph.output(builder.reshape(t, {24}), "reshape of transposed view");
  graph.output(builder.reshape(r, {3, 8}), "reshape of reversed view");
  graph.output(builder.reshape(s, {2, 6}), "reshape of stepped view");
  graph.output(builder.binary(Op::mul, builder.permute(t, {1, 0}), r), "transposed * reversed");
  graph.output(builder.reduce(Op::sum, r, {1}, false), "sum of reversed view",
               {1e-12, 1e-12, 4});
  graph.output(builder.reduce(Op::argmax, s, {0}, false), "argmax of stepped view");
  graph.output(builder.scan(Op::cumsum, s, 1), "cumsum of stepped view", {1e-5, 1e-5, 4});
  graph.output(t, "transposed view as output");
  CompiledRun run = graph.check();
  // The reversed view's first row is the base's last row.
  std::vector<double> reshaped = run.outputs.at(1).to_vector<double>();
  EXPECT_EQ(reshaped[0], base[18]);
  EXPECT_EQ(reshaped[6], base[12]);
}

TEST(CompileStructure, GatherAndScatter) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = graph.input(make_array(DType::Float32, {4, 5}, pseudo_random(20, -9, 9, 3)));
  ValueId ints = graph.input(make_integer_array(DType::Int32, {4, 5}, {1, -2, 3, 2147483647}));
  // Negative indices wrap once; out-of-range ones clamp (kiln's defined semantics).
  ValueId indices = graph.input(make_integer_array(DType::Int64, {6}, {3, -1, 0, -5, 9, 1}));
  ValueId grid = graph.input(make_integer_array(DType::Int32, {2, 3}, {0, -4, 3, 3, 2, -1}));
  ValueId duplicates = graph.input(make_integer_array(DType::Int64, {5}, {1, 3, 1, -4, 1}));
  ValueId rows = graph.input(make_array(DType::Float32, {5, 5}, pseudo_random(25, -1, 1, 4)));
  ValueId int_rows = graph.input(make_integer_array(DType::Int32, {4, 5}, {10, 20, -30, 40, 50}));
  graph.output(builder.gather(x, indices, 1), "gather axis 1");
  graph.output(builder.gather(x, grid, 0), "gather axis 0 with 2-D indices");
  graph.output(builder.gather(ints, indices, -1), "gather int32");
  // Row 1 is written three times: Set keeps the last write, Add sums all three.
  graph.output(builder.scatter(x, duplicates, builder.permute(rows, {1, 0}), 0,
                               ir::ScatterMode::Set),
               "scatter set with duplicates");
  graph.output(builder.scatter(x, duplicates, builder.permute(rows, {1, 0}), 0,
                               ir::ScatterMode::Add),
               "scatter add with duplicates");
  graph.output(builder.scatter(ints, duplicates, int_rows, 1, ir::ScatterMode::Add),
               "scatter add int32 axis 1");
  CompiledRun run = graph.check();
  // Hand check: scatter-add row 1 = x[1] + rows^T[0] + rows^T[2] + rows^T[4].
  std::vector<double> xs = graph.inputs[0].to_vector<double>();
  std::vector<double> rs = graph.inputs[5].to_vector<double>();
  std::vector<double> added = run.outputs.at(4).to_vector<double>();
  for (int column = 0; column < 5; ++column) {
    double expected = xs[5 + column];
    for (int k : {0, 2, 4}) expected += rs[static_cast<size_t>(column * 5 + k)];
    EXPECT_NEAR(added[static_cast<size_t>(5 + column)], expected, 1e-5) << column;
  }
}

// A big scatter-add runs on all threads (sched/cpu/parallel_scatter_adds.h): 2^18 updates
// into 1000 elements, every element hit ~262 times, each thread into its own copy of so small
// a target (an OpenMP array reduction); into 40000 elements, each add atomic. The values are
// small integers, so every order of the additions gives the interpreter's result exactly.
TEST(CompileStructure, BigScatterAddsRunOnAllThreads) {
  const int64_t updates = int64_t(1) << 18;
  std::vector<double> targets(static_cast<size_t>(updates)), small(static_cast<size_t>(updates));
  for (int64_t k = 0; k < updates; ++k) {
    targets[static_cast<size_t>(k)] = double((k * 7919) % 1000);
    small[static_cast<size_t>(k)] = double(k % 5 - 2);
  }
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId index = graph.input(make_array(DType::Int64, {updates}, targets));
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int64, DType::Int32}) {
    ValueId base = graph.input(make_array(dtype, {1000}, pseudo_random(1000, -3, 3, 5)));
    ValueId values = graph.input(make_array(dtype, {updates}, small));
    graph.output(builder.scatter(base, index, builder.unary(Op::neg, values), 0,
                                 ir::ScatterMode::Add),
                 std::string("parallel scatter-add ") + std::string(dtype_name(dtype)));
  }
  ValueId wide = graph.input(make_array(DType::Float64, {40000}, pseudo_random(40000, -3, 3, 6)));
  ValueId spread = graph.input(make_array(DType::Int64, {updates}, [&] {
    std::vector<double> at(static_cast<size_t>(updates));
    for (int64_t k = 0; k < updates; ++k) at[static_cast<size_t>(k)] = double((k * 7919) % 40000);
    return at;
  }()));
  graph.output(builder.scatter(wide, spread, graph.input(make_array(DType::Float64, {updates}, small)),
                               0, ir::ScatterMode::Add),
               "parallel scatter-add into a large target");
  Options options = test_options();
  options.num_threads = 2;
  CompiledRun run = graph.check(options);
  const std::string source = run.compiled->source_text();
  EXPECT_NE(source.find("reduction(+ : "), std::string::npos) << source;
  EXPECT_NE(source.find("#pragma omp atomic"), std::string::npos) << source;
}

// A scatter-add along the last axis adds each plane's updates into that plane alone (index
// plane * 512 + position, the position wrapped and clamped into 0..511), as an interpolation's
// or a pooling's gradient does: its iterations add into disjoint slices (sched/disjoint_slices.h)
// and run on all threads without atomics (the target is too large for a copy per thread, the
// other way to avoid them). Values are small integers: any order is exact.
TEST(CompileStructure, ScatterAddsIntoDisjointPlanesNeedNoAtomics) {
  const int64_t planes = 64, size = 512, updates = 4096;
  std::vector<double> positions(static_cast<size_t>(updates)), small(static_cast<size_t>(planes * updates));
  for (int64_t k = 0; k < updates; ++k) positions[static_cast<size_t>(k)] = double((k * 37) % (2 * size) - size);
  for (size_t k = 0; k < small.size(); ++k) small[k] = double(int64_t(k) % 7 - 3);
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId base = graph.input(make_array(DType::Float32, {planes, size},
                                        pseudo_random(planes * size, -3, 3, 8)));
  ValueId index = graph.input(make_array(DType::Int64, {updates}, positions));
  ValueId values = graph.input(make_array(DType::Float32, {planes, updates}, small));
  graph.output(builder.scatter(base, index, values, 1, ir::ScatterMode::Add), "plane scatter-add");
  Options options = test_options();
  options.num_threads = 2;
  CompiledRun run = graph.check(options);
  const std::string source = run.compiled->source_text();
  EXPECT_NE(source.find("omp parallel for"), std::string::npos) << source;
  EXPECT_EQ(source.find("#pragma omp atomic"), std::string::npos) << source;
}

TEST(CompileStructure, IotaRandomAndConstants) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = graph.input(make_array(DType::Float64, {3, 4}, pseudo_random(12, -1, 1, 5)));
  graph.output(builder.iota(DType::Int32, {3, 4}, 0), "iota int32 axis 0");
  graph.output(builder.iota(DType::Int64, {2, 3, 4}, 2), "iota int64 axis 2");
  graph.output(builder.iota(DType::Float32, {5}, 0), "iota float32");
  graph.output(builder.iota(DType::UInt8, {300}, 0), "iota uint8 wraps");
  graph.output(builder.random_uniform(DType::Float32, {1000}, 1), "uniform float32");
  graph.output(builder.random_uniform(DType::Float64, {10, 100}, 2), "uniform float64");
  graph.output(builder.random_uniform(DType::Float16, {64}, 3), "uniform float16");
  graph.output(builder.random_normal(DType::Float32, {1000}, 4), "normal float32");
  graph.output(builder.random_normal(DType::Float64, {10, 100}, 5), "normal float64");
  graph.output(builder.binary(Op::add, x, builder.random_uniform(DType::Float64, {3, 4}, 6)),
               "x + uniform");
  std::vector<double> table = {1.5, -2, kNaN, kInf, 0, 7};
  ValueId constant = builder.constant_array(bytes_of(table), DType::Float64, {2, 3});
  graph.output(constant, "constant_array");
  graph.output(builder.binary(Op::mul, builder.permute(constant, {1, 0}),
                              builder.constant(ir::Scalar::of(3), DType::Float64, {3, 2})),
               "constant_array^T * constant");
  graph.output(builder.constant(ir::Scalar::of_int(-5), DType::Int16, {2, 2}), "constant int16");
  CompiledRun run = graph.check();
  // Uniform values lie in [0, 1) and are not all equal.
  std::vector<double> uniform = run.outputs.at(4).to_vector<double>();
  double low = *std::min_element(uniform.begin(), uniform.end());
  double high = *std::max_element(uniform.begin(), uniform.end());
  EXPECT_GE(low, 0.0);
  EXPECT_LT(high, 1.0);
  EXPECT_LT(low, 0.01);
  EXPECT_GT(high, 0.99);
  std::vector<int64_t> wrapped = run.outputs.at(3).to_vector<int64_t>();
  EXPECT_EQ(wrapped[299], 299 - 256);
}

// A kernel that copies a constant array (a fuzzed graph folded to one): GCC 12 with
// -fopenmp-simd and this Xeon's -march=native folded the copy into vector constants and stored
// 1 where these 52 int64 values hold 0 (elements 26, 27, 31 and 35); kernels now read constant
// arrays through a pointer it cannot see through (codegen/cpp/kernel_emitter.h).
TEST(CompileStructure, ConstantArraysAreCopiedAsTheyAre) {
  GraphCase graph;
  const std::vector<int64_t> values = {1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
                                       0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0,
                                       0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0};
  graph.output(graph.builder.constant_array(bytes_of(values), DType::Int64, {4, 13}),
               "int64 constant_array");
  CompiledRun run = graph.check();
  EXPECT_EQ(run.outputs.at(0).to_vector<int64_t>(), values);
}

// A value read twice at every level and a sum read after it: every pass that walks expressions
// must visit each once (guard_reductions walked them as trees: a 16-iteration Python loop took
// minutes to compile).
TEST(CompileStructure, ExpressionsReadTwiceAtEveryLevelAreWalkedOnce) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId x = graph.input(make_array(DType::Float64, {4, 16}, pseudo_random(64, -1, 1, 7)));
  ValueId d = graph.input(make_array(DType::Float64, {4}, pseudo_random(4, 0.1, 0.9, 8)));
  ValueId sums = b.reduce(Op::sum, x, {1}, false);
  d = read_twice_at_every_level(b, d, 40);
  graph.output(b.binary(Op::add, d, sums), "chain + sums");
  graph.output(b.where(b.binary(Op::gt, d, b.constant(ir::Scalar::of(0), DType::Float64, {4})),
                       sums, d),
               "sums where the chain is positive");
  graph.check();
}

// A bfloat16 product computed in float32 (torch's bfloat16 linear layer: both operands cast
// to float32) reads its bfloat16 operands in place on the CPU, through the casts and the views
// around them (sched/strided_views.h): no kernel casts them into float32 buffers, and oneDNN's
// bfloat16 kernels, or float32 copies where they take no such layout, give the interpreter's
// products of the float32 casts.
TEST(CompileStructure, BFloat16ProductsReadTheirOperandsInPlace) {
  {  // x (64, 96) @ w (80, 96)ᵀ, both bfloat16: one extern call on the bfloat16 buffers
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId x = b.parameter(DType::BFloat16, {64, 96});
    ValueId w = b.parameter(DType::BFloat16, {80, 96});
    graph.set_outputs({b.matmul(b.cast(x, DType::Float32),
                                b.cast(b.permute(w, {1, 0}), DType::Float32))});
    sched::Program program =
        sched::schedule(graph, {}, nullptr, {}, sched::schedule_hints(target::host_cpu(1)));
    EXPECT_TRUE(program.kernels.empty()) << sched::print_program(program);
    ASSERT_EQ(program.steps.size(), 1u);
    for (int32_t input : program.steps[0].call.inputs)
      EXPECT_EQ(program.buffers[static_cast<size_t>(input)].dtype, DType::BFloat16);
  }
  GraphCase graph;
  ir::Builder& b = graph.builder;
  const Tolerance single = {1e-5, 1e-5, 4};
  auto bfloat16 = [&](std::vector<int64_t> shape, uint64_t seed) {
    int64_t count = 1;
    for (int64_t extent : shape) count *= extent;
    return graph.input(make_array(DType::BFloat16, shape,
                                  pseudo_random(static_cast<size_t>(count), -1, 1, seed)));
  };
  auto wide = [&](ValueId v) { return b.cast(v, DType::Float32); };
  ValueId x = bfloat16({64, 96}, 40), w = bfloat16({80, 96}, 41);
  ValueId batch = bfloat16({2, 64, 96}, 42), column = bfloat16({64, 1}, 43);
  ValueId row = bfloat16({1, 80}, 44);
  ValueId plain = graph.input(make_array(DType::Float32, {96, 80}, pseudo_random(7680, -1, 1, 45)));
  graph.output(b.matmul(wide(x), wide(b.permute(w, {1, 0}))), "x @ w.T", single);
  graph.output(b.matmul(wide(x), b.permute(wide(w), {1, 0})), "x @ cast(w).T", single);
  graph.output(b.matmul(wide(batch), wide(b.permute(w, {1, 0}))), "batch @ w.T", single);
  graph.output(b.matmul(wide(x), plain), "bfloat16 @ float32", single);
  graph.output(b.matmul(wide(b.unary(Op::tanh, x)), wide(b.permute(w, {1, 0}))),
               "tanh(x) @ w.T", single);
  graph.output(b.matmul(wide(column), wide(row)), "depth 1", single);
  graph.output(b.matmul(wide(b.permute(x, {1, 0})), wide(x)), "x.T @ x", single);
  graph.check();
}

TEST(CompileStructure, Matmul) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const Tolerance single = {1e-5, 1e-5, 4};
  const Tolerance wide = {1e-12, 1e-12, 4};
  ValueId a32 = graph.input(make_array(DType::Float32, {5, 7}, pseudo_random(35, -1, 1, 6)));
  ValueId b32 = graph.input(make_array(DType::Float32, {7, 3}, pseudo_random(21, -1, 1, 7)));
  ValueId a64 = graph.input(make_array(DType::Float64, {2, 4, 3}, pseudo_random(24, -2, 2, 8)));
  ValueId b64 = graph.input(make_array(DType::Float64, {2, 3, 5}, pseudo_random(30, -2, 2, 9)));
  ValueId batch = graph.input(make_array(DType::Float64, {3, 1, 4, 3},
                                         pseudo_random(36, -1, 1, 10)));
  ValueId vector = graph.input(make_array(DType::Float64, {3}, {0.5, -1, 2}));
  ValueId ia = graph.input(make_integer_array(DType::Int32, {3, 4}, {1, -2, 3, 100000, 5, 6}));
  ValueId ib = graph.input(make_integer_array(DType::Int32, {4, 2}, {7, -8, 9, 100000, -1}));
  std::vector<double> storage = pseudo_random(21, -1, 1, 11);
  // A (3, 7) operand that is the transposed view of a (7, 3) block.
  ValueId transposed = graph.input(Array::borrow(storage.data(), DType::Float64, {3, 7}, {1, 3}));
  ValueId square = graph.input(make_array(DType::Float64, {7, 7}, pseudo_random(49, -1, 1, 12)));
  graph.output(builder.matmul(a32, b32), "matmul float32 2-D", single);
  graph.output(builder.matmul(a64, b64), "matmul float64 batched", wide);
  graph.output(builder.matmul(batch, b64), "matmul broadcast batch (3,1)x(2)", wide);
  graph.output(builder.matmul(vector, builder.slice(b64, {0, 0, 0}, {1, 3, 5}, {1, 1, 1})),
               "matmul 1-D x 3-D", wide);
  graph.output(builder.matmul(a64, vector), "matmul 3-D x 1-D", wide);
  graph.output(builder.matmul(vector, vector), "matmul 1-D x 1-D", wide);
  graph.output(builder.matmul(ia, ib), "matmul int32 (wraps)");
  graph.output(builder.matmul(transposed, square), "matmul transposed view", wide);
  graph.output(builder.matmul(builder.permute(a32, {1, 0}), builder.reshape(
                                  builder.iota(DType::Float32, {15}, 0), {5, 3})),
               "matmul of permuted operand", single);
  // Attention's batches of small products, one per thread (extern/matmul.cpp): queries by
  // transposed keys, and a batch of int32 products (the plain loop, on threads too).
  ValueId queries = graph.input(make_array(DType::Float32, {2, 3, 6, 4},
                                           pseudo_random(144, -1, 1, 13)));
  ValueId keys = graph.input(make_array(DType::Float32, {2, 3, 5, 4},
                                        pseudo_random(120, -1, 1, 14)));
  graph.output(builder.matmul(queries, builder.permute(keys, {0, 1, 3, 2})),
               "matmul of 6 small products, transposed keys", single);
  ValueId batched_ints = builder.broadcast(builder.reshape(ia, {1, 3, 4}), ir::from_ints({5, 3, 4}));
  graph.output(builder.matmul(batched_ints, ib), "matmul int32 batch of 5");
  // Products of few rows by a weight seen transposed (x @ W.T), kiln's own kernel
  // (extern/skinny_matmul.h): 1, 3 and 8 rows, a depth and a width that are no multiple of its
  // 16 lanes and 4 columns; 9 rows go to the library.
  ValueId weight = graph.input(make_array(DType::Float32, {7, 100},
                                          pseudo_random(700, -1, 1, 15)));
  for (int64_t rows : {1, 3, 8, 9}) {
    ValueId x = graph.input(make_array(DType::Float32, {rows, 100},
                                       pseudo_random(size_t(rows * 100), -1, 1, 16 + rows)));
    graph.output(builder.matmul(x, builder.permute(weight, {1, 0})),
                 "matmul of " + std::to_string(rows) + " rows by a transposed weight",
                 {1e-5, 1e-5, 4});
  }
  // Deep, narrow products through oneDNN's matmul primitive (extern/onednn_matmul.h): by a
  // weight seen transposed and by a plain one; rows 1100 floats apart go to sgemm.
  ValueId tokens = graph.input(make_array(DType::Float32, {128, 1024},
                                          pseudo_random(128 * 1024, -1, 1, 30)));
  ValueId rows_weight = graph.input(make_array(DType::Float32, {512, 1024},
                                               pseudo_random(512 * 1024, -1, 1, 31)));
  ValueId plain_weight = graph.input(make_array(DType::Float32, {1024, 512},
                                                pseudo_random(512 * 1024, -1, 1, 32)));
  graph.output(builder.matmul(tokens, builder.permute(rows_weight, {1, 0})),
               "matmul 128x1024 by a transposed 512x1024 weight", {1e-4, 1e-4, 4});
  graph.output(builder.matmul(tokens, plain_weight), "matmul 128x1024 by 1024x512",
               {1e-4, 1e-4, 4});
  ValueId wider = graph.input(make_array(DType::Float32, {128, 1100},
                                         pseudo_random(128 * 1100, -1, 1, 33)));
  graph.output(builder.matmul(builder.slice(wider, {0, 0}, {128, 1024}, {1, 1}), plain_weight),
               "matmul of 128 rows 1100 apart by 1024x512", {1e-4, 1e-4, 4});
  CompiledRun run = graph.check();
  // Hand check of the vector dot product: 0.25 + 1 + 4.
  EXPECT_EQ(run.outputs.at(5).to_vector<double>(), std::vector<double>{5.25});
  EXPECT_EQ(run.outputs.at(5).ndim(), 0);
}

// Outputs that need no kernel (inputs, constants) or share one value, 0-d and size-0 arrays.
TEST(CompileStructure, UnusualOutputsAndShapes) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = graph.input(make_array(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  ValueId scalar = graph.input(make_array(DType::Float64, {}, {2.5}));
  ValueId empty = graph.input(make_array(DType::Float32, {0, 3}, {}));
  ValueId doubled = builder.binary(Op::add, x, x);
  graph.output(x, "input as output");
  graph.output(doubled, "x + x");
  graph.output(doubled, "x + x again");
  graph.output(x, "input as output again");
  graph.output(builder.constant(ir::Scalar::of(4), DType::Float32, {2, 2}), "constant output");
  graph.output(builder.constant(ir::Scalar::of_int(9), DType::Int64, {}), "0-d constant output");
  graph.output(scalar, "0-d input");
  graph.output(builder.unary(Op::exp, scalar), "exp of 0-d");
  graph.output(builder.binary(Op::mul, builder.cast(x, DType::Float64), scalar),
               "matrix * 0-d");
  graph.output(builder.reduce(Op::sum, scalar, {}, false), "sum of 0-d");
  graph.output(builder.reshape(scalar, {1, 1}), "reshape 0-d");
  graph.output(builder.unary(Op::neg, empty), "neg of (0, 3)");
  graph.output(builder.reduce(Op::sum, empty, {0}, false), "sum over empty axis");
  graph.output(builder.reduce(Op::max, empty, {1}, false), "max leaving (0,)");
  graph.output(builder.concat({empty, builder.slice(x, {0, 0}, {1, 3}, {1, 1})}, 0),
               "concat with empty");
  graph.output(builder.reshape(empty, {3, 0}), "reshape empty");
  CompiledRun run = graph.check();
  ASSERT_EQ(run.outputs.size(), 16u);
  EXPECT_EQ(run.outputs[1].to_vector<double>(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(run.outputs[8].to_vector<double>(), (std::vector<double>{2.5, 5, 7.5, 10, 12.5, 15}));
  EXPECT_EQ(run.outputs[12].to_vector<double>(), (std::vector<double>{0, 0, 0}));
  // Outputs are fresh arrays: writing one must not change another or the input.
  run.outputs[1].data_as<float>()[0] = 100;
  EXPECT_EQ(run.outputs[2].data_as<float>()[0], 2.0f);
  run.outputs[0].data_as<float>()[0] = 100;
  EXPECT_EQ(graph.inputs[0].data_as<float>()[0], 1.0f);
  EXPECT_EQ(run.outputs[3].data_as<float>()[0], 1.0f);
}

TEST(CompileStructure, RunWritesIntoCallerProvidedOutputs) {
  Function function = compile(
      [](Tensor a, Tensor b) { return std::vector<Tensor>{a * b + 1.0, sum(a, {1})}; },
      test_options());
  Array a = make_array(DType::Float64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Array b = make_array(DType::Float64, {3}, {10, 20, 30});
  std::vector<double> product_storage(6, -1), sum_storage(2, -1);
  std::vector<Array> outputs = {Array::borrow(product_storage.data(), DType::Float64, {2, 3}),
                                Array::borrow(sum_storage.data(), DType::Float64, {2})};
  function.run({a, b}, outputs);
  EXPECT_EQ(product_storage, (std::vector<double>{11, 41, 91, 41, 101, 181}));
  EXPECT_EQ(sum_storage, (std::vector<double>{6, 15}));
  // A second call with new inputs reuses the compiled code and the caller's memory.
  Array c = make_array(DType::Float64, {3}, {0, 1, 2});
  function.run({a, c}, outputs);
  EXPECT_EQ(product_storage, (std::vector<double>{1, 3, 7, 1, 6, 13}));
  EXPECT_EQ(function.stats().traces, 1);
  EXPECT_EQ(outputs[0].data(), product_storage.data());
}

// Whole functions through kiln::compile, compared with the interpreter on their trace.
TEST(CompileStructure, TensorApiFunctions) {
  auto normalise = [](Tensor x, Tensor gamma, Tensor beta) {
    Tensor centred = x - mean(x, {-1}, true);
    Tensor layer_norm = centred / sqrt(var(x, {-1}, true) + 1e-5) * gamma + beta;
    return std::vector<Tensor>{softmax(x, -1), log_softmax(x, 0), logsumexp(x, {1}),
                               layer_norm, logsumexp(x, {}, true)};
  };
  std::vector<double> values = pseudo_random(16 * 33, -30, 30, 13);
  values[40] = 95;  // exp overflows float32 unless the max is subtracted
  values[41] = -kInf;
  Array x = make_array(DType::Float32, {16, 33}, values);
  Array gamma = make_array(DType::Float32, {33}, pseudo_random(33, 0.5, 2, 14));
  Array beta = make_array(DType::Float32, {33}, pseudo_random(33, -1, 1, 15));
  Function function = compile(normalise, test_options());
  std::vector<Array> outputs = expect_function_matches(function, normalise, {x, gamma, beta},
                                                       {1e-5, 1e-5, 4}, "normalise");
  ASSERT_EQ(outputs.size(), 5u);
  // Hand check: logsumexp of row 1 is about its max (95) since the rest are <= 30.
  std::vector<double> rows = outputs[2].to_vector<double>();
  EXPECT_NEAR(rows[1], 95.0, 1e-4);
  for (double value : outputs[0].to_vector<double>()) EXPECT_FALSE(std::isnan(value));
}

// A pointwise kernel over a conv weight's shape runs one SIMD loop of at least four vectors
// (merge_short_inner_loops): 7x7 with AVX2's eight floats, 3x7x7 with AVX-512's sixteen; not a
// loop of 7 per row.
TEST(CompileStructure, ShortInnerLoopsOfPointwiseKernelsMerge) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = graph.input(make_array(DType::Float32, {64, 3, 7, 7}, pseudo_random(9408, -1, 1, 3)));
  ValueId y = graph.input(make_array(DType::Float32, {64, 3, 7, 7}, pseudo_random(9408, -1, 1, 4)));
  graph.output(builder.binary(Op::add, builder.binary(Op::mul, x, y), x), "x * y + x");
  CompiledRun run = graph.check();
  const sched::Program& program = run.compiled->executable->program();
  ASSERT_EQ(program.kernels.size(), 1u);
  const sched::Stmt* innermost = &program.kernels[0].body.at(0);
  while (!innermost->body.empty() && innermost->body[0].kind == sched::StmtKind::Loop)
    innermost = &innermost->body[0];
  EXPECT_GE(innermost->loop.extent, 4 * target::host_cpu().lanes(DType::Float32))
      << sched::print_program(program);
}

}  // namespace
}  // namespace kiln::test
