// The compile pipeline as a table of contents (api/pipeline.h): every stage named, logged and
// timed, the optional ones switchable; the target's loop passes; the warm start that skips
// scheduling and emission on a disk hit; KILN_LOGS=schedule's reasons for separate kernels.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "api/logging.h"
#include "api/options.h"
#include "api/pipeline.h"
#include "compile_test_util.h"
#include "target/target.h"

namespace kiln::test {
namespace {

using ir::Op;

// Everything the pipeline logs on `channels` while `body` runs.
template <class Body>
std::string logged(const std::string& channels, Body body) {
  api::set_log_channels(channels);
  testing::internal::CaptureStderr();
  body();
  std::string log = testing::internal::GetCapturedStderr();
  api::set_log_channels("");
  return log;
}

// A graph with a long reduction and a parallel-sized elementwise tail.
struct SumPlusOne : GraphCase {
  SumPlusOne() {
    ir::ValueId x =
        input(make_array(DType::Float64, {512, 512}, pseudo_random(512 * 512, -1, 1, 7)));
    ir::ValueId total = builder.reduce(Op::sum, x, {1}, false);
    output(total, "row sums");
    output(builder.binary(Op::add, x,
                          builder.constant(ir::Scalar::of(1.0), DType::Float64, {512, 512})),
           "x + 1");
  }
};

TEST(Pipeline, EveryStageIsTimedUnderPerf) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  SumPlusOne graph;
  std::string log = logged("perf", [&] { graph.check(options); });
  for (const char* stage : {"verify:", "graph passes:", "simplify:", "cache key:", "schedule:",
                            "interchange_reductions:", "mark_parallel:", "mark_vector_loops:",
                            "hoist_invariants:", "emit:", "toolchain:", "load:"})
    EXPECT_NE(log.find(std::string("[kiln:perf] ") + stage), std::string::npos) << stage << "\n"
                                                                                << log;
}

TEST(Pipeline, LoopPassesAreLoggedChangedOrUnchanged) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  SumPlusOne graph;
  std::string log = logged("passes", [&] { graph.check(options); });
  EXPECT_NE(log.find("mark_vector_loops:\n"), std::string::npos) << log;  // it marked the tail
  EXPECT_NE(log.find("hoist_invariants: unchanged"), std::string::npos) << log;
}

TEST(Pipeline, DisabledLoopPassLeavesNoParallelLoop) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  ::setenv("KILN_DISABLE_PASSES", "mark_parallel", 1);
  SumPlusOne graph;
  CompiledRun run = graph.check(options);
  ::unsetenv("KILN_DISABLE_PASSES");
  EXPECT_EQ(run.compiled->source_text().find("omp parallel"), std::string::npos);
}

TEST(Pipeline, UnknownDisabledPassIsAnError) {
  ::setenv("KILN_DISABLE_PASSES", "simplify,mark_paralel", 1);
  try {
    detail::disabled_passes();
    ADD_FAILURE() << "an unknown pass name must be an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("mark_parallel"), std::string::npos) << error.what();
  }
  ::setenv("KILN_DISABLE_PASSES", "all", 1);
  std::set<std::string> all = detail::disabled_passes();
  ::unsetenv("KILN_DISABLE_PASSES");
  for (const std::string& name : detail::switchable_pass_names())
    EXPECT_TRUE(all.count(name)) << name;
}

// A GPU program's key needs no host C++ compiler (its cubins are keyed by NVRTC and the
// driver): with none to find, the key of a CUDA target is still computed. (ctest runs each test
// in its own process, where the host toolchain has not been looked for yet.)
TEST(Pipeline, ACudaProgramsKeyNeedsNoHostCompiler) {
  const std::string path = getenv("PATH") ? getenv("PATH") : "";
  const char* cxx = getenv("CXX");
  const char* kiln_cxx = getenv("KILN_CXX");
  const std::string saved_cxx = cxx ? cxx : "", saved_kiln_cxx = kiln_cxx ? kiln_cxx : "";
  ::setenv("PATH", "/nonexistent-kiln-test", 1);
  ::unsetenv("CXX");
  ::unsetenv("KILN_CXX");
  EXPECT_NO_THROW({
    const std::string key =
        detail::compile_key("graph", {}, Options{}, target::cuda_device(90, 132), {});
    EXPECT_FALSE(key.empty());
  });
  ::setenv("PATH", path.c_str(), 1);
  if (cxx) ::setenv("CXX", saved_cxx.c_str(), 1);
  if (kiln_cxx) ::setenv("KILN_CXX", saved_kiln_cxx.c_str(), 1);
}

TEST(Pipeline, NumThreadsReachesTheGeneratedCode) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  options.num_threads = 1;
  SumPlusOne serial;
  EXPECT_EQ(serial.check(options).compiled->source_text().find("omp parallel"), std::string::npos);
  options.num_threads = 3;
  SumPlusOne three;
  CompiledRun run = three.check(options);
  EXPECT_NE(run.compiled->source_text().find("num_threads(kiln_threads)"), std::string::npos);
  for (int threads : run.compiled->executable->step_threads()) EXPECT_EQ(threads, 3);
  options.num_threads = -1;
  SumPlusOne negative;
  EXPECT_THROW(compile_and_run(negative.graph, negative.inputs, options), Error);
}

TEST(Pipeline, DiskHitSkipsSchedulingAndEmission) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  SumPlusOne first;
  CompiledRun built = first.check(options);
  EXPECT_EQ(built.stats.disk_misses, 1);
  SumPlusOne second;  // the same graph, as a fresh process would trace it
  CompiledRun loaded;
  std::string log = logged("perf", [&] { loaded = second.check(options); });
  EXPECT_EQ(loaded.stats.disk_hits, 1);
  EXPECT_EQ(log.find("schedule:"), std::string::npos) << log;
  EXPECT_EQ(log.find("emit:"), std::string::npos) << log;
  EXPECT_NE(log.find("read image:"), std::string::npos) << log;
  EXPECT_EQ(sched::print_program(loaded.compiled->executable->program()),
            sched::print_program(built.compiled->executable->program()));
  EXPECT_EQ(loaded.compiled->source_text(), built.compiled->source_text());
}

TEST(Pipeline, ScheduleLogSaysWhyKernelsWereNotFused) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  SumPlusOne graph;
  std::string log = logged("schedule", [&] { graph.check(options); });
  EXPECT_NE(log.find("not fused:"), std::string::npos) << log;
  EXPECT_NE(log.find("different iteration domains (512,) and (512, 512)"), std::string::npos)
      << log;
}

TEST(Pipeline, ModesAndOptionsComeFromOneTable) {
  std::string modes = list_mode_options();
  for (const api::ModeSettings& mode : api::modes())
    EXPECT_NE(modes.find(std::string(mode.name) + ": "), std::string::npos) << mode.name;
  std::string options = list_options();
  for (const api::OptionDescription& option : api::option_descriptions())
    EXPECT_NE(options.find(std::string(option.name) + ": "), std::string::npos) << option.name;
  EXPECT_THROW(api::mode_settings("max-autotun"), Error);
}

TEST(Target, HostCpuReadsThreadsAndVectorWidth) {
  target::Target target = target::host_cpu(3);
  EXPECT_EQ(target.threads, 3);
  EXPECT_GE(target.vector_bits, 128);
  EXPECT_EQ(target.lanes(DType::Float32) * 32, target.vector_bits);
  EXPECT_NE(target.key(), target::host_cpu(2).key());
  EXPECT_THROW(target::host_cpu(-2), Error);
}

// KILN_PARALLEL_THRESHOLD sets the threshold (bench/parallel_cost.py measures with it); a value
// that is not a positive whole number is an error naming it.
TEST(Target, ParallelThresholdComesFromTheEnvironment) {
  const int64_t fallback = target::Target{}.parallel_threshold;
  ::unsetenv("KILN_PARALLEL_THRESHOLD");
  EXPECT_EQ(target::host_cpu(2).parallel_threshold, fallback);
  ::setenv("KILN_PARALLEL_THRESHOLD", "1000", 1);
  EXPECT_EQ(target::host_cpu(2).parallel_threshold, 1000);
  for (const char* bad : {"0", "-5", "lots"}) {
    ::setenv("KILN_PARALLEL_THRESHOLD", bad, 1);
    EXPECT_THROW(target::host_cpu(2), Error) << bad;
  }
  ::unsetenv("KILN_PARALLEL_THRESHOLD");
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(Modes, ReduceOverheadRecyclesOutputBlocks) {
  TemporaryDirectory cache("kiln-modes-");
  Options options = test_options();
  options.cache_dir = cache.path();
  options.mode = "reduce-overhead";
  SumPlusOne graph;
  CompiledRun run = graph.check(options);  // compared with the interpreter
  std::vector<Array> outputs;
  run.compiled->executable->run(graph.inputs, outputs);
  const void* first = outputs[1].data();
  outputs.clear();  // the caller drops its results: their blocks return to the pool
  run.compiled->executable->run(graph.inputs, outputs);
  EXPECT_EQ(outputs[1].data(), first);
  std::vector<Array> kept;
  run.compiled->executable->run(graph.inputs, kept);  // `outputs` still alive: a new block
  EXPECT_NE(kept[1].data(), outputs[1].data());
  EXPECT_EQ(kept[1].to_vector<double>(), outputs[1].to_vector<double>());
}

TEST(Modes, MaxAutotuneTimesParallelKernelsAndStoresTheChoice) {
  TemporaryDirectory cache("kiln-modes-");
  Options options = test_options();
  options.cache_dir = cache.path();
  options.mode = "max-autotune";
  options.num_threads = 2;
  SumPlusOne graph;
  CompiledRun run = graph.check(options);  // tunes on its first run, results still right
  std::string entry = std::filesystem::path(run.compiled->source_path).parent_path().string();
  std::ifstream file(entry + "/autotune.txt");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("kiln-autotune 1\n", 0), 0u) << text.str();
  const std::vector<int>& chosen = run.compiled->executable->step_threads();
  for (int threads : chosen) EXPECT_TRUE(threads == 1 || threads == 2);
  SumPlusOne again;  // a later process: the choice is read back, not timed again
  CompiledRun loaded = again.check(options);
  EXPECT_EQ(loaded.stats.disk_hits, 1);
  EXPECT_EQ(loaded.compiled->executable->step_threads(), chosen);
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A constant array travels in the library (exported), not in the image: a disk hit reads it
// back and still computes the same results.
TEST(Pipeline, ConstantArraysSurviveAWarmStart) {
  TemporaryDirectory cache("kiln-pipeline-");
  Options options = test_options();
  options.cache_dir = cache.path();
  auto build = [](GraphCase& graph) {
    ir::ValueId x = graph.input(make_array(DType::Float32, {4, 3}, pseudo_random(12, -1, 1, 5)));
    std::vector<uint8_t> bytes(3 * sizeof(float));
    float values[3] = {0.5f, -2, 8};
    std::memcpy(bytes.data(), values, sizeof values);
    ir::ValueId table = graph.builder.constant_array(bytes, DType::Float32, {3});
    graph.output(graph.builder.binary(ir::Op::mul, x, graph.builder.broadcast(table, {4, 3})),
                 "x * table");
  };
  GraphCase first, second;
  build(first);
  build(second);
  EXPECT_EQ(first.check(options).stats.disk_misses, 1);
  CompiledRun loaded = second.check(options);  // compared with the interpreter
  EXPECT_EQ(loaded.stats.disk_hits, 1);
}

}  // namespace
}  // namespace kiln::test
