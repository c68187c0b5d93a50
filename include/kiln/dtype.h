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
  Complex64, Complex128,
};
inline constexpr int kDTypeCount = 15;
// The real dtypes come first: only they reach the scheduler and the emitters (complex values
// become pairs of real ones in ir/complex_lowering.h).
inline constexpr int kRealDTypeCount = 13;

enum class DTypeClass : uint8_t { Bool = 1, Signed = 2, Unsigned = 4, Float = 8, Complex = 16 };

constexpr DTypeClass dtype_class(DType t) {
  switch (t) {
    case DType::Bool: return DTypeClass::Bool;
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
      return DTypeClass::Signed;
    case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return DTypeClass::Unsigned;
    case DType::Complex64: case DType::Complex128: return DTypeClass::Complex;
    default: return DTypeClass::Float;
  }
}
constexpr bool is_float(DType t) { return dtype_class(t) == DTypeClass::Float; }
constexpr bool is_integer(DType t) {
  return dtype_class(t) == DTypeClass::Signed || dtype_class(t) == DTypeClass::Unsigned;
}
constexpr bool is_signed_integer(DType t) { return dtype_class(t) == DTypeClass::Signed; }
constexpr bool is_complex(DType t) { return dtype_class(t) == DTypeClass::Complex; }
// NumPy's "inexact": float or complex (what float-valued ufuncs keep as it is).
constexpr bool is_inexact(DType t) { return is_float(t) || is_complex(t); }
// The dtype of a complex dtype's real and imaginary parts (float32 for complex64); other dtypes
// are their own component.
constexpr DType component_dtype(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
// The complex dtype whose parts have float dtype `t` (complex128 for float64, complex64 else).
constexpr DType complex_of(DType t) {
  return t == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

constexpr int dtype_size(DType t) {
  switch (t) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
    case DType::Int16: case DType::UInt16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Complex128: return 16;
    default: return 8;
  }
}

// NumPy spelling: "bool", "int8", ..., "float16", "bfloat16", "float32", "float64",
// "complex64", "complex128".
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
