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
  EXPECT_NE(error_of([&] { add_one(Array()); }).find("undefined (default-constructed)"),
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

}  // namespace
}  // namespace kiln
