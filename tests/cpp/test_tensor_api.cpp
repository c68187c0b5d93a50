// The C++ Tensor API's typing (NumPy's NEP 50 promotion, weak double scalars, float-valued
// ufuncs on integers, accumulation types), a few structural functions evaluated by the
// interpreter, and errors that name the op and this file's line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/trace.h"
#include "ir/interpreter.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

std::vector<double> evaluate(detail::Trace& trace, const Tensor& output,
                             const std::vector<Array>& inputs) {
  trace.graph.set_outputs({output.id()});
  return ir::interpret(trace.graph, inputs)[0].to_vector<double>();
}

// The error `build` throws; fails the test when it throws none.
Error error_from(const std::function<void()>& build) {
  try {
    build();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return Error(ErrorKind::Internal, "");
}

std::string here(int line) { return "test_tensor_api.cpp:" + std::to_string(line); }

TEST(TensorApi, ShapeAndDtypeReadTheNode) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float32, {2, 3});
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.ndim(), 2);
  EXPECT_EQ(x.size(), 6);
  EXPECT_EQ(x.T().shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(x[1].shape(), (std::vector<int64_t>{3}));
}

TEST(TensorApi, PromotionBetweenTensors) {
  detail::Trace trace;
  Tensor i8 = trace.input(DType::Int8, {3});
  Tensor i16 = trace.input(DType::Int16, {3});
  Tensor u8 = trace.input(DType::UInt8, {3});
  Tensor f32 = trace.input(DType::Float32, {3});
  Tensor i64 = trace.input(DType::Int64, {3});
  EXPECT_EQ((i8 + i16).dtype(), DType::Int16);
  EXPECT_EQ((i8 + u8).dtype(), DType::Int16);
  EXPECT_EQ((i16 * f32).dtype(), DType::Float32);
  EXPECT_EQ((i64 * f32).dtype(), DType::Float64);
  EXPECT_EQ((i8 < i16).dtype(), DType::Bool);
}

TEST(TensorApi, WeakDoubleScalars) {
  detail::Trace trace;
  Tensor i32 = trace.input(DType::Int32, {3});
  Tensor f32 = trace.input(DType::Float32, {3});
  Tensor flags = trace.input(DType::Bool, {3});
  // A non-integral double is a Python float: with integers it gives float64.
  EXPECT_EQ((i32 * 2.5).dtype(), DType::Float64);
  // An integral double acts as a Python int and keeps the integer type (so i + 1 stays int).
  EXPECT_EQ((i32 * 2.0).dtype(), DType::Int32);
  EXPECT_EQ((2.0 - i32).dtype(), DType::Int32);
  EXPECT_EQ((f32 * 2.0).dtype(), DType::Float32);
  EXPECT_EQ((f32 * 1e300).dtype(), DType::Float32);
  EXPECT_EQ((flags + 1.0).dtype(), DType::Int64);
  EXPECT_EQ((i32 == 0.5).dtype(), DType::Bool);
  EXPECT_EQ(divide(i32, 2.0).dtype(), DType::Float64);
}

TEST(TensorApi, WeakScalarValues) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Int32, {3});
  Array input = Array::from_vector<int32_t>({1, 2, 7}, {3});
  EXPECT_EQ(evaluate(trace, 10.0 - x, {input}), (std::vector<double>{9, 8, 3}));
  EXPECT_EQ(evaluate(trace, x * 0.5, {input}), (std::vector<double>{0.5, 1, 3.5}));
  EXPECT_EQ(evaluate(trace, x / 2.0, {input}), (std::vector<double>{0.5, 1, 3.5}));
  EXPECT_EQ(evaluate(trace, floor_divide(x, 2.0), {input}), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(evaluate(trace, x > 1.5, {input}), (std::vector<double>{0, 1, 1}));
}

TEST(TensorApi, FloatValuedUfuncsOnIntegers) {
  detail::Trace trace;
  Tensor i32 = trace.input(DType::Int32, {3});
  Tensor i8 = trace.input(DType::Int8, {3});
  Tensor u16 = trace.input(DType::UInt16, {3});
  Tensor flags = trace.input(DType::Bool, {3});
  EXPECT_EQ(sin(i32).dtype(), DType::Float64);
  EXPECT_EQ(sqrt(i8).dtype(), DType::Float16);
  EXPECT_EQ(exp(u16).dtype(), DType::Float32);
  EXPECT_EQ(log(flags).dtype(), DType::Float16);
  EXPECT_EQ(arctan2(i8, i8).dtype(), DType::Float16);
  EXPECT_EQ((i8 / i8).dtype(), DType::Float64);  // true_divide's integer loops give float64
  EXPECT_EQ(floor(i32).dtype(), DType::Int32);
  EXPECT_EQ(abs(flags).dtype(), DType::Bool);
  EXPECT_EQ(sigmoid(i32).dtype(), DType::Float64);
}

TEST(TensorApi, ReductionTypes) {
  detail::Trace trace;
  Tensor flags = trace.input(DType::Bool, {4});
  Tensor u8 = trace.input(DType::UInt8, {4});
  Tensor i16 = trace.input(DType::Int16, {4});
  Tensor f32 = trace.input(DType::Float32, {4});
  EXPECT_EQ(sum(flags).dtype(), DType::Int64);
  EXPECT_EQ(sum(u8).dtype(), DType::UInt64);
  EXPECT_EQ(prod(i16).dtype(), DType::Int64);
  EXPECT_EQ(cumsum(i16, 0).dtype(), DType::Int64);
  EXPECT_EQ(sum(f32).dtype(), DType::Float32);
  EXPECT_EQ(mean(i16).dtype(), DType::Float64);
  EXPECT_EQ(mean(f32).dtype(), DType::Float32);
  EXPECT_EQ(max(u8).dtype(), DType::UInt8);
  EXPECT_EQ(any(f32).dtype(), DType::Bool);
  EXPECT_EQ(argmax(f32).dtype(), DType::Int64);
}

TEST(TensorApi, BoolSumCountsTrueValues) {
  detail::Trace trace;
  Tensor flags = trace.input(DType::Bool, {5});
  Array input = Array::from_vector<bool>({true, false, true, true, false}, {5});
  std::vector<double> total = evaluate(trace, sum(flags), {input});
  EXPECT_EQ(total, (std::vector<double>{3}));
}

TEST(TensorApi, LogicalOperatorsAndBoolArithmetic) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {4});
  Tensor both = (x > 0.0) && (x < 2.0);
  Tensor either = (x < 0.0) || (x > 2.0);
  EXPECT_EQ(both.dtype(), DType::Bool);
  Array input = Array::from_vector<double>({-1, 1, 3, 0.5}, {4});
  EXPECT_EQ(evaluate(trace, both, {input}), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(evaluate(trace, either, {input}), (std::vector<double>{1, 0, 1, 0}));
  // NumPy: bool + bool is logical or, bool * bool logical and, bool - bool an error.
  EXPECT_EQ(((x > 0.0) + (x > 2.0)).dtype(), DType::Bool);
  EXPECT_EQ(error_from([&] { (void)subtract(x > 0.0, x > 2.0); }).kind(), ErrorKind::Type);
}

TEST(TensorApi, ArgmaxWithoutAxisFlattens) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float32, {2, 3});
  Tensor flat = argmax(x);
  Tensor kept = argmin(x, std::nullopt, true);
  EXPECT_EQ(flat.shape(), (std::vector<int64_t>{}));
  EXPECT_EQ(kept.shape(), (std::vector<int64_t>{1, 1}));
  Array input = Array::from_vector<float>({3, 1, 4, 1, 5, 9}, {2, 3});
  EXPECT_EQ(evaluate(trace, flat, {input}), (std::vector<double>{5}));
  EXPECT_EQ(evaluate(trace, kept, {input}), (std::vector<double>{1}));
  EXPECT_EQ(evaluate(trace, argmax(x, 0), {input}), (std::vector<double>{0, 1, 1}));
}

TEST(TensorApi, MovementFunctions) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Int32, {2, 3});
  Array input = Array::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(evaluate(trace, slice(x, {Slice::all(), {std::nullopt, std::nullopt, -1}}), {input}),
            (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(evaluate(trace, slice(x, {{1, std::nullopt, 1}}), {input}),
            (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(expand_dims(x, -1).shape(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(squeeze(expand_dims(x, 0)).shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(stack({x, x}, 1).shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(evaluate(trace, stack({x, x}, 2), {input}),
            (std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(evaluate(trace, pad(x, {{0, 0}, {1, 0}}, "constant", 9), {input}),
            (std::vector<double>{9, 0, 1, 2, 9, 3, 4, 5}));
  EXPECT_EQ(evaluate(trace, x[-1], {input}), (std::vector<double>{3, 4, 5}));
}

TEST(TensorApi, TakeAndIndexPut) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 3});
  Tensor indices = trace.input(DType::Int64, {2});
  Tensor values = trace.input(DType::Float64, {2});
  std::vector<Array> inputs = {Array::from_vector<double>({0, 1, 2, 3, 4, 5}, {2, 3}),
                               Array::from_vector<int64_t>({2, 0}, {2}),
                               Array::from_vector<double>({10, 20}, {2})};
  EXPECT_EQ(evaluate(trace, take(x, indices, 1), inputs),
            (std::vector<double>{2, 0, 5, 3}));
  // x[:, [2, 0]] = [10, 20] broadcast over the rows.
  EXPECT_EQ(evaluate(trace, index_put(x, indices, values, 1), inputs),
            (std::vector<double>{20, 1, 10, 20, 4, 10}));
  EXPECT_EQ(evaluate(trace, index_put(x, indices, values, 1, true), inputs),
            (std::vector<double>{20, 1, 12, 23, 4, 15}));
}

TEST(TensorApi, ClipOfIntegers) {
  detail::Trace trace;
  Tensor x = trace.input(DType::UInt8, {4});
  Array input = Array::from_vector<uint8_t>({0, 5, 100, 255}, {4});
  Tensor clipped = clip(x, -3.0, 100.0);  // -3 cannot clip a uint8: dropped
  EXPECT_EQ(clipped.dtype(), DType::UInt8);
  EXPECT_EQ(evaluate(trace, clipped, {input}), (std::vector<double>{0, 5, 100, 100}));
  EXPECT_EQ(clip(x, 0.5, std::nullopt).dtype(), DType::Float64);
}

TEST(TensorApi, CreationFunctions) {
  detail::Trace trace;
  Tensor x = trace.input(DType::Float32, {2});
  EXPECT_EQ(zeros_like(x).dtype(), DType::Float32);
  EXPECT_EQ(full_like(x, 3, DType::Int8).dtype(), DType::Int8);
  EXPECT_EQ(evaluate(trace, arange(x, 4), {Array::from_vector<float>({0, 0}, {2})}),
            (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(full(x, {2, 2}, 7, DType::Int32).shape(), (std::vector<int64_t>{2, 2}));
}

TEST(TensorApi, ErrorsNameTheOpAndTheCallersLine) {
  detail::Trace trace;
  Tensor a = trace.input(DType::Float32, {3, 4});
  Tensor b = trace.input(DType::Float32, {5});
  int line = __LINE__ + 1;
  Error error = error_from([&] { (void)add(a, b); });
  std::string message = error.what();
  EXPECT_EQ(error.kind(), ErrorKind::Value);
  EXPECT_NE(message.find("add"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
  EXPECT_NE(message.find("(3, 4)"), std::string::npos) << message;

  line = __LINE__ + 1;
  error = error_from([&] { (void)sum(a, {2}); });
  message = error.what();
  EXPECT_EQ(error.kind(), ErrorKind::Axis);
  EXPECT_NE(message.find("sum"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;

  line = __LINE__ + 1;
  error = error_from([&] { (void)norm(a, "nuc", {0, 1}); });
  message = error.what();
  EXPECT_NE(message.find("norm"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;

  line = __LINE__ + 1;
  error = error_from([&] { (void)bitwise_and(a, a); });
  EXPECT_EQ(error.kind(), ErrorKind::Type);
  EXPECT_NE(std::string(error.what()).find(here(line)), std::string::npos) << error.what();
}

TEST(TensorApi, ScalarOutOfRangeAndForeignTensors) {
  detail::Trace trace;
  Tensor u8 = trace.input(DType::UInt8, {3});
  // NumPy 2: Python integer 300 out of bounds for uint8; comparing with it is fine.
  EXPECT_EQ(error_from([&] { (void)add(u8, 300.0); }).kind(), ErrorKind::Value);
  EXPECT_EQ(less(u8, 300.0).dtype(), DType::Bool);
  detail::Trace other;
  Tensor foreign = other.input(DType::UInt8, {3});
  EXPECT_EQ(error_from([&] { (void)add(u8, foreign); }).kind(), ErrorKind::Value);
  EXPECT_EQ(error_from([&] { (void)sin(Tensor()); }).kind(), ErrorKind::Value);
}

}  // namespace
}  // namespace kiln
