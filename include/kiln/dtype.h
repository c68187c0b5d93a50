// kiln element types. Public: kiln::Array and kiln::Tensor are tagged with one.
#pragma once
#include <cstdint>
#include <string_view>

namespace kiln {

// The order is stable (serialised in cache keys); add new types at the end.
enum class DType : uint8_t {
  Bool,
  Int8, Int16, Int32, Int64,
  UInt8, UInt16, UInt32, UInt64,
  Float16, BFloat16, Float32, Float64,
};
inline constexpr int kDTypeCount = 13;

enum class DTypeClass : uint8_t { Bool = 1, Signed = 2, Unsigned = 4, Float = 8 };

constexpr DTypeClass dtype_class(DType t) {
  switch (t) {
    case DType::Bool: return DTypeClass::Bool;
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
      return DTypeClass::Signed;
    case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return DTypeClass::Unsigned;
    default: return DTypeClass::Float;
  }
}
constexpr bool is_float(DType t) { return dtype_class(t) == DTypeClass::Float; }
constexpr bool is_integer(DType t) {
  return dtype_class(t) == DTypeClass::Signed || dtype_class(t) == DTypeClass::Unsigned;
}
constexpr bool is_signed_integer(DType t) { return dtype_class(t) == DTypeClass::Signed; }

constexpr int dtype_size(DType t) {
  switch (t) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
    case DType::Int16: case DType::UInt16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    default: return 8;
  }
}

// NumPy spelling: "bool", "int8", ..., "float16", "bfloat16", "float32", "float64".
std::string_view dtype_name(DType t);
// Inverse of dtype_name; throws kiln::Error for an unknown name.
DType dtype_from_name(std::string_view name);
// C++ storage type used by generated code ("bool", "int8_t", ..., "uint16_t" for 16-bit floats).
std::string_view dtype_storage_ctype(DType t);
// C++ type arithmetic happens in ("float" for float16/bfloat16, else the storage type).
std::string_view dtype_compute_ctype(DType t);

// NumPy's promotion of two array dtypes (as np.result_type on two arrays).
DType promote_types(DType a, DType b);

}  // namespace kiln
