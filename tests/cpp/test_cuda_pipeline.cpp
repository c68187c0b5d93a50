// The compile pipeline with device="cuda": without a GPU (CI) a clear Unsupported error; with
// one (scripts/gpu-check) the kernel shapes of the CUDA emitter against the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "api/pipeline.h"
#include "compile_test_util.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln {
namespace {

Options cuda_options(const std::string& cache_dir) {
  Options options;
  options.device = "cuda";
  options.cache_dir = cache_dir;
  return options;
}

Array random_array(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  if (dtype == DType::Float32) {
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) v = static_cast<float>(uniform(generator));
    return Array::from_vector(values, shape);
  }
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = uniform(generator);
  return Array::from_vector(values, shape);
}

// Runs `graph` through the CUDA pipeline and the interpreter; floats within `tolerance`.
// Without a GPU the compile must refuse with Unsupported, saying why.
void expect_matches_interpreter(const ir::Graph& graph, const std::vector<Array>& inputs,
                                double tolerance) {
  const std::string& cache = test::test_cache_directory();
  CompileStats stats;
  if (!runtime::cuda::available()) {
    try {
      detail::compile_graph(graph, {}, cuda_options(cache), stats);
      FAIL() << "compiled for CUDA without a GPU";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
      EXPECT_NE(std::string(error.what()).find("device=\"cuda\""), std::string::npos) << error.what();
    }
    return;
  }
  auto compiled = detail::compile_graph(graph, {}, cuda_options(cache), stats);
  std::vector<Array> outputs;
  compiled->executable->run(inputs, outputs);
  std::vector<Array> expected = ir::interpret(graph, inputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t k = 0; k < outputs.size(); ++k)
    test::expect_array_matches(outputs[k], expected[k], {tolerance, tolerance, 4},
                               "output " + std::to_string(k));
}

TEST(CudaPipeline, UnknownDevicesAreRefused) {
  Options options;
  options.device = "tpu";
  ir::Graph graph;
  ir::Builder b(graph);
  graph.set_outputs({b.unary(ir::Op::sin, b.parameter(DType::Float32, {8}))});
  CompileStats stats;
  EXPECT_THROW(detail::compile_graph(graph, {}, options, stats), Error);
}

// The kernel shapes of codegen/cuda/cuda_emitter.h, each against the interpreter (without a
// GPU: each refused with a clear error).
TEST(CudaPipeline, KernelShapesMatchTheInterpreter) {
  {  // elementwise, one element per thread
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {1000, 300});
    graph.set_outputs({b.binary(ir::Op::add, b.unary(ir::Op::sin, x), b.unary(ir::Op::cos, x))});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {1000, 300}, 1)}, 1e-6);
  }
  {  // row reductions: a block per row (softmax)
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {37, 1000});
    ir::ValueId e = b.unary(ir::Op::exp, b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {1}, true)));
    graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true))});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {37, 1000}, 2)}, 1e-5);
  }
  {  // whole-array reductions, argmax and variance (one block), column sums
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float64, {513, 77});
    graph.set_outputs({b.reduce(ir::Op::sum, x, {}, false), b.reduce(ir::Op::argmax, x, {1}, false),
                       b.reduce(ir::Op::var, x, {0}, false, 1), b.reduce(ir::Op::sum, x, {0}, false)});
    expect_matches_interpreter(graph, {random_array(DType::Float64, {513, 77}, 3)}, 1e-12);
  }
  {  // split reductions: the grid shares whole-array reductions (sum, argmin, variance, a
     // sum that reads the max, done by the last block) of 1M elements
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float64, {1024, 1024});
    ir::ValueId shifted = b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {}, false));
    graph.set_outputs({b.reduce(ir::Op::sum, x, {}, false), b.reduce(ir::Op::argmin, b.reshape(x, {1 << 20}), {0}, false),
                       b.reduce(ir::Op::var, x, {}, false),
                       b.reduce(ir::Op::sum, b.unary(ir::Op::exp, shifted), {}, false)});
    std::vector<Array> inputs = {random_array(DType::Float64, {1024, 1024}, 4)};
    expect_matches_interpreter(graph, inputs, 1e-9);
    expect_matches_interpreter(graph, inputs, 1e-9);  // the scratch is left ready for a rerun
  }
}

}  // namespace
}  // namespace kiln
