// Size-generic code: a graph with size symbols runs at many sizes on one compiled library whose
// size-dependent integers come from a table (codegen/size_parameters.h,
// api/size_generic_graph.h). Every size's result must equal the interpreter's, whether it ran
// on the generic library or compiled its own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/size_generic_graph.h"
#include "codegen/size_parameters.h"
#include "compile_test_util.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/cuda/cuda_driver.h"
#include "sched/cpu/hoist_invariants.h"

namespace kiln {
namespace {

using ir::Builder;
using ir::Dim;
using ir::Op;
using ir::ValueId;
using test::test_options;

// Values in [-0.5, 0.5).
std::vector<double> pseudo_random(int64_t count, uint64_t seed) {
  return test::pseudo_random(static_cast<size_t>(count), -0.5, 0.5, seed);
}

// Rows of x (s0, 96) through a softmax, a row sum, a column sum and a matmul with w (96, 8).
ir::Graph softmax_rows_graph() {
  ir::Graph graph;
  Builder b(graph);
  b.set_location("model.py:4");
  Dim rows = graph.add_symbol(200);
  ValueId x = b.parameter(DType::Float64, {rows, 96});
  ValueId w = b.parameter(DType::Float64, {96, 8});
  ValueId peak = b.broadcast(b.reduce(Op::max, x, {1}, true), {rows, 96});
  ValueId exponentials = b.unary(Op::exp, b.binary(Op::sub, x, peak));
  ValueId total = b.broadcast(b.reduce(Op::sum, exponentials, {1}, true), {rows, 96});
  ValueId softmax = b.binary(Op::div, exponentials, total);
  ValueId columns = b.reduce(Op::sum, softmax, {0}, false);
  graph.set_outputs({b.matmul(softmax, w), columns, b.reduce(Op::sum, x, {1}, false)});
  return graph;
}

void expect_matches_interpreter(detail::SizeGenericGraph& compiled, int64_t rows) {
  std::vector<Array> inputs{Array::from_vector(pseudo_random(rows * 96, 3), {rows, 96}),
                            Array::from_vector(pseudo_random(96 * 8, 4), {96, 8})};
  std::vector<Array> expected = ir::interpret(compiled.graph(), inputs);
  std::vector<Array> outputs;
  compiled.for_sizes({rows})->executable->run(inputs, outputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    ASSERT_EQ(outputs[k].shape(), expected[k].shape()) << "rows " << rows << ", output " << k;
    std::vector<double> got = outputs[k].to_vector<double>(), want = expected[k].to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-9 * (1 + std::abs(want[i])))
          << "rows " << rows << ", output " << k << ", element " << i;
  }
}

TEST(SizeGeneric, ManySizesRunOnOneLibrary) {
  detail::SizeGenericGraph compiled(softmax_rows_graph(), {}, test_options(), {});
  // Sizes with the hint's remainder by 64 and the same thresholds share the generic code.
  for (int64_t rows : {200, 264, 136, 392, 200}) expect_matches_interpreter(compiled, rows);
  EXPECT_LE(compiled.compiles(), 1);  // one library (none when the disk cache had it)
}

// A decoder's steps, one size each: a few hundred are kept, the least recently used dropped.
TEST(SizeGeneric, RecentlyUsedSizesAreKept) {
  detail::SizeGenericGraph compiled(softmax_rows_graph(), {}, test_options(), {});
  for (int64_t rows = 2; rows < 302; ++rows) {
    compiled.for_sizes({rows});
    if (rows % 10 == 0) compiled.for_sizes({5});  // used throughout
  }
  EXPECT_TRUE(compiled.keeps({5}));
  EXPECT_TRUE(compiled.keeps({301}));
  EXPECT_TRUE(compiled.keeps({100}));  // past the 64 sizes kept before session 45
  EXPECT_FALSE(compiled.keeps({2}));   // least recently used
}

TEST(SizeGeneric, AnySizeIsRightOnTheGenericCodeOrItsOwn) {
  detail::SizeGenericGraph compiled(softmax_rows_graph(), {}, test_options(), {});
  for (int64_t rows : {200, 2, 3, 17, 65, 201, 1000}) expect_matches_interpreter(compiled, rows);
}

// Graphs over size symbols of the kernel shapes the scheduler makes (row and column
// reductions, Welford variance, argmax, scans, transposes, broadcasts, concat, pad, slices,
// reshapes, matmuls), each run at random sizes (most near its hints, some far) on its
// size-generic library or its own code, against the interpreter.
struct RandomSizesCase {
  std::vector<int64_t> hints;
  std::function<void(Builder&, const std::vector<Dim>&)> build;
};

std::vector<RandomSizesCase> random_sizes_cases() {
  auto f32 = DType::Float32, f64 = DType::Float64;
  return {
      {{96, 80},
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId x = b.parameter(f32, {s[0], s[1]});
         b.graph().set_outputs({b.reduce(Op::sum, x, {0}, false), b.reduce(Op::max, x, {1}, false),
                                b.reduce(Op::sum, x, {}, false)});
       }},
      {{72},
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId x = b.parameter(f64, {s[0], 48});
         b.graph().set_outputs({b.reduce(Op::var, x, {1}, false, 1),
                                b.reduce(Op::argmax, x, {1}, false), b.scan(Op::cumsum, x, 1),
                                b.reduce(Op::min, x, {0}, true)});
       }},
      {{64, 40},
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId x = b.parameter(f64, {s[0], s[1]});
         ValueId row = b.parameter(f64, {s[0]});
         ValueId moved = b.binary(Op::mul, b.permute(x, {1, 0}), b.broadcast(row, {s[1], s[0]}));
         ValueId both = b.concat({moved, b.unary(Op::exp, moved)}, 0);
         b.graph().set_outputs({b.pad(both, {1, 0}, {1, 2}, ir::PadMode::Constant,
                                      ir::Scalar::of(0.5))});
       }},
      {{50, 70},
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId a = b.parameter(f32, {s[0], 32});
         ValueId w = b.parameter(f32, {32, s[1]});
         ValueId product = b.matmul(a, w);
         b.graph().set_outputs({b.reduce(Op::sum, b.unary(Op::tanh, product), {1}, false)});
       }},
      {{1500},  // a histogram's scatter-add: in blocks and the rest (block_scatter_adds.h)
       [=](Builder& b, const std::vector<Dim>& s) {
         auto fill = [&](double value) { return b.constant(ir::Scalar::of(value), f64, {s[0]}); };
         ValueId x = b.parameter(f64, {s[0]});
         ValueId scaled = b.unary(Op::floor, b.binary(Op::mul, x, fill(4.0)));
         ValueId bin = b.binary(Op::minimum, b.binary(Op::maximum, scaled, fill(0.0)), fill(15.0));
         b.graph().set_outputs({b.scatter(b.constant(ir::Scalar::of(0.0), f64, {16}),
                                          b.cast(bin, DType::Int64), x, 0, ir::ScatterMode::Add)});
       }},
      {{40},
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId x = b.parameter(f64, {s[0], 4, 8});
         ValueId rows = b.unary(Op::exp, b.reshape(x, {s[0] * 4, 8}));
         ValueId tail = b.slice(x, {2, 0, 0}, {INT64_MAX, 4, 8}, {1, 1, 1});
         b.graph().set_outputs({b.reduce(Op::sum, rows, {0}, false),
                                b.reduce(Op::sum, b.binary(Op::mul, tail, tail), {0}, false)});
       }},
      {{3, 5},  // a decoder's key and value heads: products, each permuted
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId x = b.reshape(b.parameter(f32, {s[0], s[1], 64}), {s[0] * s[1], 64});
         std::vector<ValueId> products, heads;
         for (int k = 0; k < 2; ++k) products.push_back(b.matmul(x, b.parameter(f32, {64, 64})));
         for (ValueId product : products)
           heads.push_back(b.permute(b.reshape(product, {s[0], s[1], 4, 16}), {0, 2, 1, 3}));
         b.graph().set_outputs(heads);
       }},
      {{4, 7},  // a gated activation (a decoder's MLP): on a GPU, float4 steps into registers
       [=](Builder& b, const std::vector<Dim>& s) {
         ValueId gate = b.parameter(f32, {s[0], s[1], 64});
         ValueId up = b.parameter(f32, {s[0], s[1], 64});
         b.graph().set_outputs(
             {b.binary(Op::mul, b.binary(Op::mul, gate, b.unary(Op::tanh, gate)), up)});
       }},
  };
}

std::vector<Array> random_inputs(const ir::Graph& graph, const std::vector<int64_t>& sizes,
                                 uint64_t seed) {
  std::vector<Array> inputs;
  for (ValueId id : graph.inputs()) {
    const ir::Node& node = graph.node(id);
    std::vector<int64_t> shape = ir::evaluate(node.shape, sizes);
    int64_t count = 1;
    for (int64_t extent : shape) count *= extent;
    std::vector<double> values = test::pseudo_random(static_cast<size_t>(count), -1, 1, seed++);
    if (node.dtype == DType::Float32) {
      inputs.push_back(Array::from_vector(std::vector<float>(values.begin(), values.end()), shape));
    } else {
      inputs.push_back(Array::from_vector(values, shape));
    }
  }
  return inputs;
}

// `compiled` at `sizes` (inputs drawn from `seed`) against the interpreter: float32 results
// within 1e-4, float64 ones within `float64_tolerance` (relative to 1 + |expected|).
void expect_sizes_match_interpreter(detail::SizeGenericGraph& compiled,
                                    const std::vector<int64_t>& sizes, uint64_t seed,
                                    double float64_tolerance) {
  const ir::Graph& graph = compiled.graph();
  std::vector<Array> inputs = random_inputs(graph, sizes, seed);
  std::vector<Array> expected = ir::interpret(graph, inputs), outputs;
  compiled.for_sizes(sizes)->executable->run(inputs, outputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    ASSERT_EQ(outputs[k].shape(), expected[k].shape());
    std::vector<double> got = outputs[k].to_vector<double>();
    std::vector<double> want = expected[k].to_vector<double>();
    double tolerance = outputs[k].dtype() == DType::Float32 ? 1e-4 : float64_tolerance;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
        continue;  // infinities (a random graph's exp) included
      ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i])))
          << print_graph(graph) << "sizes " << ::testing::PrintToString(sizes) << ", output "
          << k << ", element " << i;
    }
  }
}

// A decoder step's attention over a cache of s0 rows: softmax(q Kᵀ) V for 2 query rows. Its
// choices depend on s0: the products are inlined under 4096 multiply-adds (s0 < 64) and BLAS
// calls above, the softmax's row reductions recomputed in the kernels that read them under 64
// elements a row and given buffers above, the loops under 8 iterations not SIMD. Each size
// follows the choices made once (at large sizes), so every size runs on one library.
ir::Graph attention_step_graph() {
  ir::Graph graph;
  Builder b(graph);
  Dim cache = graph.add_symbol(6);
  ValueId q = b.parameter(DType::Float64, {2, 16});
  ValueId keys = b.parameter(DType::Float64, {cache, 16});
  ValueId values = b.parameter(DType::Float64, {cache, 16});
  ValueId scores = b.matmul(q, b.permute(keys, {1, 0}));
  ValueId peak = b.broadcast(b.reduce(Op::max, scores, {1}, true), {2, cache});
  ValueId exponentials = b.unary(Op::exp, b.binary(Op::sub, scores, peak));
  ValueId total = b.broadcast(b.reduce(Op::sum, exponentials, {1}, true), {2, cache});
  graph.set_outputs({b.matmul(b.binary(Op::div, exponentials, total), values)});
  return graph;
}

TEST(SizeGeneric, ChoicesOnSizesAreEverySizesOwn) {
  ir::Graph graph = attention_step_graph();
  detail::SizeGenericGraph compiled(graph, {}, test_options(), {});
  uint64_t seed = 5;
  for (int64_t cache : {6, 7, 9, 40, 100, 300, 3, 6}) {
    std::vector<Array> inputs = random_inputs(graph, {cache}, seed++);
    std::vector<Array> expected = ir::interpret(graph, inputs), outputs;
    compiled.for_sizes({cache})->executable->run(inputs, outputs);
    std::vector<double> got = outputs[0].to_vector<double>(), want = expected[0].to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-10 * (1 + std::abs(want[i]))) << "cache " << cache;
  }
  EXPECT_LE(compiled.compiles(), 1);
}

// Two caches of one length in every call (a decoder's layers), separate symbols: at equal
// sizes their aranges are one value (CSE), so the hints' code is made for them equal, and the
// probes keep them equal too; calls with equal sizes share one library.
TEST(SizeGeneric, SymbolsWithEqualHintsShareCodeWhileEqual) {
  ir::Graph graph;
  Builder b(graph);
  Dim first = graph.add_symbol(10), second = graph.add_symbol(10);
  std::vector<ValueId> outputs;
  for (Dim length : {first, second}) {
    ValueId cache = b.parameter(DType::Float64, {length, 4});
    ValueId positions = b.broadcast(b.iota(DType::Float64, {length, 1}, 0), {length, 4});
    outputs.push_back(b.reduce(Op::sum, b.binary(Op::mul, cache, positions), {0}, false));
  }
  graph.set_outputs(outputs);
  detail::SizeGenericGraph compiled(graph, {}, test_options(), {});
  uint64_t seed = 9;
  for (int64_t length : {10, 11, 25, 80, 10}) {
    std::vector<Array> inputs = random_inputs(graph, {length, length}, seed++);
    std::vector<Array> expected = ir::interpret(graph, inputs), results;
    compiled.for_sizes({length, length})->executable->run(inputs, results);
    for (size_t k = 0; k < 2; ++k) {
      std::vector<double> got = results[k].to_vector<double>();
      std::vector<double> want = expected[k].to_vector<double>();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-10 * (1 + std::abs(want[i]))) << "length " << length;
    }
  }
  EXPECT_LE(compiled.compiles(), 1);
  // Unequal sizes are right too, on code of their own if need be.
  std::vector<Array> inputs = random_inputs(graph, {12, 30}, seed);
  std::vector<Array> expected = ir::interpret(graph, inputs), results;
  compiled.for_sizes({12, 30})->executable->run(inputs, results);
  EXPECT_NEAR(results[1].to_vector<double>()[0], expected[1].to_vector<double>()[0], 1e-9);
}

TEST(SizeGeneric, RandomSizesOfManyKernelShapesMatchTheInterpreter) {
  uint64_t seed = 11;
  for (const RandomSizesCase& c : random_sizes_cases()) {
    ir::Graph graph;
    Builder b(graph);
    std::vector<Dim> symbols;
    for (int64_t hint : c.hints) symbols.push_back(graph.add_symbol(hint));
    c.build(b, symbols);
    detail::SizeGenericGraph compiled(graph, {}, test_options(), {});
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<int64_t> sizes;
      for (int64_t hint : c.hints) {
        uint64_t draw = (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33;
        // Mostly within half the hint either way (the generic code's range), once far off.
        sizes.push_back(trial == 5 ? 3 + static_cast<int64_t>(draw % 7)
                                   : hint / 2 + static_cast<int64_t>(draw % static_cast<uint64_t>(hint)));
      }
      expect_sizes_match_interpreter(compiled, sizes, seed, 1e-10);
    }
  }
}

// A softmax and an argmax over rows of s0 float32 (hint 500: 7 steps of 64 lanes and a partial
// step over 52): the partial step's bound is end - start of the loops' own literals, so rows of
// other lengths (other remainders, none) run on the one generic library, each right.
TEST(SizeGeneric, LaneSplitRemaindersAreReadFromTheTable) {
  ir::Graph graph;
  Builder b(graph);
  Dim length = graph.add_symbol(500);
  ValueId x = b.parameter(DType::Float32, {4, length});
  ValueId e = b.unary(Op::exp, b.binary(Op::sub, x, b.broadcast(b.reduce(Op::max, x, {1}, true),
                                                                 {4, length})));
  ValueId total = b.broadcast(b.reduce(Op::sum, e, {1}, true), {4, length});
  graph.set_outputs({b.binary(Op::div, e, total), b.reduce(Op::argmax, x, {1}, false)});
  detail::SizeGenericGraph compiled(graph, {}, test_options(), {});
  for (int64_t size : {500, 437, 448, 600, 511, 300})
    expect_sizes_match_interpreter(compiled, {size}, 5, 0);
  EXPECT_LE(compiled.compiles(), 1);
}

// The graphs of the tests above, each with sizes to run it at besides its hints.
struct SizedGraph {
  ir::Graph graph;
  std::vector<std::vector<int64_t>> sizes;
};
std::vector<SizedGraph> sized_graphs() {
  std::vector<SizedGraph> graphs = {{softmax_rows_graph(), {{136}, {264}, {1000}, {200}}},
                                    {attention_step_graph(), {{7}, {40}, {300}}}};
  for (const RandomSizesCase& c : random_sizes_cases()) {
    SizedGraph& sized = graphs.emplace_back();
    Builder b(sized.graph);
    std::vector<Dim> symbols;
    for (int64_t hint : c.hints) symbols.push_back(sized.graph.add_symbol(hint));
    c.build(b, symbols);
    for (int64_t scale : {3, 5}) {
      std::vector<int64_t> sizes;
      for (int64_t hint : c.hints) sizes.push_back(hint * scale / 4 + 1);
      sized.sizes.push_back(sizes);
    }
  }
  return graphs;
}

Options cuda_test_options() {
  Options options = test_options();
  options.device = "cuda";
  return options;
}

// On a GPU the generic code is CUDA (codegen/size_parameters.h): every function that reads
// integers of the sizes takes them as a by-value kiln_size_table after its buffers, the
// source compiles (NVRTC, for sm_90: no GPU needed), and other sizes' code is the generic
// code with their own integers, register prefetches included (their names must not depend on
// the sizes).
TEST(SizeGeneric, CudaFunctionsTakeTheirSizesAsALaunchParameter) {
  const target::Target gpu = target::cuda_device(90, 132);
  int register_prefetches = 0;
  for (const SizedGraph& sized : sized_graphs()) {
    detail::SizeGenericGraph compiled(sized.graph, {}, cuda_test_options(), {}, gpu);
    std::string why;
    const codegen::SizeGenericSource* generic = compiled.generic_source(why);
    ASSERT_NE(generic, nullptr) << why << print_graph(sized.graph);
    ASSERT_FALSE(generic->functions.empty()) << generic->text();
    const std::string text = generic->text();
    for (const codegen::SizeGenericSource::Function& function : generic->functions) {
      const std::string header = function.symbol + "(const kiln_arg_table<";
      const size_t at = text.find(header);
      ASSERT_NE(at, std::string::npos) << function.symbol << "\n" << text;
      const std::string sizes =
          "> kiln_args, const kiln_size_table<" + std::to_string(function.parameters.size()) +
          "> kiln_sizes)";
      EXPECT_EQ(text.find(sizes, at), text.find(')', at) - sizes.size() + 1) << text;
    }
    EXPECT_EQ(text.find("__launch_bounds__(kiln_sizes"), std::string::npos) << text;
    register_prefetches += text.find("kiln_pv0[kiln_u] = __ldg(") != std::string::npos;
    EXPECT_GT(runtime::cuda::compile_cubin(text, "generic.cu", 90).size(), 0u);
    for (const std::vector<int64_t>& sizes : sized.sizes) {
      std::optional<std::vector<int64_t>> table = compiled.size_table(sizes, why);
      ASSERT_TRUE(table.has_value()) << why << "\nsizes " << ::testing::PrintToString(sizes)
                                     << "\n" << print_graph(sized.graph);
      EXPECT_EQ(table->size(), generic->parameters.size());
    }
  }
  EXPECT_GT(register_prefetches, 0);
}

// ... and each size runs on that code, launched with its own grids and integers, matching the
// interpreter (without a GPU: the clear error of device="cuda").
TEST(SizeGeneric, CudaSizesRunOnOneCompiledModule) {
  for (const SizedGraph& sized : sized_graphs()) {
    detail::SizeGenericGraph compiled(sized.graph, {}, cuda_test_options(), {});
    if (!runtime::cuda::available()) {
      try {
        compiled.for_sizes(sized.graph.symbol_hints());
        FAIL() << "compiled for CUDA without a GPU";
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::Unsupported) << error.what();
      }
      continue;
    }
    uint64_t seed = 21;
    std::vector<std::vector<int64_t>> all = {sized.graph.symbol_hints()};
    all.insert(all.end(), sized.sizes.begin(), sized.sizes.end());
    for (const std::vector<int64_t>& sizes : all)
      expect_sizes_match_interpreter(compiled, sizes, seed++, 1e-9);
    EXPECT_LE(compiled.compiles(), 1) << print_graph(sized.graph);
  }
}

}  // namespace
}  // namespace kiln

namespace kiln::codegen {
namespace {

CppSource kernel_source(const std::string& body) {
  CppSource source;
  source.prefix = "// prelude\n";
  source.pieces.push_back(
      "// %1 = exp(%0) : float64(N)\n"
      "extern \"C\" void kernel0_exp(char* const* kiln_args) {\n"
      "  const double* KILN_RESTRICT a0 = (const double*)kiln_args[0];\n"
      "  const int kiln_threads = (int)(long)kiln_args[1];\n" +
      body + "}\n");
  return source;
}

TEST(SizeParameters, IntegersThatDifferAreReadFromTheTable) {
  std::string why;
  auto body = [](int n, int stride) {
    return "  for (int64_t i0 = 0; i0 < " + std::to_string(n) + "; ++i0) {\n    t = a0[(i0) * " +
           std::to_string(stride) + " + 3];\n  }\n";
  };
  std::optional<SizeGenericSource> generic =
      size_generic_source(kernel_source(body(200, 96)), {kernel_source(body(264, 96))}, why);
  ASSERT_TRUE(generic.has_value()) << why;
  ASSERT_EQ(generic->parameters.size(), 1u);
  std::string text = generic->text();
  EXPECT_NE(text.find("i0 < kiln_sizes[0]"), std::string::npos) << text;
  EXPECT_NE(text.find("(i0) * 96 + 3"), std::string::npos) << text;  // the same in both: literal
  EXPECT_NE(text.find("const int64_t* const kiln_sizes = (const int64_t*)kiln_args[2];"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("float64(N)"), std::string::npos);  // comments quote sizes: dropped
  std::optional<std::vector<int64_t>> table = size_table(*generic, kernel_source(body(17, 96)), why);
  ASSERT_TRUE(table.has_value()) << why;
  EXPECT_EQ(*table, std::vector<int64_t>{17});
  // A literal the probe did not vary is part of the code: another value needs its own code.
  EXPECT_FALSE(size_table(*generic, kernel_source(body(17, 80)), why).has_value());
  // Several probes: a literal that varies in any is read from the table; a probe of another
  // shape is left out.
  generic = size_generic_source(
      kernel_source(body(200, 96)),
      {kernel_source(body(264, 96)), kernel_source(body(264, 80)), kernel_source("  x;\n")}, why);
  ASSERT_TRUE(generic.has_value()) << why;
  EXPECT_EQ(generic->parameters.size(), 2u);
  table = size_table(*generic, kernel_source(body(17, 80)), why);
  ASSERT_TRUE(table.has_value()) << why;
  EXPECT_EQ(*table, (std::vector<int64_t>{17, 80}));
  EXPECT_FALSE(size_table(*generic, kernel_source(body(17, 96) + "  x = 1;\n"), why).has_value());
}

// A hoisted local array whose length depends on the sizes (an attention mask of s x s): the
// generic code declares the scheduler's largest, and each size's own bound must fit it.
TEST(SizeParameters, LocalArraysAreDeclaredAtTheirCapacity) {
  std::string why;
  auto body = [](int64_t n) {
    const std::string size = std::to_string(n);
    return "  alignas(64) float h0[" + size + "];\n  for (int64_t i0 = 0; i0 < " + size +
           "; ++i0) h0[i0] = a0[i0];\n";
  };
  std::optional<SizeGenericSource> generic =
      size_generic_source(kernel_source(body(25)), {kernel_source(body(36))}, why);
  ASSERT_TRUE(generic.has_value()) << why;
  const std::string capacity = std::to_string(sched::cpu::kMaxHoistedElements);
  EXPECT_NE(generic->text().find("float h0[" + capacity + "];"), std::string::npos)
      << generic->text();
  std::optional<std::vector<int64_t>> table = size_table(*generic, kernel_source(body(49)), why);
  ASSERT_TRUE(table.has_value()) << why;
  EXPECT_EQ(*table, (std::vector<int64_t>{49}));  // the loop's bound; the array's is no parameter
  EXPECT_FALSE(size_table(*generic, kernel_source(body(sched::cpu::kMaxHoistedElements + 1)), why)
                   .has_value());
}

// The loop IR numbers temporaries by value; how many values come before a kernel can vary with
// the sizes: names that differ by such an offset, consistently, are the same code.
TEST(SizeParameters, TemporariesRenumberedAreTheSameCode) {
  std::string why;
  auto body = [](int first, int n) {
    const std::string t = "t" + std::to_string(first), u = "t" + std::to_string(first + 3);
    return "  const double " + t + " = a0[" + std::to_string(n) + "];\n  const double " + u +
           " = " + t + " * " + t + ";\n  x = " + u + ";\n";
  };
  std::optional<SizeGenericSource> generic =
      size_generic_source(kernel_source(body(75, 8)), {kernel_source(body(78, 9))}, why);
  ASSERT_TRUE(generic.has_value()) << why;
  std::optional<std::vector<int64_t>> table = size_table(*generic, kernel_source(body(80, 12)), why);
  ASSERT_TRUE(table.has_value()) << why;
  EXPECT_EQ(*table, std::vector<int64_t>{12});
  // Names used inconsistently are other code.
  EXPECT_FALSE(size_table(*generic, kernel_source("  const double t1 = a0[12];\n  const double "
                                                  "t2 = t1 * t2;\n  x = t2;\n"), why)
                   .has_value());
}

// size_table reads a size's source as size_generic_source read the hint's: comments are no
// code, temporaries of either kind are renumbered, and any other token must be the generic
// code's (a missing or extra token, a name where a literal is read, a literal where a name is).
TEST(SizeParameters, ASizesTableIsReadFromItsOwnTokens) {
  std::string why;
  // `a = b * c;` after a declaration that reads element n, each line after a comment.
  auto body = [](const std::string& t, const std::string& n, const std::string& a,
                 const std::string& b, const std::string& c, const std::string& comment) {
    return "  // " + comment + "\n  const double " + t + " = a0[" + n + "]; /* " + comment +
           " */\n  " + a + " = " + b + " * " + c + ";\n";
  };
  std::optional<SizeGenericSource> generic = size_generic_source(
      kernel_source(body("t75", "8", "kiln_v76", "t75", "t75", "8")),
      {kernel_source(body("t78", "9", "kiln_v79", "t78", "t78", "9"))}, why);
  ASSERT_TRUE(generic.has_value()) << why;
  std::optional<std::vector<int64_t>> table = size_table(
      *generic, kernel_source(body("t3", "12", "kiln_v4", "t3", "t3", "other (words) [12]")), why);
  ASSERT_TRUE(table.has_value()) << why;
  EXPECT_EQ(*table, std::vector<int64_t>{12});
  auto refuses = [&](const std::string& source_body) {
    return !size_table(*generic, kernel_source(source_body), why).has_value();
  };
  EXPECT_FALSE(refuses(body("t1", "12", "kiln_v2", "t1", "t1", ""))) << why;
  EXPECT_TRUE(refuses(body("t1", "12", "kiln_v2", "t1", "t1", "") + "  y;\n"));
  EXPECT_TRUE(refuses(body("t1", "12", "kiln_v2", "t1", "t1", "").substr(0, 60)));
  EXPECT_TRUE(refuses(body("t1", "t2", "kiln_v2", "t1", "t1", "")));
  EXPECT_TRUE(refuses(body("t1", "12", "kiln_v2", "t1", "3", "")));
  EXPECT_TRUE(refuses(body("t1", "12", "kiln_v2", "t1", "t2", "")));
  EXPECT_TRUE(refuses(body("t1", "12", "kiln_v2", "t1", "kiln_v2", "")));
  EXPECT_TRUE(refuses(body("t1", "12", "t2", "t1", "t1", "")));
  EXPECT_NE(why.find("differs where the generic code has 'kiln_v0' (here 't1')"), std::string::npos)
      << why;
}

TEST(SizeParameters, ConstantsCppNeedsAndOtherDifferencesRefuse) {
  std::string why;
  auto refuses = [&](const std::string& a, const std::string& b) {
    return !size_generic_source(kernel_source(a), {kernel_source(b)}, why).has_value();
  };
  EXPECT_TRUE(refuses("  #pragma omp simd safelen(8)\n", "  #pragma omp simd safelen(16)\n"));
  EXPECT_TRUE(refuses("  double acc[8];\n", "  double acc[16];\n"));
  EXPECT_TRUE(refuses("  alignas(64) char own[128];\n", "  alignas(64) char own[256];\n"));
  EXPECT_TRUE(refuses("  alignas(64) char own;\n", "  alignas(32) char own;\n"));
  EXPECT_TRUE(refuses("  t = kiln_f<8>(x);\n", "  t = kiln_f<16>(x);\n"));
  EXPECT_TRUE(refuses("  t = x * (0x1p-11);\n", "  t = x * (0x1p-12);\n"));  // a mean's 1/n
  EXPECT_TRUE(refuses("  t = x * 2.5;\n", "  t = x * 3.5;\n"));
  EXPECT_TRUE(refuses("  t = a;\n", "  t = b;\n"));
  EXPECT_TRUE(refuses("  t = a;\n", "  t = a + 1;\n"));
  // Uses of a value, not declarations: a runtime value is fine there.
  EXPECT_FALSE(refuses("  t = a0[8];\n  if (i < 8) t = 0;\n", "  t = a0[16];\n  if (i < 16) t = 0;\n"));
  // An int64 constant the printer spells 8ll: a size used as data (an index's bound).
  EXPECT_FALSE(refuses("  t = ((int64_t)-8ll);\n", "  t = ((int64_t)-16ll);\n"));
}

}  // namespace
}  // namespace kiln::codegen

namespace kiln {
namespace {

// A random graph over two size symbols (a batch and a length, as a decoder has): values of
// shapes (s0, s1, 16), (s0, 16) and (16,) through pointwise ops with broadcasting, reductions
// over the length, products with (16, 16) weights on (s0 * s1, 16) rows, and permuted heads.
ir::Graph random_sized_graph(uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto draw = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % n);
  };
  ir::Graph graph;
  Builder b(graph);
  const Dim s0 = graph.add_symbol(3 + static_cast<int64_t>(draw(6)));
  const Dim s1 = graph.add_symbol(3 + static_cast<int64_t>(draw(9)));
  const DType f32 = DType::Float32;
  const ir::Shape rows = {s0, s1, 16}, batch = {s0, 16}, channel = {16};
  std::vector<ValueId> values[3];  // by shape: rows, batch, channel
  values[0] = {b.parameter(f32, rows), b.parameter(f32, rows)};
  values[1] = {b.parameter(f32, batch)};
  values[2] = {b.parameter(f32, channel)};
  const ValueId weights = b.parameter(f32, {16, 16});
  auto as_rows = [&](ValueId v, size_t kind) {
    if (kind == 0) return v;
    if (kind == 1) return b.broadcast(b.reshape(v, {s0, 1, 16}), rows);
    return b.broadcast(v, rows);
  };
  std::vector<ValueId> heads;
  const size_t steps = 6 + draw(8);
  for (size_t step = 0; step < steps; ++step) {
    const size_t kind = draw(3);
    const ValueId v = values[kind][draw(values[kind].size())];
    switch (draw(11)) {
      case 0:
        values[kind].push_back(b.unary(draw(2) ? Op::tanh : Op::exp,
                                       b.binary(Op::mul, v, b.constant(ir::Scalar::of(0.25), f32,
                                                                         b.node(v).shape))));
        break;
      case 1: {  // with broadcasting up to the rows
        const size_t other = draw(3);
        const ValueId w = values[other][draw(values[other].size())];
        values[0].push_back(b.binary(draw(2) ? Op::add : Op::mul, as_rows(v, kind),
                                     as_rows(w, other)));
        break;
      }
      case 2:  // over the length
        values[1].push_back(b.reduce(draw(2) ? Op::sum : Op::max, as_rows(v, kind), {1}, false));
        break;
      case 3: {  // a product of every row
        const ValueId flat = b.reshape(as_rows(v, kind), {s0 * s1, 16});
        values[0].push_back(b.reshape(b.matmul(flat, weights), rows));
        break;
      }
      case 4:  // heads: (s0, 2, s1, 8)
        heads.push_back(b.permute(b.reshape(as_rows(v, kind), {s0, s1, 2, 8}), {0, 2, 1, 3}));
        break;
      case 5: {  // causal attention of the rows over themselves
        const ValueId x = as_rows(v, kind);
        const ir::Shape square = {s0, s1, s1};
        const ValueId scores = b.matmul(x, b.permute(x, {0, 2, 1}));
        const ValueId later = b.binary(Op::gt, b.iota(DType::Int64, square, 2),
                                       b.iota(DType::Int64, square, 1));
        const ValueId masked = b.where(later, b.constant(ir::Scalar::of(-1e30), f32, square), scores);
        const ValueId peak = b.broadcast(b.reduce(Op::max, masked, {2}, true), square);
        const ValueId e = b.unary(Op::exp, b.binary(Op::sub, masked, peak));
        const ValueId p = b.binary(Op::div, e, b.broadcast(b.reduce(Op::sum, e, {2}, true), square));
        values[0].push_back(b.matmul(p, x));
        break;
      }
      case 6:  // a running sum over the length, and the rows shifted by one
        values[0].push_back(draw(2) ? b.scan(Op::cumsum, as_rows(v, kind), 1)
                                    : b.pad(b.slice(as_rows(v, kind), {0, 1, 0},
                                                    {INT64_MAX, INT64_MAX, 16}, {1, 1, 1}),
                                            {0, 0, 0}, {0, 1, 0}, ir::PadMode::Constant));
        break;
      case 7:  // statistics over the channels, broadcast back: a layer norm's
        values[0].push_back(b.binary(
            Op::sub, as_rows(v, kind),
            b.broadcast(b.reduce(draw(2) ? Op::var : Op::sum, as_rows(v, kind), {2}, true), rows)));
        break;
      case 8: {  // the position along the length of each channel's largest value: of the
        // parameters (distinct values, or all equal along the length: the first); a computed
        // value's near-ties would make the index a matter of rounding
        const ValueId x = draw(2) ? values[0][draw(2)] : as_rows(values[1].front(), 1);
        values[1].push_back(b.cast(b.reduce(Op::argmax, x, {1}, false), f32));
        break;
      }
      case 9:  // the rows and the batch's rows joined along the length, summed over it
        values[1].push_back(b.reduce(
            Op::sum, b.concat({as_rows(v, kind), as_rows(values[1].back(), 1)}, 1), {1}, false));
        break;
      default:
        values[kind].push_back(b.binary(Op::sub, v, values[kind].front()));
        break;
    }
  }
  std::vector<ValueId> outputs = heads;
  outputs.push_back(values[0].back());
  if (values[1].size() > 1) outputs.push_back(values[1].back());
  graph.set_outputs(outputs);
  return graph;
}

// Random graphs over size symbols: every size matches the interpreter on the CPU, the choices
// made at large sizes are every size's (a threshold on sizes outside ir::size_choice gives the
// hints' program another structure: a small kernel root hoisted at the hints and not at large
// sizes did, on T5), and the CUDA code for an sm_90 target is one size-generic source.
TEST(SizeGeneric, RandomGraphsOverSizeSymbolsAreGenericAndRight) {
  const target::Target gpu = target::cuda_device(90, 132);
  const char* count = std::getenv("KILN_FUZZ_SIZED_GRAPHS");  // more for a longer search
  const uint64_t seeds = count ? std::stoull(count) : 60;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    ir::Graph graph = random_sized_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + print_graph(graph));
    detail::SizeGenericGraph on_cpu(graph, {}, test_options(), {});
    const std::vector<int64_t> hints = graph.symbol_hints();
    for (const std::vector<int64_t>& sizes :
         {hints, std::vector<int64_t>{hints[0] + 2, hints[1] + 5}, std::vector<int64_t>{2, 40}})
      expect_sizes_match_interpreter(on_cpu, sizes, seed, 1e-9);
    EXPECT_EQ(on_cpu.choices_at_hints(), "");
    detail::SizeGenericGraph on_gpu(graph, {}, cuda_test_options(), {}, gpu);
    std::string why;
    EXPECT_NE(on_gpu.generic_source(why), nullptr) << why;
    EXPECT_EQ(on_gpu.choices_at_hints(), "");
  }
}

}  // namespace
}  // namespace kiln
