// Private to the reference interpreter (interpreter*.cpp): strided views of Arrays, a row-major
// index walker, per-dtype load/store through scalar_math.h, and the op-family evaluators.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"
#include "kiln/error.h"

// The interpreter is built without OpenMP: leave out the `omp declare simd` pragmas.
#define KILN_SCALAR_MATH_NO_SIMD
// The host C++ compiler builds this: the C++ prelude supplies the semantics' primitives.
#include "codegen/cpp/cpp_prelude.h"
#include "ir/scalar_math.h"

namespace kiln::ir::interpreter_detail {

// The user-facing error of one node: "kiln: <op> at <location>: <message>".
[[noreturn]] void fail(const Node& node, ErrorKind kind, const std::string& message);

// An Array seen as base pointer + shape + element strides (always filled in; borrowed arrays
// may leave strides empty to mean contiguous).
struct View {
  const char* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
};
View view_of(const Array& array);

// Walks a shape in row-major order and keeps, for each of several stride sets (one per
// operand), the element offset of the current index. Each set has one stride per dimension.
class IndexWalker {
 public:
  IndexWalker(std::vector<int64_t> shape, std::vector<std::vector<int64_t>> strides,
              std::vector<int64_t> base_offsets = {});
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  const std::vector<int64_t>& index() const { return index_; }
  void advance();

 private:
  std::vector<int64_t> shape_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> index_;
};

// ---- dtypes -------------------------------------------------------------------------------
// Storage: the C++ type in memory. Compute: the type arithmetic happens in (float for the
// 16-bit float types, the storage type otherwise).
template <DType D> struct DTypeTraits;
#define KILN_PLAIN_DTYPE(name, type)                      \
  template <> struct DTypeTraits<DType::name> {           \
    static constexpr DType dtype = DType::name;           \
    using Storage = type;                                 \
    using Compute = type;                                 \
    static Compute load(Storage value) { return value; }  \
  };
KILN_PLAIN_DTYPE(Bool, bool)
KILN_PLAIN_DTYPE(Int8, int8_t)
KILN_PLAIN_DTYPE(Int16, int16_t)
KILN_PLAIN_DTYPE(Int32, int32_t)
KILN_PLAIN_DTYPE(Int64, int64_t)
KILN_PLAIN_DTYPE(UInt8, uint8_t)
KILN_PLAIN_DTYPE(UInt16, uint16_t)
KILN_PLAIN_DTYPE(UInt32, uint32_t)
KILN_PLAIN_DTYPE(UInt64, uint64_t)
KILN_PLAIN_DTYPE(Float32, float)
KILN_PLAIN_DTYPE(Float64, double)
#undef KILN_PLAIN_DTYPE
template <> struct DTypeTraits<DType::Float16> {
  static constexpr DType dtype = DType::Float16;
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage value) { return kiln_f16_to_f32(value); }
};
template <> struct DTypeTraits<DType::BFloat16> {
  static constexpr DType dtype = DType::BFloat16;
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage value) { return kiln_bf16_to_f32(value); }
};

template <class Traits>
typename Traits::Compute load(const char* base, int64_t offset) {
  return Traits::load(reinterpret_cast<const typename Traits::Storage*>(base)[offset]);
}

// Converts any arithmetic value to dtype To's storage with kiln's cast semantics: C conversion,
// except that float -> integer follows x86 as NumPy does (kiln_float_to_int), anything -> bool
// is `!= 0`, and the 16-bit floats round to nearest even.
template <DType To, class Value>
typename DTypeTraits<To>::Storage convert(Value value) {
  using Storage = typename DTypeTraits<To>::Storage;
  if constexpr (To == DType::Bool) {
    return value != 0;
  } else if constexpr (To == DType::Float16) {
    if constexpr (std::is_same_v<Value, float>) return kiln_f32_to_f16(value);
    else return kiln_f64_to_f16(static_cast<double>(value));
  } else if constexpr (To == DType::BFloat16) {
    return kiln_f32_to_bf16(static_cast<float>(value));
  } else if constexpr (std::is_floating_point_v<Storage> || !std::is_floating_point_v<Value>) {
    return static_cast<Storage>(value);
  } else {
    return kiln_float_to_int<Storage>(value);
  }
}

// Calls f(DTypeTraits<dtype>{}).
template <class F>
void visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool: f(DTypeTraits<DType::Bool>{}); return;
    case DType::Int8: f(DTypeTraits<DType::Int8>{}); return;
    case DType::Int16: f(DTypeTraits<DType::Int16>{}); return;
    case DType::Int32: f(DTypeTraits<DType::Int32>{}); return;
    case DType::Int64: f(DTypeTraits<DType::Int64>{}); return;
    case DType::UInt8: f(DTypeTraits<DType::UInt8>{}); return;
    case DType::UInt16: f(DTypeTraits<DType::UInt16>{}); return;
    case DType::UInt32: f(DTypeTraits<DType::UInt32>{}); return;
    case DType::UInt64: f(DTypeTraits<DType::UInt64>{}); return;
    case DType::Float16: f(DTypeTraits<DType::Float16>{}); return;
    case DType::BFloat16: f(DTypeTraits<DType::BFloat16>{}); return;
    case DType::Float32: f(DTypeTraits<DType::Float32>{}); return;
    case DType::Float64: f(DTypeTraits<DType::Float64>{}); return;
    case DType::Complex64:
    case DType::Complex128: break;  // interpret() lowers complex graphs first
  }
  throw Error(ErrorKind::Internal, "kiln: the interpreter met a complex value (not lowered)");
}

constexpr bool accepts_dtype(uint8_t accepts, DType dtype) {
  return (accepts & static_cast<uint8_t>(dtype_class(dtype))) != 0;
}

// Writes `value` converted to `dtype` at `destination` (one element).
void store_scalar(const Scalar& value, DType dtype, void* destination);
// The integer at `offset` of an integer-typed view (gather/scatter indices).
int64_t load_index(const View& view, int64_t offset);

// Element strides that read `view` broadcast to `shape` (NumPy rules: size-1 and missing
// leading dimensions get stride 0). Elementwise operands normally have the result shape already
// (the builder inserts broadcast nodes); reading through these keeps hand-built nodes working.
std::vector<int64_t> broadcast_strides(const Node& node, const View& view,
                                       const std::vector<int64_t>& shape);

// A new contiguous Array holding the elements of `shape` read at `base_offset` + index . strides
// from `source` (the view ops: reshape order, permute, broadcast, slice, flip).
Array copy_strided(const View& source, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides, int64_t base_offset);

// ---- op families; each returns the node's value as a new contiguous Array ------------------
Array evaluate_elementwise(const Node& node, const std::vector<Array>& operands);
Array evaluate_cast(const Node& node, const Array& operand);
Array evaluate_reduction(const Node& node, const Array& operand);
Array evaluate_scan(const Node& node, const Array& operand);
Array evaluate_movement(const Node& node, const std::vector<Array>& operands);
// With a bias (a third operand, passes/matmul_epilogues.cpp): added along the rows, then the
// ReLU of Attrs::relu.
Array evaluate_matmul(const Node& node, const Array& left, const Array& right,
                      const Array* bias = nullptr);
Array evaluate_convolution(const Node& node, const std::vector<Array>& operands);
// argsort: the positions that sort each row along attrs.axis; sort: the values at them
// (interpreter_sort.cpp).
Array evaluate_sort(const Node& node, const Array& operand);
// softmax(q kᵀ + bias) v per query row (interpreter_attention.cpp).
Array evaluate_attention(const Node& node, const std::vector<Array>& operands);
// x with a x = b per system, in double (interpreter_solve.cpp); a singular system throws
// kiln's LinAlg error.
Array evaluate_solve(const Node& node, const Array& matrix, const Array& right);
// `array` permuted by `order` (a permute op's permutation), as a view of its memory.
Array permuted_view(const Array& array, const std::vector<int64_t>& order);
// convolution_backward_input and convolution_backward_weight.
Array evaluate_convolution_backward(const Node& node, const std::vector<Array>& operands);

}  // namespace kiln::ir::interpreter_detail
