// Reductions and scans for the reference interpreter, with the op table's identities and
// combine expressions. Floating-point sums, products and scans accumulate in double: the oracle
// should be the most accurate answer, and compiled kernels (which reassociate) are compared
// with it under a tolerance. Integer accumulation wraps in the operand's type, as NumPy's does.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "ir/interpreter_kernels.h"
#include "kiln/op_list.h"

namespace kiln::ir::interpreter_detail {
namespace {

// Per-output-element state; not std::vector, whose bool specialisation hands out proxies.
template <class T>
std::unique_ptr<T[]> filled_buffer(size_t count, T value) {
  std::unique_ptr<T[]> buffer(new T[count]);
  std::fill_n(buffer.get(), count, value);
  return buffer;
}

template <class T>
struct TypeTag {
  using type = T;
};

// Plain accumulators: bool for the Bool-result ops (any, all), double for float operands,
// the operand's compute type otherwise.
template <class Compute, ResultType Result>
using PlainAccumulator = std::conditional_t<
    Result == ResultType::Bool, bool,
    std::conditional_t<std::is_floating_point_v<Compute>, double, Compute>>;

// The reduced axes, normalised and marked per dimension.
std::vector<bool> reduced_mask(const Node& node, int rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : node.attrs.axes) {
    reduced[static_cast<size_t>(normalize_axis(axis, rank, std::string(op_name(node.op))))] = true;
  }
  return reduced;
}

// Strides mapping each input index to (a) its output element and (b) its position inside the
// reduced sub-array (row-major over the reduced axes: the index argmax/argmin return).
struct ReductionLayout {
  std::vector<int64_t> output_strides;
  std::vector<int64_t> reduced_strides;
  int64_t output_count = 1;
  int64_t reduced_count = 1;
};

ReductionLayout reduction_layout(const std::vector<int64_t>& shape,
                                 const std::vector<bool>& reduced) {
  ReductionLayout layout;
  layout.output_strides.assign(shape.size(), 0);
  layout.reduced_strides.assign(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (reduced[d]) {
      layout.reduced_strides[d] = layout.reduced_count;
      layout.reduced_count *= shape[d];
    } else {
      layout.output_strides[d] = layout.output_count;
      layout.output_count *= shape[d];
    }
  }
  return layout;
}

template <ResultType Result, Accumulator Kind, class Combine, class Identity>
Array reduce(const Node& node, const Array& operand, Accepts accepted, Combine combine,
             Identity identity) {
  View in = view_of(operand);
  ReductionLayout layout = reduction_layout(in.shape, reduced_mask(node, operand.ndim()));
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  if (output.size() != layout.output_count) {
    fail(node, ErrorKind::Internal, "result shape " + shape_string(node.shape) +
                                        " does not match the reduction of shape " +
                                        shape_string(from_ints(in.shape)));
  }
  if (Kind == Accumulator::ArgIndex && layout.reduced_count == 0 && layout.output_count > 0) {
    fail(node, ErrorKind::Value, "attempt to get " + std::string(op_name(node.op)) +
                                     " of an empty sequence (shape " +
                                     shape_string(from_ints(in.shape)) + ")");
  }
  visit_dtype(in.dtype, [&](auto traits) {
    using In = decltype(traits);
    using Compute = typename In::Compute;
    if (!accepts_dtype(accepted, In::dtype)) {
      fail(node, ErrorKind::Type,
           "unsupported operand dtype " + std::string(dtype_name(In::dtype)));
    }
    IndexWalker walker(in.shape, {in.strides, layout.output_strides, layout.reduced_strides});
    const int64_t input_count = element_count(from_ints(in.shape));
    const size_t output_count = static_cast<size_t>(layout.output_count);
    auto store_all = [&](auto out_traits, auto&& value_of) {
      using Out = decltype(out_traits);
      if (node.dtype != Out::dtype) {
        fail(node, ErrorKind::Internal, "result dtype " + std::string(dtype_name(node.dtype)) +
                                            " does not match the op table's " +
                                            std::string(dtype_name(Out::dtype)));
      }
      auto* out = output.data_as<typename Out::Storage>();
      for (size_t n = 0; n < output_count; ++n) out[n] = convert<Out::dtype>(value_of(n));
    };
    if constexpr (Kind == Accumulator::Plain) {
      using Acc = PlainAccumulator<Compute, Result>;
      auto accumulators = filled_buffer(output_count, static_cast<Acc>(identity(TypeTag<Acc>{})));
      for (int64_t n = 0; n < input_count; ++n, walker.advance()) {
        Compute x = load<In>(in.data, walker.offset(0));
        Acc& acc = accumulators[static_cast<size_t>(walker.offset(1))];
        if constexpr (std::is_same_v<Acc, bool>) acc = static_cast<bool>(combine(acc, x));
        else acc = static_cast<Acc>(combine(acc, static_cast<Acc>(x)));
      }
      auto value_of = [&](size_t n) { return accumulators[n]; };
      if constexpr (Result == ResultType::Bool) store_all(DTypeTraits<DType::Bool>{}, value_of);
      else store_all(In{}, value_of);
    } else if constexpr (Kind == Accumulator::ArgIndex) {
      // First occurrence wins: `combine` (kiln_argmax_better) is true only for a strictly better
      // value or the first NaN.
      auto best = filled_buffer(output_count, static_cast<Compute>(identity(TypeTag<Compute>{})));
      std::vector<int64_t> best_index(output_count, 0);
      for (int64_t n = 0; n < input_count; ++n, walker.advance()) {
        Compute x = load<In>(in.data, walker.offset(0));
        size_t slot = static_cast<size_t>(walker.offset(1));
        if (combine(best[slot], x)) {
          best[slot] = x;
          best_index[slot] = walker.offset(2);
        }
      }
      store_all(DTypeTraits<DType::Int64>{}, [&](size_t n) { return best_index[n]; });
    } else {
      std::vector<kiln_welford<double>> states(output_count, kiln_welford<double>{0, 0, 0});
      for (int64_t n = 0; n < input_count; ++n, walker.advance()) {
        auto& state = states[static_cast<size_t>(walker.offset(1))];
        state = kiln_welford_add(state, static_cast<double>(load<In>(in.data, walker.offset(0))));
      }
      const long long ddof = node.attrs.ddof;
      store_all(In{}, [&](size_t n) { return kiln_welford_variance(states[n], ddof); });
    }
  });
  return output;
}

template <class Combine, class Identity>
Array scan(const Node& node, const Array& operand, Accepts accepted, Combine combine,
           Identity identity) {
  View in = view_of(operand);
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  if (output.shape() != in.shape || node.dtype != in.dtype) {
    fail(node, ErrorKind::Internal, "result " + std::string(dtype_name(node.dtype)) +
                                        shape_string(node.shape) + " differs from the operand " +
                                        std::string(dtype_name(in.dtype)) +
                                        shape_string(from_ints(in.shape)));
  }
  if (in.shape.empty()) {
    fail(node, ErrorKind::Axis, "cannot scan a zero-dimensional array");
  }
  size_t axis = static_cast<size_t>(
      normalize_axis(node.attrs.axis, operand.ndim(), std::string(op_name(node.op))));
  const int64_t axis_stride = contiguous_strides(node.shape)[axis];
  visit_dtype(in.dtype, [&](auto traits) {
    using In = decltype(traits);
    using Compute = typename In::Compute;
    using Acc = std::conditional_t<std::is_floating_point_v<Compute>, double, Compute>;
    if (!accepts_dtype(accepted, In::dtype)) {
      fail(node, ErrorKind::Type,
           "unsupported operand dtype " + std::string(dtype_name(In::dtype)));
    }
    // Running values in the accumulator type, so float16 scans do not round at every step.
    auto running = filled_buffer(static_cast<size_t>(output.size()), Acc{});
    auto* out = output.data_as<typename In::Storage>();
    const Acc start = static_cast<Acc>(identity(TypeTag<Acc>{}));
    IndexWalker walker(in.shape, {in.strides});
    for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
      Acc x = static_cast<Acc>(load<In>(in.data, walker.offset(0)));
      Acc previous =
          walker.index()[axis] == 0 ? start : running[static_cast<size_t>(n - axis_stride)];
      running[static_cast<size_t>(n)] = static_cast<Acc>(combine(previous, x));
      out[n] = convert<In::dtype>(running[static_cast<size_t>(n)]);
    }
  });
  return output;
}

}  // namespace

Array evaluate_reduction(const Node& node, const Array& operand) {
  switch (node.op) {
#define KILN_REDUCE_CASE(name, accepts, result, accumulator, identity_expression, \
                         combine_expression, ...)                                 \
  case Op::name:                                                                  \
    return reduce<ResultType::result, Accumulator::accumulator>(                  \
        node, operand, Accepts::accepts,                                          \
        [](auto acc, auto x) { return combine_expression; },                      \
        [](auto tag) {                                                            \
          using T [[maybe_unused]] = typename decltype(tag)::type;                \
          return identity_expression;                                             \
        });
    KILN_REDUCE_OPS(KILN_REDUCE_CASE)
#undef KILN_REDUCE_CASE
    default:
      fail(node, ErrorKind::Internal, "is not a reduction");
  }
}

Array evaluate_scan(const Node& node, const Array& operand) {
  switch (node.op) {
#define KILN_SCAN_CASE(name, accepts, identity_expression, combine_expression, ...) \
  case Op::name:                                                            \
    return scan(                                                            \
        node, operand, Accepts::accepts,                                    \
        [](auto acc, auto x) { return combine_expression; },                \
        [](auto tag) {                                                      \
          using T [[maybe_unused]] = typename decltype(tag)::type;          \
          return identity_expression;                                       \
        });
    KILN_SCAN_OPS(KILN_SCAN_CASE)
#undef KILN_SCAN_CASE
    default:
      fail(node, ErrorKind::Internal, "is not a scan");
  }
}

}  // namespace kiln::ir::interpreter_detail
