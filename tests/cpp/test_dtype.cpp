// dtype names, C++ spellings and promotion, checked against NumPy's np.promote_types.
#include <gtest/gtest.h>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln {
namespace {

constexpr DType kAll[] = {DType::Bool,    DType::Int8,    DType::Int16,    DType::Int32,
                          DType::Int64,   DType::UInt8,   DType::UInt16,   DType::UInt32,
                          DType::UInt64,  DType::Float16, DType::BFloat16, DType::Float32,
                          DType::Float64};

TEST(DType, NamesRoundTrip) {
  for (DType t : kAll) EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  EXPECT_EQ(dtype_name(DType::UInt16), "uint16");
  EXPECT_EQ(dtype_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(dtype_from_name("float64"), DType::Float64);
  // A corrupt value prints as such instead of reading past the table.
  EXPECT_EQ(dtype_name(static_cast<DType>(200)), "<invalid dtype>");
}

TEST(DType, UnknownNameIsTypeError) {
  try {
    dtype_from_name("float128");
    FAIL() << "expected kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Type);
    EXPECT_NE(std::string(error.what()).find("float128"), std::string::npos);
  }
}

TEST(DType, CTypes) {
  EXPECT_EQ(dtype_storage_ctype(DType::Bool), "bool");
  EXPECT_EQ(dtype_storage_ctype(DType::Int8), "int8_t");
  EXPECT_EQ(dtype_storage_ctype(DType::UInt64), "uint64_t");
  EXPECT_EQ(dtype_storage_ctype(DType::Float16), "uint16_t");
  EXPECT_EQ(dtype_storage_ctype(DType::BFloat16), "uint16_t");
  EXPECT_EQ(dtype_storage_ctype(DType::Float32), "float");
  EXPECT_EQ(dtype_storage_ctype(DType::Float64), "double");
  EXPECT_EQ(dtype_compute_ctype(DType::Float16), "float");
  EXPECT_EQ(dtype_compute_ctype(DType::BFloat16), "float");
  EXPECT_EQ(dtype_compute_ctype(DType::Int32), "int32_t");
  EXPECT_EQ(dtype_compute_ctype(DType::Float64), "double");
}

TEST(DType, PromotionIsSymmetricAndIdempotent) {
  for (DType a : kAll) {
    EXPECT_EQ(promote_types(a, a), a);
    for (DType b : kAll) {
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << dtype_name(a) << " " << dtype_name(b);
    }
  }
}

TEST(DType, BoolIsLowest) {
  for (DType t : kAll) EXPECT_EQ(promote_types(DType::Bool, t), t) << dtype_name(t);
}

// Rows of np.promote_types for the integer and float types.
TEST(DType, NumPyPromotionTable) {
  struct Case {
    DType a, b, expected;
  };
  const Case cases[] = {
      {DType::Int8, DType::Int64, DType::Int64},
      {DType::UInt8, DType::UInt32, DType::UInt32},
      {DType::Int8, DType::UInt8, DType::Int16},
      {DType::Int16, DType::UInt8, DType::Int16},
      {DType::Int16, DType::UInt16, DType::Int32},
      {DType::Int8, DType::UInt32, DType::Int64},
      {DType::Int32, DType::UInt32, DType::Int64},
      {DType::Int64, DType::UInt32, DType::Int64},
      {DType::Int64, DType::UInt64, DType::Float64},
      {DType::Int8, DType::UInt64, DType::Float64},
      {DType::Int8, DType::Float16, DType::Float16},
      {DType::UInt8, DType::Float16, DType::Float16},
      {DType::Int16, DType::Float16, DType::Float32},
      {DType::UInt16, DType::Float16, DType::Float32},
      {DType::Int32, DType::Float16, DType::Float64},
      {DType::Int16, DType::Float32, DType::Float32},
      {DType::Int32, DType::Float32, DType::Float64},
      {DType::UInt64, DType::Float32, DType::Float64},
      {DType::Int64, DType::Float64, DType::Float64},
      {DType::Float16, DType::Float32, DType::Float32},
      {DType::Float32, DType::Float64, DType::Float64},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(promote_types(c.a, c.b), c.expected) << dtype_name(c.a) << " + " << dtype_name(c.b);
  }
}

TEST(DType, BFloat16PromotesLikeFloat16ExceptWithIt) {
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float16), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Int8), DType::BFloat16);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::UInt8), DType::BFloat16);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Int16), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Int32), DType::Float64);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float64), DType::Float64);
}

TEST(DType, Classes) {
  EXPECT_TRUE(is_float(DType::BFloat16));
  EXPECT_TRUE(is_integer(DType::UInt8));
  EXPECT_FALSE(is_integer(DType::Bool));
  EXPECT_TRUE(is_signed_integer(DType::Int16));
  EXPECT_EQ(dtype_size(DType::BFloat16), 2);
}

}  // namespace
}  // namespace kiln
