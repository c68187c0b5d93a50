// Elementwise ops and cast for the reference interpreter. Each op's scalar expression comes
// straight from op_list.h, instantiated for the operands' compute type, so the interpreter and
// the code generators share one definition of every op.
#include <type_traits>

#include "ir/interpreter_kernels.h"
#include "kiln/op_list.h"

namespace kiln::ir::interpreter_detail {
namespace {

// The result is the operand dtype (Same) or bool.
template <class Traits, ResultType Result>
using OutputTraits =
    std::conditional_t<Result == ResultType::Bool, DTypeTraits<DType::Bool>, Traits>;

[[noreturn]] void fail_dtype(const Node& node, DType dtype) {
  fail(node, ErrorKind::Type, "unsupported operand dtype " + std::string(dtype_name(dtype)));
}

// The output Array, checked against the node's declared dtype: a mismatch would make the loop
// below write the wrong storage type.
Array make_output(const Node& node, DType computed_dtype) {
  if (computed_dtype != node.dtype) {
    fail(node, ErrorKind::Internal, "result dtype " + std::string(dtype_name(node.dtype)) +
                                        " does not match the op table's " +
                                        std::string(dtype_name(computed_dtype)));
  }
  return Array::empty(node.dtype, to_ints(node.shape));
}

template <Accepts Accepted, ResultType Result, class Expression>
Array unary(const Node& node, const std::vector<Array>& operands, Expression expression) {
  View a = view_of(operands[0]);
  std::vector<int64_t> shape = to_ints(node.shape);
  Array output;
  visit_dtype(a.dtype, [&](auto traits) {
    using In = decltype(traits);
    if constexpr (!accepts_dtype(Accepted, In::dtype)) {
      fail_dtype(node, In::dtype);
    } else {
      using Out = OutputTraits<In, Result>;
      output = make_output(node, Out::dtype);
      auto* out = output.data_as<typename Out::Storage>();
      IndexWalker walker(shape, {broadcast_strides(node, a, shape)});
      for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
        out[n] = convert<Out::dtype>(expression(load<In>(a.data, walker.offset(0))));
      }
    }
  });
  return output;
}

template <Accepts Accepted, ResultType Result, class Expression>
Array binary(const Node& node, const std::vector<Array>& operands, Expression expression) {
  View a = view_of(operands[0]);
  View b = view_of(operands[1]);
  if (a.dtype != b.dtype) {
    fail(node, ErrorKind::Internal, "operands have different dtypes " +
                                        std::string(dtype_name(a.dtype)) + " and " +
                                        std::string(dtype_name(b.dtype)));
  }
  std::vector<int64_t> shape = to_ints(node.shape);
  Array output;
  visit_dtype(a.dtype, [&](auto traits) {
    using In = decltype(traits);
    if constexpr (!accepts_dtype(Accepted, In::dtype)) {
      fail_dtype(node, In::dtype);
    } else {
      using Out = OutputTraits<In, Result>;
      output = make_output(node, Out::dtype);
      auto* out = output.data_as<typename Out::Storage>();
      IndexWalker walker(shape, {broadcast_strides(node, a, shape),
                                 broadcast_strides(node, b, shape)});
      for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
        out[n] = convert<Out::dtype>(expression(load<In>(a.data, walker.offset(0)),
                                                load<In>(b.data, walker.offset(1))));
      }
    }
  });
  return output;
}

// where(condition, a, b): the condition is bool; the dtype is the one of a and b.
template <Accepts Accepted, ResultType Result, class Expression>
Array ternary(const Node& node, const std::vector<Array>& operands, Expression expression) {
  View condition = view_of(operands[0]);
  View a = view_of(operands[1]);
  View b = view_of(operands[2]);
  if (condition.dtype != DType::Bool || a.dtype != b.dtype) {
    fail(node, ErrorKind::Internal, "operands have dtypes " +
                                        std::string(dtype_name(condition.dtype)) + ", " +
                                        std::string(dtype_name(a.dtype)) + " and " +
                                        std::string(dtype_name(b.dtype)) +
                                        "; expected bool and two equal dtypes");
  }
  std::vector<int64_t> shape = to_ints(node.shape);
  Array output;
  visit_dtype(a.dtype, [&](auto traits) {
    using In = decltype(traits);
    if constexpr (!accepts_dtype(Accepted, In::dtype)) {
      fail_dtype(node, In::dtype);
    } else {
      using Out = OutputTraits<In, Result>;
      output = make_output(node, Out::dtype);
      auto* out = output.data_as<typename Out::Storage>();
      IndexWalker walker(shape, {broadcast_strides(node, condition, shape),
                                 broadcast_strides(node, a, shape),
                                 broadcast_strides(node, b, shape)});
      for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
        out[n] = convert<Out::dtype>(
            expression(load<DTypeTraits<DType::Bool>>(condition.data, walker.offset(0)),
                       load<In>(a.data, walker.offset(1)), load<In>(b.data, walker.offset(2))));
      }
    }
  });
  return output;
}

}  // namespace

Array evaluate_elementwise(const Node& node, const std::vector<Array>& operands) {
  switch (node.op) {
#define KILN_UNARY_CASE(name, accepts, result, expression, ...)                     \
  case Op::name:                                                                    \
    return unary<Accepts::accepts, ResultType::result>(node, operands, [](auto a) { \
      return expression;                                                            \
    });
    KILN_UNARY_OPS(KILN_UNARY_CASE)
#undef KILN_UNARY_CASE
#define KILN_BINARY_CASE(name, accepts, result, expression, ...)          \
  case Op::name:                                                          \
    return binary<Accepts::accepts, ResultType::result>(node, operands,   \
                                                        [](auto a, auto b) { return expression; });
    KILN_BINARY_OPS(KILN_BINARY_CASE)
#undef KILN_BINARY_CASE
#define KILN_TERNARY_CASE(name, accepts, result, expression, ...)              \
  case Op::name:                                                               \
    return ternary<Accepts::accepts, ResultType::result>(                      \
        node, operands, [](auto a, auto b, auto c) { return expression; });
    KILN_TERNARY_OPS(KILN_TERNARY_CASE)
#undef KILN_TERNARY_CASE
    default:
      fail(node, ErrorKind::Internal, "is not an elementwise op");
  }
}

// NumPy's C-cast semantics, made total: float -> integer gives what NumPy gives on x86-64 for
// NaN, infinities and out-of-range values (kiln_float_to_int; C leaves them undefined);
// anything -> bool is `value != 0` (so NaN -> true);
// integer -> integer wraps; -> float16/bfloat16 rounds to nearest even.
Array evaluate_cast(const Node& node, const Array& operand) {
  View in = view_of(operand);
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  if (in.shape != output.shape()) {
    fail(node, ErrorKind::Internal, "operand shape " + shape_string(from_ints(in.shape)) +
                                        " differs from the result shape " +
                                        shape_string(node.shape));
  }
  visit_dtype(in.dtype, [&](auto in_traits) {
    using In = decltype(in_traits);
    visit_dtype(node.dtype, [&](auto out_traits) {
      using Out = decltype(out_traits);
      auto* out = output.data_as<typename Out::Storage>();
      IndexWalker walker(in.shape, {in.strides});
      for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
        if constexpr (In::dtype == DType::Float16 && Out::dtype == DType::UInt32)
          out[n] = kiln_half_to_uint32(load<In>(in.data, walker.offset(0)));
        else
          out[n] = convert<Out::dtype>(load<In>(in.data, walker.offset(0)));
      }
    });
  });
  return output;
}

}  // namespace kiln::ir::interpreter_detail
