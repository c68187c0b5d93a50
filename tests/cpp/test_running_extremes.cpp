// The scans cummax and cummin (op_list.h): the interpreter against hand-computed running
// extremes (a NaN sticks from where it appears; -inf, ties, signed zeros; integers, bool),
// and the CPU's generated scans against the interpreter along the first and the last axis.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compile_test_util.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_values(const Array& got, const std::vector<double>& want) {
  std::vector<double> values = got.to_vector<double>();
  ASSERT_EQ(values.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k])) EXPECT_TRUE(std::isnan(values[k])) << k;
    else EXPECT_EQ(values[k], want[k]) << k;
  }
}

TEST(RunningExtremes, InterpreterKeepsNaNAndTies) {
  GraphCase g;
  ValueId f = g.input(make_array(DType::Float64, {7}, {-kInf, 2, 1, 2, kNaN, 5, -1}));
  ValueId i = g.input(make_array(DType::Int32, {6}, {3, -4, 3, 7, -9, 7}));
  ValueId b = g.input(make_array(DType::Bool, {4}, {0, 1, 0, 1}));
  for (ValueId x : {f, i, b}) {
    g.output(g.builder.scan(Op::cummax, x, 0), "cummax");
    g.output(g.builder.scan(Op::cummin, x, 0), "cummin");
  }
  g.graph.set_outputs(g.outputs);
  std::vector<Array> out = ir::interpret(g.graph, g.inputs);
  expect_values(out[0], {-kInf, 2, 2, 2, kNaN, kNaN, kNaN});
  expect_values(out[1], {-kInf, -kInf, -kInf, -kInf, kNaN, kNaN, kNaN});
  expect_values(out[2], {3, 3, 3, 7, 7, 7});
  expect_values(out[3], {3, -4, -4, -4, -9, -9});
  expect_values(out[4], {0, 1, 1, 1});
  expect_values(out[5], {0, 0, 0, 0});
  EXPECT_EQ(out[2].dtype(), DType::Int32);
  EXPECT_EQ(out[4].dtype(), DType::Bool);
  g.check();
}

TEST(RunningExtremesCompiled, EveryAxisAndDtypeMatchesTheInterpreter) {
  GraphCase g;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int64, DType::UInt8, DType::Int8}) {
    ValueId x = g.input(make_array(dtype, {5, 37}, pseudo_random(5 * 37, -100, 100, 21)));
    for (int64_t axis : {0, 1, -1}) {
      g.output(g.builder.scan(Op::cummax, x, axis), "cummax");
      g.output(g.builder.scan(Op::cummin, x, axis), "cummin");
    }
  }
  // Specials along the scanned axis: NaN at every place, infinities and signed zeros.
  std::vector<double> specials;
  for (int row = 0; row < 6; ++row)
    for (int k = 0; k < 6; ++k)  // -0, 0, 0, -inf, 7, inf
      specials.push_back(k == row  ? kNaN
                         : k < 3   ? (k - 1) * 0.0
                         : k == 3  ? -kInf
                         : k == 4  ? 7.0
                                   : kInf);
  ValueId s = g.input(make_array(DType::Float32, {6, 6}, specials));
  g.output(g.builder.scan(Op::cummax, s, 1), "cummax of specials");
  g.output(g.builder.scan(Op::cummin, s, 1), "cummin of specials");
  g.output(g.builder.scan(Op::cummax, s, 0), "cummax of specials down columns");
  g.check();
}

}  // namespace
}  // namespace kiln::test
