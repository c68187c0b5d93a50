// The fusion acceptance tests: how many kernels (loop nests compiled into the generated C++)
// each seed program becomes, asserted exactly, together with the correctness of the results.
// A regression in fusion shows up here as a changed count, not only as a slower benchmark.
#include <gtest/gtest.h>

#include <map>

#include "../../bench/seed_programs.h"
#include "compile_test_util.h"

namespace kiln::test {
namespace {

// Kernel functions in a generated translation unit, each
// `extern "C" void <name>(char* const* kiln_args)`.
int kernel_functions(const std::string& source) {
  return count_occurrences(source, "(char* const* kiln_args) {");
}

TEST(KernelCounts, KmeansAssignmentIsOneKernelReadingXOnce) {
  std::vector<double> points = pseudo_random(2000, -10, 10, 3);
  std::vector<double> centres = {-5, -5, 0, 1, 6, 4};
  Array X = make_array(DType::Float64, {1000, 2}, points);
  Array means = make_array(DType::Float64, {3, 2}, centres);
  Function step = compile(seeds::kmeans_step, test_options());
  std::vector<Array> labels = expect_function_matches(step, seeds::kmeans_step, {X, means},
                                                      default_tolerance(DType::Int64), "kmeans");
  EXPECT_EQ(step.stats().kernels, 1);
  // Hand-computed: the nearest centre of each point (first one on ties, as argmin).
  ASSERT_EQ(labels.size(), 1u);
  std::vector<int64_t> got = labels[0].to_vector<int64_t>();
  ASSERT_EQ(got.size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) {
    int64_t best = 0;
    double best_distance = INFINITY;
    for (int64_t k = 0; k < 3; ++k) {
      double dx = points[2 * i] - centres[static_cast<size_t>(2 * k)];
      double dy = points[2 * i + 1] - centres[static_cast<size_t>(2 * k + 1)];
      double distance = std::sqrt(dx * dx + dy * dy);
      if (distance < best_distance) best_distance = distance, best = k;
    }
    ASSERT_EQ(got[i], best) << "point " << i;
  }
  // One loop nest reads X: the source holds one kernel and a single load expression of in0,
  // its first argument ("// arguments: a0 = in0, ...").
  std::string source = step.source();
  std::string kernels = source.substr(std::min(source.find("extern \"C\" void"), source.size()));
  EXPECT_EQ(kernel_functions(source), 1) << kernels;
  EXPECT_EQ(count_occurrences(source, "// arguments: a0 = in0"), 1) << kernels;
  EXPECT_EQ(count_occurrences(source, "a0["), 1) << kernels;
}

TEST(KernelCounts, NumpyFnIsAtMostFourKernels) {
  Array X = make_array(DType::Float64, {64, 40}, pseudo_random(2560, -2, 3, 5));
  Array Y = make_array(DType::Float64, {64, 40}, pseudo_random(2560, -1, 1, 6));
  // A constant column: its std is 0 and the where() replaces it by 1.
  for (int64_t row = 0; row < 64; ++row) store_double(Y, row * 40 + 7, 0.25);
  Function function = compile(seeds::numpy_fn, test_options());
  expect_function_matches(function, seeds::numpy_fn, {X, Y}, {1e-12, 1e-12, 4}, "numpy_fn");
  EXPECT_LE(function.stats().kernels, 4);
  EXPECT_GE(function.stats().kernels, 1);
  EXPECT_EQ(kernel_functions(function.source()), function.stats().kernels);
}

TEST(KernelCounts, RowSoftmaxIsAtMostTwoPasses) {
  auto softmax_rows = [](Tensor x) { return softmax(x, -1); };
  std::vector<double> values = pseudo_random(128 * 300, -20, 20, 8);
  values[5] = 80;  // exp(80) overflows float32: only the max-subtraction keeps it finite
  Array x = make_array(DType::Float32, {128, 300}, values);
  Function function = compile(softmax_rows, test_options());
  std::vector<Array> result =
      expect_function_matches(function, softmax_rows, {x}, {1e-5, 1e-7, 4}, "softmax");
  EXPECT_LE(function.stats().kernels, 2);
  EXPECT_EQ(kernel_functions(function.source()), function.stats().kernels);
  // Each row sums to 1.
  std::vector<double> probabilities = result.at(0).to_vector<double>();
  for (int64_t row = 0; row < 128; ++row) {
    double total = 0;
    for (int64_t column = 0; column < 300; ++column) {
      total += probabilities[static_cast<size_t>(row * 300 + column)];
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << "row " << row;
  }
}

TEST(KernelCounts, SiblingReductionsShareOnePass) {
  auto statistics = [](Tensor x) {
    return std::vector<Tensor>{sum(x, {1}), max(x, {1}), var(x, {1})};
  };
  Array x = make_array(DType::Float32, {64, 100}, pseudo_random(6400, -4, 4, 9));
  Function function = compile(statistics, test_options());
  expect_function_matches(function, statistics, {x}, {1e-5, 1e-5, 4}, "sum/max/var");
  EXPECT_EQ(function.stats().kernels, 1);
  EXPECT_EQ(kernel_functions(function.source()), 1);
}

// A lookup table the program computes, read at more places than it has entries (t[img] of a
// uint8 image): the table is computed once, in a kernel of its own, not its math per lookup.
// Read at as many places as it has entries, it stays inlined.
TEST(KernelCounts, ATableLookedUpMoreOftenThanItHasEntriesIsComputedOnce) {
  auto lookup = [](Tensor x, Tensor indices) { return take(exp(sin(x)) * 3.0, indices, 0); };
  Array x = make_array(DType::Float64, {256}, pseudo_random(256, -2, 2, 5));
  std::map<int64_t, int64_t> kernels;  // by the number of lookups (take's bounds check: one more)
  for (int64_t lookups : {4096, 256}) {
    std::vector<double> positions(static_cast<size_t>(lookups));
    for (size_t k = 0; k < positions.size(); ++k) positions[k] = double((k * 37) % 256);
    Array indices = make_array(DType::Int64, {lookups}, positions);
    Function function = compile(lookup, test_options());
    expect_function_matches(function, lookup, {x, indices}, {1e-12}, "table lookup");
    kernels[lookups] = function.stats().kernels;
  }
  EXPECT_EQ(kernels[4096], kernels[256] + 1);
}

// A batch norm's training statistics over the (N, H, W) positions of channels-last activations:
// the mean and variance, then what reads them only at their own channel (the variance's
// reciprocal square root, the running averages: each an output) join their kernel, the
// stored statistics loaded back in the iteration that stored them. A reader at other indices
// (a transposed copy) cannot: it would read what other iterations have not stored yet.
TEST(KernelCounts, ReadersOfStoredStatisticsAtTheirOwnIndexShareTheirKernel) {
  auto statistics = [](Tensor x, Tensor running_mean, Tensor running_var) {
    Tensor batch_mean = mean(x, {0, 1});
    Tensor batch_var = var(x, {0, 1});
    return std::vector<Tensor>{batch_mean, batch_var, 1.0f / sqrt(batch_var + 1e-5f),
                               running_mean * 0.9f + batch_mean * 0.1f,
                               running_var * 0.9f + batch_var * (0.1f * 64.0f / 63.0f)};
  };
  auto transposed = [](Tensor x, Tensor, Tensor) {
    Tensor batch_var = var(x, {0, 1});
    return std::vector<Tensor>{batch_var, transpose(batch_var, {1, 0}) + 1.0f};
  };
  Array x = make_array(DType::Float32, {4, 16, 8, 8}, pseudo_random(4096, -3, 5, 11));
  Array running_mean = make_array(DType::Float32, {8, 8}, pseudo_random(64, -1, 1, 12));
  Array running_var = make_array(DType::Float32, {8, 8}, pseudo_random(64, 0.5, 2, 13));
  for (auto [program, kernels] : {std::pair{+statistics, 1}, std::pair{+transposed, 2}}) {
    Function function = compile(program, test_options());
    expect_function_matches(function, program, {x, running_mean, running_var}, {1e-5, 1e-5, 4},
                            "batch norm statistics");
    EXPECT_EQ(function.stats().kernels, kernels) << function.source();
    EXPECT_EQ(kernel_functions(function.source()), kernels);
  }
}

// An explicit time-step loop (a 1-D heat equation, 24 steps): every third step is materialized
// (scheduler.cpp, kStencilSteps), the 8 kernels have the same code and share one generated
// function, so compiling stays as cheap as for one kernel.
TEST(KernelCounts, IdenticalLoopIterationsShareOneKernelFunction) {
  constexpr int kSteps = 24;
  auto heat = [](Tensor u) {
    int64_t n = u.shape()[0];
    for (int step = 0; step < kSteps; ++step) {
      Tensor left = slice(u, {{0, n - 2}}), centre = slice(u, {{1, n - 1}});
      Tensor right = slice(u, {{2, n}});
      Tensor interior = centre + 0.1 * (left - 2.0 * centre + right);
      u = concatenate({slice(u, {{0, 1}}), interior, slice(u, {{n - 1, n}})});
    }
    return u;
  };
  Array u = make_array(DType::Float64, {5000}, pseudo_random(5000, 0, 1, 10));
  Function function = compile(heat, test_options());
  expect_function_matches(function, heat, {u}, {1e-12, 1e-12, 4}, "heat");
  EXPECT_EQ(function.stats().kernels, kSteps / 3);
  EXPECT_EQ(kernel_functions(function.source()), 1) << function.source();
}

// A foreach optimizer step (PyTorch's multi-tensor Adam) lists every tensor's new first moment,
// then every new second moment, then every new parameter, each an output. The three updates of
// one tensor join one loop (sched/kernel_groups.cpp: an output holds no arena memory longer
// when computed earlier, whatever its size): one kernel a tensor, each moment stored once and
// the parameter update reading them in the same iteration, not 9 kernels reading them back.
TEST(KernelCounts, ForeachUpdatesOfOneTensorShareOneKernel) {
  const std::vector<std::vector<int64_t>> shapes{{40000}, {300, 200}, {128, 512}};
  auto adam = [](std::vector<Tensor> in) {  // per tensor: parameter, gradient, moments
    std::vector<Tensor> first, second, parameters;
    for (size_t k = 0; k < in.size(); k += 4)
      first.push_back(in[k + 2] + (in[k + 1] - in[k + 2]) * 0.1f);
    for (size_t k = 0; k < in.size(); k += 4)
      second.push_back(in[k + 3] * 0.999f + in[k + 1] * in[k + 1] * 0.001f);
    for (size_t k = 0; k < first.size(); ++k)
      parameters.push_back(in[4 * k] - first[k] * 0.01f / (sqrt(second[k]) + 1e-8f));
    std::vector<Tensor> outputs = first;
    outputs.insert(outputs.end(), second.begin(), second.end());
    outputs.insert(outputs.end(), parameters.begin(), parameters.end());
    return outputs;
  };
  std::vector<Array> inputs;
  uint64_t seed = 20;
  for (const std::vector<int64_t>& shape : shapes) {
    const int64_t n = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    for (int k = 0; k < 4; ++k)
      inputs.push_back(make_array(DType::Float32, shape, pseudo_random(n, k == 3 ? 0.1 : -1,
                                                                       1, seed++)));
  }
  auto program = [&](Tensor p0, Tensor g0, Tensor m0, Tensor v0, Tensor p1, Tensor g1, Tensor m1,
                     Tensor v1, Tensor p2, Tensor g2, Tensor m2, Tensor v2) {
    return adam({p0, g0, m0, v0, p1, g1, m1, v1, p2, g2, m2, v2});
  };
  Function function = compile(program, test_options());
  expect_function_matches(function, program, inputs, {1e-5, 1e-6, 4}, "foreach adam");
  EXPECT_EQ(function.stats().kernels, 3) << function.source();
}

}  // namespace
}  // namespace kiln::test
