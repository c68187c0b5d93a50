// dtype names, C++ spellings and NumPy's promotion table.
#include <array>
#include <string>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln {
namespace {

struct DTypeSpelling {
  std::string_view name;
  std::string_view storage_ctype;
  std::string_view compute_ctype;
};

// Indexed by the DType enum value; 16-bit floats are stored as their bit patterns so that the
// generated code needs no half-precision type from the compiler.
constexpr std::array<DTypeSpelling, kDTypeCount> kSpellings = {{
    {"bool", "bool", "bool"},
    {"int8", "int8_t", "int8_t"},
    {"int16", "int16_t", "int16_t"},
    {"int32", "int32_t", "int32_t"},
    {"int64", "int64_t", "int64_t"},
    {"uint8", "uint8_t", "uint8_t"},
    {"uint16", "uint16_t", "uint16_t"},
    {"uint32", "uint32_t", "uint32_t"},
    {"uint64", "uint64_t", "uint64_t"},
    {"float16", "uint16_t", "float"},
    {"bfloat16", "uint16_t", "float"},
    {"float32", "float", "float"},
    {"float64", "double", "double"},
    // Never printed: complex values are pairs of real ones before scheduling.
    {"complex64", "<complex64>", "<complex64>"},
    {"complex128", "<complex128>", "<complex128>"},
}};

// A corrupt dtype (a dangling Node reference, say) must not read past the table: error
// messages print dtypes, and they are where such bugs get reported.
const DTypeSpelling& spelling(DType t) {
  static constexpr DTypeSpelling kInvalid = {"<invalid dtype>", "<invalid>", "<invalid>"};
  auto index = static_cast<size_t>(t);
  return index < kSpellings.size() ? kSpellings[index] : kInvalid;
}

DType signed_of_size(int bytes) {
  switch (bytes) {
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 4: return DType::Int32;
    default: return DType::Int64;
  }
}

// The smallest float that NumPy considers able to hold every value of an integer type.
DType float_for_integer(DType t) {
  switch (dtype_size(t)) {
    case 1: return DType::Float16;
    case 2: return DType::Float32;
    default: return DType::Float64;
  }
}

DType promote_floats(DType a, DType b) {
  if (a == b) return a;
  // float16 and bfloat16 cannot hold each other's values; float32 holds both.
  if (dtype_size(a) == 2 && dtype_size(b) == 2) return DType::Float32;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

// NumPy: a complex dtype wide enough for the parts of both (complex64 + float64 = complex128).
DType promote_with_complex(DType a, DType b) {
  DType parts = DType::Float32;
  for (DType t : {a, b}) {
    DType part = is_complex(t) || is_float(t) ? component_dtype(t)
                 : dtype_class(t) == DTypeClass::Bool ? DType::Float32
                                                      : float_for_integer(t);
    if (dtype_size(part) > dtype_size(parts)) parts = part;
  }
  return complex_of(parts);
}

DType promote_integer_with_float(DType integer, DType floating) {
  DType needed = float_for_integer(integer);
  // A 1-byte integer fits in either 16-bit float, so bfloat16 stays bfloat16 (as float16 does).
  if (needed == DType::Float16) return floating;
  return promote_floats(needed, floating);
}

}  // namespace

std::string_view dtype_name(DType t) { return spelling(t).name; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kDTypeCount; ++i) {
    if (kSpellings[static_cast<size_t>(i)].name == name) return static_cast<DType>(i);
  }
  throw Error(ErrorKind::Type,
              error_message("dtype", "", "unknown dtype '" + std::string(name) + "'"));
}

std::string_view dtype_storage_ctype(DType t) { return spelling(t).storage_ctype; }
std::string_view dtype_compute_ctype(DType t) { return spelling(t).compute_ctype; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  DTypeClass class_a = dtype_class(a);
  DTypeClass class_b = dtype_class(b);
  // bool is the lowest kind: it never changes the other type.
  if (class_a == DTypeClass::Bool) return b;
  if (class_b == DTypeClass::Bool) return a;
  if (class_a == DTypeClass::Complex || class_b == DTypeClass::Complex) return promote_with_complex(a, b);
  if (class_a == DTypeClass::Float && class_b == DTypeClass::Float) return promote_floats(a, b);
  if (class_a == DTypeClass::Float) return promote_integer_with_float(b, a);
  if (class_b == DTypeClass::Float) return promote_integer_with_float(a, b);
  if (class_a == class_b) return dtype_size(a) >= dtype_size(b) ? a : b;
  // Signed with unsigned: the signed type must hold every value of the unsigned one; nothing
  // signed holds uint64, so NumPy falls back to float64.
  DType signed_type = class_a == DTypeClass::Signed ? a : b;
  DType unsigned_type = class_a == DTypeClass::Signed ? b : a;
  if (dtype_size(signed_type) > dtype_size(unsigned_type)) return signed_type;
  if (unsigned_type == DType::UInt64) return DType::Float64;
  return signed_of_size(2 * dtype_size(unsigned_type));
}

}  // namespace kiln
