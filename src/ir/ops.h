// The Op enum and per-op facts, generated from op_list.h.
#pragma once
#include <cstdint>
#include <string_view>

#include "kiln/dtype.h"
#include "kiln/op_list.h"

namespace kiln::ir {

enum class Op : uint16_t {
#define KILN_ENUM_ENTRY(name, ...) name,
  KILN_UNARY_OPS(KILN_ENUM_ENTRY) KILN_BINARY_OPS(KILN_ENUM_ENTRY)
      KILN_TERNARY_OPS(KILN_ENUM_ENTRY) KILN_REDUCE_OPS(KILN_ENUM_ENTRY)
          KILN_SCAN_OPS(KILN_ENUM_ENTRY) KILN_STRUCTURAL_OPS(KILN_ENUM_ENTRY)
#undef KILN_ENUM_ENTRY
              op_count
};

enum class OpKind : uint8_t { Unary, Binary, Ternary, Reduce, Scan, Structural };
// Bit set of dtype classes an op accepts (values of DTypeClass).
enum Accepts : uint8_t {
  Any = 1 | 2 | 4 | 8,
  Numeric = 2 | 4 | 8,
  Float = 8,
  Integer = 2 | 4,
  IntegerOrBool = 1 | 2 | 4,
  AnyOrComplex = Any | 16,
  NumericOrComplex = Numeric | 16,
  FloatOrComplex = Float | 16,
};
enum class ResultType : uint8_t { Same, Bool, Int64, Magnitude };
enum class Accumulator : uint8_t { None, Plain, ArgIndex, Welford };
// The op table's promotion, cost and domain columns (op_list.h says what each value means).
enum class Promotion : uint8_t { Keep, MathFloat, Float64, BoolToFloat };
enum class Cost : uint8_t { Cheap, Costly, Call };
enum class FuzzDomain : uint8_t { Real, Moderate, Positive, NonNegative, AboveOne, NonZero, Unit };

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int arity;  // -1: variadic
  uint8_t accepts;
  ResultType result;
  Accumulator accumulator;
  // The scalar expression (elementwise), or the combine expression (reductions and scans).
  std::string_view expression;
  // The accumulator's identity (reductions and scans), as C++ source over type T.
  std::string_view identity;
  // Elementwise ops: the public function's name and promotion, the cost class, and where the
  // fuzzer draws inputs. Other kinds: the op name, Keep, Costly, Real.
  std::string_view public_name;
  Promotion promotion = Promotion::Keep;
  Cost cost = Cost::Costly;
  FuzzDomain domain = FuzzDomain::Real;
  // The reverse-mode rule's name; empty until autodiff fills the column ("none").
  std::string_view derivative;
};

const OpInfo& op_info(Op op);
std::string_view op_name(Op op);
// Throws kiln::Error for an unknown name.
Op op_from_name(std::string_view name);

// The dtype of an elementwise op's or a reduction's result on operands of dtype `operand`.
inline DType result_dtype(Op op, DType operand) {
  switch (op_info(op).result) {
    case ResultType::Bool: return DType::Bool;
    case ResultType::Int64: return DType::Int64;
    case ResultType::Magnitude: return component_dtype(operand);
    case ResultType::Same: break;
  }
  return operand;
}

inline bool is_elementwise(Op op) {
  OpKind kind = op_info(op).kind;
  return kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Ternary;
}
inline bool is_reduction(Op op) { return op_info(op).kind == OpKind::Reduce; }
inline bool is_scan(Op op) { return op_info(op).kind == OpKind::Scan; }
// A convolution or one of its gradients (extern calls to oneDNN or cuDNN).
inline bool is_convolution(Op op) {
  return op == Op::convolution || op == Op::convolution_backward_input ||
         op == Op::convolution_backward_weight;
}

// argsort (positions) or sort (values): the extern sort kernel (src/extern/sort.h).
inline bool is_sort(Op op) { return op == Op::argsort || op == Op::sort; }
// An op computed by a library call on whole buffers (src/extern): never inlined into a kernel
// (solve: LAPACK's gesv, src/extern/solve.h).
inline bool is_extern(Op op) {
  return op == Op::matmul || op == Op::attention || is_convolution(op) || is_sort(op) ||
         op == Op::solve;
}

}  // namespace kiln::ir
