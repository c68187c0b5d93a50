// kiln::Array: allocation, borrowing strided views, element reads of every dtype, copies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "kiln/array.h"
#include "kiln/error.h"

namespace kiln {
namespace {

TEST(Array, EmptyIsAlignedAndContiguous) {
  Array array = Array::empty(DType::Float32, {3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(array.data()) % 64, 0u);
  EXPECT_EQ(array.size(), 15);
  EXPECT_EQ(array.nbytes(), 60);
  EXPECT_EQ(array.strides(), (std::vector<int64_t>{5, 1}));
  EXPECT_TRUE(array.is_contiguous());
  EXPECT_TRUE(array.defined());
  Array scalar = Array::empty(DType::Int8, {});
  EXPECT_EQ(scalar.size(), 1);
  Array nothing = Array::zeros(DType::Float64, {0, 4});
  EXPECT_EQ(nothing.size(), 0);
  EXPECT_TRUE(nothing.defined());
  EXPECT_THROW(Array::empty(DType::Float32, {-1}), Error);
}

TEST(Array, ZerosAndFromVector) {
  Array zeros = Array::zeros(DType::Int32, {2, 2});
  EXPECT_EQ(zeros.to_vector<int>(), (std::vector<int>{0, 0, 0, 0}));
  Array values = Array::from_vector<double>({1.5, -2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(values.dtype(), DType::Float64);
  EXPECT_EQ(values.get({1, 0}), 4.0);
  EXPECT_EQ(values.get({0, 1}), -2.0);
}

TEST(Array, GetConvertsEveryDtype) {
  uint8_t flags[] = {0, 1, 2};
  EXPECT_EQ(Array::borrow(flags, DType::Bool, {3}).get({2}), 1.0);
  int8_t small[] = {-128, 127};
  EXPECT_EQ(Array::borrow(small, DType::Int8, {2}).get({0}), -128.0);
  uint16_t u16[] = {65535};
  EXPECT_EQ(Array::borrow(u16, DType::UInt16, {1}).get({0}), 65535.0);
  int64_t i64[] = {-(int64_t{1} << 40)};
  EXPECT_EQ(Array::borrow(i64, DType::Int64, {1}).get({0}), -1099511627776.0);
  uint64_t u64[] = {uint64_t{1} << 63};
  EXPECT_EQ(Array::borrow(u64, DType::UInt64, {1}).get({0}), 9223372036854775808.0);
  // float16: 0x3C00 = 1, 0xC000 = -2, 0x3555 = 0.333251953125, 0x7C00 = inf, 0x0001 = 2^-24.
  uint16_t halves[] = {0x3C00, 0xC000, 0x3555, 0x7C00, 0x0001};
  Array half = Array::borrow(halves, DType::Float16, {5});
  EXPECT_EQ(half.get({0}), 1.0);
  EXPECT_EQ(half.get({1}), -2.0);
  EXPECT_EQ(half.get({2}), 0.333251953125);
  EXPECT_TRUE(std::isinf(half.get({3})));
  EXPECT_EQ(half.get({4}), std::ldexp(1.0, -24));
  // bfloat16: the upper half of a float32. 0x3F80 = 1, 0xC0A0 = -5, 0x3E20 = 0.15625.
  uint16_t brains[] = {0x3F80, 0xC0A0, 0x3E20, 0x7FC0};
  Array brain = Array::borrow(brains, DType::BFloat16, {4});
  EXPECT_EQ(brain.get({0}), 1.0);
  EXPECT_EQ(brain.get({1}), -5.0);
  EXPECT_EQ(brain.get({2}), 0.15625);
  EXPECT_TRUE(std::isnan(brain.get({3})));
  float f32[] = {0.1f};
  EXPECT_EQ(Array::borrow(f32, DType::Float32, {1}).get({0}), static_cast<double>(0.1f));
}

TEST(Array, BorrowedStridedViews) {
  // 3x4 row-major data; its transpose is a (4, 3) view with strides (1, 4).
  std::vector<int32_t> data(12);
  for (int i = 0; i < 12; ++i) data[static_cast<size_t>(i)] = i;
  Array transposed = Array::borrow(data.data(), DType::Int32, {4, 3}, {1, 4});
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.get({1, 2}), 9.0);
  Array copy = transposed.contiguous();
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_NE(copy.data(), transposed.data());
  EXPECT_EQ(copy.to_vector<int>(), (std::vector<int>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // Every other column, reversed rows: negative strides work too.
  Array reversed = Array::borrow(data.data() + 8, DType::Int32, {3, 2}, {-4, 2});
  EXPECT_EQ(reversed.contiguous().to_vector<int>(), (std::vector<int>{8, 10, 4, 6, 0, 2}));
  // Size-1 dimensions may have any stride and stay contiguous.
  EXPECT_TRUE(Array::borrow(data.data(), DType::Int32, {1, 4}, {99, 1}).is_contiguous());
  // Broadcast view (stride 0).
  Array repeated = Array::borrow(data.data(), DType::Int32, {2, 3}, {0, 1});
  EXPECT_FALSE(repeated.is_contiguous());
  EXPECT_EQ(repeated.contiguous().to_vector<int>(), (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(Array, BorrowKeepsOwnerAlive) {
  auto buffer = std::make_shared<std::vector<float>>(4, 2.5f);
  std::weak_ptr<std::vector<float>> watch = buffer;
  Array array = Array::borrow(buffer->data(), DType::Float32, {4}, {}, buffer);
  buffer.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(array.get({3}), 2.5);
  array = Array();
  EXPECT_TRUE(watch.expired());
}

TEST(Array, Errors) {
  Array array = Array::zeros(DType::Float32, {2, 3});
  EXPECT_THROW(array.get({2, 0}), Error);
  EXPECT_THROW(array.get({0}), Error);
  EXPECT_THROW(array.get({0, -1}), Error);
  float value = 0;
  EXPECT_THROW(Array::borrow(&value, DType::Float32, {1, 1}, {1}), Error);
  try {
    array.get({0, 3});
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(error.what()).find("(2, 3)"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kiln
