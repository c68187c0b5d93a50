// Decompositions built through the Tensor API inside a Trace and evaluated by the reference
// interpreter, against values computed by hand (or by NumPy, quoted in the comments).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "api/runtime_checks.h"
#include "api/trace.h"
#include "ir/interpreter.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Evaluates `outputs` of `trace` on `inputs` and returns each output as doubles.
std::vector<std::vector<double>> evaluate(detail::Trace& trace, const std::vector<Tensor>& outputs,
                                          const std::vector<Array>& inputs) {
  std::vector<ir::ValueId> ids;
  for (const Tensor& output : outputs) ids.push_back(output.id());
  trace.graph.set_outputs(ids);
  std::vector<std::vector<double>> values;
  for (const Array& array : ir::interpret(trace.graph, inputs)) {
    values.push_back(array.to_vector<double>());
  }
  return values;
}

std::vector<double> evaluate_one(detail::Trace& trace, const Tensor& output,
                                 const std::vector<Array>& inputs) {
  return evaluate(trace, {output}, inputs)[0];
}

void expect_near_all(const std::vector<double>& actual, const std::vector<double>& expected,
                     double tolerance = 1e-12) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
    }
  }
}

// Checks conditioned on a constant false (a branch side traced for a select, then run as a loop
// of its own) are dropped, not kept with a flag that is never set: the values they read were
// the only use of that side's whole trace, which then stayed in the graph.
TEST(RuntimeChecks, ChecksThatNeverApplyAreDropped) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {3});
  Tensor divisor = trace.input(DType::Int64, {3});
  detail::check_nonzero_divisor(trace, divisor.id(), "remainder");
  size_t first = trace.checks.size();
  detail::check_nonzero_divisor(trace, divisor.id(), "floor_divide");
  detail::check_nonzero_divisor(trace, divisor.id(), "remainder");
  ASSERT_EQ(trace.checks.size(), first + 2);
  Tensor taken = sum(x) > 0.0;
  detail::condition_checks(trace, first, taken.id());  // kept, where taken
  ASSERT_EQ(trace.checks.size(), first + 2);
  detail::condition_checks(trace, first + 1,
                           trace.builder.constant(ir::Scalar::of_int(0), DType::Bool));
  EXPECT_EQ(trace.checks.size(), first + 1);
}

TEST(Decompositions, SoftmaxRowsSumToOne) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 3});
  std::vector<double> result = evaluate_one(
      trace, softmax(x, -1), {Array::from_vector<double>({1, 2, 3, 0, 0, 0}, {2, 3})});
  double total = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_near_all(result, {std::exp(1.0) / total, std::exp(2.0) / total, std::exp(3.0) / total,
                           1.0 / 3, 1.0 / 3, 1.0 / 3});
  EXPECT_NEAR(result[0] + result[1] + result[2], 1.0, 1e-15);
}

TEST(Decompositions, LogSoftmaxAndLogSumExpHandleInfiniteRows) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 2});
  auto values = evaluate(trace, {logsumexp(x, {1}), log_softmax(x, 1), logsumexp(x, {1}, true)},
                         {Array::from_vector<double>({-kInf, -kInf, 0, std::log(3.0)}, {2, 2})});
  // scipy.special.logsumexp([-inf, -inf]) == -inf; [0, log 3] -> log 4.
  expect_near_all(values[0], {-kInf, std::log(4.0)});
  expect_near_all(values[1], {NAN, NAN, std::log(0.25), std::log(0.75)});
  expect_near_all(values[2], {-kInf, std::log(4.0)});
  EXPECT_EQ(trace.graph.node(trace.graph.outputs()[2]).shape, (ir::Shape{2, 1}));
}

TEST(Decompositions, MeanOfIntegersIsFloat64) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Int32, {2, 3});
  Tensor row_mean = mean(x, {1});
  Tensor total_mean = mean(x);
  EXPECT_EQ(row_mean.dtype(), DType::Float64);
  auto values = evaluate(trace, {row_mean, total_mean},
                         {Array::from_vector<int32_t>({1, 2, 4, 10, 20, 31}, {2, 3})});
  expect_near_all(values[0], {7.0 / 3, 61.0 / 3});
  expect_near_all(values[1], {68.0 / 6});
}

TEST(Decompositions, VarianceAndStandardDeviationHonourDdof) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float32, {4});
  Tensor population = var(x);
  Tensor sample = var(x, {}, false, 1);
  Tensor deviation = kiln::std(x, {0}, true, 1);
  EXPECT_EQ(population.dtype(), DType::Float32);
  EXPECT_EQ(deviation.shape(), (std::vector<int64_t>{1}));
  auto values = evaluate(trace, {population, sample, deviation},
                         {Array::from_vector<float>({1, 2, 3, 4}, {4})});
  expect_near_all(values[0], {1.25}, 1e-6);
  expect_near_all(values[1], {5.0 / 3}, 1e-6);
  expect_near_all(values[2], {std::sqrt(5.0 / 3)}, 1e-6);
}

TEST(Decompositions, VectorNorms) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 2});
  auto values = evaluate(trace,
                         {norm(x, "2", {1}), norm(x, "1", {1}), norm(x, "inf", {1}),
                          norm(x, "-inf", {1}), norm(x, "2", {0}, true)},
                         {Array::from_vector<double>({3, -4, -1, 0}, {2, 2})});
  expect_near_all(values[0], {5, 1});
  expect_near_all(values[1], {7, 1});
  expect_near_all(values[2], {4, 1});
  expect_near_all(values[3], {3, 0});
  expect_near_all(values[4], {std::sqrt(10.0), 4});
}

TEST(Decompositions, MatrixNormsAndTheFlattenedDefault) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 2});
  // numpy.linalg.norm([[1, -2], [3, 4]], ...): fro sqrt(30), 1 -> 6, inf -> 7, default sqrt(30).
  auto values = evaluate(trace,
                         {norm(x, "fro", {0, 1}), norm(x, "1", {0, 1}), norm(x, "inf", {0, 1}),
                          norm(x), norm(x, "1")},
                         {Array::from_vector<double>({1, -2, 3, 4}, {2, 2})});
  expect_near_all(values[0], {std::sqrt(30.0)});
  expect_near_all(values[1], {6});
  expect_near_all(values[2], {7});
  expect_near_all(values[3], {std::sqrt(30.0)});
  expect_near_all(values[4], {6});
}

TEST(Decompositions, VectorTwoNormIsSqrtOfSumOfSquares) {
  // The scheduler's kmeans pattern: sqrt(sum(x * x)), with both multiplicands the same value.
  detail::Trace trace;
  Tensor x = trace.input(DType::Float32, {5, 3});
  Tensor result = norm(x, "2", {1});
  const ir::Node& root = trace.graph.node(result.id());
  ASSERT_EQ(root.op, ir::Op::sqrt);
  const ir::Node& total = trace.graph.node(root.inputs[0]);
  ASSERT_EQ(total.op, ir::Op::sum);
  const ir::Node& squares = trace.graph.node(total.inputs[0]);
  ASSERT_EQ(squares.op, ir::Op::mul);
  EXPECT_EQ(squares.inputs[0], squares.inputs[1]);
  EXPECT_EQ(squares.inputs[0], x.id());
}

TEST(Decompositions, NormErrorsNameTheOrder) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 2});
  EXPECT_THROW(norm(x, "fro", {1}), Error);
  try {
    norm(x, "2", {0, 1});
    ADD_FAILURE() << "the spectral norm should be refused";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(error.what()).find("norm"), std::string::npos) << error.what();
  }
}

TEST(Decompositions, ClipPropagatesNaN) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {4});
  auto values = evaluate(trace, {clip(x, -1.0, 1.0), clip(x, std::nullopt, 0.0)},
                         {Array::from_vector<double>({NAN, -5, 0.5, 5}, {4})});
  expect_near_all(values[0], {NAN, -1, 0.5, 1});
  expect_near_all(values[1], {NAN, -5, 0, 0});
}

TEST(Decompositions, Activations) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {3});
  auto values = evaluate(trace, {sigmoid(x), relu(x), gelu(x), gelu(x, true), square(x)},
                         {Array::from_vector<double>({-1, 0, 1}, {3})});
  expect_near_all(values[0], {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0))});
  expect_near_all(values[1], {0, 0, 1});
  // torch.nn.functional.gelu(tensor([-1., 0., 1.])) and approximate='tanh'.
  expect_near_all(values[2], {-0.15865525393145707, 0, 0.8413447460685429});
  expect_near_all(values[3], {-0.15880800939172324, 0, 0.8411919906082768});
  expect_near_all(values[4], {1, 0, 1});
}

TEST(Decompositions, EinsumMatrixProductEqualsMatmul) {
  detail::Trace trace;
  Tensor a = trace.input(DType::Float64, {2, 3});
  Tensor b = trace.input(DType::Float64, {3, 2});
  auto values = evaluate(trace,
                         {einsum("ij,jk->ik", {a, b}), matmul(a, b), einsum("ij,jk", {a, b})},
                         {Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}),
                          Array::from_vector<double>({7, 8, 9, 10, 11, 12}, {3, 2})});
  expect_near_all(values[0], {58, 64, 139, 154});
  expect_near_all(values[1], values[0]);
  expect_near_all(values[2], values[0]);
}

TEST(Decompositions, EinsumTraceDiagonalTransposeAndSums) {
  detail::Trace trace;
  Tensor m = trace.input(DType::Float64, {3, 3});
  auto values = evaluate(
      trace,
      {einsum("ii->", {m}), einsum("ii->i", {m}), einsum("ij->ji", {m}), einsum("ij->", {m}),
       einsum("ij,ij->i", {m, m}), einsum("ii", {m})},
      {Array::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3})});
  expect_near_all(values[0], {15});
  expect_near_all(values[1], {1, 5, 9});
  expect_near_all(values[2], {1, 4, 7, 2, 5, 8, 3, 6, 9});
  expect_near_all(values[3], {45});
  expect_near_all(values[4], {14, 77, 194});
  expect_near_all(values[5], {15});
}

TEST(Decompositions, EinsumBatchedAndThreeOperands) {
  detail::Trace trace;
  Tensor a = trace.input(DType::Float64, {2, 1, 2});
  Tensor b = trace.input(DType::Float64, {2, 2, 1});
  Tensor v = trace.input(DType::Float64, {2});
  Tensor batched = einsum("bij,bjk->bik", {a, b});
  EXPECT_EQ(batched.shape(), (std::vector<int64_t>{2, 1, 1}));
  auto values = evaluate(trace, {batched, einsum("i,i,i->", {v, v, v}), einsum("i,j->ij", {v, v})},
                         {Array::from_vector<double>({1, 2, 3, 4}, {2, 1, 2}),
                          Array::from_vector<double>({5, 6, 7, 8}, {2, 2, 1}),
                          Array::from_vector<double>({2, 3}, {2})});
  expect_near_all(values[0], {1 * 5 + 2 * 6, 3 * 7 + 4 * 8});
  expect_near_all(values[1], {8 + 27});
  expect_near_all(values[2], {4, 6, 6, 9});
}

TEST(Decompositions, EinsumErrors) {
  detail::Trace trace;
  Tensor a = trace.input(DType::Float64, {2, 3});
  Tensor b = trace.input(DType::Float64, {2, 3});
  EXPECT_THROW(einsum("ij,jk->ik", {a, b}), Error);  // j is 3 in a, 2 in b
  EXPECT_THROW(einsum("ijk->i", {a}), Error);
  EXPECT_THROW(einsum("ij->iz", {a}), Error);
  EXPECT_THROW(einsum("...j->j", {a}), Error);
}

TEST(Decompositions, DotInnerOuterTensordot) {
  detail::Trace trace;
  Tensor m = trace.input(DType::Float64, {2, 2});
  Tensor v = trace.input(DType::Float64, {2});
  Tensor c = trace.input(DType::Int32, {2, 2, 2});
  Tensor contracted = tensordot(c, c, {1, 2}, {0, 1});
  EXPECT_EQ(contracted.dtype(), DType::Int32);
  auto values = evaluate(
      trace,
      {dot(m, v), dot(v, v), dot(v, m), inner(m, m), outer(v, v), contracted, dot(m, m)},
      {Array::from_vector<double>({1, 2, 3, 4}, {2, 2}), Array::from_vector<double>({5, 6}, {2}),
       Array::from_vector<int32_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})});
  expect_near_all(values[0], {17, 39});
  expect_near_all(values[1], {61});
  expect_near_all(values[2], {23, 34});
  expect_near_all(values[3], {5, 11, 11, 25});   // m @ m.T
  expect_near_all(values[4], {25, 30, 30, 36});
  // c reshaped to (2, 4) times c reshaped to (4, 2).
  expect_near_all(values[5], {1 * 1 + 2 * 3 + 3 * 5 + 4 * 7, 1 * 2 + 2 * 4 + 3 * 6 + 4 * 8,
                              5 * 1 + 6 * 3 + 7 * 5 + 8 * 7, 5 * 2 + 6 * 4 + 7 * 6 + 8 * 8});
  expect_near_all(values[6], {7, 10, 15, 22});
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The NumPy ufuncs that are decompositions (decompose/ufuncs.h), against the C library.
// Equal values, NaN equal to NaN.
bool same(double actual, double expected) {
  return actual == expected || (std::isnan(actual) && std::isnan(expected));
}

TEST(UfuncDecompositions, AgreeWithTheCLibrary) {
  std::vector<double> a = {5.5, -5.5, 7, -0.0, 3, -kInf, 1e300, 0.25};
  std::vector<double> b = {2, 2, -3, 1, 3, -kInf, 1e300, -1};
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {8}), y = trace.input(DType::Float64, {8});
  auto [fraction, whole] = modf(x);
  auto [mantissa, exponent] = frexp(x);
  std::vector<std::vector<double>> got =
      evaluate(trace, {fmod(x, y), logaddexp(x, y), logaddexp2(x, y), heaviside(x, y),
                       signbit(x), fraction, whole, mantissa, exponent.astype(DType::Float64)},
               {Array::from_vector(a, {8}), Array::from_vector(b, {8})});
  for (size_t i = 0; i < a.size(); ++i) {
    double larger = std::max(a[i], b[i]);
    double expected_logaddexp = a[i] == b[i] ? a[i] + std::log(2.0)
                                             : larger + std::log1p(std::exp(-std::abs(a[i] - b[i])));
    double whole_part;
    double fraction_part = std::modf(a[i], &whole_part);
    int c_exponent;
    double c_mantissa = std::frexp(a[i], &c_exponent);
    if (!std::isfinite(a[i])) c_exponent = 0;
    EXPECT_TRUE(same(got[0][i], std::fmod(a[i], b[i]))) << i << ": " << got[0][i];
    if (std::isfinite(expected_logaddexp))
      EXPECT_NEAR(got[1][i], expected_logaddexp, 1e-12 * std::max(1.0, std::abs(larger))) << i;
    else
      EXPECT_EQ(got[1][i], expected_logaddexp) << i;
    EXPECT_EQ(got[3][i], a[i] < 0 ? 0 : a[i] > 0 ? 1 : b[i]) << i;
    EXPECT_EQ(got[4][i], std::signbit(a[i]) ? 1 : 0) << i;
    EXPECT_EQ(got[5][i], fraction_part) << i;
    EXPECT_EQ(std::signbit(got[5][i]), std::signbit(fraction_part)) << i;
    EXPECT_EQ(got[6][i], whole_part) << i;
    EXPECT_EQ(got[7][i], c_mantissa) << i;
    EXPECT_EQ(got[8][i], c_exponent) << i;
  }
  EXPECT_EQ(got[2][4], 4.0);  // logaddexp2(3, 3) = 3 + 1
}

TEST(UfuncDecompositions, GcdLcmAndLdexpOnIntegers) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Int64, {4}), y = trace.input(DType::Int64, {4});
  Tensor mantissas = trace.input(DType::Float64, {4});
  std::vector<std::vector<double>> got =
      evaluate(trace, {gcd(x, y), lcm(x, y), ldexp(mantissas, y)},
               {Array::from_vector(std::vector<int64_t>{12, -18, 0, 7}, {4}),
                Array::from_vector(std::vector<int64_t>{18, 12, 5, 0}, {4}),
                Array::from_vector(std::vector<double>{0.5, 1.5, -3, 1}, {4})});
  EXPECT_EQ(got[0], (std::vector<double>{6, 6, 5, 7}));
  EXPECT_EQ(got[1], (std::vector<double>{36, 36, 0, 0}));
  EXPECT_EQ(got[2], (std::vector<double>{0.5 * (1 << 18), 1.5 * 4096, -96, 1}));
  EXPECT_THROW(gcd(mantissas, mantissas), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// np.tile / np.repeat / np.roll as views (decompose/manipulation.h), values from NumPy.
TEST(ManipulationDecompositions, TileRepeatAndRollMatchNumPy) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 3});
  std::vector<std::vector<double>> got =
      evaluate(trace, {tile(x, {2}), tile(x, {2, 1, 1}), repeat(x, 2, 1), repeat(x, 2),
                       roll(x, {1}, {1}), roll(x, {-1, 1}, {0, 0}), roll(x, {2})},
               {Array::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3})});
  // np.tile(x, 2)
  EXPECT_EQ(got[0], (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  // np.tile(x, (2, 1, 1)): two copies stacked
  EXPECT_EQ(got[1], (std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  // np.repeat(x, 2, axis=1)
  EXPECT_EQ(got[2], (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
  // np.repeat(x, 2): flattened
  EXPECT_EQ(got[3], (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
  // np.roll(x, 1, axis=1)
  EXPECT_EQ(got[4], (std::vector<double>{3, 1, 2, 6, 4, 5}));
  // np.roll(x, (-1, 1), axis=(0, 0)): shifts on one axis add up to none
  EXPECT_EQ(got[5], (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // np.roll(x, 2): the flattened array
  EXPECT_EQ(got[6], (std::vector<double>{5, 6, 1, 2, 3, 4}));
  EXPECT_THROW(tile(x, {-1}), Error);
  EXPECT_THROW(repeat(x, -2, 0), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// mean/var with where= (decompose/masked_statistics.h), values from NumPy.
TEST(MaskedStatistics, MeanAndVarOfTheSelectedElements) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 3});
  Tensor mask = trace.input(DType::Float64, {3});  // nonzero: selected
  std::vector<std::vector<double>> got = evaluate(
      trace,
      {masked_mean(x, mask, {1}), masked_var(x, mask, {0, 1}), masked_var(x, mask, {1}, true, 1),
       masked_mean(x, mask, {})},
      {Array::from_vector(std::vector<double>{1, 2, 4, 10, 20, 40}, {2, 3}),
       Array::from_vector(std::vector<double>{1, 0, 1}, {3})});
  EXPECT_EQ(got[0], (std::vector<double>{2.5, 25}));  // np.mean(x, 1, where=m)
  // np.var(x, where=m): over 1, 4, 10, 40: mean 13.75
  double mean = 13.75, expected = 0;
  for (double v : {1.0, 4.0, 10.0, 40.0}) expected += (v - mean) * (v - mean) / 4;
  EXPECT_DOUBLE_EQ(got[1][0], expected);
  EXPECT_EQ(got[2], (std::vector<double>{4.5, 450}));  // ddof=1, keepdims
  EXPECT_EQ(got[3][0], 1);  // axis=(): each element itself where selected
  EXPECT_TRUE(std::isnan(got[3][1]));  // 0/0 where not selected, as NumPy
  Tensor integers = trace.input(DType::Int32, {3});
  EXPECT_THROW(masked_mean(integers, mask, {0}), Error);  // not a float array
}

}  // namespace
}  // namespace kiln
