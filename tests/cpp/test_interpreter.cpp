// The reference interpreter on hand-built graphs: every op family against values worked out by
// hand in the test (NumPy's results for the same calls).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ir/builder.h"
#include "ir/interpreter.h"
#define KILN_SCALAR_MATH_NO_SIMD
// The host C++ compiler builds this: the C++ prelude supplies the semantics' primitives.
#include "codegen/cpp/cpp_prelude.h"
#include "ir/scalar_math.h"
#include "ir/scalar_random.h"

namespace kiln::ir {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

class InterpreterTest : public ::testing::Test {
 protected:
  InterpreterTest() : builder(graph) { builder.set_location("model.cpp:7"); }

  // Runs the graph with `outputs` and returns the first result.
  Array run(std::vector<ValueId> outputs, const std::vector<Array>& inputs) {
    graph.set_outputs(std::move(outputs));
    std::vector<Array> results = interpret(graph, inputs);
    EXPECT_EQ(results.size(), graph.outputs().size());
    for (const Array& result : results) EXPECT_TRUE(result.is_contiguous());
    return results.at(0);
  }
  Array run(ValueId output, const std::vector<Array>& inputs = {}) {
    return run(std::vector<ValueId>{output}, inputs);
  }

  // Elements as doubles, row-major.
  static std::vector<double> values(const Array& array) { return array.to_vector<double>(); }

  Graph graph;
  Builder builder;
};

void expect_values(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) EXPECT_TRUE(std::isnan(actual[i])) << "element " << i;
    else EXPECT_EQ(actual[i], expected[i]) << "element " << i;
  }
}

// Welford's updates round differently from the two-pass formula: allow a few ulp.
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) EXPECT_TRUE(std::isnan(actual[i])) << "element " << i;
    else EXPECT_DOUBLE_EQ(actual[i], expected[i]) << "element " << i;
  }
}

Array floats(const std::vector<float>& data, std::vector<int64_t> shape) {
  return Array::from_vector(data, std::move(shape));
}
Array ints(const std::vector<int32_t>& data, std::vector<int64_t> shape) {
  return Array::from_vector(data, std::move(shape));
}

TEST_F(InterpreterTest, BinaryOpsBroadcastTheirOperands) {
  ValueId a = builder.parameter(DType::Float32, {2, 3});
  ValueId b = builder.parameter(DType::Float32, {3});
  Array result = run(builder.binary(Op::sub, a, b),
                     {floats({1, 2, 3, 4, 5, 6}, {2, 3}), floats({10, 20, 30}, {3})});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 3}));
  expect_values(values(result), {-9, -18, -27, -6, -15, -24});
}

TEST_F(InterpreterTest, IntegerFloordivModAndWrapAround) {
  ValueId a = builder.parameter(DType::Int32, {4});
  ValueId b = builder.parameter(DType::Int32, {4});
  graph.set_outputs({builder.binary(Op::floordiv, a, b), builder.binary(Op::mod, a, b),
                     builder.binary(Op::mul, a, b)});
  std::vector<Array> results =
      interpret(graph, {ints({-7, 7, 5, 2147483647}, {4}), ints({2, -2, 0, 2}, {4})});
  expect_values(values(results[0]), {-4, -4, 0, 1073741823});
  expect_values(values(results[1]), {1, -1, 0, 1});
  expect_values(values(results[2]), {-14, -14, 0, -2});  // 2^32 - 2 wraps to -2
}

TEST_F(InterpreterTest, UnaryComparisonAndWhere) {
  ValueId x = builder.parameter(DType::Float64, {4});
  ValueId zero = builder.constant(Scalar::of(0.0), DType::Float64);
  ValueId positive = builder.binary(Op::gt, x, zero);
  ValueId chosen = builder.where(positive, builder.unary(Op::sqrt, x), builder.unary(Op::neg, x));
  Array input = Array::from_vector(std::vector<double>{4, -2, 9, kNaN}, {4});
  graph.set_outputs({chosen, builder.unary(Op::isnan, x), builder.unary(Op::round, x)});
  std::vector<Array> results = interpret(graph, {input});
  expect_values(values(results[0]), {2, 2, 3, kNaN});
  EXPECT_EQ(results[1].dtype(), DType::Bool);
  expect_values(values(results[1]), {0, 0, 0, 1});
  expect_values(values(results[2]), {4, -2, 9, kNaN});
}

TEST_F(InterpreterTest, MaximumPropagatesNaN) {
  ValueId a = builder.parameter(DType::Float32, {3});
  ValueId b = builder.parameter(DType::Float32, {3});
  graph.set_outputs({builder.binary(Op::maximum, a, b), builder.binary(Op::fmax, a, b)});
  float nan = std::nanf("");
  std::vector<Array> results =
      interpret(graph, {floats({1, nan, 5}, {3}), floats({2, 3, nan}, {3})});
  expect_values(values(results[0]), {2, kNaN, kNaN});
  expect_values(values(results[1]), {2, 3, 5});
}

TEST_F(InterpreterTest, Float16ComputesInFloatAndRoundsOnStore) {
  ValueId x = builder.parameter(DType::Float32, {3});
  ValueId half = builder.cast(x, DType::Float16);
  ValueId sum = builder.binary(Op::add, half, half);
  ValueId back = builder.cast(sum, DType::Float32);
  // 1 + 2^-11 is a tie in float16 and rounds to 1; 65504 * 2 overflows to inf.
  Array result = run(back, {floats({1.0f + 1.0f / 2048, 0.1f, 65504.0f}, {3})});
  expect_values(values(result), {2.0, 0.199951171875, INFINITY});
}

TEST_F(InterpreterTest, CastFollowsNumPyOnX86) {
  ValueId x = builder.parameter(DType::Float64, {6});
  graph.set_outputs({builder.cast(x, DType::Int32), builder.cast(x, DType::Bool),
                     builder.cast(x, DType::UInt8)});
  Array input = Array::from_vector(std::vector<double>{kNaN, INFINITY, -INFINITY, 2.7, -2.7, 0},
                                   {6});
  std::vector<Array> results = interpret(graph, {input});
  expect_values(values(results[0]), {-2147483648.0, -2147483648.0, -2147483648.0, 2, -2, 0});
  expect_values(values(results[1]), {1, 1, 1, 1, 1, 0});
  expect_values(values(results[2]), {0, 0, 0, 2, 254, 0});
}

TEST_F(InterpreterTest, SumAndProdOverAxes) {
  ValueId x = builder.parameter(DType::Int32, {2, 3});
  ValueId rows = builder.reduce(Op::sum, x, {1}, true);
  ValueId all = builder.reduce(Op::prod, x, {}, false);
  graph.set_outputs({rows, all, builder.reduce(Op::sum, x, {0}, false)});
  std::vector<Array> results = interpret(graph, {ints({1, 2, 3, 4, 5, 6}, {2, 3})});
  EXPECT_EQ(results[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_values(values(results[0]), {6, 15});
  EXPECT_EQ(results[1].shape(), (std::vector<int64_t>{}));
  expect_values(values(results[1]), {720});
  expect_values(values(results[2]), {5, 7, 9});
}

TEST_F(InterpreterTest, ReductionsOverNoElementsGiveTheIdentity) {
  ValueId x = builder.parameter(DType::Float32, {0, 3});
  graph.set_outputs({builder.reduce(Op::sum, x, {0}, false),
                     builder.reduce(Op::prod, x, {0}, false),
                     builder.reduce(Op::any, x, {0}, false),
                     builder.reduce(Op::all, x, {0}, false)});
  std::vector<Array> results = interpret(graph, {Array::empty(DType::Float32, {0, 3})});
  expect_values(values(results[0]), {0, 0, 0});
  expect_values(values(results[1]), {1, 1, 1});
  expect_values(values(results[2]), {0, 0, 0});
  expect_values(values(results[3]), {1, 1, 1});
}

TEST_F(InterpreterTest, ArgmaxTakesTheFirstOccurrenceAndNaNWins) {
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  graph.set_outputs({builder.reduce(Op::argmax, x, {1}, false),
                     builder.reduce(Op::argmin, x, {1}, false),
                     builder.reduce(Op::max, x, {1}, false)});
  float nan = std::nanf("");
  std::vector<Array> results =
      interpret(graph, {floats({1, 3, 3, 2, /**/ 1, nan, 5, nan, /**/ 0, -1, -1, 7}, {3, 4})});
  EXPECT_EQ(results[0].dtype(), DType::Int64);
  expect_values(values(results[0]), {1, 1, 3});
  expect_values(values(results[1]), {0, 1, 1});
  expect_values(values(results[2]), {3, kNaN, 7});
}

TEST_F(InterpreterTest, ArgmaxOfNoElementsIsAValueError) {
  Node node;
  node.op = Op::argmax;
  node.dtype = DType::Int64;
  node.shape = {3};
  node.attrs.axes = {0};
  node.location = "model.cpp:9";
  try {
    interpret_node(node, {Array::empty(DType::Float32, {0, 3})});
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(error.what()).find("argmax at model.cpp:9"), std::string::npos)
        << error.what();
  }
}

TEST_F(InterpreterTest, VarianceWithDdof) {
  ValueId x = builder.parameter(DType::Float64, {2, 4});
  graph.set_outputs({builder.reduce(Op::var, x, {1}, false, 1),
                     builder.reduce(Op::var, x, {1}, false, 0),
                     builder.reduce(Op::var, x, {0}, false, 2)});
  Array input = Array::from_vector(std::vector<double>{2, 4, 4, 4, 5, 5, 7, 9}, {2, 4});
  std::vector<Array> results = interpret(graph, {input});
  // Squared deviations: [2, 4, 4, 4] (mean 3.5) sum to 3; [5, 5, 7, 9] (mean 6.5) to 11.
  expect_close(values(results[0]), {1.0, 11.0 / 3.0});
  expect_close(values(results[1]), {0.75, 2.75});
  // Columns hold 2 elements each: ddof 2 leaves no degrees of freedom -> m2 / 0, inf where the
  // two differ (NumPy's and torch's answer; kiln gave NaN).
  expect_values(values(results[2]), {kInf, kInf, kInf, kInf});
}

TEST_F(InterpreterTest, InclusiveScans) {
  ValueId x = builder.parameter(DType::Int32, {2, 3});
  graph.set_outputs({builder.scan(Op::cumsum, x, 1), builder.scan(Op::cumsum, x, 0),
                     builder.scan(Op::cumprod, x, -1)});
  std::vector<Array> results = interpret(graph, {ints({1, 2, 3, 4, 5, 6}, {2, 3})});
  expect_values(values(results[0]), {1, 3, 6, 4, 9, 15});
  expect_values(values(results[1]), {1, 2, 3, 5, 7, 9});
  expect_values(values(results[2]), {1, 2, 6, 4, 20, 120});
}

TEST_F(InterpreterTest, SliceWithNegativeStep) {
  ValueId x = builder.parameter(DType::Int32, {3, 4});
  // x[2:0:-1, 1::2] and x[::-1, -1]-style reversed slice.
  ValueId sliced = builder.slice(x, {2, 1}, {0, 4}, {-1, 2});
  ValueId reversed = builder.slice(x, {-1, 3}, {-100, 4}, {-2, 1});
  graph.set_outputs({sliced, reversed});
  std::vector<Array> results =
      interpret(graph, {ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4})});
  EXPECT_EQ(results[0].shape(), (std::vector<int64_t>{2, 2}));
  expect_values(values(results[0]), {9, 11, 5, 7});
  EXPECT_EQ(results[1].shape(), (std::vector<int64_t>{2, 1}));
  expect_values(values(results[1]), {11, 3});
}

TEST_F(InterpreterTest, PadReflectEdgeAndConstant) {
  ValueId x = builder.parameter(DType::Int32, {3});
  graph.set_outputs({builder.pad(x, {2}, {2}, PadMode::Reflect),
                     builder.pad(x, {2}, {1}, PadMode::Edge),
                     builder.pad(x, {1}, {2}, PadMode::Constant, Scalar::of_int(9))});
  std::vector<Array> results = interpret(graph, {ints({1, 2, 3}, {3})});
  expect_values(values(results[0]), {3, 2, 1, 2, 3, 2, 1});
  expect_values(values(results[1]), {1, 1, 1, 2, 3, 3});
  expect_values(values(results[2]), {9, 1, 2, 3, 9, 9});
}

TEST_F(InterpreterTest, PadTwoDimensionsWithEdge) {
  ValueId x = builder.parameter(DType::Float32, {2, 2});
  Array result = run(builder.pad(x, {1, 0}, {0, 1}, PadMode::Edge), {floats({1, 2, 3, 4}, {2, 2})});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{3, 3}));
  expect_values(values(result), {1, 2, 2, 1, 2, 2, 3, 4, 4});
}

TEST_F(InterpreterTest, ConcatAlongAnAxis) {
  ValueId a = builder.parameter(DType::Int32, {2, 1});
  ValueId b = builder.parameter(DType::Int32, {2, 2});
  Array result =
      run(builder.concat({a, b, a}, 1), {ints({1, 2}, {2, 1}), ints({3, 4, 5, 6}, {2, 2})});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 4}));
  expect_values(values(result), {1, 3, 4, 1, 2, 5, 6, 2});
}

TEST_F(InterpreterTest, GatherWrapsNegativeIndicesOnceThenClamps) {
  ValueId x = builder.parameter(DType::Float32, {4});
  ValueId index = builder.parameter(DType::Int64, {4});
  Array indices = Array::from_vector(std::vector<int64_t>{-1, 0, 5, -9}, {4});
  Array result = run(builder.gather(x, index, 0), {floats({10, 20, 30, 40}, {4}), indices});
  expect_values(values(result), {40, 10, 40, 10});
}

TEST_F(InterpreterTest, GatherAlongAnInnerAxisWithAMatrixOfIndices) {
  ValueId x = builder.parameter(DType::Int32, {2, 3});
  ValueId index = builder.parameter(DType::Int32, {2, 2});
  Array result = run(builder.gather(x, index, 1),
                     {ints({1, 2, 3, 4, 5, 6}, {2, 3}), ints({2, 0, -2, 1}, {2, 2})});
  // np.take(x, [[2, 0], [-2, 1]], axis=1) has shape (2, 2, 2).
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 2, 2}));
  expect_values(values(result), {3, 1, 2, 2, 6, 4, 5, 5});
}

TEST_F(InterpreterTest, ScatterAddAccumulatesDuplicatesAndSetKeepsTheLast) {
  ValueId a = builder.parameter(DType::Float32, {5});
  ValueId index = builder.parameter(DType::Int32, {3});
  ValueId updates = builder.parameter(DType::Float32, {3});
  graph.set_outputs({builder.scatter(a, index, updates, 0, ScatterMode::Add),
                     builder.scatter(a, index, updates, 0, ScatterMode::Set)});
  std::vector<Array> results = interpret(
      graph, {floats({1, 1, 1, 1, 1}, {5}), ints({1, 1, -2}, {3}), floats({1, 2, 3}, {3})});
  expect_values(values(results[0]), {1, 4, 1, 4, 1});
  expect_values(values(results[1]), {1, 2, 1, 3, 1});
}

TEST_F(InterpreterTest, ScatterAlongColumns) {
  ValueId a = builder.parameter(DType::Int32, {2, 3});
  ValueId index = builder.parameter(DType::Int32, {2});
  ValueId updates = builder.parameter(DType::Int32, {2, 2});
  Array result = run(builder.scatter(a, index, updates, 1, ScatterMode::Add),
                     {ints({0, 0, 0, 0, 0, 0}, {2, 3}), ints({2, 2}, {2}),
                      ints({1, 2, 3, 4}, {2, 2})});
  expect_values(values(result), {0, 0, 3, 0, 0, 7});
}

TEST_F(InterpreterTest, BatchedMatmulBroadcastsTheBatch) {
  ValueId a = builder.parameter(DType::Float32, {2, 2, 3});
  ValueId b = builder.parameter(DType::Float32, {3, 2});
  Array result = run(builder.matmul(a, b), {floats({1, 2, 3, 4, 5, 6, /**/ 1, 0, 0, 0, 1, 0},
                                                   {2, 2, 3}),
                                            floats({1, 2, 3, 4, 5, 6}, {3, 2})});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 2, 2}));
  // [[1,2,3],[4,5,6]] @ [[1,2],[3,4],[5,6]] = [[22,28],[49,64]]; the second batch picks rows.
  expect_values(values(result), {22, 28, 49, 64, 1, 2, 3, 4});
}

TEST_F(InterpreterTest, MatmulOfAVectorAndIntegerMatmul) {
  ValueId v = builder.parameter(DType::Int32, {3});
  ValueId m = builder.parameter(DType::Int32, {3, 2});
  ValueId w = builder.parameter(DType::Int32, {2});
  graph.set_outputs({builder.matmul(v, m), builder.matmul(m, w)});
  std::vector<Array> results = interpret(
      graph, {ints({1, 2, 3}, {3}), ints({1, 2, 3, 4, 5, 6}, {3, 2}), ints({1, -1}, {2})});
  EXPECT_EQ(results[0].shape(), (std::vector<int64_t>{2}));
  expect_values(values(results[0]), {22, 28});
  EXPECT_EQ(results[1].shape(), (std::vector<int64_t>{3}));
  expect_values(values(results[1]), {-1, -1, -1});
}

TEST_F(InterpreterTest, StridedInputsAreReadInPlace) {
  // A transposed view: logical (2, 3) over a row-major (3, 2) buffer.
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  Array transposed = Array::borrow(storage.data(), DType::Float32, {2, 3}, {1, 2});
  // A reversed view with a negative stride.
  Array reversed = Array::borrow(storage.data() + 5, DType::Float32, {3}, {-2});
  ValueId x = builder.parameter(DType::Float32, {2, 3});
  ValueId y = builder.parameter(DType::Float32, {3});
  graph.set_outputs({builder.binary(Op::add, x, y), builder.reduce(Op::sum, x, {1}, false), x});
  std::vector<Array> results = interpret(graph, {transposed, reversed});
  // transposed = [[1,3,5],[2,4,6]], reversed = [6,4,2].
  expect_values(values(results[0]), {7, 7, 7, 8, 8, 8});
  expect_values(values(results[1]), {9, 12});
  expect_values(values(results[2]), {1, 3, 5, 2, 4, 6});  // a parameter output is copied
  EXPECT_NE(results[2].data(), storage.data());
}

TEST_F(InterpreterTest, ViewOpsPermuteReshapeFlipBroadcast) {
  ValueId x = builder.parameter(DType::Int32, {2, 3});
  graph.set_outputs({builder.permute(x, {1, 0}), builder.reshape(x, {3, -1}),
                     builder.flip(x, {1}),
                     builder.broadcast(builder.reshape(x, {2, 1, 3}), {2, 2, 3})});
  std::vector<Array> results = interpret(graph, {ints({1, 2, 3, 4, 5, 6}, {2, 3})});
  expect_values(values(results[0]), {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(results[1].shape(), (std::vector<int64_t>{3, 2}));
  expect_values(values(results[1]), {1, 2, 3, 4, 5, 6});
  expect_values(values(results[2]), {3, 2, 1, 6, 5, 4});
  expect_values(values(results[3]), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
}

TEST_F(InterpreterTest, SourcesConstantIotaAndRandom) {
  ValueId constant = builder.constant(Scalar::of(2.5), DType::Float32, {2});
  ValueId iota = builder.iota(DType::Int64, {2, 3}, 1);
  ValueId uniform = builder.random_uniform(DType::Float64, {1000}, 7);
  ValueId again = builder.random_uniform(DType::Float64, {1000}, 7);
  ValueId normal = builder.random_normal(DType::Float32, {4}, 7);
  graph.set_outputs({constant, iota, uniform, again, normal});
  std::vector<Array> results = interpret(graph, {});
  expect_values(values(results[0]), {2.5, 2.5});
  expect_values(values(results[1]), {0, 1, 2, 0, 1, 2});
  std::vector<double> first = values(results[2]);
  EXPECT_EQ(first, values(results[3]));
  double sum = 0;
  for (double value : first) {
    EXPECT_GE(value, 0.0);
    EXPECT_LT(value, 1.0);
    sum += value;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.05);
  // Element i uses Philox counter i: the interpreter and generated code agree element-wise.
  EXPECT_EQ(first[3], kiln_philox_uniform_f64(7, 3));
}

// A key input (torch.compile's per-call seed) is added to the seed when the graph runs.
TEST_F(InterpreterTest, RandomKeysAreAddedToTheSeed) {
  ValueId key = builder.parameter(DType::Int64, {});
  graph.set_outputs({builder.random_uniform(DType::Float32, {8}, 5, key)});
  for (int64_t k : {int64_t{0}, int64_t{3}, int64_t{-6}}) {
    Array input = Array::empty(DType::Int64, {});
    *input.data_as<int64_t>() = k;
    std::vector<double> drawn = values(interpret(graph, {input})[0]);
    EXPECT_EQ(drawn[6], kiln_philox_uniform_f32(5 + static_cast<uint64_t>(k), 6)) << k;
  }
}

TEST_F(InterpreterTest, ConstantArrayIsRowMajorBytes) {
  std::vector<int16_t> data = {-3, 7, 300, 0};
  std::vector<uint8_t> bytes(data.size() * sizeof(int16_t));
  std::memcpy(bytes.data(), data.data(), bytes.size());
  Array result = run(builder.constant_array(bytes, DType::Int16, {2, 2}));
  EXPECT_EQ(result.dtype(), DType::Int16);
  expect_values(values(result), {-3, 7, 300, 0});
}

// Completeness: every elementwise op of the table runs on every dtype it accepts, on zeros
// (which also divides integers by zero: that must give 0, never trap).
TEST_F(InterpreterTest, EveryElementwiseOpRunsOnEveryAcceptedDtype) {
  int evaluated = 0;
  for (int op_index = 0; op_index < static_cast<int>(Op::op_count); ++op_index) {
    Op op = static_cast<Op>(op_index);
    const OpInfo& info = op_info(op);
    if (!is_elementwise(op)) continue;
    for (int dtype_index = 0; dtype_index < kDTypeCount; ++dtype_index) {
      DType dtype = static_cast<DType>(dtype_index);
      if ((info.accepts & static_cast<uint8_t>(dtype_class(dtype))) == 0) continue;
      Graph local;
      Builder b(local);
      ValueId x = b.parameter(dtype, {3});
      ValueId result = info.kind == OpKind::Unary    ? b.unary(op, x)
                       : info.kind == OpKind::Binary ? b.binary(op, x, x)
                                                     : b.where(b.cast(x, DType::Bool), x, x);
      local.set_outputs({result});
      std::vector<Array> outputs = interpret(local, {Array::zeros(dtype, {3})});
      ASSERT_EQ(outputs.size(), 1u);
      EXPECT_EQ(outputs[0].dtype(), local.node(result).dtype) << op_name(op);
      EXPECT_EQ(outputs[0].shape(), (std::vector<int64_t>{3})) << op_name(op);
      ++evaluated;
    }
  }
  EXPECT_GT(evaluated, 400);
}

TEST_F(InterpreterTest, WrongInputsAreUserErrors) {
  builder.parameter(DType::Float32, {2});
  graph.set_outputs({0});
  EXPECT_THROW(interpret(graph, {}), Error);
  try {
    interpret(graph, {ints({1, 2}, {2})});
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Type);
    EXPECT_NE(std::string(error.what()).find("parameter at model.cpp:7"), std::string::npos)
        << error.what();
  }
  try {
    interpret(graph, {floats({1, 2, 3}, {3})});
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value);
  }
}

}  // namespace
}  // namespace kiln::ir
