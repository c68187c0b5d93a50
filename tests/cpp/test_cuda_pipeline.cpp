// The compile pipeline with device="cuda": without a GPU (CI) a clear Unsupported error; with
// one (scripts/gpu-check) the kernel shapes of the CUDA emitter against the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <fstream>
#include <filesystem>
#include <algorithm>

#include "api/pipeline.h"
#include "compile_test_util.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "runtime/cuda/cuda_blas.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_executable.h"

namespace kiln {
namespace {

Options cuda_options(const std::string& cache_dir) {
  Options options;
  options.device = "cuda";
  options.cache_dir = cache_dir;
  return options;
}

// Without a GPU, compiling `graph` for CUDA must be an error: true then (the test stops there).
bool refused_without_a_gpu(const ir::Graph& graph, const Options& options) {
  if (runtime::cuda::available()) return false;
  CompileStats stats;
  EXPECT_THROW(detail::compile_graph(graph, {}, options, stats), Error);
  return true;
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
  {  // column tiles (a lane per output column): split over blocks with few columns (sum,
     // variance, argmax, an epilogue; 70 columns: a partial tile), a block per tile with many
     // (float and int64 sums), channels-last statistics as batch norm's
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {5000, 70});
    ir::ValueId y = b.parameter(DType::Float64, {48, 3000});
    ir::ValueId z = b.parameter(DType::Float32, {8, 20, 20, 48});
    ir::ValueId nchw = b.permute(z, {0, 3, 1, 2});
    graph.set_outputs({b.reduce(ir::Op::sum, x, {0}, false), b.reduce(ir::Op::var, x, {0}, false, 1),
                       b.reduce(ir::Op::argmax, x, {0}, false),
                       b.binary(ir::Op::mul, b.reduce(ir::Op::max, x, {0}, false), b.reduce(ir::Op::min, x, {0}, false)),
                       b.reduce(ir::Op::sum, y, {0}, false),
                       b.reduce(ir::Op::sum, b.cast(b.binary(ir::Op::mul, y, b.constant(ir::Scalar::of(100.0), DType::Float64)), DType::Int64), {0}, false),
                       b.reduce(ir::Op::var, nchw, {0, 2, 3}, false), b.reduce(ir::Op::sum, nchw, {0, 2, 3}, false)});
    std::vector<Array> inputs = {random_array(DType::Float32, {5000, 70}, 21),
                                 random_array(DType::Float64, {48, 3000}, 22),
                                 random_array(DType::Float32, {8, 20, 20, 48}, 23)};
    expect_matches_interpreter(graph, inputs, 1e-3);
    expect_matches_interpreter(graph, inputs, 1e-3);  // the tickets are left ready for a rerun
  }
  {  // transposes whose loads run through a few positions per thread (a filter (O, C, 3, 3)
     // to (O, 3, 3, C); a (5, 7, 4) block to (7, 4, 5), uneven), and one too long for that
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId w = b.parameter(DType::Float32, {70, 33, 3, 3});
    ir::ValueId v = b.parameter(DType::Float64, {5, 7, 4});
    ir::ValueId m = b.parameter(DType::Float32, {300, 200});
    graph.set_outputs({b.permute(w, {0, 2, 3, 1}), b.binary(ir::Op::mul, b.permute(v, {1, 2, 0}), b.permute(v, {1, 2, 0})),
                       b.permute(m, {1, 0})});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {70, 33, 3, 3}, 24),
                                       random_array(DType::Float64, {5, 7, 4}, 25),
                                       random_array(DType::Float32, {300, 200}, 26)}, 0);
  }
  {  // few long rows, split over blocks: sum, variance, argmin and an epilogue
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float64, {6, 300000});
    graph.set_outputs({b.reduce(ir::Op::sum, x, {1}, false), b.reduce(ir::Op::var, x, {1}, false, 1),
                       b.reduce(ir::Op::argmin, x, {1}, false),
                       b.unary(ir::Op::sqrt, b.reduce(ir::Op::var, x, {1}, false))});
    std::vector<Array> inputs = {random_array(DType::Float64, {6, 300000}, 24)};
    expect_matches_interpreter(graph, inputs, 1e-9);
    expect_matches_interpreter(graph, inputs, 1e-9);
  }
  {  // scatter-add with many duplicate targets: atomic adds on every thread (float64, int64)
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId base = b.parameter(DType::Float64, {100, 64}), values = b.parameter(DType::Float64, {20000, 64});
    ir::ValueId index = b.parameter(DType::Int64, {20000});
    ir::ValueId counts = b.parameter(DType::Int64, {100});
    graph.set_outputs({b.scatter(base, index, values, 0, ir::ScatterMode::Add),
                       b.scatter(counts, index, b.cast(b.reduce(ir::Op::sum, values, {1}, false), DType::Int64),
                                 0, ir::ScatterMode::Add)});
    std::vector<int64_t> targets(20000);
    for (size_t i = 0; i < targets.size(); ++i) targets[i] = static_cast<int64_t>((i * 7919) % 100) - 50;
    expect_matches_interpreter(graph, {random_array(DType::Float64, {100, 64}, 19),
                                       random_array(DType::Float64, {20000, 64}, 20),
                                       Array::from_vector(targets, {20000}),
                                       Array::from_vector(std::vector<int64_t>(100, 3), {100})},
                               1e-9);
  }
}

// Extern calls on the GPU (runtime/cuda/cuda_extern_calls.h): matmul in cuBLAS, convolution and
// its gradients in cuDNN, each against the interpreter (without a GPU: refused clearly).
// x[i, j] = 7.5 on an array updated in place (row i put back through the mask column == j):
// one element stored (sched/pin_masked_elements.h), for rows and positions inside the array,
// wrapped and past its end (where the mask holds nowhere: the row is left as it was).
TEST(CudaPipeline, ElementAssignmentsMatchTheInterpreter) {
  for (int64_t row : {0, 39, -1}) {
    for (int64_t position : {0, 3, 69, 70, -2, 500}) {
      ir::Graph graph;
      ir::Builder b(graph);
      ir::ValueId x = b.parameter(DType::Float64, {40, 70});
      ir::ValueId index = b.parameter(DType::Int64, {1});
      ir::ValueId at = b.parameter(DType::Int64, {});
      const ir::Shape row_shape{ir::Dim(1), ir::Dim(70)};
      ir::ValueId base = b.scan(ir::Op::cumsum, x, 1);
      ir::ValueId here = b.binary(ir::Op::eq, b.iota(DType::Int64, row_shape, 1),
                                  b.broadcast(at, row_shape));
      ir::ValueId seven = b.constant(ir::Scalar::of(7.5), DType::Float64, row_shape);
      graph.set_outputs({b.scatter(base, index, b.where(here, seven, b.gather(base, index, 0)), 0,
                                   ir::ScatterMode::Set)});
      expect_matches_interpreter(
          graph, {random_array(DType::Float64, {40, 70}, 5),
                  Array::from_vector(std::vector<int64_t>{row}, {1}),
                  Array::from_vector(std::vector<int64_t>{position}, {})}, 1e-12);
    }
  }
}

TEST(CudaPipeline, LibraryCallsMatchTheInterpreter) {
  {  // matmul with a transposed operand, a pointwise epilogue and 1-D operands, float32 and 64
    for (DType dtype : {DType::Float32, DType::Float64}) {
      ir::Graph graph;
      ir::Builder b(graph);
      ir::ValueId x = b.parameter(dtype, {67, 129}), w = b.parameter(dtype, {45, 129});
      ir::ValueId v = b.parameter(dtype, {129});
      ir::ValueId y = b.matmul(x, b.permute(w, {1, 0}));
      graph.set_outputs({b.unary(ir::Op::tanh, y), b.matmul(x, v), b.matmul(v, b.permute(x, {1, 0}))});
      expect_matches_interpreter(graph, {random_array(dtype, {67, 129}, 5), random_array(dtype, {45, 129}, 6),
                                         random_array(dtype, {129}, 7)},
                                 dtype == DType::Float32 ? 1e-4 : 1e-11);
    }
  }
  {  // products of few rows, generated (codegen/cuda/skinny_matmul.cpp): a Linear layer at 8
     // tokens; two row tiles with a column block past the end; K not a multiple of 4 (scalar
     // loads); one row; a slice of the weight; an input view at an odd offset (unaligned: the
     // scalar path at run time)
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {8, 768}), w = b.parameter(DType::Float32, {768, 768});
    ir::ValueId x13 = b.parameter(DType::Float32, {13, 200}), w37 = b.parameter(DType::Float32, {37, 200});
    ir::ValueId x3 = b.parameter(DType::Float32, {3, 130}), w50 = b.parameter(DType::Float32, {50, 130});
    ir::ValueId wide = b.parameter(DType::Float32, {40, 132});
    auto transposed = [&](ir::ValueId m) { return b.permute(m, {1, 0}); };
    ir::ValueId t = transposed(w);
    ir::ValueId rows = b.slice(wide, {3, 0}, {40, 132}, {1, 1});    // offset 396: aligned
    ir::ValueId odd = b.slice(x3, {0, 1}, {3, 129}, {1, 1});        // offset 1: unaligned
    graph.set_outputs({b.unary(ir::Op::tanh, b.matmul(x, t)), b.matmul(x13, transposed(w37)),
                       b.matmul(x3, transposed(w50)),
                       b.matmul(b.slice(x, {2, 0}, {3, 768}, {1, 1}), t),
                       b.matmul(b.slice(x13, {0, 0}, {5, 132}, {1, 1}), transposed(rows)),
                       b.matmul(odd, transposed(b.slice(w50, {0, 0}, {50, 128}, {1, 1})))});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {8, 768}, 30),
                                       random_array(DType::Float32, {768, 768}, 31),
                                       random_array(DType::Float32, {13, 200}, 32),
                                       random_array(DType::Float32, {37, 200}, 33),
                                       random_array(DType::Float32, {3, 130}, 34),
                                       random_array(DType::Float32, {50, 130}, 35),
                                       random_array(DType::Float32, {40, 132}, 36)},
                               1e-3);
  }
  {  // batched: broadcast batch dimensions, a permuted (attention-like) operand
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId q = b.parameter(DType::Float32, {2, 3, 17, 8}), k = b.parameter(DType::Float32, {2, 17, 3, 8});
    ir::ValueId m = b.parameter(DType::Float32, {8, 5});
    graph.set_outputs({b.matmul(q, b.permute(k, {0, 2, 3, 1})), b.matmul(q, m)});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {2, 3, 17, 8}, 8),
                                       random_array(DType::Float32, {2, 17, 3, 8}, 9),
                                       random_array(DType::Float32, {8, 5}, 10)},
                               1e-4);
  }
  {  // convolution: bias, stride, padding, groups; channels-last; a 1-D one
    for (DType dtype : {DType::Float32, DType::Float64}) {
      ir::Graph graph;
      ir::Builder b(graph);
      ir::ValueId x = b.parameter(dtype, {2, 4, 13, 11}), w = b.parameter(dtype, {6, 2, 3, 3});
      ir::ValueId bias = b.parameter(dtype, {6});
      ir::ValueId xl = b.parameter(dtype, {2, 13, 11, 4}), w1 = b.parameter(dtype, {5, 4, 3});
      ir::ValueId y = b.convolution(x, w, bias, {2, 1}, {1, 1}, {1, 1}, 2);
      graph.set_outputs({b.unary(ir::Op::tanh, y),
                         b.convolution(xl, w, std::nullopt, {1, 1}, {0, 0}, {1, 2}, 2, true),
                         b.convolution(b.reshape(x, {2, 4, 143}), w1, std::nullopt, {1}, {2}, {1}, 1)});
      expect_matches_interpreter(graph, {random_array(dtype, {2, 4, 13, 11}, 11), random_array(dtype, {6, 2, 3, 3}, 12),
                                         random_array(dtype, {6}, 13), random_array(dtype, {2, 13, 11, 4}, 14),
                                         random_array(dtype, {5, 4, 3}, 15)},
                                 dtype == DType::Float32 ? 1e-4 : 1e-11);
    }
  }
  {  // float32 (exact: no TF32) with operands in mixed layouts, some of which cuDNN's
     // heuristics have no algorithm for (a channels-last filter, a channels-last activation
     // with a channels-first gradient): those run on packed channels-first copies
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {2, 4, 13, 11});
    ir::ValueId w_last = b.parameter(DType::Float32, {6, 3, 3, 4});
    ir::ValueId x_last = b.parameter(DType::Float32, {2, 13, 11, 4});
    ir::ValueId dy = b.parameter(DType::Float32, {2, 6, 7, 6});
    ir::ValueId dy_last = b.parameter(DType::Float32, {2, 7, 6, 6});
    ir::ValueId w = b.permute(w_last, {0, 3, 1, 2});
    graph.set_outputs({b.convolution(x, w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, 1),
                       b.convolution_backward_weight(dy, b.permute(x_last, {0, 3, 1, 2}), {6, 4, 3, 3},
                                                     {2, 2}, {1, 1}, {1, 1}, 1),
                       b.convolution_backward_input(b.permute(dy_last, {0, 3, 1, 2}), w, {2, 4, 13, 11},
                                                    {2, 2}, {1, 1}, {1, 1}, 1)});
    expect_matches_interpreter(graph, {random_array(DType::Float32, {2, 4, 13, 11}, 25),
                                       random_array(DType::Float32, {6, 3, 3, 4}, 26),
                                       random_array(DType::Float32, {2, 13, 11, 4}, 27),
                                       random_array(DType::Float32, {2, 6, 7, 6}, 28),
                                       random_array(DType::Float32, {2, 7, 6, 6}, 29)},
                               1e-4);
  }
  {  // the gradients of a strided, padded convolution
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId dy = b.parameter(DType::Float64, {2, 6, 7, 6}), w = b.parameter(DType::Float64, {6, 4, 3, 3});
    ir::ValueId x = b.parameter(DType::Float64, {2, 4, 13, 11});
    graph.set_outputs({b.convolution_backward_input(dy, w, {2, 4, 13, 11}, {2, 2}, {1, 1}, {1, 1}, 1),
                       b.convolution_backward_weight(dy, x, {6, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1)});
    expect_matches_interpreter(graph, {random_array(DType::Float64, {2, 6, 7, 6}, 16),
                                       random_array(DType::Float64, {6, 4, 3, 3}, 17),
                                       random_array(DType::Float64, {2, 4, 13, 11}, 18)},
                               1e-10);
  }
}

// Sorts on the GPU (sorted on the host: runtime/cuda/cuda_extern_calls.cpp) against the
// interpreter: a strided operand, descending with NaNs, a top-k, values gathered after it; in
// reduce-overhead too, where a program with a sort is never captured into a CUDA graph.
TEST(CudaPipeline, SortsMatchTheInterpreter) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {40, 700});
  ir::ValueId y = b.binary(ir::Op::div, b.unary(ir::Op::log, x), x);  // NaN below 0
  ir::ValueId columns = b.permute(y, {1, 0});
  ir::ValueId top = b.argsort(columns, 0, true, 7);
  graph.set_outputs({b.argsort(y, 1, false), top, b.take_along_axis(columns, top, 0),
                     b.argsort(b.unary(ir::Op::sin, y), 0, false, 3), b.sort(columns, 1, true)});
  for (const char* mode : {"default", "reduce-overhead"}) {
    Options options = cuda_options(test::test_cache_directory());
    options.mode = mode;
    CompileStats stats;
    if (refused_without_a_gpu(graph, options)) return;
    auto compiled = detail::compile_graph(graph, {}, options, stats);
    Array input = random_array(DType::Float32, {40, 700}, 41);
    std::vector<Array> expected = ir::interpret(graph, {input});
    for (int call = 0; call < 4; ++call) {
      std::vector<Array> outputs;
      compiled->executable->run({input}, outputs);
      ASSERT_EQ(outputs.size(), expected.size());
      for (size_t k = 0; k < outputs.size(); ++k)
        test::expect_array_matches(outputs[k], expected[k], {1e-5, 1e-5, 4},
                                   std::string(mode) + " output " + std::to_string(k));
    }
  }
}

// reduce-overhead on the GPU: the first run learns the input addresses, the second captures a
// CUDA graph (inputs that stayed put read in place, the others staged), later runs replay it;
// an input that moves is staged, a parameter that moves makes a new capture. Every run against
// the interpreter.
TEST(CudaPipeline, ReduceOverheadReplaysACapturedGraph) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 96}), w = b.parameter(DType::Float32, {96, 32});
  ir::ValueId y = b.matmul(b.unary(ir::Op::tanh, x), w);
  graph.set_outputs({b.binary(ir::Op::sub, y, b.reduce(ir::Op::max, y, {1}, true)),
                     b.reduce(ir::Op::sum, x, {}, false)});
  Options options = cuda_options(test::test_cache_directory());
  options.mode = "reduce-overhead";
  CompileStats stats;
  if (refused_without_a_gpu(graph, options)) return;
  auto compiled = detail::compile_graph(graph, {}, options, stats);
  auto on_device = [](const Array& host) {
    int64_t bytes = host.size() * dtype_size(host.dtype());
    std::shared_ptr<void> block = runtime::cuda::allocate(bytes);
    runtime::cuda::copy_to_device(block.get(), host.data(), bytes, nullptr);
    return Array::borrow(block.get(), host.dtype(), host.shape(), {}, block);
  };
  auto to_host = [](const Array& device) {
    Array host = Array::empty(device.dtype(), device.shape());
    runtime::cuda::copy_to_host(host.data(), device.data(), host.size() * dtype_size(host.dtype()), nullptr);
    return host;
  };
  Array weights = random_array(DType::Float32, {96, 32}, 21);
  Array w_device = on_device(weights);
  Array x_device = on_device(random_array(DType::Float32, {64, 96}, 22));
  for (int call = 0; call < 6; ++call) {
    Array x_host = random_array(DType::Float32, {64, 96}, 30 + static_cast<uint32_t>(call));
    if (call != 2) x_device = on_device(x_host);  // a new address each call, bar one
    else x_host = to_host(x_device);
    if (call == 4) w_device = on_device(weights);  // the parameter moves: captured again
    std::vector<Array> outputs;
    compiled->executable->run({x_device, w_device}, outputs);
    std::vector<Array> expected = ir::interpret(graph, {x_host, weights});
    for (size_t k = 0; k < outputs.size(); ++k)
      test::expect_array_matches(to_host(outputs[k]), expected[k], {1e-4, 1e-4, 4},
                                 "call " + std::to_string(call) + " output " + std::to_string(k));
  }
}

// default mode on the GPU replays a graph once runs are host-bound: the second run's queueing
// is timed on the host, the third replays with its copies timed on the GPU, the fourth judges.
// Ten small convolutions (cuDNN calls of tens of microseconds of host time each, a few of GPU
// time) replay; three kernels over 64 MiB each (the GPU's work dwarfs their queueing, and a
// replay would copy 64 MiB out) run as usual. Every run against the interpreter.
TEST(CudaPipeline, DefaultModeReplaysOnlyHostBoundRuns) {
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
    bool host_bound;
  };
  for (const Case& c : {Case{"convolutions", {2, 8, 12, 12}, true},
                        Case{"large kernels", {4096, 4096}, false}}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, ir::from_ints(c.shape)), y = x;
    std::vector<Array> inputs = {random_array(DType::Float32, c.shape, 40)};
    if (c.host_bound) {
      ir::ValueId w = b.parameter(DType::Float32, {8, 8, 3, 3});
      inputs.push_back(random_array(DType::Float32, {8, 8, 3, 3}, 41));
      // small weights: a contraction, so that rounding differences do not grow layer by layer
      w = b.binary(ir::Op::mul, w, b.constant(ir::Scalar::of(0.02), DType::Float32));
      for (int layer = 0; layer < 10; ++layer)
        y = b.unary(ir::Op::tanh, b.convolution(y, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, 1));
      graph.set_outputs({y});
    } else {
      ir::ValueId total = b.reduce(ir::Op::sum, b.unary(ir::Op::sin, x), {0}, true);
      ir::ValueId scaled = b.binary(ir::Op::mul, b.unary(ir::Op::cos, x), total);
      graph.set_outputs({b.reduce(ir::Op::max, scaled, {0}, true), scaled});
    }
    Options options = cuda_options(test::test_cache_directory());
    CompileStats stats;
    if (refused_without_a_gpu(graph, options)) return;
    auto compiled = detail::compile_graph(graph, {}, options, stats);
    auto* executable = dynamic_cast<runtime::CudaExecutable*>(compiled->executable.get());
    ASSERT_NE(executable, nullptr);
    std::vector<std::shared_ptr<void>> blocks;
    std::vector<Array> on_device;
    for (const Array& host : inputs) {
      int64_t bytes = host.size() * dtype_size(host.dtype());
      blocks.push_back(runtime::cuda::allocate(bytes));
      runtime::cuda::copy_to_device(blocks.back().get(), host.data(), bytes, nullptr);
      on_device.push_back(Array::borrow(blocks.back().get(), host.dtype(), host.shape(), {},
                                        blocks.back(), Device::Cuda));
    }
    std::vector<Array> expected = ir::interpret(graph, inputs);
    for (int call = 0; call < 6; ++call) {
      std::vector<Array> outputs;
      executable->run(on_device, outputs);
      for (size_t k = 0; k < outputs.size(); ++k)
        test::expect_array_matches(outputs[k].to(Device::Cpu), expected[k], {1e-3, 1e-3, 4},
                                   std::string(c.name) + " call " + std::to_string(call));
    }
    EXPECT_EQ(executable->replays_graphs(), c.host_bound) << c.name;
  }
}

// A runtime check (here: a value above 3) of a run whose results stay on the GPU is not waited
// for: a later run raises it, naming an earlier call (the next run if the GPU has finished the
// bad one by then, the second next at the latest: it waits); a run from host arrays raises its
// own.
// In both modes (reduce-overhead replays a graph that still copies the flags out); two checks,
// whose flags and values a device run writes into one block, copied back in one piece.
TEST(CudaPipeline, ChecksOfDeviceRunsAreRaisedByALaterRun) {
  for (const char* mode : {"default", "reduce-overhead"}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float64, {1000});
    ir::ValueId big = b.binary(ir::Op::gt, x, b.constant(ir::Scalar::of(3.0), DType::Float64));
    ir::ValueId low = b.binary(ir::Op::lt, x, b.constant(ir::Scalar::of(-5.0), DType::Float64));
    // a kernel, a matmul and a kernel after it: enough launches for reduce-overhead's graph
    ir::ValueId product = b.matmul(b.reshape(b.unary(ir::Op::sin, x), {40, 25}),
                                   b.reshape(b.unary(ir::Op::cos, x), {25, 40}));
    graph.set_outputs({b.unary(ir::Op::tanh, product), b.reduce(ir::Op::any, big, {}, false),
                       b.cast(b.reduce(ir::Op::max, x, {}, false), DType::Int64),
                       b.reduce(ir::Op::any, low, {}, false),
                       b.cast(b.reduce(ir::Op::min, x, {}, false), DType::Int64)});
    runtime::RuntimeCheck check, below;
    check.flag_output = 1, check.value_output = 2, check.kind = ErrorKind::Index;
    check.before = "kiln: value ", check.after = " above 3";
    below.flag_output = 3, below.value_output = 4, below.kind = ErrorKind::Value;
    below.before = "kiln: value ", below.after = " below -5";
    Options options = cuda_options(test::test_cache_directory());
    options.mode = mode;
    CompileStats stats;
    if (!runtime::cuda::available()) {
      EXPECT_THROW(detail::compile_graph(graph, {}, options, stats, {check, below}), Error);
      return;
    }
    auto compiled = detail::compile_graph(graph, {}, options, stats, {check, below});
    std::vector<double> values(1000, 1.0);
    values[17] = 7.5;
    Array host = Array::from_vector(values, {1000});
    std::shared_ptr<void> block = runtime::cuda::allocate(8000);
    runtime::cuda::copy_to_device(block.get(), host.data(), 8000, nullptr);
    Array device = Array::borrow(block.get(), DType::Float64, {1000}, {}, block);
    std::vector<Array> outputs;
    EXPECT_THROW(compiled->executable->run({host}, outputs), Error) << mode;  // its own
    Array good = Array::from_vector(std::vector<double>(1000, 0.5), {1000});
    runtime::cuda::copy_to_device(block.get(), good.data(), 8000, nullptr);
    for (int call = 0; call < 3; ++call) {  // reduce-overhead: learn, capture, replay
      outputs.clear();
      compiled->executable->run({device}, outputs);
    }
    runtime::cuda::synchronize(nullptr);
    // A run on `data` returns; one of the next two raises its check (`finished`: the GPU is
    // done with it first, and the next raises it).
    auto expect_raised_later = [&](const void* data, ErrorKind kind, const std::string& text,
                                   bool finished) {
      runtime::cuda::copy_to_device(block.get(), data, 8000, nullptr);
      outputs.clear();
      compiled->executable->run({device}, outputs);
      EXPECT_EQ(outputs.size(), 1u);
      runtime::cuda::copy_to_device(block.get(), good.data(), 8000, nullptr);
      if (finished) runtime::cuda::synchronize(nullptr);
      int raised_by = 0;
      for (int later = 1; later <= 2 && raised_by == 0; ++later) {
        try {
          outputs.clear();
          compiled->executable->run({device}, outputs);
        } catch (const Error& error) {
          raised_by = later;
          EXPECT_EQ(error.kind(), kind);
          EXPECT_NE(std::string(error.what()).find(text + " (in an earlier call"),
                    std::string::npos) << error.what();
        }
      }
      EXPECT_NE(raised_by, 0) << mode << ": no error from the earlier call";
      if (finished) EXPECT_EQ(raised_by, 1) << mode;
      runtime::cuda::synchronize(nullptr);
      outputs.clear();
      EXPECT_NO_THROW(compiled->executable->run({device}, outputs)) << mode;  // raised once
    };
    expect_raised_later(host.data(), ErrorKind::Index, "value 7 above 3", true);
    expect_raised_later(host.data(), ErrorKind::Index, "value 7 above 3", false);
    values[17] = 0.5, values[3] = -9.5;  // the second check's flag and value
    expect_raised_later(values.data(), ErrorKind::Value, "value -9 below -5", true);
  }
}


// Many short rows run a warp each (launch_plans.cpp: warp_iterations): a softmax, a variance, an
// argmax, a float64 sum and a row with a NaN, against the interpreter where there is a GPU.
TEST(CudaPipeline, ManyShortRowsRunAWarpEach) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {8192, 96});
  ir::ValueId shifted = b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {1}, true));
  ir::ValueId e = b.unary(ir::Op::exp, shifted);
  graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true)),
                     b.reduce(ir::Op::var, x, {1}, true), b.reduce(ir::Op::argmax, x, {1}, false),
                     b.reduce(ir::Op::sum, b.cast(x, DType::Float64), {1}, false)});
  Array input = random_array(DType::Float32, {8192, 96}, 61);
  input.data_as<float>()[77 * 96 + 5] = NAN;
  expect_matches_interpreter(graph, {input}, 1e-5);
}

// Linear layers on the GPU: x @ W.T + b with a ReLU, and without, are cuBLASLt products with
// their bias (and ReLU) as the epilogue, no kernel of their own (passes/matmul_epilogues.cpp);
// against the interpreter where there is a GPU, NaN and infinities included (the ReLU keeps
// NaN, as torch's does).
TEST(CudaPipeline, LinearLayersRunWithCublasLtEpilogues) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 96});
  ir::ValueId w1 = b.parameter(DType::Float32, {128, 96}), b1 = b.parameter(DType::Float32, {128});
  ir::ValueId w2 = b.parameter(DType::Float32, {32, 128}), b2 = b.parameter(DType::Float32, {32});
  ir::ValueId zero = b.constant(ir::Scalar::of(0.0), DType::Float32);
  ir::ValueId hidden = b.binary(
      ir::Op::maximum, b.binary(ir::Op::add, b.matmul(x, b.permute(w1, {1, 0})), b1), zero);
  graph.set_outputs({b.binary(ir::Op::add, b.matmul(hidden, b.permute(w2, {1, 0})), b2)});
  const target::Target target = target::cuda_device(90, 132);
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, detail::disabled_passes());
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, target, {});
  std::vector<std::vector<int64_t>> epilogues;  // by extern step: its parameters
  for (const sched::Step& step : program.steps) {
    if (step.kind != sched::StepKind::Extern) continue;
    EXPECT_EQ(step.call.inputs.size(), 3u);
    epilogues.push_back(step.call.parameters);
  }
  EXPECT_EQ(epilogues, (std::vector<std::vector<int64_t>>{{1}, {0}}));
  EXPECT_TRUE(program.kernels.empty()) << sched::print_program(program);
  Array input = random_array(DType::Float32, {64, 96}, 51);
  input.data_as<float>()[3 * 96 + 5] = NAN;  // row 3 of the product NaN
  for (int64_t k = 0; k < 96; ++k) input.data_as<float>()[10 * 96 + k] = INFINITY;  // inf - inf
  input.data_as<float>()[11 * 96] = -INFINITY;  // row 11: infinities of both signs
  expect_matches_interpreter(graph,
                             {input,
                              random_array(DType::Float32, {128, 96}, 52),
                              random_array(DType::Float32, {128}, 53),
                              random_array(DType::Float32, {32, 128}, 54),
                              random_array(DType::Float32, {32}, 55)},
                             1e-3);
}

Options autotune_options(const std::string& cache) {
  Options options = cuda_options(cache);
  options.mode = "max-autotune-no-cudagraphs";
  return options;
}

// Runs `compiled` on `inputs`; each output must match the interpreter's `expected`.
void run_and_compare(detail::CompiledGraph& compiled, const std::vector<Array>& inputs,
                     const std::vector<Array>& expected, const std::string& what) {
  std::vector<Array> outputs;
  compiled.executable->run(inputs, outputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t k = 0; k < outputs.size(); ++k)
    test::expect_array_matches(outputs[k], expected[k], {1e-4, 1e-4, 4},
                               what + " output " + std::to_string(k));
}

// max-autotune on the GPU: the first run times each kernel's launch shapes, and the product of
// few rows as its generated kernel and in cuBLAS, each from the same inputs; the results match
// the interpreter, the choices go to autotune-cuda.txt beside the cubins, and a later compile
// (another process) reads them back instead of timing again.
TEST(CudaPipeline, MaxAutotuneTimesLaunchShapesAndStoresTheChoices) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1000, 300});
  ir::ValueId rows = b.parameter(DType::Float32, {37, 1000});
  ir::ValueId few = b.parameter(DType::Float32, {8, 256}), w = b.parameter(DType::Float32, {512, 256});
  ir::ValueId e = b.unary(ir::Op::exp, b.binary(ir::Op::sub, rows, b.reduce(ir::Op::max, rows, {1}, true)));
  graph.set_outputs({b.binary(ir::Op::add, b.unary(ir::Op::sin, x), b.unary(ir::Op::cos, x)),
                     b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true)),
                     b.matmul(few, b.permute(w, {1, 0})), b.reduce(ir::Op::sum, x, {0}, false)});
  const std::vector<Array> inputs = {
      random_array(DType::Float32, {1000, 300}, 41), random_array(DType::Float32, {37, 1000}, 42),
      random_array(DType::Float32, {8, 256}, 43), random_array(DType::Float32, {512, 256}, 44)};
  test::TemporaryDirectory cache("kiln-autotune-cuda-");
  const Options options = autotune_options(cache.path());
  CompileStats stats;
  if (refused_without_a_gpu(graph, options)) return;
  const std::vector<Array> expected = ir::interpret(graph, inputs);
  auto tuned = detail::compile_graph(graph, {}, options, stats);
  auto& executable = dynamic_cast<runtime::CudaExecutable&>(*tuned->executable);
  EXPECT_TRUE(std::all_of(executable.step_choices().begin(), executable.step_choices().end(),
                          [](int choice) { return choice == 0; }));
  run_and_compare(*tuned, inputs, expected, "the tuning run");
  run_and_compare(*tuned, inputs, expected, "a tuned run");
  const std::vector<int> chosen = executable.step_choices();
  const std::string record =
      std::filesystem::path(tuned->source_path).parent_path().string() + "/autotune-cuda.txt";
  std::ifstream file(record);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("kiln-autotune-cuda 1\n", 0), 0u) << record << ": " << text.str();
  CompileStats again;
  auto loaded = detail::compile_graph(graph, {}, options, again);
  EXPECT_EQ(again.disk_hits, 1);
  EXPECT_EQ(dynamic_cast<runtime::CudaExecutable&>(*loaded->executable).step_choices(), chosen);
  run_and_compare(*loaded, inputs, expected, "a run with the choices read back");
  // A damaged record is "not tuned yet": timed again, never trusted.
  std::ofstream(record) << "kiln-autotune-cuda 1\n99\n";
  auto retuned = detail::compile_graph(graph, {}, options, again);
  auto& fresh = dynamic_cast<runtime::CudaExecutable&>(*retuned->executable);
  EXPECT_TRUE(std::all_of(fresh.step_choices().begin(), fresh.step_choices().end(),
                          [](int choice) { return choice == 0; }));
  run_and_compare(*retuned, inputs, expected, "a run after the damaged record");
}

// max-autotune times each library product as cuBLASLt's first candidates (cuda::Gemm::candidate;
// a plain product's first is cuBLAS's own), the products with a bias epilogue and without; a
// record that forces candidate c on every product is read back as it is, and each candidate
// computes the same products.
TEST(CudaPipeline, MaxAutotuneTimesTheLibrarysCandidatesOfEachProduct) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {256, 512}), w = b.parameter(DType::Float32, {384, 512});
  ir::ValueId bias = b.parameter(DType::Float32, {384}), y = b.parameter(DType::Float32, {512, 200});
  graph.set_outputs({b.binary(ir::Op::add, b.matmul(x, b.permute(w, {1, 0})), bias),
                     b.matmul(x, y)});
  const std::vector<Array> inputs = {
      random_array(DType::Float32, {256, 512}, 61), random_array(DType::Float32, {384, 512}, 62),
      random_array(DType::Float32, {384}, 63), random_array(DType::Float32, {512, 200}, 64)};
  test::TemporaryDirectory cache("kiln-autotune-gemm-");
  const Options options = autotune_options(cache.path());
  CompileStats stats;
  if (refused_without_a_gpu(graph, options)) return;
  const std::vector<Array> expected = ir::interpret(graph, inputs);
  auto tuned = detail::compile_graph(graph, {}, options, stats);
  run_and_compare(*tuned, inputs, expected, "the tuning run");
  const sched::Program& program = tuned->executable->program();
  std::vector<bool> products;
  for (const sched::Step& step : program.steps)
    products.push_back(step.kind == sched::StepKind::Extern && step.call.op == ir::Op::matmul);
  ASSERT_EQ(std::count(products.begin(), products.end(), true), 2);
  const std::vector<int>& chosen = dynamic_cast<runtime::CudaExecutable&>(*tuned->executable).step_choices();
  for (size_t k = 0; k < chosen.size(); ++k)
    if (products[k]) EXPECT_LT(chosen[k], runtime::cuda::kGemmCandidates) << k;
  const std::string record =
      std::filesystem::path(tuned->source_path).parent_path().string() + "/autotune-cuda.txt";
  for (int candidate = 1; candidate < runtime::cuda::kGemmCandidates; ++candidate) {
    std::vector<int> forced;
    std::string text = "kiln-autotune-cuda 1\n";
    for (bool product : products) {
      forced.push_back(product ? candidate : 0);
      text += std::to_string(forced.back()) + "\n";
    }
    std::ofstream(record) << text;
    CompileStats again;
    auto loaded = detail::compile_graph(graph, {}, options, again);
    EXPECT_EQ(dynamic_cast<runtime::CudaExecutable&>(*loaded->executable).step_choices(), forced);
    run_and_compare(*loaded, inputs, expected, "candidate " + std::to_string(candidate));
  }
}

}  // namespace
}  // namespace kiln
