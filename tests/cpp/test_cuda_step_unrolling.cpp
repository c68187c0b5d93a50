// How many iterations a ThreadPerIteration launch's thread runs per step (codegen/cuda/
// step_unrolling.cpp). A heavy step of stores (resnet18's stem: batch norm and ReLU inlined into
// each of a 3x3 max pool's nine taps, four 16-byte lanes) runs one iteration a thread, printed
// once a path: unrolled, it was printed for the runs wholly in range and again, guarded, for the
// last one, in the vector path and in the scalar one (1234 lines, 938 ms of NVRTC). A light
// step (the batch norm and ReLU alone) keeps its unrolled steps. Both compile.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "api/pipeline.h"
#include "codegen/cuda/cuda_emitter.h"
#include "ir/builder.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln {
namespace {

const target::Target kH200 = target::cuda_device(90, 132);
// A run's unguarded copy of the steps (step_emitter.cpp), then its guarded copy.
constexpr const char* kWholeRuns = "if (kiln_run + ";

codegen::CudaSource emit(const ir::Graph& graph) {
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH200, {});
  return codegen::emit_cuda(program, Options{}, kH200, false);
}

// resnet18's stem after its convolution, channels-last (16, 112, 112, 64): inference batch
// norm as x * scale + shift, ReLU, and, with `pool`, max_pool2d(3, stride 2, padding 1) over
// nine strided slices of the -inf padded activations, as the torch frontend writes it.
ir::Graph stem(bool pool) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {16, 112, 112, 64});
  ir::ValueId scale = b.parameter(DType::Float32, {64});
  ir::ValueId shift = b.parameter(DType::Float32, {64});
  ir::ValueId normed = b.binary(ir::Op::add, b.binary(ir::Op::mul, x, scale), shift);
  ir::ValueId relu =
      b.binary(ir::Op::maximum, normed, b.constant(ir::Scalar::of(0.0), DType::Float32));
  if (!pool) {
    graph.set_outputs({relu});
    return graph;
  }
  ir::ValueId padded = b.pad(relu, {0, 1, 1, 0}, {0, 1, 1, 0}, ir::PadMode::Constant,
                             ir::Scalar::of(-std::numeric_limits<double>::infinity()));
  ir::ValueId pooled = -1;
  for (int64_t dy = 0; dy < 3; ++dy)
    for (int64_t dx = 0; dx < 3; ++dx) {
      ir::ValueId tap =
          b.slice(padded, {0, dy, dx, 0}, {16, dy + 111, dx + 111, 64}, {1, 2, 2, 1});
      if (pooled < 0) {
        pooled = tap;
        continue;
      }
      // torch's decomposition: the larger, or a NaN (max_pool2d's graph from the torch frontend)
      ir::ValueId takes = b.binary(ir::Op::logical_or, b.binary(ir::Op::gt, tap, pooled),
                                   b.unary(ir::Op::isnan, tap));
      pooled = b.where(takes, tap, pooled);
    }
  graph.set_outputs({pooled});
  return graph;
}

// The function that stores the pool: its 16-byte path and its scalar one, each printed once.
TEST(CudaStepUnrolling, AHeavyStepRunsOnceAThreadOneCopyAPath) {
  const codegen::CudaSource source = emit(stem(true));
  ASSERT_EQ(source.functions.size(), 1u) << source.text;
  const std::string& function = source.functions[0];
  ASSERT_NE(function.find("float4"), std::string::npos) << function;  // the vector path
  ASSERT_NE(function.find("& 15) == 0"), std::string::npos) << function;
  EXPECT_EQ(function.find(kWholeRuns), std::string::npos) << function;
  EXPECT_EQ(function.find("kiln_u < 2;"), std::string::npos) << function;
  EXPECT_EQ(function.find("kiln_u < 4;"), std::string::npos) << function;
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "stem.cu", 90).size(), 0u);
}

// Batch norm and ReLU alone: a step of a few values keeps several iterations a thread, its
// whole runs unguarded.
TEST(CudaStepUnrolling, ALightStepStaysUnrolled) {
  const codegen::CudaSource source = emit(stem(false));
  ASSERT_EQ(source.functions.size(), 1u) << source.text;
  EXPECT_NE(source.functions[0].find(kWholeRuns), std::string::npos) << source.functions[0];
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "norm.cu", 90).size(), 0u);
}

}  // namespace
}  // namespace kiln
