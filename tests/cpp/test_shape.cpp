// Shape helpers: NumPy spelling, strides, broadcasting and axis normalisation.
#include <gtest/gtest.h>

#include "ir/shape.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

TEST(Shape, StringMatchesNumPy) {
  EXPECT_EQ(shape_string({}), "()");
  EXPECT_EQ(shape_string({5}), "(5,)");
  EXPECT_EQ(shape_string({3, 4}), "(3, 4)");
  EXPECT_EQ(shape_string({2, 0, 7}), "(2, 0, 7)");
}

TEST(Shape, ElementCountAndConversions) {
  EXPECT_EQ(element_count({}), 1);
  EXPECT_EQ(element_count({3, 4}), 12);
  EXPECT_EQ(element_count({3, 0}), 0);
  EXPECT_EQ(to_ints({2, 5}), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(from_ints({2, 5}), (Shape{2, 5}));
}

TEST(Shape, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), (std::vector<int64_t>{}));
  EXPECT_EQ(contiguous_strides({5}), (std::vector<int64_t>{1}));
}

TEST(Shape, Broadcasting) {
  Shape result;
  ASSERT_TRUE(broadcast_shapes({3, 1}, {4}, result));
  EXPECT_EQ(result, (Shape{3, 4}));
  ASSERT_TRUE(broadcast_shapes({}, {2, 3}, result));
  EXPECT_EQ(result, (Shape{2, 3}));
  ASSERT_TRUE(broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}, result));
  EXPECT_EQ(result, (Shape{8, 7, 6, 5}));
  ASSERT_TRUE(broadcast_shapes({0, 1}, {1, 4}, result));
  EXPECT_EQ(result, (Shape{0, 4}));
  ASSERT_TRUE(broadcast_shapes({1}, {0}, result));
  EXPECT_EQ(result, (Shape{0}));
  EXPECT_FALSE(broadcast_shapes({3, 4}, {5}, result));
  EXPECT_FALSE(broadcast_shapes({2}, {0}, result));
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(-3, 3, "sum"), 0);
  EXPECT_EQ(normalize_axis(1, 3, "sum"), 1);
  try {
    normalize_axis(3, 3, "sum");
    FAIL() << "expected kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Axis);
    std::string message = error.what();
    EXPECT_NE(message.find("sum"), std::string::npos) << message;
    EXPECT_NE(message.find("axis 3 is out of bounds for array of dimension 3"), std::string::npos)
        << message;
  }
  EXPECT_THROW(normalize_axis(-4, 3, "sum"), Error);
  EXPECT_THROW(normalize_axis(0, 0, "sum"), Error);
}

TEST(Shape, ErrorMessageFormat) {
  EXPECT_EQ(error_message("add", "model.cpp:12", "bad"), "kiln: add at model.cpp:12: bad");
  EXPECT_EQ(error_message("add", "", "bad"), "kiln: add: bad");
  EXPECT_EQ(error_message("", "", "bad"), "kiln: bad");
}

}  // namespace
}  // namespace kiln::ir
