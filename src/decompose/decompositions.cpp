// Reductions and activations expressed in primitives (einsum and the products live in
// einsum.cpp). Integer and bool inputs of float-valued operations are cast to float64 first, as
// NumPy does for mean/var/std and linalg.norm; float16/bfloat16 statistics accumulate in float32
// and are rounded back, as NumPy's mean does.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numbers>

#include "ir/builder_checker.h"
#include "ir/graph.h"
#include "decompose/decompositions.h"
#include "decompose/helpers.h"

namespace kiln::decompose {

using ir::Op;

namespace detail {

ir::Scalar scalar_for(DType dtype, double value) {
  if (dtype == DType::Bool) return ir::Scalar::of_int(value != 0 ? 1 : 0);
  if (is_integer(dtype)) return ir::builder_detail::float_to_integer_scalar(value, dtype);
  return ir::Scalar::of(value);
}

ValueId constant(Builder& b, double value, DType dtype) {
  return b.constant(scalar_for(dtype, value), dtype, {});
}

ValueId cast_to(Builder& b, ValueId x, DType dtype) {
  return b.node(x).dtype == dtype ? x : b.cast(x, dtype);
}

ValueId to_float(Builder& b, ValueId x) {
  return is_inexact(b.node(x).dtype) ? x : b.cast(x, DType::Float64);
}

DType accumulation_float(DType dtype) {
  if (!is_inexact(dtype)) return DType::Float64;
  return dtype_size(dtype) == 2 ? DType::Float32 : dtype;
}

std::vector<int64_t> normalize_axes(const Builder& b, std::vector<int64_t> axes, int rank,
                                    const std::string& op) {
  if (axes.empty()) {
    for (int axis = 0; axis < rank; ++axis) axes.push_back(axis);
    return axes;
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) {
      throw Error(ErrorKind::Axis,
                  error_message(op, b.location(),
                                "axis " + std::to_string(axis) +
                                    " is out of bounds for array of dimension " +
                                    std::to_string(rank)));
    }
    if (axis < 0) axis += rank;
    if (seen[static_cast<size_t>(axis)]) {
      throw Error(ErrorKind::Value, error_message(op, b.location(), "duplicate value in 'axis'"));
    }
    seen[static_cast<size_t>(axis)] = true;
  }
  return axes;
}

ValueId drop_reduced_axes(Builder& b, ValueId kept, const std::vector<int64_t>& axes) {
  ir::Shape shape;
  const ir::Shape& full = b.node(kept).shape;
  for (size_t dim = 0; dim < full.size(); ++dim) {
    bool reduced = false;
    for (int64_t axis : axes) reduced = reduced || axis == static_cast<int64_t>(dim);
    if (!reduced) shape.push_back(full[dim]);
  }
  return b.reshape(kept, shape);
}

}  // namespace detail

using namespace detail;

namespace {

int rank_of(const Builder& b, ValueId x) { return static_cast<int>(b.node(x).shape.size()); }

// A statistic computed in the accumulation type and returned in NumPy's result type.
struct FloatStatistic {
  ValueId input;
  DType result;
};

FloatStatistic prepare_statistic(Builder& b, ValueId x) {
  DType dtype = b.node(x).dtype;
  DType result = is_inexact(dtype) ? dtype : DType::Float64;
  return {cast_to(b, x, accumulation_float(dtype)), result};
}

// exp(x - shift) with the shift safe for rows whose maximum is infinite: an all -inf row would
// otherwise compute -inf - -inf = NaN where the answer is log(0) = -inf.
ValueId finite_row_maximum(Builder& b, ValueId x, const std::vector<int64_t>& axes) {
  ValueId maximum = b.reduce(Op::max, x, axes, /*keepdims=*/true);
  ValueId finite = b.unary(Op::isfinite, maximum);
  return b.where(finite, maximum, constant(b, 0, b.node(x).dtype));
}

ValueId absolute_sum(Builder& b, ValueId x, std::vector<int64_t> axes) {
  return b.reduce(Op::sum, b.unary(Op::abs, x), std::move(axes), /*keepdims=*/true);
}

// The vector 2-norm as sqrt(sum(x*x)): the scheduler recognises exactly this shape.
ValueId euclidean_norm(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims) {
  ValueId squares = b.binary(Op::mul, x, x);
  return b.unary(Op::sqrt, b.reduce(Op::sum, squares, std::move(axes), keepdims));
}

ValueId vector_norm(Builder& b, ValueId x, const std::string& ord, int64_t axis) {
  if (ord == "2") return euclidean_norm(b, x, {axis}, /*keepdims=*/true);
  if (ord == "1") return absolute_sum(b, x, {axis});
  if (ord == "inf") return b.reduce(Op::max, b.unary(Op::abs, x), {axis}, true);
  if (ord == "-inf") return b.reduce(Op::min, b.unary(Op::abs, x), {axis}, true);
  DType dtype = b.node(x).dtype;
  if (ord == "0")  // the count of nonzero entries, in x's float dtype
    return b.cast(b.reduce(Op::sum, b.cast(b.binary(Op::ne, x, constant(b, 0, dtype)), DType::Int64),
                           {axis}, true), dtype);
  char* end = nullptr;
  double p = std::strtod(ord.c_str(), &end);
  if (ord.empty() || *end != '\0' || !std::isfinite(p))
    throw Error(ErrorKind::Value,
                error_message("norm", b.location(), "invalid norm order '" + ord + "' for vectors"));
  // Any other p: (sum |x|**p) ** (1/p), as NumPy computes it.
  ValueId powered = b.binary(Op::pow, b.unary(Op::abs, x), constant(b, p, dtype));
  return b.binary(Op::pow, b.reduce(Op::sum, powered, {axis}, true), constant(b, 1 / p, dtype));
}

// "2.0" -> "2", "inf" stays: orders given as numbers take the names the rules below use.
std::string canonical_order(const std::string& ord) {
  char* end = nullptr;
  double value = std::strtod(ord.c_str(), &end);
  if (ord.empty() || *end != '\0') return ord;
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::floor(value) && std::abs(value) < 1e15) return std::to_string(int64_t(value));
  return ord;
}

// NumPy's matrix norms; `keepdims` is applied by the caller.
ValueId matrix_norm(Builder& b, ValueId x, const std::string& ord, int64_t row_axis,
                    int64_t column_axis) {
  if (ord == "fro") return euclidean_norm(b, x, {row_axis, column_axis}, /*keepdims=*/true);
  // ord=1: the largest column sum; ord=inf: the largest row sum (-1/-inf: the smallest).
  if (ord == "1" || ord == "-1") {
    Op pick = ord == "1" ? Op::max : Op::min;
    return b.reduce(pick, absolute_sum(b, x, {row_axis}), {column_axis}, true);
  }
  if (ord == "inf" || ord == "-inf") {
    Op pick = ord == "inf" ? Op::max : Op::min;
    return b.reduce(pick, absolute_sum(b, x, {column_axis}), {row_axis}, true);
  }
  if (ord == "2" || ord == "-2" || ord == "nuc") {
    throw Error(ErrorKind::Unsupported,
                error_message("norm", b.location(),
                              "matrix norm order '" + ord + "' needs singular values"));
  }
  throw Error(ErrorKind::Value,
              error_message("norm", b.location(), "invalid norm order '" + ord + "' for matrices"));
}

}  // namespace

ValueId mean(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims) {
  axes = normalize_axes(b, std::move(axes), rank_of(b, x), "mean");
  FloatStatistic statistic = prepare_statistic(b, x);
  const ir::Shape& shape = b.node(x).shape;
  int64_t count = 1;
  for (int64_t axis : axes) count *= shape[static_cast<size_t>(axis)].constant();
  DType compute = b.node(statistic.input).dtype;
  ValueId total = b.reduce(Op::sum, statistic.input, axes, keepdims);
  // An empty reduction gives 0 * inf = NaN, as NumPy's mean of nothing.
  double scale = count == 0 ? INFINITY : 1.0 / static_cast<double>(count);
  ValueId scaled = b.binary(Op::mul, total, constant(b, scale, compute));
  return cast_to(b, scaled, statistic.result);
}

ValueId variance(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims, int64_t ddof) {
  axes = normalize_axes(b, std::move(axes), rank_of(b, x), "var");
  FloatStatistic statistic = prepare_statistic(b, x);
  ValueId result = b.reduce(Op::var, statistic.input, axes, keepdims, ddof);
  return cast_to(b, result, statistic.result);
}

ValueId standard_deviation(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims,
                           int64_t ddof) {
  axes = normalize_axes(b, std::move(axes), rank_of(b, x), "std");
  FloatStatistic statistic = prepare_statistic(b, x);
  ValueId result = b.unary(Op::sqrt, b.reduce(Op::var, statistic.input, axes, keepdims, ddof));
  return cast_to(b, result, statistic.result);
}

ValueId softmax(Builder& b, ValueId x, int64_t axis) {
  x = to_float(b, x);
  std::vector<int64_t> axes = normalize_axes(b, {axis}, rank_of(b, x), "softmax");
  ValueId maximum = b.reduce(Op::max, x, axes, /*keepdims=*/true);
  ValueId exponentials = b.unary(Op::exp, b.binary(Op::sub, x, maximum));
  ValueId total = b.reduce(Op::sum, exponentials, axes, /*keepdims=*/true);
  return b.binary(Op::div, exponentials, total);
}

// The plain maximum, as softmax's and PyTorch's kernels shift: a row holding +inf is NaN
// throughout (the finite shift of logsumexp would give -inf beside one NaN).
ValueId log_softmax(Builder& b, ValueId x, int64_t axis) {
  x = to_float(b, x);
  std::vector<int64_t> axes = normalize_axes(b, {axis}, rank_of(b, x), "log_softmax");
  ValueId shifted = b.binary(Op::sub, x, b.reduce(Op::max, x, axes, /*keepdims=*/true));
  ValueId total = b.reduce(Op::sum, b.unary(Op::exp, shifted), axes, /*keepdims=*/true);
  return b.binary(Op::sub, shifted, b.unary(Op::log, total));
}

ValueId logsumexp(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims) {
  x = to_float(b, x);
  axes = normalize_axes(b, std::move(axes), rank_of(b, x), "logsumexp");
  ValueId shift = finite_row_maximum(b, x, axes);
  ValueId exponentials = b.unary(Op::exp, b.binary(Op::sub, x, shift));
  ValueId total = b.reduce(Op::sum, exponentials, axes, /*keepdims=*/true);
  ValueId result = b.binary(Op::add, b.unary(Op::log, total), shift);
  return keepdims ? result : drop_reduced_axes(b, result, axes);
}

ValueId clip(Builder& b, ValueId x, bool has_low, double low, bool has_high, double high) {
  DType dtype = b.node(x).dtype;
  // maximum/minimum propagate NaN from x, as np.clip does.
  if (has_low) x = b.binary(Op::maximum, x, constant(b, low, dtype));
  if (has_high) x = b.binary(Op::minimum, x, constant(b, high, dtype));
  return x;
}

ValueId norm(Builder& b, ValueId x, const std::string& given_ord, std::vector<int64_t> axes,
             bool keepdims) {
  const std::string ord = canonical_order(given_ord);
  x = to_float(b, x);
  int rank = rank_of(b, x);
  if (axes.empty()) {
    // NumPy's defaults: no axis and ord None/2/fro is the 2-norm of the flattened array; other
    // orders need a vector or a matrix.
    if (ord == "2" || ord == "fro") {
      axes = normalize_axes(b, {}, rank, "norm");
      return euclidean_norm(b, x, axes, keepdims);
    }
    if (rank != 1 && rank != 2) {
      throw Error(ErrorKind::Value,
                  error_message("norm", b.location(),
                                "improper number of dimensions to norm with ord='" + ord + "'"));
    }
    axes = normalize_axes(b, {}, rank, "norm");
  }
  axes = normalize_axes(b, std::move(axes), rank, "norm");
  ValueId result;
  if (axes.size() == 1) {
    if (ord == "2") return euclidean_norm(b, x, axes, keepdims);
    result = vector_norm(b, x, ord, axes[0]);
  } else if (axes.size() == 2) {
    result = matrix_norm(b, x, ord, axes[0], axes[1]);
  } else {
    throw Error(ErrorKind::Value,
                error_message("norm", b.location(), "improper number of dimensions to norm"));
  }
  return keepdims ? result : drop_reduced_axes(b, result, axes);
}

ValueId square(Builder& b, ValueId x) { return b.binary(Op::mul, x, x); }

ValueId sigmoid(Builder& b, ValueId x) {
  x = to_float(b, x);
  DType dtype = b.node(x).dtype;
  ValueId exponential = b.unary(Op::exp, b.unary(Op::neg, x));
  ValueId denominator = b.binary(Op::add, constant(b, 1, dtype), exponential);
  return b.binary(Op::div, constant(b, 1, dtype), denominator);
}

ValueId relu(Builder& b, ValueId x) {
  // 0 first: maximum returns its second operand where both are equal, and relu(-0.0) is -0.0
  // (torch's: x unless it is below 0).
  return b.binary(Op::maximum, constant(b, 0, b.node(x).dtype), x);
}

ValueId gelu(Builder& b, ValueId x, bool tanh_approximation) {
  x = to_float(b, x);
  DType dtype = b.node(x).dtype;
  ValueId inner;
  if (tanh_approximation) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ValueId cube = b.binary(Op::mul, b.binary(Op::mul, x, x), x);
    ValueId sum = b.binary(Op::add, x, b.binary(Op::mul, constant(b, 0.044715, dtype), cube));
    double scale = std::sqrt(2.0 / std::numbers::pi);
    inner = b.unary(Op::tanh, b.binary(Op::mul, constant(b, scale, dtype), sum));
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    inner = b.unary(Op::erf, b.binary(Op::mul, x, constant(b, 1 / std::numbers::sqrt2, dtype)));
  }
  ValueId one_plus = b.binary(Op::add, constant(b, 1, dtype), inner);
  return b.binary(Op::mul, b.binary(Op::mul, constant(b, 0.5, dtype), x), one_plus);
}

}  // namespace kiln::decompose
