// The CUDA emitter's cap on whole unrolling (CudaKernelEmitter::cap_unrolling): a loop a warp's
// lanes share, of 24 steps a lane, whose body is long, is unrolled 4 steps at a time (NVRTC's
// time grows with the copies: BERT's embedding + layer norm took 336 ms unrolled whole, 140 ms
// by 4); a short body, or one that reads row registers, stays unrolled whole. Both compile.
#include <gtest/gtest.h>

#include <string>

#include "api/pipeline.h"
#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/cuda_emitter.h"
#include "ir/builder.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln {
namespace {

const target::Target kH100 = target::cuda_device(90, 132);
constexpr const char* kCapped = "#pragma unroll 4  // (NVRTC's time)";

codegen::CudaSource emit(const ir::Graph& graph) {
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
  return codegen::emit_cuda(program, Options{}, kH100, false);
}

// 1024 rows of 768 (a warp a row, 24 elements a lane): out = f(x) * sum(w) of the row, with
// `chain` alternating additions and products of constants as f; x and w each read by one
// statement (no row registers).
codegen::CudaSource rows(int chain) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1024, 768});
  ir::ValueId w = b.parameter(DType::Float32, {1024, 768});
  ir::ValueId f = x;
  for (int k = 0; k < chain; ++k)  // (cheap to compile: the test's NVRTC time stays short)
    f = b.binary(k % 2 ? ir::Op::mul : ir::Op::add, f,
                 b.constant(ir::Scalar::of(1.0 + k / 64.0), DType::Float32));
  graph.set_outputs({b.binary(ir::Op::mul, f, b.reduce(ir::Op::sum, w, {1}, true))});
  return emit(graph);
}

TEST(CudaUnrollCap, ALongRowLoopIsUnrolledByFourAndCompiles) {
  const codegen::CudaSource long_body = rows(60);
  ASSERT_NE(long_body.text.find("_step < 24;"), std::string::npos) << long_body.text;
  EXPECT_NE(long_body.text.find(kCapped), std::string::npos) << long_body.text;
  EXPECT_GT(runtime::cuda::compile_cubin(long_body.text, "capped.cu", 90).size(), 0u);
  const codegen::CudaSource short_body = rows(2);
  ASSERT_NE(short_body.text.find("_step < 24;"), std::string::npos) << short_body.text;
  EXPECT_EQ(short_body.text.find(kCapped), std::string::npos) << short_body.text;
  EXPECT_GT(runtime::cuda::compile_cubin(short_body.text, "whole.cu", 90).size(), 0u);
}

// A layer norm of the same rows reads x in three loops from row registers (kiln_row0, indexed
// by the step): partly unrolled they would live in local memory, so its loops stay whole
// however long the body.
TEST(CudaUnrollCap, LoopsReadingRowRegistersStayUnrolledWhole) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1024, 768});
  ir::ValueId f = x;
  for (int k = 0; k < 60; ++k) f = b.unary(k % 2 ? ir::Op::cos : ir::Op::sin, f);
  ir::ValueId centered = b.binary(ir::Op::sub, x, b.reduce(ir::Op::sum, x, {1}, true));
  ir::ValueId scaled = b.binary(ir::Op::div, centered, b.reduce(ir::Op::var, x, {1}, true));
  graph.set_outputs({b.binary(ir::Op::mul, scaled, f)});
  const codegen::CudaSource source = emit(graph);
  ASSERT_NE(source.text.find("kiln_row0["), std::string::npos) << source.text;
  EXPECT_EQ(source.text.find(kCapped), std::string::npos) << source.text;
}

// The skinny products' K loop (a header template) is unrolled at most 4 steps, and their
// instances count in a function's estimated cost by their K.
TEST(CudaUnrollCap, SkinnyProductInstancesCostByTheirSteps) {
  auto cost = [](const std::string& parameters) {
    return codegen::estimated_nvrtc_cost("  kiln_skinny_matmul<" + parameters + ">(a, b, c);\n");
  };
  const int64_t one_step = cost("8, 768, 768, 768ll, 768ll, 8, true");
  EXPECT_GT(one_step, 5000);
  EXPECT_GT(cost("8, 768, 3072, 3072ll, 3072ll, 8, true"), one_step);       // 3 steps
  EXPECT_GT(cost("8, 768, 768, 768ll, 768ll, 8, false"), one_step);         // 3 steps
  EXPECT_EQ(cost("8, 768, 3072, 3072ll, 3072ll, 8, false"),                 // 12: 4 unrolled
            cost("8, 768, 1024, 1024ll, 1024ll, 8, false"));
}

}  // namespace
}  // namespace kiln
