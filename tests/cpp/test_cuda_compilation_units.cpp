// How a CUDA program is cut into NVRTC units (codegen/cuda/compilation_units.h): by estimated
// compile time, deterministically, every kernel's functions in exactly one unit. The units of
// emitted programs compiling with NVRTC is test_cuda_emitter.cpp's (EmittedCorpusCompiles).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/cuda_emitter.h"

namespace kiln {
namespace {

// A kernel function whose body is `statements` copies of one statement line, in a loop of
// `trips` steps behind `pragma` (none: not in a loop).
std::string kernel_text(const std::string& name, int statements, int trips = 0,
                        const std::string& pragma = "") {
  std::string text = "// " + name + ": a fused kernel\nextern \"C\" __global__ void " + name +
                     "(kiln_arg_table<2> kiln_args) {\n";
  if (trips > 0) {
    if (!pragma.empty()) text += pragma + "\n";
    text += "  for (int i0_step = 0; i0_step < " + std::to_string(trips) + "; ++i0_step) {\n";
  }
  for (int k = 0; k < statements; ++k)
    text += "    const float v" + std::to_string(k) + " = kiln_op_exp(x[i0 + " + std::to_string(k) +
            "]);\n";
  if (trips > 0) text += "  }\n";
  return text + "}\n";
}

TEST(CudaCompilationUnits, CostCountsTheCopiesAFullUnrollMakes) {
  const int64_t plain = codegen::estimated_nvrtc_cost(kernel_text("k", 20, 24));
  const int64_t full = codegen::estimated_nvrtc_cost(kernel_text("k", 20, 24, "#pragma unroll"));
  const int64_t four = codegen::estimated_nvrtc_cost(kernel_text("k", 20, 24, "#pragma unroll 4"));
  const int64_t one = codegen::estimated_nvrtc_cost(kernel_text("k", 20, 24, "#pragma unroll 1"));
  const int64_t body = codegen::estimated_nvrtc_cost(kernel_text("k", 20)) -
                       codegen::estimated_nvrtc_cost(kernel_text("k", 0));
  EXPECT_GT(body, 0);
  EXPECT_EQ(one, plain);
  EXPECT_EQ(full - plain, 23 * body);  // 24 copies of the body where there was one
  EXPECT_EQ(four - plain, 3 * body);
  // A loop to a bound the compiler cannot count is not unrolled whole.
  std::string unknown = kernel_text("k", 20, 24, "#pragma unroll");
  unknown.replace(unknown.find("< 24;"), 5, "< n;");
  EXPECT_LT(codegen::estimated_nvrtc_cost(unknown), plain + body);
}

TEST(CudaCompilationUnits, CostOfOneLineLoopsAndNestedBlocks) {
  const std::string one_line = "#pragma unroll\nfor (int64_t r = 0; r < 16; ++r) h[r] = x[r];\n";
  const std::string single = "for (int64_t r = 0; r < 16; ++r) h[r] = x[r];\n";
  EXPECT_EQ(codegen::estimated_nvrtc_cost(one_line), 16 * codegen::estimated_nvrtc_cost(single));
  // Nested unrolled loops multiply; the lines after a loop's block count once again.
  const std::string nested =
      "#pragma unroll\nfor (int a = 0; a < 3; ++a) {\n#pragma unroll\n"
      "for (int b = 0; b < 5; ++b) {\ny += x;\n}\n}\ny += x;\n";
  const int64_t statement = std::string("y += x;").size();
  const int64_t headers = 2 * std::string("for (int a = 0; a < 3; ++a) {").size();
  EXPECT_EQ(codegen::estimated_nvrtc_cost(nested),
            headers / 2 + 3 * (headers / 2) + 15 * statement + statement);
}

TEST(CudaCompilationUnits, EveryFunctionInExactlyOneUnitInSourceOrder) {
  const std::vector<int64_t> costs = {5, 90, 7, 7, 30, 1, 60, 2, 2, 40, 3};
  for (size_t units : {1, 2, 3, 4, 11, 20}) {
    const std::vector<std::vector<size_t>> split = codegen::balanced_units(costs, units);
    EXPECT_EQ(split.size(), std::min(units, costs.size()));
    std::vector<size_t> seen;
    for (const std::vector<size_t>& unit : split) {
      EXPECT_FALSE(unit.empty());
      EXPECT_TRUE(std::is_sorted(unit.begin(), unit.end()));
      seen.insert(seen.end(), unit.begin(), unit.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<size_t> all(costs.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    EXPECT_EQ(seen, all) << units << " units";
    EXPECT_EQ(split, codegen::balanced_units(costs, units)) << "not deterministic";
  }
  EXPECT_EQ(codegen::balanced_units({}, 4), std::vector<std::vector<size_t>>(1));
}

TEST(CudaCompilationUnits, AKernelCostlierThanTheAverageUnitIsAlone) {
  // Four units: 100 alone (more than the average of 244 / 4), the rest spread under it.
  const std::vector<int64_t> costs = {100, 20, 20, 20, 20, 20, 20, 8, 8, 8};
  const std::vector<std::vector<size_t>> split = codegen::balanced_units(costs, 4);
  ASSERT_EQ(split.size(), 4u);
  int64_t slowest = 0;
  for (const std::vector<size_t>& unit : split) {
    int64_t cost = 0;
    for (size_t k : unit) cost += costs[k];
    slowest = std::max(slowest, cost);
    if (std::find(unit.begin(), unit.end(), 0u) != unit.end()) EXPECT_EQ(unit.size(), 1u);
  }
  EXPECT_EQ(slowest, 100);  // runs in source order would put 100 with three 20s: 160
}

TEST(CudaCompilationUnits, SplitSourceKeepsTheCostlyKernelAlone) {
  codegen::CudaSource source;
  source.header = "// header\n";
  // The source-order split of 8 functions into 2 units put the unrolled one with three others.
  source.functions.push_back(kernel_text("layer_norm", 30, 24, "#pragma unroll"));
  for (int k = 1; k < 8; ++k) source.functions.push_back(kernel_text("add" + std::to_string(k), 3));
  const std::vector<std::string> units = codegen::split_cuda_source(source, 2);
  ASSERT_EQ(units.size(), 2u);
  for (const std::string& unit : units) {
    EXPECT_EQ(unit.rfind(source.header, 0), 0u) << "each unit starts with the header";
    if (unit.find(" layer_norm(") != std::string::npos)
      EXPECT_EQ(unit, source.header + source.functions[0]);
  }
  for (size_t k = 0; k < source.functions.size(); ++k)
    EXPECT_EQ(std::count_if(units.begin(), units.end(), [&](const std::string& unit) {
                return unit.find(source.functions[k]) != std::string::npos;
              }), 1) << k;
  EXPECT_EQ(units, codegen::split_cuda_source(source, 2));
}

TEST(CudaCompilationUnits, UnitCountIsRunsOfAFewFunctionsAtMostTheCores) {
  auto even = [](size_t functions) { return std::vector<int64_t>(functions, 10); };
  EXPECT_EQ(codegen::cuda_unit_count(even(0), 16), 1u);
  EXPECT_EQ(codegen::cuda_unit_count(even(3), 16), 1u);
  EXPECT_EQ(codegen::cuda_unit_count(even(9), 16), 3u);
  EXPECT_EQ(codegen::cuda_unit_count(even(100), 16), 16u);
  EXPECT_EQ(codegen::cuda_unit_count(even(100), 0), 1u);
  // 12 functions, a few of them costly: 4 units (the total over the costliest, 134 / 35), not
  // 3, so that the costliest can bound the slowest unit; at most the cores still.
  std::vector<int64_t> three_costly = {8, 18, 3, 3, 2, 11, 4, 4, 2, 22, 22, 35};
  for (int64_t& cost : three_costly) cost *= 1000;  // (BERT 1x8's, in thousands)
  EXPECT_EQ(codegen::cuda_unit_count(three_costly, 16), 4u);
  EXPECT_EQ(codegen::cuda_unit_count(three_costly, 2), 2u);
  EXPECT_EQ(codegen::cuda_unit_count({5, 0, 0, 0, 0, 0, 0, 0, 0}, 16), 3u);
}

}  // namespace
}  // namespace kiln
