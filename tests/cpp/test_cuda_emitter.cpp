// The CUDA emitter. CI has no GPU: here its output for the differential fuzzer's corpus is
// compiled for sm_90 by NVRTC (what kiln compiles with at run time: pip's nvidia-cuda-nvrtc,
// which scripts/setup.sh installs, found through $KILN_NVRTC_DIR) and by nvcc, which catches
// what the emitter gets wrong in the text (syntax, types, host functions called from device
// code); scripts/gpu-check runs the same corpus on a GPU against the interpreter (test_fuzz.cpp
// with KILN_FUZZ_DEVICE=cuda).
//   KILN_CUDA_EMIT_GRAPHS=N  fuzz graphs to emit and compile (default 300)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>

#include "api/pipeline.h"
#include "compile_test_util.h"
#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/cuda_emitter.h"
#include "sched/independent_kernels.h"
#include "sched/split_wide_loops.h"
#include "fuzz_graph_generator.h"
#include "ir/builder.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_extern_calls.h"

namespace kiln {
namespace {

const target::Target kH100 = target::cuda_device(90, 132);

std::string find_nvcc() {
  if (const char* path = std::getenv("KILN_NVCC")) return path;
  for (const char* candidate : {"/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(candidate)) return candidate;
  return "";
}

codegen::CudaSource emit(const ir::Graph& graph,
                         const std::vector<std::vector<int64_t>>& strides = {},
                         const target::Target& target = kH100, bool launch_alternatives = false) {
  detail::PreparedGraph prepared = detail::prepare_graph(graph, strides, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, target, {});
  return codegen::emit_cuda(program, Options{}, target, launch_alternatives);
}

// The options NVRTC compiles kiln's kernels with, for nvcc's command line.
std::string kernel_options() {
  std::string text;
  for (const std::string& option : runtime::cuda::kernel_options()) text += " " + option;
  return text;
}

// nvcc's exit status and the first lines of its messages.
std::pair<int, std::string> compile_with_nvcc(const std::string& source, const std::string& stem) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("kiln_cuda_emit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (stem + ".cu")) << source;
  std::string command = find_nvcc() + " -arch=sm_90" + kernel_options() + " -diag-suppress 177 -cubin -o " +
                        (dir / (stem + ".cubin")).string() + " " + (dir / (stem + ".cu")).string() +
                        " > " + (dir / (stem + ".log")).string() + " 2>&1";
  int status = std::system(command.c_str());
  std::ifstream log(dir / (stem + ".log"));
  std::string text, line;
  for (int k = 0; k < 30 && std::getline(log, line); ++k) text += line + "\n";
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) std::filesystem::remove_all(dir);
  return {code, text + "(source: " + (dir / (stem + ".cu")).string() + ")"};
}

// nvcc's PTX for `source` (empty if it does not compile; the log then names the file).
std::string ptx_with_nvcc(const std::string& source, const std::string& stem) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("kiln_cuda_ptx_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (stem + ".cu")) << source;
  std::string command = find_nvcc() + " -arch=sm_90" + kernel_options() + " -diag-suppress 177 -ptx -o " +
                        (dir / (stem + ".ptx")).string() + " " + (dir / (stem + ".cu")).string() +
                        " > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return "";
  std::ifstream file(dir / (stem + ".ptx"));
  std::string ptx((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return ptx;
}

// A row softmax: the rows go to blocks, each row's max and sum are combined across the block.
TEST(CudaEmitter, RowReductionsGetABlockPerRow) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 1000});
  ir::ValueId shifted = b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {1}, true));
  ir::ValueId e = b.unary(ir::Op::exp, shifted);
  graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true))});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  EXPECT_EQ(source.kernels[0].launches[0].blocks, 64);
  EXPECT_EQ(source.kernels[0].launches[0].threads, 256);
  EXPECT_NE(source.text.find("kiln_shuffle_down"), std::string::npos);
  EXPECT_NE(source.text.find("__launch_bounds__(256)"), std::string::npos);
}

// Many short rows (attention scores: 12288 rows of 128): a warp per row, eight rows a block,
// each lane an unrolled four elements, the reductions combined by shuffles alone (no shared
// memory, no block barrier); mean and variance (two passes) and argmax too.
TEST(CudaEmitter, ManyShortRowsRunAWarpEach) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {12288, 128});
  ir::ValueId shifted = b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {1}, true));
  ir::ValueId e = b.unary(ir::Op::exp, shifted);
  graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true)),
                     b.reduce(ir::Op::var, x, {1}, true), b.reduce(ir::Op::argmax, x, {1}, false)});
  codegen::CudaSource source = emit(graph);
  for (const runtime::CudaKernelCall& kernel : source.kernels) {
    ASSERT_EQ(kernel.launches.size(), 1u);
    EXPECT_EQ(kernel.launches[0].threads, 256);
    EXPECT_EQ(kernel.launches[0].blocks, std::min<int64_t>(12288 / 8, 8 * 132));
  }
  EXPECT_NE(source.text.find("kiln_flat += (int64_t)gridDim.x * 8)"), std::string::npos) << source.text;
  EXPECT_NE(source.text.find("_step < 4; ++"), std::string::npos) << source.text;
  EXPECT_NE(source.text.find("kiln_shuffle_first("), std::string::npos) << source.text;
  EXPECT_EQ(source.text.find("__syncthreads"), std::string::npos) << source.text;
  EXPECT_EQ(source.text.find("__shared__"), std::string::npos) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "warp_rows");
  EXPECT_EQ(code, 0) << log;
  // Fewer rows than four blocks of warps per multiprocessor keep a block each.
  ir::Graph few;
  ir::Builder f(few);
  ir::ValueId y = f.parameter(DType::Float32, {1024, 128});
  few.set_outputs({f.reduce(ir::Op::sum, f.unary(ir::Op::exp, y), {1}, true)});
  EXPECT_EQ(emit(few).text.find("int kiln_lane ="), std::string::npos);
}

// An elementwise map: four steps of two doubles per thread, a block per run of 1024 steps
// (the whole grid covering the array once), each step's line prefetched before any computes.
TEST(CudaEmitter, ElementwiseLoopsAreFlattenedOverThreads) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {1000, 3000});
  graph.set_outputs({b.binary(ir::Op::add, b.unary(ir::Op::sin, x), b.unary(ir::Op::cos, x))});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  EXPECT_EQ(source.kernels[0].launches[0].threads, 256);
  EXPECT_EQ(source.kernels[0].launches[0].blocks, (1000 * 3000 / 2 + 1023) / 1024);
  EXPECT_NE(source.text.find("kiln_run += (int64_t)gridDim.x * 1024"), std::string::npos);
  EXPECT_NE(source.text.find("const int64_t kiln_flat = kiln_run + kiln_u * 256 + threadIdx.x;"),
            std::string::npos);
  EXPECT_NE(source.text.find("kiln_prefetch(a0 + ("), std::string::npos) << source.text;
}

// kmeans' labels: each point's distances to the means are a reduction in its thread, whose
// loads of the point would wait on memory step after step; the thread's points are prefetched
// first (the inner loop at its first iteration). Not prefetched: the means (a broadcast, the
// same lines for every warp), a padded operand's loads (a select's branch, out of range where it
// is not taken), a load 32 bytes a step (its prefetches cost more than they hide), and anything
// of a launch the GPU runs in one wave.
TEST(CudaEmitter, StepLoadsArePrefetchedBeforeTheStepsCompute) {
  auto labels = [](int64_t n) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {n, 2});
    ir::ValueId means = b.parameter(DType::Float32, {2, 2});
    ir::ValueId d = b.binary(ir::Op::sub, b.reshape(x, {1, n, 2}), b.reshape(means, {2, 1, 2}));
    ir::ValueId norm =
        b.unary(ir::Op::sqrt, b.reduce(ir::Op::sum, b.binary(ir::Op::mul, d, d), {2}, false));
    ir::ValueId y = b.parameter(DType::Float32, {n - 2});
    ir::ValueId padded = b.pad(y, {1}, {1}, ir::PadMode::Constant);
    ir::ValueId wide = b.parameter(DType::Float32, {n, 8});
    ir::ValueId column = b.reshape(b.slice(wide, {0, 3}, {n, 4}, {1, 1}), {n});
    graph.set_outputs({b.reduce(ir::Op::argmin, norm, {0}, false),
                       b.binary(ir::Op::add, padded, column)});
    return emit(graph);
  };
  const int64_t n = 2000000;
  codegen::CudaSource source = labels(n);
  ASSERT_EQ(source.kernels.size(), 1u);  // both outputs: one kernel
  EXPECT_EQ(source.kernels[0].launches[0].blocks, (n + 1023) / 1024);
  EXPECT_NE(source.text.find("kiln_prefetch(a0 + ((i0) * 2 + i2));"), std::string::npos) << source.text;
  for (const char* absent : {"kiln_prefetch(a1", "kiln_prefetch(a2", "kiln_prefetch(a3"})
    EXPECT_EQ(source.text.find(absent), std::string::npos) << absent << "\n" << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "prefetches");
  EXPECT_EQ(code, 0) << log;
  EXPECT_EQ(labels(100000).text.find("kiln_prefetch(a"), std::string::npos);  // one wave
}

// BERT-base's feed-forward activation at `tokens` tokens: a bias add and GELU over (tokens, 3072).
ir::Graph bias_and_gelu(int64_t tokens) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {tokens, 3072});
  ir::ValueId bias = b.parameter(DType::Float32, {3072});
  ir::ValueId biased = b.binary(ir::Op::add, x, b.broadcast(bias, {tokens, 3072}));
  graph.set_outputs({b.binary(ir::Op::mul, biased, b.unary(ir::Op::erf, biased))});
  return graph;
}

// Vector steps of more than a wave load their operands into registers for all of a thread's
// steps before any computes (BERT-base 8x128's bias + GELU: two float4 steps a thread; the bias,
// a broadcast, is not prefetched), up to kMostPrefetchedVectorWords registers: of six operands
// at four steps a thread, four go to registers and two are prefetched into L1. The scalar loop
// for misaligned arrays keeps L1 prefetches.
TEST(CudaEmitter, VectorStepsLoadTheirOperandsIntoRegistersFirst) {
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  codegen::CudaSource gelu = emit(bias_and_gelu(1024));
  EXPECT_NE(gelu.text.find("float4 kiln_pv"), std::string::npos) << gelu.text;
  EXPECT_NE(gelu.text.find("[2];"), std::string::npos) << gelu.text;  // two steps a thread
  // Each twice: in a run's unguarded steps and in its guarded ones (RunsInRangeTakeTheirSteps...)
  EXPECT_EQ(count(gelu.text, "[kiln_u] = __ldg(reinterpret_cast<const float4*>(a0 + "), 2u) << gelu.text;
  EXPECT_EQ(count(gelu.text, "kiln_prefetch(a0"), 2u) << gelu.text;  // the scalar loop's
  EXPECT_EQ(count(gelu.text, "kiln_prefetch(a1"), 0u) << gelu.text;
  auto [code, log] = compile_with_nvcc(gelu.text, "register_prefetches");
  EXPECT_EQ(code, 0) << log;

  ir::Graph sum_graph;
  ir::Builder b(sum_graph);
  ir::ValueId total = b.parameter(DType::Float32, {4000, 3000});
  for (int k = 1; k < 6; ++k)
    total = b.binary(ir::Op::add, total, b.parameter(DType::Float32, {4000, 3000}));
  sum_graph.set_outputs({total});
  codegen::CudaSource sum = emit(sum_graph);
  EXPECT_EQ(count(sum.text, "[kiln_u] = __ldg("), 2 * 4u) << sum.text;
  EXPECT_EQ(count(sum.text, "kiln_prefetch(a"), 2 * (2u + 6u)) << sum.text;  // vector + scalar loop
  auto [sum_code, sum_log] = compile_with_nvcc(sum.text, "register_prefetch_budget");
  EXPECT_EQ(sum_code, 0) << sum_log;
}

// A run of several steps a thread that lies wholly in range takes them without a guard each, so
// that the compiler can issue every step's loads before the first store (a 5-point stencil's
// loads waited step by step behind the guards' branches); the last, partial run keeps them.
TEST(CudaEmitter, RunsInRangeTakeTheirStepsWithoutAGuardEach) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId u = b.parameter(DType::Float32, {1000, 1000});
  auto shifted = [&](int64_t row, int64_t column) {
    return b.slice(u, {row, column}, {row + 998, column + 998}, {1, 1});
  };
  ir::ValueId sum = b.binary(ir::Op::add, b.binary(ir::Op::add, shifted(0, 1), shifted(2, 1)),
                             b.binary(ir::Op::add, shifted(1, 0), shifted(1, 2)));
  graph.set_outputs({sum});
  codegen::CudaSource source = emit(graph);
  const std::string& text = source.text;
  const size_t whole = text.find("if (kiln_run + ");
  ASSERT_NE(whole, std::string::npos) << text;
  const size_t partial = text.find("else {", whole);
  ASSERT_NE(partial, std::string::npos) << text;
  const std::string guard = "if (kiln_flat < 996004) {";
  EXPECT_EQ(text.substr(whole, partial - whole).find(guard), std::string::npos) << text;
  EXPECT_NE(text.find(guard, partial), std::string::npos) << text;
  auto [code, log] = compile_with_nvcc(text, "unguarded_runs");
  EXPECT_EQ(code, 0) << log;
}

// A bias add and GELU at a few tokens (BERT at 1x8: 8x3072): spread over the multiprocessors,
// one 16-byte step per thread, rather than four steps a thread on a few of them.
TEST(CudaEmitter, SmallLaunchesSpreadOverTheMultiprocessors) {
  codegen::CudaSource source = emit(bias_and_gelu(8));
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  EXPECT_EQ(source.kernels[0].launches[0].threads, 128);
  EXPECT_EQ(source.kernels[0].launches[0].blocks, 8 * 3072 / 4 / 128);
  EXPECT_NE(source.text.find("kiln_u < 1;"), std::string::npos) << source.text;
}

// A copy of a few MB (BERT-base 8x128's attention heads, permuted): less than the resident
// threads of every multiprocessor, so a step per thread on 768 blocks, not four steps a thread
// on 192 (each thread's steps would wait on memory one after another); a copy of many waves
// keeps its four steps a thread.
TEST(CudaEmitter, MidSizeCopiesFillTheResidentThreadsBeforeUnrolling) {
  auto heads = [](int64_t batch) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {batch, 128, 12, 64});
    graph.set_outputs({b.permute(x, {0, 2, 1, 3})});
    return emit(graph);
  };
  codegen::CudaSource mid = heads(8);
  ASSERT_EQ(mid.kernels.size(), 1u);
  EXPECT_EQ(mid.kernels[0].launches[0].threads, 256);
  EXPECT_EQ(mid.kernels[0].launches[0].blocks, 8 * 128 * 12 * 64 / 4 / 256);
  EXPECT_NE(mid.text.find("kiln_u < 1;"), std::string::npos) << mid.text;
  codegen::CudaSource large = heads(64);
  EXPECT_EQ(large.kernels[0].launches[0].blocks, 64 * 128 * 12 * 64 / 4 / 256 / 4);
  EXPECT_NE(large.text.find("kiln_u < 4;"), std::string::npos) << large.text;
  auto [code, log] = compile_with_nvcc(mid.text, "mid_size_copies");
  EXPECT_EQ(code, 0) << log;
}

// A layer norm's row of 768 over a block of 256 threads: the loops over the row have a constant
// trip count of 3, so each thread's loads issue together.
TEST(CudaEmitter, ShortRowsGiveEachThreadAnUnrolledLoop) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {8, 768});
  ir::ValueId mean = b.reduce(ir::Op::sum, x, {1}, true);  // the scale does not matter here
  ir::ValueId variance = b.reduce(ir::Op::var, x, {1}, true);
  ir::ValueId centred = b.binary(ir::Op::sub, x, b.broadcast(mean, {8, 768}));
  graph.set_outputs({b.binary(ir::Op::div, centred, b.broadcast(b.unary(ir::Op::sqrt, variance), {8, 768}))});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  EXPECT_EQ(source.kernels[0].launches[0].blocks, 8);
  EXPECT_EQ(source.kernels[0].launches[0].threads, 256);
  EXPECT_EQ(source.text.find("+= 256)"), std::string::npos) << source.text;  // no strided loop
  EXPECT_NE(source.text.find("_step < 3; ++"), std::string::npos) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "short_rows");
  EXPECT_EQ(code, 0) << log;
}

// Rows that fill the GPU many times over (softmax of 8192 rows of 1024 floats) take a block a
// row at once (no grid-stride walk of 8 blocks a multiprocessor) of threads that hold 8
// elements each; fewer of them (2048) a warp each, whose lanes hold 32 (launch_plans.cpp:
// plan_warp_iterations); a row statistic read by the row's exp and by the output (logsumexp)
// stays in the one kernel.
size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CudaEmitter, LongRowsTakeABlockEachOfFewerThreads) {
  auto softmax_of = [](int64_t rows) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {rows, 1024});
    ir::ValueId e = b.unary(ir::Op::exp, b.binary(ir::Op::sub, x, b.reduce(ir::Op::max, x, {1}, true)));
    graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true))});
    return emit(graph);
  };
  codegen::CudaSource softmax = softmax_of(8192);
  ASSERT_EQ(softmax.kernels.size(), 1u);
  EXPECT_EQ(softmax.kernels[0].launches[0].blocks, 8192);
  EXPECT_EQ(softmax.kernels[0].launches[0].threads, 128);
  EXPECT_NE(softmax.text.find("_step < 8; ++"), std::string::npos) << softmax.text;
  // x loaded once into registers for its three loops (the max, the sum, the division): in the
  // scalar copy an element at a time, in the aligned one 16 bytes at a time (RowsMoveSixteen...);
  // the division's loop printed twice in each, the second run where a check failed.
  EXPECT_EQ(count(softmax.text, "__ldg(a0"), 1u) << softmax.text;
  EXPECT_EQ(count(softmax.text, "__ldg(reinterpret_cast<const float4*>(a0"), 1u) << softmax.text;
  EXPECT_EQ(count(softmax.text, "= kiln_row0[i"), 2u + 2u + 2 * (4u + 1u)) << softmax.text;
  EXPECT_EQ(count(softmax.text, "kiln_div_by_uniform_checked((float)"), 4u + 1u) << softmax.text;
  EXPECT_EQ(count(softmax.text, "if (!kiln_exact) {"), 2u) << softmax.text;
  codegen::CudaSource warps = softmax_of(2048);
  ASSERT_EQ(warps.kernels.size(), 1u);
  EXPECT_EQ(warps.kernels[0].launches[0].blocks, 2048 / 8);
  EXPECT_EQ(warps.kernels[0].launches[0].threads, 256);
  EXPECT_NE(warps.text.find("float kiln_row0[32];"), std::string::npos) << warps.text;
  EXPECT_NE(warps.text.find("_run < 8; ++"), std::string::npos) << warps.text;
  EXPECT_EQ(warps.text.find("__syncthreads"), std::string::npos) << warps.text;

  ir::Graph lse;
  ir::Builder c(lse);
  ir::ValueId y = c.parameter(DType::Float64, {4096, 2048});
  ir::ValueId largest = c.reduce(ir::Op::max, y, {1}, false);
  ir::ValueId shifted = c.binary(ir::Op::sub, y, c.broadcast(c.reshape(largest, {4096, 1}), {4096, 2048}));
  lse.set_outputs({c.binary(ir::Op::add, largest,
                            c.unary(ir::Op::log, c.reduce(ir::Op::sum, c.unary(ir::Op::exp, shifted), {1}, false)))});
  codegen::CudaSource one = emit(lse);
  ASSERT_EQ(one.kernels.size(), 1u) << one.text;
  EXPECT_EQ(one.kernels[0].launches[0].threads, 256);
  for (const codegen::CudaSource* source : {&softmax, &warps, &one}) {
    auto [code, log] = compile_with_nvcc(source->text, "long_rows");
    EXPECT_EQ(code, 0) << log;
  }
}

// Rows held in registers move 16 bytes at a time where the row is whole runs of a thread's
// 16 bytes (plan_row_vectors): the row's loads, and the loop of stores' loads of other arrays
// (a layer norm's scale and shift) and its stores, behind a run-time alignment check with the
// scalar copy beside it; float64 rows in runs of two; rows of other lengths stay scalar. The
// loop of stores is printed twice, its second run for threads whose divisions' check failed.
TEST(CudaEmitter, RowsMoveSixteenBytesAtATimeWhereAligned) {
  auto layer_norm = [](DType dtype, int64_t rows, int64_t width) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(dtype, {rows, width});
    ir::ValueId gamma = b.parameter(dtype, {width});
    ir::ValueId beta = b.parameter(dtype, {width});
    ir::ValueId mean = b.binary(ir::Op::div, b.reduce(ir::Op::sum, x, {1}, true),
                                b.constant(ir::Scalar::of(double(width)), dtype));
    ir::ValueId centred = b.binary(ir::Op::sub, x, mean);
    ir::ValueId variance = b.binary(ir::Op::div, b.reduce(ir::Op::sum, b.binary(ir::Op::mul, centred, centred), {1}, true),
                                    b.constant(ir::Scalar::of(double(width)), dtype));
    ir::ValueId scaled = b.binary(ir::Op::div, centred, b.unary(ir::Op::sqrt, variance));
    graph.set_outputs({b.binary(ir::Op::add, b.binary(ir::Op::mul, scaled, gamma), beta)});
    return emit(graph);
  };
  codegen::CudaSource f32 = layer_norm(DType::Float32, 8192, 1024);
  ASSERT_EQ(f32.kernels.size(), 1u) << f32.text;
  EXPECT_NE(f32.text.find(") & 15) == 0) {"), std::string::npos) << f32.text;
  EXPECT_EQ(count(f32.text, "__ldg(reinterpret_cast<const float4*>(a0"), 1u) << f32.text;
  EXPECT_EQ(count(f32.text, "__ldg(reinterpret_cast<const float4*>(a1"), 2u) << f32.text;
  EXPECT_EQ(count(f32.text, "__ldg(reinterpret_cast<const float4*>(a2"), 2u) << f32.text;
  EXPECT_EQ(count(f32.text, "*reinterpret_cast<float4*>(a3"), 2u) << f32.text;
  codegen::CudaSource f64 = layer_norm(DType::Float64, 512, 2048);
  EXPECT_EQ(count(f64.text, "*reinterpret_cast<double2*>(a3"), 2u) << f64.text;
  codegen::CudaSource odd = layer_norm(DType::Float32, 512, 1000);
  EXPECT_EQ(odd.text.find("reinterpret_cast<const float4*>"), std::string::npos) << odd.text;
  for (const codegen::CudaSource* source : {&f32, &f64, &odd}) {
    auto [code, log] = compile_with_nvcc(source->text, "row_vectors");
    EXPECT_EQ(code, 0) << log;
  }
}

// A stencil's shifted views of one array are not prefetched (each line is read by neighbouring
// warps anyway); the dense loads of another kernel still are.
TEST(CudaEmitter, StencilsSkipPrefetches) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId u = b.parameter(DType::Float32, {4096, 4096});
  auto view = [&](int64_t r, int64_t c) { return b.slice(u, {r, c}, {4094 + r, 4094 + c}, {1, 1}); };
  ir::ValueId sum = b.binary(ir::Op::add, b.binary(ir::Op::add, view(0, 1), view(2, 1)),
                             b.binary(ir::Op::add, view(1, 0), view(1, 2)));
  graph.set_outputs({sum});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u) << source.text;
  EXPECT_EQ(source.text.find("kiln_prefetch(a"), std::string::npos) << source.text;
  ir::Graph dense;
  ir::Builder c(dense);
  ir::ValueId x = c.parameter(DType::Float32, {4096, 4096}), y = c.parameter(DType::Float32, {4097, 4096});
  dense.set_outputs({c.binary(ir::Op::add, c.unary(ir::Op::sin, x), c.slice(y, {1, 0}, {4097, 4096}, {1, 1}))});
  EXPECT_NE(emit(dense).text.find("kiln_prefetch(a1"), std::string::npos);  // the view of y: one offset
  auto [code, log] = compile_with_nvcc(source.text, "stencil_prefetches");
  EXPECT_EQ(code, 0) << log;
}

// All-pairs distances of 2048 points by 1024 in 8 dimensions: a thread's four steps are four
// rows of A, the 8 loads of B's row read once into registers for all of them; B's rows of 2047
// points are not whole steps and keep the plain launch.
TEST(CudaEmitter, PairsShareTheLoadsOfOnePoint) {
  auto distances = [](int64_t rows) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId a = b.parameter(DType::Float64, {rows, 8}), p = b.parameter(DType::Float64, {1024, 8});
    ir::ValueId d = b.binary(ir::Op::sub, b.broadcast(b.reshape(a, {rows, 1, 8}), {rows, 1024, 8}),
                             b.broadcast(b.reshape(p, {1, 1024, 8}), {rows, 1024, 8}));
    graph.set_outputs({b.unary(ir::Op::sqrt, b.reduce(ir::Op::sum, b.binary(ir::Op::mul, d, d), {2}, false))});
    return emit(graph);
  };
  codegen::CudaSource source = distances(2048);
  ASSERT_EQ(source.kernels.size(), 1u);
  EXPECT_NE(source.text.find("kiln_h0[i2] = __ldg(a1 + ((i1) * 8 + i2));"), std::string::npos) << source.text;
  EXPECT_NE(source.text.find("const int64_t i0 = kiln_along * 4 + kiln_u;"), std::string::npos) << source.text;
  EXPECT_EQ(source.text.find("kiln_prefetch(a"), std::string::npos) << source.text;
  EXPECT_EQ(distances(2047).text.find("kiln_along"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "pairs");
  EXPECT_EQ(code, 0) << log;
}

// A Linear layer at a few tokens, (8, 768) times a (768, 768) weight's transpose, and one of
// 13 rows with K = 130 (no 16-byte loads): generated products replacing their cuBLAS steps,
// rows per block rounded up to a power of two (8), column blocks of 32 / rows.
TEST(CudaEmitter, ProductsOfFewRowsAreGenerated) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {8, 768}), w = b.parameter(DType::Float32, {768, 768});
  ir::ValueId x13 = b.parameter(DType::Float32, {13, 130}), w50 = b.parameter(DType::Float32, {50, 130});
  ir::ValueId big = b.parameter(DType::Float32, {64, 768});
  graph.set_outputs({b.matmul(x, b.permute(w, {1, 0})), b.matmul(x13, b.permute(w50, {1, 0})),
                     b.matmul(big, b.permute(w, {1, 0}))});
  codegen::CudaSource source = emit(graph);
  std::vector<const runtime::CudaKernelCall*> generated;
  for (const runtime::CudaKernelCall& call : source.kernels)
    if (call.replaces_step >= 0) generated.push_back(&call);
  ASSERT_EQ(generated.size(), 2u);  // 64 rows: cuBLAS
  EXPECT_EQ(generated[0]->launches[0].blocks, 768 / 4);
  EXPECT_EQ(generated[1]->launches[0].blocks, (50 + 3) / 4 * 2);
  EXPECT_NE(source.text.find("kiln_skinny_matmul<8, 768, 768, 768ll, 768ll, 8, true>"), std::string::npos);
  EXPECT_NE(source.text.find("kiln_skinny_matmul<13, 50, 130, 130ll, 130ll, 8, false>"), std::string::npos);
  EXPECT_EQ(source.text.find("kiln_skinny_matmul<13, 50, 130, 130ll, 130ll, 8, true>"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "skinny");
  EXPECT_EQ(code, 0) << log;
}

// A sort on the GPU is an extern step between generated kernels, which a generated kernel
// replaces (codegen/cuda/sort_kernels.cpp: a block per row in shared memory, or a radix
// sort's passes): the GPU's extern table takes it for every real dtype (the host's sort, for
// max-autotune), and the kernels around it (a top-k of a transposed operand, its values
// gathered and transposed back) and the sorts' own compile.
TEST(CudaEmitter, SortsAreExternStepsBetweenKernels) {
  for (DType dtype : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(dtype, {64, 300});
    ir::ValueId y = b.binary(ir::Op::maximum, x, b.permute(b.parameter(dtype, {300, 64}), {1, 0}));
    ir::ValueId columns = b.permute(y, {1, 0});
    ir::ValueId positions = b.argsort(columns, 0, true, 5);
    ir::ValueId values = b.take_along_axis(columns, positions, 0);
    graph.set_outputs({b.permute(values, {1, 0}), positions, b.sort(y, 1, false)});
    detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
    sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
    int sorts = 0;
    for (const sched::Step& step : program.steps) {
      if (step.kind != sched::StepKind::Extern) continue;
      EXPECT_TRUE(ir::is_sort(step.call.op));
      EXPECT_NO_THROW(runtime::check_cuda_extern_call(step.call, program.buffers));
      ++sorts;
    }
    EXPECT_EQ(sorts, 2);  // the top-k's positions (its values gathered), y's values
    codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
    EXPECT_GE(source.kernels.size(), 2u);
    int replaced = 0;
    for (const runtime::CudaKernelCall& call : source.kernels) {
      if (call.replaces_step < 0) continue;
      const sched::Step& step = program.steps[static_cast<size_t>(call.replaces_step)];
      EXPECT_TRUE(step.kind == sched::StepKind::Extern && ir::is_sort(step.call.op));
      ASSERT_EQ(call.launches.size(), 1u);  // rows of 64 and 300: a block each
      EXPECT_EQ(call.launches[0].symbol, "kiln_sort" + std::to_string(call.replaces_step));
      ++replaced;
    }
    EXPECT_EQ(replaced, 2);
    if (find_nvcc().empty()) continue;
    auto [code, log] = compile_with_nvcc(source.text, "sort_" + std::string(dtype_name(dtype)));
    EXPECT_EQ(code, 0) << log;
  }
}

// A row longer than a block sorts (5000 float64, descending) by the radix sort: a launch
// clearing the first launch's scratch, a launch counting the rows' digits, and a launch for
// each of the key's 8 bytes, the last writing the positions out, all sharing that scratch
// (CudaLaunch::scratch_of); the source compiles.
TEST(CudaEmitter, LongRowsSortByRadixPasses) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {3, 5000});
  graph.set_outputs({b.argsort(x, 1, true)});
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
  codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
  const runtime::CudaKernelCall* sort = nullptr;
  for (const runtime::CudaKernelCall& call : source.kernels)
    if (call.replaces_step >= 0) sort = &call;
  ASSERT_NE(sort, nullptr);
  // the clearing, the digit counts, 8 digits
  ASSERT_EQ(sort->launches.size(), 1u + 1 + 8);
  EXPECT_EQ(sort->launches[1].blocks, 3 * 3);  // 3 rows of 3 tiles (of 2048 8-byte keys)
  EXPECT_EQ(sort->launches[2].blocks, 3 * 3);
  // keys and positions twice; the look-back words, the rows' digit totals, the tile counters
  EXPECT_EQ(sort->launches[0].scratch_bytes,
            2 * 3 * 5000 * 12 + 8 * 3 * 3 * 256 + 4 * 3 * 8 * 256 + 4 * 8);
  for (size_t k = 1; k < sort->launches.size(); ++k) {
    EXPECT_EQ(sort->launches[k].scratch_of, 0);
    EXPECT_EQ(sort->launches[k].scratch_bytes, 0);
  }
  EXPECT_NE(source.text.find("_counts"), std::string::npos);
  EXPECT_NE(source.text.find("_digit7("), std::string::npos);
  EXPECT_NE(source.text.find("kiln_sort0_output{kiln_args}"), std::string::npos);
  if (find_nvcc().empty()) return;
  auto [code, log] = compile_with_nvcc(source.text, "long_sort");
  EXPECT_EQ(code, 0) << log;
}

// max-autotune's candidates: each kernel's launches for the other launch shapes
// (codegen::launch_variants), only those that differ from its own and from each other, every
// function in the text once; the source compiles. Products of few rows keep their one kernel
// (the runtime times it against cuBLAS).
TEST(CudaEmitter, MaxAutotuneAddsTheOtherLaunchShapesOfEachKernel) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {4000, 3000});  // many waves at 8 steps a thread
  ir::ValueId rows = b.parameter(DType::Float32, {64, 1000});
  ir::ValueId few = b.parameter(DType::Float32, {8, 768}), w = b.parameter(DType::Float32, {768, 768});
  ir::ValueId e = b.unary(ir::Op::exp, b.binary(ir::Op::sub, rows, b.reduce(ir::Op::max, rows, {1}, true)));
  graph.set_outputs({b.binary(ir::Op::add, b.unary(ir::Op::sin, x), b.unary(ir::Op::cos, x)),
                     b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true)),
                     b.matmul(few, b.permute(w, {1, 0}))});
  const codegen::CudaSource plain = emit(graph);
  const codegen::CudaSource source = emit(graph, {}, kH100, true);
  ASSERT_EQ(source.kernels.size(), plain.kernels.size());
  std::set<std::pair<int, int64_t>> elementwise_shapes, row_shapes;  // (threads, blocks)
  for (size_t k = 0; k < source.kernels.size(); ++k) {
    const runtime::CudaKernelCall& call = source.kernels[k];
    ASSERT_EQ(call.launches.size(), plain.kernels[k].launches.size());
    EXPECT_EQ(call.launches[0].symbol, plain.kernels[k].launches[0].symbol);  // its own first
    if (call.replaces_step >= 0) {
      EXPECT_TRUE(call.alternatives.empty());
      continue;
    }
    std::set<std::pair<int, int64_t>>& shapes =
        call.launches[0].blocks == 64 ? row_shapes : elementwise_shapes;
    shapes.insert({call.launches[0].threads, call.launches[0].blocks});
    for (const std::vector<runtime::CudaLaunch>& alternative : call.alternatives) {
      ASSERT_EQ(alternative.size(), call.launches.size());
      shapes.insert({alternative[0].threads, alternative[0].blocks});
      for (const runtime::CudaLaunch& launch : alternative) {
        EXPECT_TRUE(launch.threads % 32 == 0 && launch.threads <= 1024) << launch.symbol;
        size_t at = source.text.find(" " + launch.symbol + "(");
        EXPECT_NE(at, std::string::npos) << launch.symbol;
        EXPECT_EQ(source.text.find(" " + launch.symbol + "(", at + 1), std::string::npos);
      }
    }
  }
  // sin + cos: 128, 256 and 512 threads, and at 256 one, four and eight steps a thread.
  const int64_t steps = 4000 * 3000 / 4;
  for (auto [threads, per_thread] : {std::pair{128, 4}, {256, 4}, {512, 4}, {256, 1}, {256, 8}})
    EXPECT_EQ(elementwise_shapes.count({threads, (steps + threads * per_thread - 1) / (threads * per_thread)}), 1u)
        << threads << " threads, " << per_thread << " steps";
  EXPECT_EQ(elementwise_shapes.size(), 5u);
  // softmax: a block per row of 128, 256 or 512 threads (steps a thread do not apply to 64
  // rows, less than a wave)
  EXPECT_EQ(row_shapes, (std::set<std::pair<int, int64_t>>{{128, 64}, {256, 64}, {512, 64}}));
  auto [code, log] = compile_with_nvcc(source.text, "alternatives");
  EXPECT_EQ(code, 0) << log;
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "alternatives.cu", 90).size(), 0u);
}

// Column tiles combine each column's accumulators through shared memory, 32 slots per warp per
// field, declared once for the block's combine and the split blocks' merge (declared twice,
// the column sums and variances of three float64 arrays took 48 KiB + 8 bytes at 256 threads,
// beyond sm_90's static 48 KiB), and a block takes only as many warps as fit (at 512 threads
// those 12 fields take 48 KiB: max-autotune's larger blocks stay at 256 here).
TEST(CudaEmitter, ColumnTilesFitTheirRowsInSharedMemory) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {1024, 640});
  std::vector<ir::ValueId> outputs;
  for (ir::ValueId v : {x, b.binary(ir::Op::mul, x, x), b.unary(ir::Op::exp, x)}) {
    outputs.push_back(b.reduce(ir::Op::sum, v, {0}, false));
    outputs.push_back(b.reduce(ir::Op::var, v, {0}, false));
  }
  graph.set_outputs(outputs);
  const codegen::CudaSource source = emit(graph, {}, kH100, true);
  int widest = 0;
  for (const runtime::CudaKernelCall& call : source.kernels) {
    for (const runtime::CudaLaunch& launch : call.launches) widest = std::max(widest, launch.threads);
    for (const auto& alternative : call.alternatives)
      for (const runtime::CudaLaunch& launch : alternative) widest = std::max(widest, launch.threads);
  }
  EXPECT_EQ(widest, 256);
  EXPECT_NE(source.text.find("_rows[8][32]"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "column_rows");
  EXPECT_EQ(code, 0) << log;
}

// A row's mean and variance (layer norm): two passes over the row, the count and sum, then the
// squared deviations from the mean, with no Welford update (a division) per element.
TEST(CudaEmitter, BlockVarianceTakesTwoPassesWithoutWelfordUpdates) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 1024});
  graph.set_outputs({b.reduce(ir::Op::var, x, {1}, true), b.reduce(ir::Op::sum, x, {1}, true)});
  codegen::CudaSource source = emit(graph);
  EXPECT_EQ(source.text.find(" = kiln_welford_add(acc"), std::string::npos);
  EXPECT_NE(source.text.find(".m2 += kiln_d * kiln_d"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "variance");
  EXPECT_EQ(code, 0) << log;
}

// Loads and stores that step by one element with the innermost loop move as 16-byte vectors
// (float4, double2) when the buffers are 16-byte aligned (checked at run time, else the scalar
// loop runs); a transposed read and a bool mask stay scalar.
TEST(CudaEmitter, UnitStrideAccessesAreSixteenByteVectors) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {256, 1024});
  ir::ValueId mask = b.parameter(DType::Bool, {256, 1024});
  ir::ValueId wide = b.parameter(DType::Float64, {64, 6});
  ir::ValueId square = b.parameter(DType::Float32, {512, 512});
  ir::ValueId zero = b.constant(ir::Scalar::of(0.0), DType::Float32, {256, 1024});
  graph.set_outputs({b.binary(ir::Op::add, b.unary(ir::Op::sin, x), b.unary(ir::Op::cos, x)),
                     b.where(mask, x, zero),
                     b.binary(ir::Op::mul, wide, wide),
                     b.binary(ir::Op::add, b.permute(square, {1, 0}), square)});
  codegen::CudaSource source = emit(graph);
  EXPECT_NE(source.text.find("__ldg(reinterpret_cast<const float4*>("), std::string::npos);
  EXPECT_NE(source.text.find("*reinterpret_cast<float4*>("), std::string::npos);
  EXPECT_NE(source.text.find("__ldg(reinterpret_cast<const double2*>("), std::string::npos);
  EXPECT_NE(source.text.find("& 15) == 0"), std::string::npos);
  EXPECT_EQ(source.text.find("uchar"), std::string::npos);  // the bool mask stays scalar
  auto [code, log] = compile_with_nvcc(source.text, "vectors");
  EXPECT_EQ(code, 0) << log;
}

// A filter permuted to channels-last, (O, C, 3, 3) to (O, 3, 3, C): each thread runs the nine
// kernel positions in sequence (its loads one contiguous run of nine elements, a warp's stores
// one run per position), and the grid covers the (O, C) pairs only.
TEST(CudaEmitter, TransposesRunTheFewContiguousPositionsInEachThread) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId w = b.parameter(DType::Float32, {512, 256, 3, 3});
  graph.set_outputs({b.permute(w, {0, 2, 3, 1})});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  const runtime::CudaLaunch& launch = source.kernels[0].launches[0];
  // 131072 steps: fewer than 132 SMs hold at once, a step a thread.
  EXPECT_EQ(launch.blocks, 512 * 256 / 256);
  EXPECT_NE(source.text.find("kiln_run < 131072;"), std::string::npos) << source.text;
  // The 3x3 positions are one loop of 9 (sched/merge_loops.h).
  EXPECT_NE(source.text.find("< 9; ++"), std::string::npos) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "transpose");
  EXPECT_EQ(code, 0) << log;
}

// A whole-array reduction of 1M elements: shared by the grid, partials in the launch's scratch.
TEST(CudaEmitter, LongWholeArrayReductionsAreSplitOverTheGrid) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1 << 20});
  graph.set_outputs({b.reduce(ir::Op::sum, x, {0}, false), b.reduce(ir::Op::argmax, x, {0}, false)});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  const runtime::CudaLaunch& launch = source.kernels[0].launches[0];
  EXPECT_EQ(launch.blocks, 8 * 132);
  EXPECT_EQ(launch.scratch_bytes, 16 + 8 * 3 * launch.blocks);  // sum; argmax value and index
  EXPECT_NE(source.text.find("atomicAdd(kiln_ticket"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "split");
  EXPECT_EQ(code, 0) << log;
}

// Batch norm's statistics over N, H and W of channels-last data (64 channels, 200704 rows): a
// block per channel read its rows 256 bytes apart and left half the GPU idle (560 us for
// resnet18's first layer on the H100). Now lane k of a warp takes channel k of a tile of 32, so
// a warp's loads are one contiguous run, and with two tiles the rows are split over 528 blocks
// per tile whose partial states the last block merges.
TEST(CudaEmitter, ColumnReductionsPutNeighbouringOutputsOnLanes) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {16, 64, 112, 112});
  graph.set_outputs({b.reduce(ir::Op::var, x, {0, 2, 3}, false),
                     b.reduce(ir::Op::sum, x, {0, 2, 3}, false),
                     b.reduce(ir::Op::argmax, b.reshape(b.permute(x, {0, 2, 3, 1}), {200704, 64}), {0}, false)});
  const int64_t rows = 112 * 112 * 64;
  codegen::CudaSource source = emit(graph, {{16 * rows, 1, 112 * 64, 64}});
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  const runtime::CudaLaunch& launch = source.kernels[0].launches[0];
  // Two tiles of 32 channels, 192 blocks each: as many as the last block's 8 readers of a
  // column merge at 24 a reader (528 would give each thread 24 rows of its own).
  EXPECT_EQ(launch.blocks, 2 * 192);
  // Two tickets (16 bytes), then per field (Welford's 3, the sum, argmax's value and index)
  // a slot per block and lane.
  EXPECT_EQ(launch.scratch_bytes, 16 + 8 * 6 * launch.blocks * 32);
  EXPECT_NE(source.text.find("kiln_column = kiln_tile * 32 + (threadIdx.x & 31)"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "columns");
  EXPECT_EQ(code, 0) << log;

  // Few rows (resnet18's layer-4 gradient sums, 784 rows of 512 channels): blocks share a
  // tile until each warp has a few rows, their loads unrolled (3 blocks a tile left each warp
  // 33 rows, one memory latency after another).
  ir::Graph short_columns;
  ir::Builder s(short_columns);
  ir::ValueId z = s.parameter(DType::Float32, {16, 512, 7, 7});
  short_columns.set_outputs({s.reduce(ir::Op::sum, z, {0, 2, 3}, false)});
  codegen::CudaSource short_source = emit(short_columns, {{49 * 512, 1, 7 * 512, 512}});
  ASSERT_EQ(short_source.kernels.size(), 1u);
  EXPECT_EQ(short_source.kernels[0].launches[0].blocks, 16 * (784 / (8 * 4)));
  EXPECT_NE(short_source.text.find("#pragma unroll 4\n"), std::string::npos) << short_source.text;
  auto [short_code, short_log] = compile_with_nvcc(short_source.text, "short_columns");
  EXPECT_EQ(short_code, 0) << short_log;
  // Their variances keep 32 rows a warp (a Welford state costs more to merge than a sum).
  short_columns.set_outputs({s.reduce(ir::Op::var, z, {0, 2, 3}, false)});
  codegen::CudaSource variances = emit(short_columns, {{49 * 512, 1, 7 * 512, 512}});
  ASSERT_EQ(variances.kernels.size(), 1u);
  EXPECT_EQ(variances.kernels[0].launches[0].blocks, 16 * (784 / (8 * 32)));
  EXPECT_EQ(variances.text.find("#pragma unroll 4\n"), std::string::npos);

  // Many columns: a tile per block, no split, no scratch. Rows of a column stay a block's.
  ir::Graph wide;
  ir::Builder w(wide);
  ir::ValueId y = w.parameter(DType::Float64, {64, 40000});
  wide.set_outputs({w.binary(ir::Op::mul, w.reduce(ir::Op::sum, y, {0}, false), w.constant(ir::Scalar::of(0.5), DType::Float64))});
  codegen::CudaSource wide_source = emit(wide);
  ASSERT_EQ(wide_source.kernels.size(), 1u);
  EXPECT_EQ(wide_source.kernels[0].launches[0].blocks, 8 * 132);
  EXPECT_EQ(wide_source.kernels[0].launches[0].scratch_bytes, 0);
  EXPECT_NE(wide_source.text.find("kiln_tile += gridDim.x"), std::string::npos);
  auto [wide_code, wide_log] = compile_with_nvcc(wide_source.text, "wide_columns");
  EXPECT_EQ(wide_code, 0) << wide_log;
}

// Channels-last batch-norm statistics: the (N, H, W) rows are one loop (sched/merge_loops.h),
// so a thread finds its row with no division; the normalisation's flat index takes one.
TEST(CudaEmitter, ChannelsLastRowsAreOneLoop) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {16, 64, 56, 56});
  ir::ValueId mean = b.reduce(ir::Op::sum, x, {0, 2, 3}, true);
  graph.set_outputs({b.reduce(ir::Op::var, x, {0, 2, 3}, false),
                     b.binary(ir::Op::sub, x, b.broadcast(mean, {ir::Dim(16), ir::Dim(64), ir::Dim(56), ir::Dim(56)}))});
  codegen::CudaSource source = emit(graph, {{56 * 56 * 64, 1, 56 * 64, 64}});
  EXPECT_EQ(source.text.find("% (int64_t)56"), std::string::npos) << source.text;
  EXPECT_EQ(source.text.find("% (unsigned)56"), std::string::npos) << source.text;
  EXPECT_NE(source.text.find("< (int64_t)50176"), std::string::npos) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "channels_last_rows");
  EXPECT_EQ(code, 0) << log;

  // Images a padded stride apart: (H, W) still merge, N keeps its loop (one division by 3136).
  codegen::CudaSource padded = emit(graph, {{56 * 56 * 64 + 64, 1, 56 * 64, 64}});
  EXPECT_NE(padded.text.find("/ (unsigned)3136"), std::string::npos) << padded.text;
  EXPECT_EQ(padded.text.find("% (int64_t)56"), std::string::npos) << padded.text;
  auto [padded_code, padded_log] = compile_with_nvcc(padded.text, "padded_rows");
  EXPECT_EQ(padded_code, 0) << padded_log;

  // A loop whose index is used on its own (an iota) keeps it.
  ir::Graph counted;
  ir::Builder c(counted);
  ir::ValueId y = c.parameter(DType::Float32, {16, 56, 64});
  ir::ValueId rows = c.iota(DType::Float32, {ir::Dim(16), ir::Dim(56), ir::Dim(64)}, 1);
  counted.set_outputs({c.binary(ir::Op::add, y, rows)});
  codegen::CudaSource counted_source = emit(counted);
  // (32-bit divisions: fewer than 2^31 iterations)
  EXPECT_NE(counted_source.text.find("% (unsigned)56"), std::string::npos) << counted_source.text;
  auto [counted_code, counted_log] = compile_with_nvcc(counted_source.text, "counted_rows");
  EXPECT_EQ(counted_code, 0) << counted_log;

  // 2^31 iterations or more: the index splits in 64 bits.
  ir::Graph huge;
  ir::Builder h(huge);
  ir::ValueId z = h.parameter(DType::Float32, {65536, 40000});
  huge.set_outputs({h.binary(ir::Op::add, z, h.iota(DType::Float32, {65536, 40000}, 0))});
  codegen::CudaSource huge_source = emit(huge);
  EXPECT_NE(huge_source.text.find("% 40000"), std::string::npos) << huge_source.text;
  EXPECT_EQ(huge_source.text.find("(unsigned)"), std::string::npos) << huge_source.text;
}

// The same statistics of channels-first data are rows of 200704 elements for 64 iterations:
// 17 blocks share each one, the last of them merging the partial states and storing.
TEST(CudaEmitter, LongReductionsOfFewIterationsAreSplitOverBlocks) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {16, 64, 112, 112});
  graph.set_outputs({b.reduce(ir::Op::var, x, {0, 2, 3}, false), b.reduce(ir::Op::sum, x, {0, 2, 3}, false)});
  codegen::CudaSource source = emit(graph);
  ASSERT_EQ(source.kernels.size(), 1u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u);
  const runtime::CudaLaunch& launch = source.kernels[0].launches[0];
  EXPECT_EQ(launch.blocks, 64 * 17);
  EXPECT_EQ(launch.scratch_bytes, 4 * 64 + 8 * 4 * launch.blocks);  // tickets; Welford's 3 and the sum
  EXPECT_NE(source.text.find("atomicAdd(kiln_tickets + kiln_flat"), std::string::npos);
  auto [code, log] = compile_with_nvcc(source.text, "split_rows");
  EXPECT_EQ(code, 0) << log;
}

// float32 variances merge double Welford states (the warps' shuffles, the block's shared slots,
// the split parts' scratch slots), each thread still folding its own elements as float32
// shifted sums (FP64 runs at 1/64 the rate on consumer GPUs): float32 merges of data near 1e3
// with a spread of 1e-2 rounded the means by 3e-5 a merge, and the variances came out 2e-5 to
// 1e-4 off. A whole array (split over the grid), rows (two passes of float32 sums, the
// second's deviations from a float32 center corrected by their sum), columns in tiles and
// channels-first statistics (blocks sharing an iteration).
TEST(CudaEmitter, Float32VariancesMergeDoubleWelfordStates) {
  struct Case {
    ir::Shape shape;
    std::vector<int64_t> axes;
    const char* merged_through;  // what the plan merges the threads' states through
    bool two_passes = false;     // a block's rows: float sums, corrected for their center
  };
  for (const Case& c : {Case{{1 << 20}, {0}, "volatile double* const kiln_slots"},
                        Case{{64, 768}, {1}, "const double kiln_s = acc0_fold.mean", true},
                        Case{{200704, 64}, {0}, "__shared__ kiln_welford<double> acc0_rows["},
                        Case{{16, 64, 112, 112}, {0, 2, 3}, "volatile double* const kiln_slots"}}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, c.shape);
    graph.set_outputs({b.reduce(ir::Op::var, x, c.axes, false)});
    codegen::CudaSource source = emit(graph);
    const std::string& text = source.text;
    const std::string stem = "float32_variance_" + std::to_string(c.shape.size());
    SCOPED_TRACE(stem);
    EXPECT_NE(text.find("kiln_welford<double> acc0 = kiln_welford<double>{0, 0, 0};"), std::string::npos);
    EXPECT_NE(text.find(c.merged_through), std::string::npos) << text;
    // The threads' own sums stay float32; no float32 Welford state is merged or stored, but
    // for the two passes' plain sums of deviations from a center.
    EXPECT_NE(text.find("kiln_welford<float> acc0_fold"), std::string::npos);
    EXPECT_NE(text.find("const float kiln_d = "), std::string::npos);
    EXPECT_EQ(text.find("kiln_welford<float> acc0 "), std::string::npos);
    if (c.two_passes) {
      EXPECT_NE(text.find("const float acc0_center = (float)acc0.mean"), std::string::npos);
    } else {
      EXPECT_EQ(text.find("kiln_welford<float> acc0_other"), std::string::npos);
      EXPECT_EQ(text.find("__shared__ kiln_welford<float>"), std::string::npos);
    }
    EXPECT_EQ(text.find("volatile float*"), std::string::npos);
    EXPECT_EQ(text.find("float kiln_loaded"), std::string::npos);
    auto [code, log] = compile_with_nvcc(text, stem);
    EXPECT_EQ(code, 0) << log;
  }
}

// numpy_fn's core: sum over (j, k) of (x[i, j] / s[j]) * (y[i, k] / t[k]), s and t column
// standard deviations. On the GPU each
// normalised row gets a buffer (a thread per element would divide twice per product; the CPU
// hoists them out of its inner loop instead), and the block's threads step over k inside a
// loop over j: no 64-bit division of a flattened index per element.
TEST(CudaEmitter, BroadcastDivisionsAreComputedOnceAndBlockLoopsNest) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {128, 640}), y = b.parameter(DType::Float64, {128, 640});
  // Each scale a column statistic, as numpy_fn's standard deviations are.
  ir::ValueId s = b.unary(ir::Op::sqrt, b.reduce(ir::Op::var, x, {0}, false));
  ir::ValueId t = b.unary(ir::Op::sqrt, b.reduce(ir::Op::var, y, {0}, false));
  auto normalised = [&](ir::ValueId v, ir::ValueId scale, std::vector<ir::Dim> shape) {
    ir::ValueId divided = b.binary(ir::Op::div, v, b.broadcast(scale, {ir::Dim(128), ir::Dim(640)}));
    return b.broadcast(b.reshape(divided, shape), {ir::Dim(128), ir::Dim(640), ir::Dim(640)});
  };
  ir::ValueId product = b.binary(ir::Op::mul, normalised(x, s, {ir::Dim(128), ir::Dim(640), ir::Dim(1)}),
                                 normalised(y, t, {ir::Dim(128), ir::Dim(1), ir::Dim(640)}));
  graph.set_outputs({b.reduce(ir::Op::sum, product, {1, 2}, false)});
  sched::Program on_gpu = detail::schedule_program(graph, {}, kH100, {});
  sched::Program on_cpu = detail::schedule_program(graph, {}, target::Target{}, {});
  auto intermediates = [](const sched::Program& program) {
    int count = 0;  // buffers of a normalised (128, 640) matrix, however shaped
    for (const sched::Buffer& buffer : program.buffers) {
      int64_t elements = 1;
      for (int64_t extent : buffer.shape) elements *= extent;
      count += buffer.role == sched::BufferRole::Intermediate && elements == 128 * 640;
    }
    return count;
  };
  EXPECT_EQ(intermediates(on_gpu), 2);
  EXPECT_EQ(intermediates(on_cpu), 0);
  codegen::CudaSource source = emit(graph);
  EXPECT_EQ(source.text.find("% (int64_t)640"), std::string::npos) << source.text;
}

// The CUDA passes and printer walk each shared expression once too (test_compile_structure.cpp).
TEST(CudaEmitter, ExpressionsReadTwiceAtEveryLevelAreWalkedOnce) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {256, 16});
  ir::ValueId d = test::read_twice_at_every_level(b, b.parameter(DType::Float32, {256}), 40);
  ir::ValueId sums = b.reduce(ir::Op::sum, x, {1}, false);
  graph.set_outputs({b.binary(ir::Op::add, d, sums),
                     b.where(b.binary(ir::Op::gt, d, b.constant(ir::Scalar::of(0), DType::Float32,
                                                                {256})),
                             sums, d)});
  codegen::CudaSource source = emit(graph, {}, kH100, true);
  EXPECT_FALSE(source.kernels.empty());
  auto [code, log] = compile_with_nvcc(source.text, "read_twice");
  EXPECT_EQ(code, 0) << log;
}

TEST(CudaEmitter, FuzzCorpusCompilesWithNvcc) {
  ASSERT_FALSE(find_nvcc().empty())
      << "nvcc not found (set KILN_NVCC): this test compiles the CUDA emitter's output";
  const char* text = std::getenv("KILN_CUDA_EMIT_GRAPHS");
  const int graphs = text && *text ? std::atoi(text) : 300;
  constexpr int kPerCase = 10;
  // Every other case with every whole-array reduction split over the grid, and on one
  // multiprocessor, where row reductions of 32 rows or more run a warp per row: the corpus is
  // too small to reach the real thresholds, and those codes have the most to get wrong.
  target::Target splitting = kH100;
  splitting.split_reduction_work = 1;
  splitting.multiprocessors = 1;
  int split_launches = 0, warp_row_cases = 0;
  size_t alternatives = 0;
  for (int first = 0; first < graphs; first += kPerCase) {
    fuzz::FuzzCase fuzz_case = fuzz::generate_case(20240611, first, kPerCase);
    // Every third case with max-autotune's other launch shapes too.
    codegen::CudaSource source = emit(fuzz_case.graph, fuzz_case.input_strides,
                                      first / kPerCase % 2 ? splitting : kH100,
                                      first / kPerCase % 3 == 0);
    for (runtime::CudaKernelCall kernel : source.kernels) {
      alternatives += kernel.alternatives.size();
      for (const std::vector<runtime::CudaLaunch>& launches : kernel.alternatives)
        kernel.launches.insert(kernel.launches.end(), launches.begin(), launches.end());
      for (const runtime::CudaLaunch& launch : kernel.launches) {
        EXPECT_GE(launch.blocks, 1);
        EXPECT_TRUE(launch.threads == 1 || launch.threads % 32 == 0) << launch.symbol;
        EXPECT_NE(source.text.find(" " + launch.symbol + "("), std::string::npos) << launch.symbol;
        split_launches += launch.scratch_bytes > 0;
      }
    }
    const std::string what = "fuzz subgraphs " + std::to_string(first) + ".." +
                             std::to_string(first + kPerCase - 1);
    warp_row_cases += source.text.find("int kiln_lane =") != std::string::npos;
    auto [code, log] = compile_with_nvcc(source.text, "case" + std::to_string(first));
    EXPECT_EQ(code, 0) << what << ":\n" << log;
    // NVRTC compiles the program as units in parallel, as the pipeline does: each launch's
    // function in exactly one unit, each unit compiling on its own.
    std::vector<std::string> units = codegen::split_cuda_source(source, 3);
    for (const runtime::CudaKernelCall& kernel : source.kernels)
      for (const runtime::CudaLaunch& launch : kernel.launches)
        EXPECT_EQ(std::count_if(units.begin(), units.end(), [&](const std::string& unit) {
                    return unit.find(" " + launch.symbol + "(") != std::string::npos;
                  }), 1) << launch.symbol;
    for (size_t u = 0; u < units.size(); ++u) {
      try {
        EXPECT_GT(runtime::cuda::compile_cubin(units[u], "case.cu", 90).size(), 0u);
      } catch (const Error& error) {
        ADD_FAILURE() << what << ", unit " << u << ": " << error.what();
      }
    }
  }
  EXPECT_GT(split_launches, 0) << "no split reduction in the corpus: the check above missed them";
  EXPECT_GT(alternatives, 0u) << "no launch alternatives in the corpus";
  EXPECT_GT(warp_row_cases, 0) << "no warp-per-row reduction in the corpus";
}

// NumPy and torch wrap signed integers; C++ leaves their overflow undefined, and NVRTC, which
// has no -fwrapv, folded `x + 1 > x` to true and `(x * 2) / 2 == x` too. The op table's + - *
// and negation compute in the unsigned type: each comparison survives into the PTX (a setp).
TEST(CudaEmitter, SignedIntegerArithmeticWrapsAsNumPys) {
  ASSERT_FALSE(find_nvcc().empty()) << "nvcc not found (set KILN_NVCC)";
  ir::Graph graph;
  ir::Builder b(graph);
  graph.set_outputs({b.binary(ir::Op::add, b.parameter(DType::Int32, {64}),
                              b.constant(ir::Scalar::of_int(1), DType::Int32))});
  std::string text = emit(graph).text;  // its prelude holds the op table's functions
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"add32", "kiln_op_gt(kiln_op_add(x32[0], 1), x32[0])"},
      {"add64", "kiln_op_gt(kiln_op_add(x64[0], (int64_t)1), x64[0])"},
      {"sub64", "kiln_op_lt(kiln_op_sub(x64[0], (int64_t)1), x64[0])"},
      {"mul32", "kiln_op_eq(kiln_op_mul(x32[0], 2) / 2, x32[0])"},
      {"neg32", "kiln_op_lt(kiln_op_neg(x32[0]), 0) == kiln_op_gt(x32[0], 0)"},
      {"sum32", "kiln_op_gt(kiln_combine_sum<int32_t>(x32[0], 1), x32[0])"},
      {"cumsum64", "kiln_op_gt(kiln_combine_cumsum<int64_t>(x64[0], (int64_t)1), x64[0])"},
  };
  for (const auto& [name, expression] : probes)
    text += "extern \"C\" __global__ void kiln_probe_" + name +
            "(const int32_t* x32, const int64_t* x64, bool* out) { out[0] = " + expression + "; }\n";
  const std::string ptx = ptx_with_nvcc(text, "wrapping");
  ASSERT_FALSE(ptx.empty()) << "the probes do not compile";
  for (const auto& [name, expression] : probes) {
    const size_t begin = ptx.find("kiln_probe_" + name + "(");
    ASSERT_NE(begin, std::string::npos) << name;
    const std::string body = ptx.substr(begin, ptx.find("ret;", begin) - begin);
    EXPECT_NE(body.find("setp"), std::string::npos) << expression << " was folded:\n" << body;
  }
}

// Dropout keyed by a graph input (torch.compile's per-call seed): the key is read when the
// kernel runs and added to the op's own seed.
TEST(CudaEmitter, RandomDrawsKeyedByAnInputCompile) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 100});
  ir::ValueId key = b.parameter(DType::Int64, {});
  ir::ValueId keep = b.binary(ir::Op::ge, b.random_uniform(DType::Float32, {64, 100}, 2, key),
                              b.constant(ir::Scalar::of(0.1), DType::Float32, {64, 100}));
  ir::ValueId kept = b.where(keep, b.binary(ir::Op::mul, x, b.constant(ir::Scalar::of(1 / 0.9), DType::Float32, {64, 100})),
                             b.constant(ir::Scalar::of(0.0), DType::Float32, {64, 100}));
  ir::ValueId noise = b.random_normal(DType::Float64, {64, 100}, 3, key);
  graph.set_outputs({kept, keep, noise});
  codegen::CudaSource source = emit(graph);
  EXPECT_NE(source.text.find("kiln_philox_uniform_f32((2ull + (uint64_t)"), std::string::npos)
      << source.text;
  EXPECT_NE(source.text.find("kiln_philox_normal_f64((3ull + (uint64_t)"), std::string::npos)
      << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "random_key");
  EXPECT_EQ(code, 0) << log << "\n" << source.text;
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "random_key.cu", 90).size(), 0u);
}

// A loop body storing a reduction into a carried array at the loop's index (`losses[epoch] =
// np.mean(...)`): the store is an ordered statement after a top-level reduction, which feeds it
// through a local; it ran in a launch of its own, where that local does not exist (NVRTC:
// "identifier r0 is undefined"). It now runs on thread 0 of the reduction's block.
TEST(CudaEmitter, AStoreOfABlocksReductionIsInItsLaunch) {
  auto body = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*body);
    ir::ValueId index = b.parameter(DType::Int64, {});
    ir::ValueId acc = b.parameter(DType::Float64, {8});
    ir::ValueId x = b.parameter(DType::Float64, {256});
    ir::ValueId total = b.reduce(ir::Op::sum, b.binary(ir::Op::mul, x, x), {0}, false);
    ir::ValueId value = b.reshape(total, {1});
    ir::ValueId at = b.binary(ir::Op::add, b.iota(DType::Int64, {1}, 0), b.broadcast(index, {1}));
    body->set_outputs({b.scatter(acc, at, value, 0, ir::ScatterMode::Set), x});
  }
  ir::Graph graph;
  ir::Builder o(graph);
  ir::ValueId x = o.parameter(DType::Float64, {256});
  ir::ValueId loop = o.loop(o.constant(ir::Scalar::of_int(0), DType::Int64),
                            o.constant(ir::Scalar::of_int(8), DType::Int64), 1,
                            {o.constant(ir::Scalar::of_int(0), DType::Float64, {8}), x}, {}, body);
  graph.set_outputs({o.loop_result(loop, 0)});
  codegen::CudaSource source = emit(graph);
  auto [code, log] = compile_with_nvcc(source.text, "reduction_store");
  EXPECT_EQ(code, 0) << log << "\n" << source.text;
  EXPECT_NE(source.text.find("if (threadIdx.x == 0) {"), std::string::npos) << source.text;
}


// np.histogram of the data's range: the minimum and maximum, the runtime check's outputs (a
// flag and a pair of float64 values to name, api/runtime_checks.h) and the counts, a scatter-add
// of computed bins.
TEST(CudaEmitter, AHistogramWithItsRangeCheckCompiles) {
  using ir::Op;
  ir::Graph graph;
  ir::Builder b(graph);
  const int64_t n = 1 << 20, bins = 64;
  ir::ValueId x = b.parameter(DType::Float64, {n});
  ir::ValueId low = b.reduce(Op::min, x, {0}, false), high = b.reduce(Op::max, x, {0}, false);
  ir::ValueId finite =
      b.binary(Op::logical_and, b.unary(Op::isfinite, low), b.unary(Op::isfinite, high));
  ir::ValueId range = b.concat({b.reshape(low, {1}), b.reshape(high, {1})}, 0);
  ir::ValueId scale = b.binary(Op::div, b.constant(ir::Scalar::of(double(bins)), DType::Float64),
                               b.binary(Op::sub, high, low));
  ir::ValueId position = b.binary(Op::mul, b.binary(Op::sub, x, b.broadcast(low, {n})),
                                  b.broadcast(scale, {n}));
  ir::ValueId last = b.constant(ir::Scalar::of(double(bins - 1)), DType::Float64, {n});
  ir::ValueId index =
      b.cast(b.unary(Op::floor, b.binary(Op::minimum, position, last)), DType::Int64);
  ir::ValueId counts = b.scatter(b.constant(ir::Scalar::of_int(0), DType::Int64, {bins}), index,
                                 b.constant(ir::Scalar::of_int(1), DType::Int64, {n}), 0,
                                 ir::ScatterMode::Add);
  graph.set_outputs({counts, b.unary(Op::bitwise_not, finite), range});
  codegen::CudaSource source = emit(graph);
  auto [code, log] = compile_with_nvcc(source.text, "histogram");
  EXPECT_EQ(code, 0) << log << "\n" << source.text;
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "histogram.cu", 90).size(), 0u);
}

// u[1:-1] = f(u) (a heat equation's step) scatters at iota + 1: no index repeats, so every
// thread takes a share of the updates. In order, one thread made all million of them.
TEST(CudaEmitter, SliceAssignmentsRunOnEveryThread) {
  ir::Graph graph;
  ir::Builder b(graph);
  const int64_t n = 1000000;
  ir::ValueId u = b.parameter(DType::Float64, {n});
  ir::ValueId inner = b.slice(u, {1}, {n - 1}, {1});
  ir::ValueId next = b.binary(ir::Op::mul, inner, inner);
  ir::ValueId at = b.binary(ir::Op::add, b.iota(DType::Int64, {n - 2}, 0),
                            b.constant(ir::Scalar::of_int(1), DType::Int64, {n - 2}));
  graph.set_outputs({b.scatter(u, at, next, 0, ir::ScatterMode::Set)});
  codegen::CudaSource source = emit(graph);
  auto [code, log] = compile_with_nvcc(source.text, "slice_assignment");
  EXPECT_EQ(code, 0) << log << "\n" << source.text;
  // The updates are the steps of a grid-wide launch: thread kiln_flat makes update kiln_flat.
  EXPECT_NE(source.text.find("if (kiln_flat < 999998) {"), std::string::npos) << source.text;
}

// np.cumsum of a whole array: tiles of one launch, each looking back over the tiles before it
// (ScanTiles). Below kLeastTiledScan elements, or of 16-bit floats, one thread scans.
TEST(CudaEmitter, LongScansRunInTilesOverTheGrid) {
  for (auto [op, dtype, n] : {std::tuple{ir::Op::cumsum, DType::Float64, int64_t{16} << 20},
                              std::tuple{ir::Op::cumprod, DType::Float32, int64_t{1000003}},
                              std::tuple{ir::Op::cumsum, DType::Int64, int64_t{70000}}}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(dtype, {n});
    graph.set_outputs({b.scan(op, b.binary(ir::Op::mul, x, x), 0)});
    codegen::CudaSource source = emit(graph);
    auto [code, log] = compile_with_nvcc(source.text, "tiled_scan");
    EXPECT_EQ(code, 0) << log << "\n" << source.text;
    EXPECT_NE(source.text.find("kiln_look_back(kiln_flags"), std::string::npos) << source.text;
    ASSERT_EQ(source.kernels.size(), 1u);
    const runtime::CudaLaunch& launch = source.kernels[0].launches.at(0);
    EXPECT_EQ(launch.blocks, (n + 2047) / 2048);
    EXPECT_GT(launch.scratch_bytes, 16 * launch.blocks);
  }
  ir::Graph graph;  // short: one thread, as before
  ir::Builder b(graph);
  graph.set_outputs({b.scan(ir::Op::cumsum, b.parameter(DType::Float64, {1000}), 0)});
  EXPECT_EQ(emit(graph).text.find("kiln_look_back(kiln_flags"), std::string::npos);
}

// Values the same for every thread (uniform_values.h): Adam's bias corrections from a 0-d step
// count, 1 - beta ** step, are computed once per thread before the element loop, not per
// element and vector lane (they made the update run at 40% of the memory bandwidth).
TEST(CudaEmitter, UniformValuesAreComputedOnceBeforeTheLoops) {
  ir::Graph graph;
  ir::Builder b(graph);
  const ir::Shape shape{512, 4608};
  auto constant = [&](double v, const ir::Shape& s) {
    return b.constant(ir::Scalar::of(v), DType::Float32, s);
  };
  ir::ValueId p = b.parameter(DType::Float32, shape), m = b.parameter(DType::Float32, shape);
  ir::ValueId step = b.parameter(DType::Float32, {});
  ir::ValueId correction =
      b.binary(ir::Op::sub, constant(1, {}), b.binary(ir::Op::pow, constant(0.9, {}), step));
  ir::ValueId size = b.broadcast(b.binary(ir::Op::div, constant(1e-3, {}), correction), shape);
  ir::ValueId root = b.broadcast(b.unary(ir::Op::sqrt, correction), shape);
  ir::ValueId step_size = b.binary(ir::Op::mul, size, b.binary(ir::Op::div, m, root));
  graph.set_outputs({b.binary(ir::Op::sub, p, step_size)});
  codegen::CudaSource source = emit(graph);
  const std::string kernel = source.text.substr(source.text.find("__global__"));
  EXPECT_EQ(count(kernel, "kiln_op_pow("), 1u) << kernel;
  EXPECT_EQ(count(kernel, "kiln_op_sqrt("), 1u) << kernel;
  EXPECT_LT(kernel.find("kiln_op_pow("), kernel.find("for (")) << kernel;
  EXPECT_GT(count(kernel, "kiln_op_div("), 4u) << "m / root stays per element and lane";
  auto [code, log] = compile_with_nvcc(source.text, "uniform_values");
  EXPECT_EQ(code, 0) << log;
}

// Horizontal fusion (sched/independent_kernels.h, combined_launches.cpp): independent
// elementwise updates of different shapes (an optimizer step's parameters and its step count)
// become one kernel with one launch whose blocks the parts split; a kernel that reads
// another's result keeps its own launch after it.
TEST(CudaEmitter, IndependentUpdatesShareOneLaunch) {
  ir::Graph graph;
  ir::Builder b(graph);
  std::vector<ir::ValueId> outputs;
  for (const ir::Shape& shape : {ir::Shape{64}, ir::Shape{512, 4608}, ir::Shape{64, 64, 3, 3}}) {
    ir::ValueId x = b.parameter(DType::Float32, shape), g = b.parameter(DType::Float32, shape);
    ir::ValueId rate = b.constant(ir::Scalar::of(0.1), DType::Float32, shape);
    outputs.push_back(b.binary(ir::Op::sub, x, b.binary(ir::Op::mul, g, rate)));
  }
  ir::ValueId y = b.parameter(DType::Float32, {1000});
  ir::ValueId e = b.unary(ir::Op::exp, y);
  outputs.push_back(e);
  ir::ValueId steps = b.parameter(DType::Float32, {});  // a step count's increment: one block
  outputs.push_back(
      b.binary(ir::Op::add, steps, b.constant(ir::Scalar::of(1), DType::Float32, {})));
  outputs.push_back(b.binary(ir::Op::add, b.flip(e, {0}), e));  // reads e at other elements
  graph.set_outputs(outputs);
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
  ASSERT_EQ(program.kernels.size(), 2u) << sched::print_program(program);
  codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
  ASSERT_EQ(source.kernels.size(), 2u);
  ASSERT_EQ(source.kernels[0].launches.size(), 1u) << source.text;
  EXPECT_EQ(count(source.text, "kiln_grid = "), 5u) << "the three updates, exp(y), the count";
  // Each part declares the pointers it reads after its own block test, none at the top: ptxas
  // kept every part's pointers of one function live together (a resnet18 Adam step: 246
  // registers a thread, one block an SM, 1.2 TB/s).
  const size_t function = source.text.find("__global__");
  const size_t first_part = source.text.find("if (blockIdx.x < ", function);
  ASSERT_NE(first_part, std::string::npos) << source.text;
  EXPECT_EQ(source.text.substr(function, first_part - function).find("KILN_RESTRICT"),
            std::string::npos) << source.text;
  EXPECT_EQ(count(source.text, "KILN_RESTRICT a0 = "), 2u) << "in the first part and exp(y)'s";
  EXPECT_EQ(source.kernels[1].launches.size(), 1u);
  auto [code, log] = compile_with_nvcc(source.text, "combined");
  EXPECT_EQ(code, 0) << log;
  sched::Program apart = detail::schedule_program(prepared.graph, prepared.strides, kH100,
                                                  {"join_independent_kernels"});
  EXPECT_EQ(apart.kernels.size(), 6u) << sched::print_program(apart);
}

// After a graph loop its carried value's buffer points at the bytes of whichever of its two
// swapped buffers the last iteration wrote (sched/independent_kernels.h: SharedMemory): a
// kernel writing an arena buffer in the other one's bytes must not join a kernel that reads the
// loop's result (np.linalg.solve on the GPU read its pivot order overwritten by floats).
// u <- u / 2 + x, 7 times, read at two elements after the loop (r * flip(r)); and exp(y), a
// product's operand, computed before the loop or after it.
ir::Graph loop_and_product(bool product_first) {
  ir::Graph graph;
  ir::Builder b(graph);
  const ir::Shape shape{1024};
  auto body = std::make_shared<ir::Graph>();
  {
    ir::Builder inner(*body);
    inner.parameter(DType::Int64, {});
    ir::ValueId u = inner.parameter(DType::Float64, shape);
    ir::ValueId x = inner.parameter(DType::Float64, shape);
    ir::ValueId half = inner.constant(ir::Scalar::of(0.5), DType::Float64, shape);
    body->set_outputs({inner.binary(ir::Op::add, inner.binary(ir::Op::mul, u, half), x)});
  }
  ir::ValueId u0 = b.parameter(DType::Float64, shape), x = b.parameter(DType::Float64, shape);
  ir::ValueId y = b.parameter(DType::Float64, {32, 40});
  ir::ValueId t = product_first ? b.unary(ir::Op::exp, y) : -1;
  ir::ValueId loop = b.loop(b.constant(ir::Scalar::of_int(0), DType::Int64),
                            b.constant(ir::Scalar::of_int(7), DType::Int64), 1, {u0}, {x}, body);
  ir::ValueId r = b.loop_result(loop, 0);
  ir::ValueId reads_result = b.binary(ir::Op::mul, r, b.flip(r, {0}));
  if (!product_first) t = b.unary(ir::Op::exp, y);
  graph.set_outputs({reads_result, b.matmul(t, b.permute(t, {1, 0}))});
  return graph;
}

TEST(CudaEmitter, KernelsWritingALoopsSwappedBytesDoNotJoinItsReaders) {
  detail::PreparedGraph prepared = detail::prepare_graph(loop_and_product(false), {}, {});
  const sched::Program apart = detail::schedule_program(prepared.graph, prepared.strides, kH100,
                                                        {"join_independent_kernels"});
  auto buffer = [&](const std::string& name) {
    for (size_t k = 0; k < apart.buffers.size(); ++k)
      if (apart.buffers[k].name.rfind(name, 0) == 0) return k;
    ADD_FAILURE() << name << "\n" << sched::print_program(apart);
    return size_t{0};
  };
  const sched::Kernel& last = apart.kernels.back();
  ASSERT_NE(last.name.find("exp"), std::string::npos) << sched::print_program(apart);
  const size_t written = static_cast<size_t>(last.buffers_written.at(0));
  for (const auto& [offset, joins] : {std::pair{apart.buffers[buffer("next")].arena_offset, false},
                                      std::pair{int64_t{1} << 20, true}}) {
    sched::Program program = apart;
    program.buffers[written].arena_offset = offset;
    EXPECT_EQ(sched::join_independent_kernels(program), joins)
        << "t at arena offset " << offset << "\n" << sched::print_program(program);
  }

  (void)buffer("carried");
}

// Kernels joined before a graph loop (the copy of its initial value, a product's operand):
// the loop's two ends, which name each other by step, still do.
TEST(CudaEmitter, LoopEndsNameEachOtherAfterKernelsJoin) {
  detail::PreparedGraph prepared = detail::prepare_graph(loop_and_product(true), {}, {});
  const sched::Program apart = detail::schedule_program(prepared.graph, prepared.strides, kH100,
                                                        {"join_independent_kernels"});
  const sched::Program joined =
      detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
  ASSERT_LT(joined.steps.size(), apart.steps.size()) << sched::print_program(joined);
  size_t loops = 0;
  for (size_t s = 0; s < joined.steps.size(); ++s) {
    const sched::Step& step = joined.steps[s];
    if (step.kind != sched::StepKind::LoopBegin) continue;
    ++loops;
    const auto end = static_cast<size_t>(step.loop.partner);
    ASSERT_LT(end, joined.steps.size());
    EXPECT_EQ(joined.steps[end].kind, sched::StepKind::LoopEnd);
    EXPECT_EQ(static_cast<size_t>(joined.steps[end].loop.partner), s);
  }
  EXPECT_EQ(loops, 1u);
}

// An optimizer step (sched/independent_kernels.h): each parameter's step count incremented in
// place, then its update reading the new count. The increments join one kernel, the updates
// (which read them) another after it: two launches, whatever the order the scheduler left them in.
TEST(CudaEmitter, OptimizerStepsTakeTwoLaunches) {
  ir::Graph graph;
  ir::Builder b(graph);
  std::vector<ir::ValueId> outputs;
  std::vector<int32_t> donated;
  for (const ir::Shape& shape : {ir::Shape{64}, ir::Shape{512, 4608}, ir::Shape{64, 64, 3, 3}}) {
    auto constant = [&](double v, const ir::Shape& s) {
      return b.constant(ir::Scalar::of(v), DType::Float32, s);
    };
    ir::ValueId p = b.parameter(DType::Float32, shape), g = b.parameter(DType::Float32, shape);
    ir::ValueId step = b.parameter(DType::Float32, {});
    ir::ValueId next = b.binary(ir::Op::add, step, constant(1, {}));
    ir::ValueId rate = b.broadcast(b.binary(ir::Op::div, constant(0.1, {}), next), shape);
    donated.push_back(static_cast<int32_t>(graph.inputs().size()) - 1);
    donated.push_back(static_cast<int32_t>(graph.inputs().size()) - 3);
    outputs.push_back(next);
    outputs.push_back(b.binary(ir::Op::sub, p, b.binary(ir::Op::mul, rate, g)));
  }
  graph.set_outputs(outputs);
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program =
      detail::schedule_program(prepared.graph, prepared.strides, kH100, {}, donated);
  EXPECT_EQ(program.kernels.size(), 2u) << sched::print_program(program);
  codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
  for (const runtime::CudaKernelCall& kernel : source.kernels)
    EXPECT_EQ(kernel.launches.size(), 1u) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "optimizer_step");
  EXPECT_EQ(code, 0) << log;
}

// A foreach Adam step as PyTorch's compiled optimizer hands it over: every tensor's step count
// incremented, then every first moment, every second moment, every parameter (each an output),
// the bias corrections from the new 0-d count. Ten tensors of 64 elements (batch norms'
// weights and biases) share one domain and, joined, one loop: split_wide_loops leaves each
// loop one tensor's three updates (one thread computing all thirty took 246 registers and one
// block a multiprocessor for the whole combined launch), and the 0-d counts run as parts of
// their launch, not one thread's chain of loads.
TEST(CudaEmitter, OptimizerStepLoopsHoldOneTensorsUpdates) {
  ir::Graph graph;
  ir::Builder b(graph);
  std::vector<ir::Shape> shapes(10, ir::Shape{64});
  shapes.insert(shapes.end(), {{64, 3, 7, 7}, {64, 64, 3, 3}, {64, 64, 3, 3}});
  auto c = [&](double x, const ir::Shape& s) {
    return b.constant(ir::Scalar::of(x), DType::Float32, s);
  };
  std::vector<ir::ValueId> counts, firsts, seconds, updated;
  for (const ir::Shape& s : shapes) {
    const ir::ValueId p = b.parameter(DType::Float32, s), g = b.parameter(DType::Float32, s);
    const ir::ValueId m = b.parameter(DType::Float32, s), v = b.parameter(DType::Float32, s);
    const ir::ValueId count = b.binary(ir::Op::add, b.parameter(DType::Float32, {}), c(1, {}));
    const ir::ValueId first =
        b.binary(ir::Op::add, m, b.binary(ir::Op::mul, b.binary(ir::Op::sub, g, m), c(0.1, s)));
    const ir::ValueId second =
        b.binary(ir::Op::add, b.binary(ir::Op::mul, v, c(0.999, s)),
                 b.binary(ir::Op::mul, b.binary(ir::Op::mul, g, g), c(0.001, s)));
    auto correction = [&](double beta) {
      return b.binary(ir::Op::sub, c(1, {}), b.binary(ir::Op::pow, c(beta, {}), count));
    };
    const ir::ValueId denominator = b.binary(
        ir::Op::add,
        b.binary(ir::Op::div, b.unary(ir::Op::sqrt, second),
                 b.broadcast(b.unary(ir::Op::sqrt, correction(0.999)), s)),
        c(1e-8, s));
    const ir::ValueId step = b.broadcast(b.binary(ir::Op::div, c(0.001, {}), correction(0.9)), s);
    counts.push_back(count), firsts.push_back(first), seconds.push_back(second);
    updated.push_back(b.binary(
        ir::Op::sub, p, b.binary(ir::Op::mul, step, b.binary(ir::Op::div, first, denominator))));
  }
  std::vector<ir::ValueId> outputs = counts;
  for (const auto* values : {&firsts, &seconds, &updated})
    outputs.insert(outputs.end(), values->begin(), values->end());
  graph.set_outputs(outputs);
  detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
  ASSERT_EQ(program.kernels.size(), 2u) << sched::print_program(program);
  size_t loops = 0;
  for (const sched::Kernel& kernel : program.kernels)
    for (const sched::Stmt& loop : kernel.body) {
      ASSERT_EQ(loop.kind, sched::StmtKind::Loop) << sched::print_program(program);
      EXPECT_LE(loop.body.size(), sched::kMostStoresPerLoop) << sched::print_program(program);
      ++loops;
    }
  EXPECT_EQ(loops, 13u + 13u) << "a count, and one tensor's updates, a loop";
  codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
  for (const auto& kernel : source.kernels) EXPECT_EQ(kernel.launches.size(), 1u) << source.text;
  auto [code, log] = compile_with_nvcc(source.text, "optimizer_step");
  EXPECT_EQ(code, 0) << log;
  sched::Program unsplit = detail::schedule_program(prepared.graph, prepared.strides, kH100,
                                                    {"split_wide_loops"});
  size_t widest = 0;
  for (const sched::Stmt& loop : unsplit.kernels.back().body)
    widest = std::max(widest, loop.body.size());
  EXPECT_EQ(widest, 30u) << "the ten tensors of 64 elements in one loop";
}

// A division by a row's reduction or by a constant divides by one reciprocal and corrects the
// product (kiln_div_by_uniform: the correctly rounded quotient, fewer instructions); a
// division by another element of an array stays IEEE division.
TEST(CudaEmitter, DivisionsByRowValuesUseOneReciprocal) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(dtype, {4096, 1024});
    ir::ValueId y = b.parameter(dtype, {4096, 1024});
    ir::ValueId e = b.unary(ir::Op::exp, x);
    graph.set_outputs({b.binary(ir::Op::div, e, b.reduce(ir::Op::sum, e, {1}, true)),
                       b.binary(ir::Op::div, x, y)});
    codegen::CudaSource source = emit(graph);
    const std::string type = dtype == DType::Float32 ? "float" : "double";
    SCOPED_TRACE(type);
    EXPECT_NE(source.text.find("kiln_div_by_uniform_checked((" + type + ")"), std::string::npos)
        << source.text;
    EXPECT_NE(source.text.find("kiln_op_div("), std::string::npos) << source.text;
    auto [code, log] = compile_with_nvcc(source.text, "uniform_divisions_" + type);
    EXPECT_EQ(code, 0) << log;
  }
}

// Each multiply and add rounds on its own, as in NumPy and kiln's C++ kernels: NVRTC's default
// --fmad=true contracted a * b + c into one fused rounding (cuda_driver.h kernel_options).
TEST(CudaEmitter, ProductsAndSumsRoundSeparately) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1000});
  ir::ValueId y = b.parameter(DType::Float64, {1000});
  graph.set_outputs({b.binary(ir::Op::add, b.binary(ir::Op::mul, x, x), x),
                     b.binary(ir::Op::sub, b.binary(ir::Op::mul, y, y), y)});
  const std::string ptx = ptx_with_nvcc(emit(graph).text, "products");
  ASSERT_FALSE(ptx.empty());
  EXPECT_NE(ptx.find("mul.rn.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("mul.rn.f64"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f64"), std::string::npos) << ptx;
}

// x ** 3 of floats is the cube rounded once (scalar_math.h kiln_cube), as on the CPU, not a
// general pow: no call into CUDA's pow.
TEST(CudaEmitter, CubesAreNotPows) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {1000});
  ir::ValueId y = b.parameter(DType::Float64, {1000});
  graph.set_outputs({b.binary(ir::Op::pow, x, b.constant(ir::Scalar::of(3.0), DType::Float32, {1000})),
                     b.binary(ir::Op::pow, y, b.constant(ir::Scalar::of(3.0), DType::Float64, {1000}))});
  const codegen::CudaSource source = emit(graph);
  EXPECT_NE(source.text.find("kiln_cube((float)"), std::string::npos) << source.text;
  EXPECT_NE(source.text.find("kiln_cube((double)"), std::string::npos) << source.text;
  const std::string ptx = ptx_with_nvcc(source.text, "cubes");
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(ptx.find("lg2.approx"), std::string::npos) << ptx;  // pow's logarithm
  EXPECT_EQ(ptx.find("call"), std::string::npos) << ptx;
  EXPECT_GT(runtime::cuda::compile_cubin(source.text, "cubes.cu", 90).size(), 0u);
}

// Newton's square root of `n` elements until it stops moving: a while loop whose test is a
// reduction of the body (the kind a host-driven loop reads back each iteration).
ir::Graph newton_while(int64_t n) {
  ir::Graph graph;
  ir::Builder b(graph);
  const ir::Shape shape{n};
  auto body = std::make_shared<ir::Graph>();
  {
    ir::Builder inner(*body);
    inner.parameter(DType::Int64, {});
    inner.parameter(DType::Bool, {});
    ir::ValueId x = inner.parameter(DType::Float64, shape);
    ir::ValueId a = inner.parameter(DType::Float64, shape);
    ir::ValueId half = inner.constant(ir::Scalar::of(0.5), DType::Float64, shape);
    ir::ValueId next = inner.binary(
        ir::Op::mul, half, inner.binary(ir::Op::add, x, inner.binary(ir::Op::div, a, x)));
    ir::ValueId change = inner.reduce(
        ir::Op::max, inner.unary(ir::Op::abs, inner.binary(ir::Op::sub, next, x)), {0}, false);
    ir::ValueId moving = inner.binary(ir::Op::gt, change,
                                      inner.constant(ir::Scalar::of(1e-12), DType::Float64));
    body->set_outputs({moving, next});
  }
  ir::ValueId a = b.parameter(DType::Float64, shape);
  ir::ValueId loop = b.loop(b.constant(ir::Scalar::of_int(0), DType::Int64),
                            b.constant(ir::Scalar::of_int(1000), DType::Int64), 1,
                            {b.constant(ir::Scalar::of_int(1), DType::Bool), a}, {a}, body,
                            /*while_loop=*/true);
  graph.set_outputs({b.loop_result(loop, 1)});
  return graph;
}

// A graph loop of small kernels is one kernel that walks its iterations on the device
// (codegen/cuda/device_loops.cpp): its call replaces the loop's steps, the loop's kernels get
// no launch of their own, the body's launches are __device__ functions of a named barrier, and
// a carried result the loop may leave in its partner's buffer is copied back. A body of a
// million elements a launch stays a loop of launches from the host.
TEST(CudaEmitter, LoopsOfSmallKernelsRunOnTheDevice) {
  for (const auto& [graph, device] :
       {std::pair{newton_while(256), true}, std::pair{loop_and_product(false), true},
        std::pair{newton_while(1 << 20), false}}) {
    detail::PreparedGraph prepared = detail::prepare_graph(graph, {}, {});
    sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, kH100, {});
    codegen::CudaSource source = codegen::emit_cuda(program, Options{}, kH100, false);
    size_t begin = 0;
    while (program.steps[begin].kind != sched::StepKind::LoopBegin) ++begin;
    const std::string name = "kiln_loop" + std::to_string(begin);
    EXPECT_EQ(source.text.find("__global__ void __launch_bounds__") != std::string::npos &&
                  source.text.find(" " + name + "(") != std::string::npos,
              device) << source.text;
    if (!device) continue;
    const runtime::CudaKernelCall& call = source.kernels.back();
    EXPECT_EQ(call.replaces_step, static_cast<int32_t>(begin));
    ASSERT_EQ(call.launches.size(), 1u);
    EXPECT_EQ(call.launches[0].symbol, name);
    EXPECT_EQ(call.launches[0].blocks, 1);
    for (size_t s = begin + 1; s < static_cast<size_t>(program.steps[begin].loop.partner); ++s)
      if (program.steps[s].kind == sched::StepKind::Kernel)
        EXPECT_TRUE(source.kernels[static_cast<size_t>(program.steps[s].kernel)].launches.empty());
    EXPECT_NE(source.text.find("static __device__ void " + name + "_s"), std::string::npos);
    EXPECT_NE(source.text.find("kiln_block_copy(kiln_args["), std::string::npos) << source.text;
    auto [code, log] = compile_with_nvcc(source.text, name);
    EXPECT_EQ(code, 0) << log;
  }
  EXPECT_NE(emit(newton_while(256)).text.find("kiln_team_barrier("), std::string::npos);
}

}  // namespace
}  // namespace kiln
