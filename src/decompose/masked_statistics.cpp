#include "decompose/masked_statistics.h"

#include "decompose/helpers.h"

namespace kiln::decompose {
namespace {

using detail::constant;
using ir::Op;

// sum over `axes` (none: the value itself).
ValueId sum_over(Builder& b, ValueId x, const std::vector<int64_t>& axes, bool keepdims) {
  return axes.empty() ? x : b.reduce(Op::sum, x, axes, keepdims);
}

struct MaskedSums {
  ValueId mask;   // broadcast to x's shape
  ValueId zero;   // of x's dtype
  ValueId count;  // elements counted, x's dtype, keepdims
};

MaskedSums masked_sums(Builder& b, ValueId x, ValueId mask, const std::vector<int64_t>& axes) {
  DType dtype = b.node(x).dtype;
  ValueId full = b.broadcast(mask, b.node(x).shape);
  return {full, constant(b, 0, dtype), sum_over(b, b.cast(full, dtype), axes, true)};
}

}  // namespace

ValueId masked_mean(Builder& b, ValueId x, ValueId mask, const std::vector<int64_t>& axes,
                    bool keepdims) {
  MaskedSums sums = masked_sums(b, x, mask, axes);
  ValueId total = sum_over(b, b.where(sums.mask, x, sums.zero), axes, true);
  ValueId mean = b.binary(Op::div, total, sums.count);
  return keepdims || axes.empty() ? mean : detail::drop_reduced_axes(b, mean, axes);
}

ValueId masked_variance(Builder& b, ValueId x, ValueId mask, const std::vector<int64_t>& axes,
                        bool keepdims, int64_t ddof) {
  DType dtype = b.node(x).dtype;
  MaskedSums sums = masked_sums(b, x, mask, axes);
  ValueId total = sum_over(b, b.where(sums.mask, x, sums.zero), axes, true);
  ValueId mean = b.binary(Op::div, total, sums.count);
  ValueId deviation = b.binary(Op::sub, x, mean);
  ValueId squares = b.where(sums.mask, b.binary(Op::mul, deviation, deviation), sums.zero);
  // max(count - ddof, 0), as NumPy divides: inf (not a negative variance) past the count.
  ValueId denominator = b.binary(
      Op::maximum, b.binary(Op::sub, sums.count, constant(b, static_cast<double>(ddof), dtype)),
      sums.zero);
  ValueId variance = b.binary(Op::div, sum_over(b, squares, axes, true), denominator);
  return keepdims || axes.empty() ? variance : detail::drop_reduced_axes(b, variance, axes);
}

}  // namespace kiln::decompose
