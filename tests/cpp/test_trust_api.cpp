// Every public entry point of the C++ API validates what it is handed: an undefined Array, a
// wrong count, dtype, shape or layout is a kiln::Error naming it, never a crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

Function make_add_one() {
  return compile([](Tensor x) { return x + 1.0; });
}

TEST(TrustApi, AnUndefinedArrayIsAnError) {
  Function add_one = make_add_one();
  EXPECT_NE(error_of([&] { add_one(Array()); })
                .find("undefined (default-constructed or moved-from)"),
            std::string::npos);
  // Also after a graph was compiled for the signature a default Array happens to have.
  std::vector<double> one = {1.0};
  EXPECT_EQ(add_one(Array::from_vector(one, {}))[0].get({}), 2.0);
  EXPECT_NE(error_of([&] { add_one(Array()); }).find("undefined"), std::string::npos);
}

TEST(TrustApi, ABorrowOfNullDataIsAnError) {
  EXPECT_NE(error_of([] { Array::borrow(nullptr, DType::Float64, {3}); }).find("null data"),
            std::string::npos);
  EXPECT_NO_THROW(Array::borrow(nullptr, DType::Float64, {0}));  // empty: nothing to read
}

TEST(TrustApi, FromVectorNeedsOneValuePerElement) {
  // Fewer values left the last elements uninitialised (garbage read later); more were dropped.
  std::vector<double> three = {1.0, 2.0, 3.0};
  EXPECT_NE(error_of([&] { Array::from_vector(three, {2, 2}); })
                .find("3 values for a shape of 4 elements"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Array::from_vector(three, {2}); }).find("3 values"), std::string::npos);
  EXPECT_EQ(Array::from_vector(three, {3, 1}).to_vector<double>(), three);
}

TEST(TrustApi, TheWrongNumberOfArraysIsAnError) {
  Function add_one = make_add_one();
  Array a = Array::zeros(DType::Float64, {3});
  EXPECT_NE(error_of([&] { add_one(std::vector<Array>{}); }).find("takes 1 arrays, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { add_one(a, a); }).find("takes 1 arrays, got 2"), std::string::npos);
}

TEST(TrustApi, OutputsOfTheWrongShapeAreAnError) {
  Function add_one = make_add_one();
  Array a = Array::zeros(DType::Float64, {3});
  std::vector<Array> outputs = {Array::zeros(DType::Float64, {4})};
  EXPECT_NE(error_of([&] { add_one.run({a}, outputs); }).find("must be a contiguous"),
            std::string::npos);
}

TEST(TrustApi, UndefinedTensorsAreAnError) {
  EXPECT_FALSE(error_of([] { sin(Tensor()); }).empty());
  EXPECT_FALSE(error_of([] { add(Tensor(), 1.0); }).empty());
}

ErrorKind kind_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.kind();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return ErrorKind::Internal;
}

TEST(TrustApi, ValuesWhoseBytesOverflowInt64AreValueErrorsWhenBuilt) {  // NumPy's kind
  const int64_t big = int64_t(1) << 32;
  auto broadcast_plus_one = [&](std::vector<int64_t> shape) {
    return compile([shape](Tensor a) { return broadcast_to(a, shape) + 1.0; });
  };
  Array scalar = Array::zeros(DType::Float64, {});
  EXPECT_EQ(kind_of([&] { broadcast_plus_one({big, big})(scalar); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { broadcast_plus_one({big / 2, big / 2, 4})(scalar); }),
            ErrorKind::Value);  // 2**64 bytes: the count fits, the bytes do not
  std::string message = error_of([&] { broadcast_plus_one({big, big})(scalar); });
  EXPECT_NE(message.find("array is too big"), std::string::npos) << message;
  EXPECT_NE(message.find("test_trust_api.cpp:"), std::string::npos) << message;
  Function full_sum =
      compile([&](Tensor a) { return sum(full(a, {big, big}, 1.0, DType::Float64) + a); });
  EXPECT_EQ(kind_of([&] { full_sum(scalar); }), ErrorKind::Value);
}

TEST(TrustApi, AnOutputLargerThanMemoryIsAMemoryErrorNamingTheOp) {
  const int64_t side = int64_t(1) << 21;  // 2**42 float64 = 32 TiB
  Function huge = compile([&](Tensor a) { return add(broadcast_to(a, {side, side}), 1.0); });
  std::string message = error_of([&] { huge(Array::zeros(DType::Float64, {})); });
  EXPECT_NE(message.find("cannot allocate the result"), std::string::npos) << message;
  EXPECT_NE(message.find("add at test_trust_api.cpp:"), std::string::npos) << message;
}

// An output the caller hands run() that shares memory with an input or another output: the
// kernels read what they already wrote (x.T + 1 into x was wrong in half its elements).
TEST(TrustApi, OutputsSharingMemoryWithInputsGetTheResultsOfSeparateOnes) {
  const int64_t n = 64;
  std::vector<double> values(static_cast<size_t>(n * n));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  Function transpose_plus_one = compile([](Tensor x) { return transpose(x) + 1.0; });
  Array x = Array::from_vector(values, {n, n});
  const std::vector<double> expected = transpose_plus_one(x)[0].to_vector<double>();
  std::vector<Array> outputs = {x};
  transpose_plus_one.run({x}, outputs);
  EXPECT_EQ(outputs[0].data(), x.data());  // the caller's array, written
  EXPECT_EQ(x.to_vector<double>(), expected);

  // An output overlapping another output, and one overlapping an input only in part.
  Function both = compile([](Tensor a) { return std::vector<Tensor>{flip(a, {0}), a * 2.0}; });
  std::vector<double> line = {1, 2, 3, 4, 5, 6};
  Array storage = Array::from_vector(line, {6});
  Array low = Array::borrow(storage.data(), DType::Float64, {4});
  Array high = Array::borrow(storage.data_as<double>() + 2, DType::Float64, {4});
  std::vector<Array> pair = {high, low};
  both.run({low}, pair);
  EXPECT_EQ(storage.to_vector<double>(), (std::vector<double>{2, 4, 6, 8, 2, 1}));
  // A shared output of the wrong shape is still an error, and leaves the caller's arrays.
  std::vector<Array> wrong = {Array::borrow(storage.data(), DType::Float64, {2, 2}), Array()};
  EXPECT_NE(error_of([&] { both.run({low}, wrong); }).find("output 0"), std::string::npos);
  EXPECT_EQ(wrong[0].data(), storage.data());
}

// A moved-from Array kept its data pointer with an empty shape: a defined 0-d array reading
// the first element of the memory it handed on (add_one of it returned 6 for {5, 6, 7}).
TEST(TrustApi, AMovedFromArrayIsUndefined) {
  Function add_one = make_add_one();
  std::vector<double> values = {5, 6, 7};
  Array a = Array::from_vector(values, {3});
  Array b = std::move(a);
  EXPECT_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): the case under test
  EXPECT_NE(error_of([&] { add_one(a); }).find("undefined"), std::string::npos);
  Array c;
  c = std::move(b);
  EXPECT_FALSE(b.defined());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(add_one(c)[0].to_vector<double>(), (std::vector<double>{6, 7, 8}));
}

// Reading an undefined array's elements dereferenced its null data (a crash).
TEST(TrustApi, ReadingAnUndefinedArrayIsAnError) {
  Array undefined;
  EXPECT_NE(error_of([&] { undefined.get({}); }).find("undefined"), std::string::npos);
  EXPECT_NE(error_of([&] { undefined.to_vector<double>(); }).find("undefined"),
            std::string::npos);
  EXPECT_NE(error_of([&] { undefined.contiguous(); }).find("undefined"), std::string::npos);
}

// An array whose element count or bytes overflow int64: the wrapped product allocated a few
// bytes for 2**80 elements, which kernels then wrote past.
TEST(TrustApi, ArraysWhoseBytesOverflowInt64AreValueErrors) {  // NumPy's kind
  const int64_t big = int64_t(1) << 40;
  EXPECT_EQ(kind_of([&] { Array::zeros(DType::Float64, {big, big}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { Array::empty(DType::Float64, {int64_t(1) << 61}); }),
            ErrorKind::Value);  // the count fits, the bytes do not
  double one = 1;
  EXPECT_EQ(kind_of([&] { Array::borrow(&one, DType::Float64, {big, big}, {0, 0}); }),
            ErrorKind::Value);
  EXPECT_NE(error_of([&] { Array::zeros(DType::Int8, {big, big}); }).find("array is too big"),
            std::string::npos);
  EXPECT_EQ(Array::zeros(DType::Float64, {big, big, 0}).size(), 0);  // empty: holds nothing
}

// A DType value outside the enum (a cast from a bad integer) made arrays of 8-byte elements and
// graphs whose generated C++ did not compile: a Toolchain error saying nothing of the cause.
TEST(TrustApi, AnUnknownDTypeIsATypeErrorSayingSo) {
  const DType bogus = static_cast<DType>(250);
  EXPECT_EQ(kind_of([&] { Array::empty(bogus, {3}); }), ErrorKind::Type);
  double value = 1;
  EXPECT_EQ(kind_of([&] { Array::borrow(&value, bogus, {1}); }), ErrorKind::Type);
  Function cast = compile([bogus](Tensor x) { return x.astype(bogus); });
  std::string message = error_of([&] { cast(Array::zeros(DType::Float64, {3})); });
  EXPECT_NE(message.find("unknown dtype 250"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln
