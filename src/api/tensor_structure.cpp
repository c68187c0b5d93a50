// The C++ Tensor API, structural half: reductions, movement, linear algebra and creation, each
// a thin layer over ir::Builder and the decompositions that adds NumPy's typing (sum of small
// integers accumulates in 64 bits, mean of integers is float64, operands of products promote).
#include <algorithm>

#include "api/runtime_checks.h"
#include "api/trace.h"
#include "kiln/tensor.h"
#include "decompose/helpers.h"
#include "decompose/decompositions.h"
#include "decompose/manipulation.h"
#include "decompose/masked_statistics.h"

namespace kiln {

using detail::Trace;
using detail::trace_for;
using detail::wrap;
using ir::Op;
using ir::ValueId;
using decompose::detail::cast_to;

namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& op, const Where& where,
                       const std::string& message) {
  throw Error(kind, error_message(op, detail::location_string(where), message));
}

// NumPy's sum/prod/cumsum type: bool and integers narrower than 64 bits accumulate in the
// 64-bit integer of their signedness.
DType accumulation_type(DType dtype) {
  if (dtype == DType::Bool || is_signed_integer(dtype)) return DType::Int64;
  if (is_integer(dtype)) return DType::UInt64;
  return dtype;
}

Tensor reduce(const char* name, Op op, const Tensor& x, Axes axis, bool keepdims,
              const Where& where, bool accumulate = false) {
  Trace& trace = trace_for(x, name, where);
  ValueId value = x.id();
  if (accumulate) value = cast_to(trace.builder, value, accumulation_type(x.dtype()));
  return wrap(trace, trace.builder.reduce(op, value, std::move(axis), keepdims));
}

Tensor arg_reduce(const char* name, Op op, const Tensor& x, std::optional<int64_t> axis,
                  bool keepdims, const Where& where) {
  Trace& trace = trace_for(x, name, where);
  ir::Builder& builder = trace.builder;
  if (axis) return wrap(trace, builder.reduce(op, x.id(), {*axis}, keepdims));
  // No axis: the index into the flattened array, as NumPy.
  ValueId flat = builder.reshape(x.id(), {-1});
  ValueId index = builder.reduce(op, flat, {0}, false);
  if (!keepdims) return wrap(trace, index);
  return wrap(trace, builder.reshape(index, ir::Shape(static_cast<size_t>(x.ndim()), 1)));
}

Tensor scan(const char* name, Op op, const Tensor& x, int64_t axis, const Where& where) {
  Trace& trace = trace_for(x, name, where);
  ValueId value = cast_to(trace.builder, x.id(), accumulation_type(x.dtype()));
  return wrap(trace, trace.builder.scan(op, value, axis));
}

int normalize(int64_t axis, int rank, const char* op, const Where& where) {
  if (axis < -rank || axis >= rank) {
    fail(ErrorKind::Axis, op, where,
         "axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
             std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

DType common_dtype(const std::vector<Tensor>& xs) {
  DType dtype = xs[0].dtype();
  for (const Tensor& x : xs) dtype = promote_types(dtype, x.dtype());
  return dtype;
}

}  // namespace

// ---- reductions ----

Tensor sum(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("sum", Op::sum, x, std::move(axis), keepdims, where, true);
}
Tensor prod(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("prod", Op::prod, x, std::move(axis), keepdims, where, true);
}
Tensor max(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("max", Op::max, x, std::move(axis), keepdims, where);
}
Tensor min(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("min", Op::min, x, std::move(axis), keepdims, where);
}
Tensor any(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("any", Op::any, x, std::move(axis), keepdims, where);
}
Tensor all(const Tensor& x, Axes axis, bool keepdims, Where where) {
  return reduce("all", Op::all, x, std::move(axis), keepdims, where);
}

Tensor mean(const Tensor& x, Axes axis, bool keepdims, Where where) {
  Trace& trace = trace_for(x, "mean", where);
  return wrap(trace, decompose::mean(trace.builder, x.id(), std::move(axis), keepdims));
}
Tensor var(const Tensor& x, Axes axis, bool keepdims, int64_t ddof, Where where) {
  Trace& trace = trace_for(x, "var", where);
  return wrap(trace, decompose::variance(trace.builder, x.id(), std::move(axis), keepdims, ddof));
}
Tensor std(const Tensor& x, Axes axis, bool keepdims, int64_t ddof, Where where) {
  Trace& trace = trace_for(x, "std", where);
  return wrap(trace,
              decompose::standard_deviation(trace.builder, x.id(), std::move(axis), keepdims, ddof));
}

Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Where where) {
  return arg_reduce("argmax", Op::argmax, x, axis, keepdims, where);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Where where) {
  return arg_reduce("argmin", Op::argmin, x, axis, keepdims, where);
}

Tensor logsumexp(const Tensor& x, Axes axis, bool keepdims, Where where) {
  Trace& trace = trace_for(x, "logsumexp", where);
  return wrap(trace, decompose::logsumexp(trace.builder, x.id(), std::move(axis), keepdims));
}
Tensor softmax(const Tensor& x, int64_t axis, Where where) {
  Trace& trace = trace_for(x, "softmax", where);
  return wrap(trace, decompose::softmax(trace.builder, x.id(), axis));
}
Tensor log_softmax(const Tensor& x, int64_t axis, Where where) {
  Trace& trace = trace_for(x, "log_softmax", where);
  return wrap(trace, decompose::log_softmax(trace.builder, x.id(), axis));
}
Tensor norm(const Tensor& x, std::string ord, Axes axis, bool keepdims, Where where) {
  Trace& trace = trace_for(x, "norm", where);
  return wrap(trace, decompose::norm(trace.builder, x.id(), ord, std::move(axis), keepdims));
}

Tensor cumsum(const Tensor& x, int64_t axis, Where where) {
  return scan("cumsum", Op::cumsum, x, axis, where);
}
Tensor cumprod(const Tensor& x, int64_t axis, Where where) {
  return scan("cumprod", Op::cumprod, x, axis, where);
}

// No accumulation type: a running extreme is one of x's values.
Tensor cummax(const Tensor& x, int64_t axis, Where where) {
  Trace& trace = trace_for(x, "cummax", where);
  return wrap(trace, trace.builder.scan(Op::cummax, x.id(), axis));
}

Tensor cummin(const Tensor& x, int64_t axis, Where where) {
  Trace& trace = trace_for(x, "cummin", where);
  return wrap(trace, trace.builder.scan(Op::cummin, x.id(), axis));
}

Tensor argsort(const Tensor& x, int64_t axis, bool descending, int64_t k, Where where) {
  Trace& trace = trace_for(x, "argsort", where);
  return wrap(trace, trace.builder.argsort(x.id(), axis, descending, k));
}
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis, bool descending, int64_t k,
                               Where where) {
  Trace& trace = trace_for(x, "sort", where);
  // Two nodes: where both are used, passes/share_sorts.cpp reads the values through the
  // positions (one sort); where only the values are, the kernel sorts them alone.
  return {wrap(trace, trace.builder.sort(x.id(), axis, descending, k)),
          wrap(trace, trace.builder.argsort(x.id(), axis, descending, k))};
}
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis, Where where) {
  Trace& trace = trace_for(x, indices, "take_along_axis", where);
  return wrap(trace, trace.builder.take_along_axis(x.id(), indices.id(), axis));
}

// ---- movement ----

Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Where where) {
  Trace& trace = trace_for(x, "reshape", where);
  return wrap(trace, trace.builder.reshape(x.id(), ir::from_ints(shape)));
}

Tensor transpose(const Tensor& x, Axes permutation, Where where) {
  Trace& trace = trace_for(x, "transpose", where);
  if (permutation.empty()) {
    for (int axis = x.ndim() - 1; axis >= 0; --axis) permutation.push_back(axis);
  }
  return wrap(trace, trace.builder.permute(x.id(), std::move(permutation)));
}

Tensor expand_dims(const Tensor& x, int64_t axis, Where where) {
  Trace& trace = trace_for(x, "expand_dims", where);
  std::vector<int64_t> shape = x.shape();
  int position = normalize(axis, x.ndim() + 1, "expand_dims", where);
  shape.insert(shape.begin() + position, 1);
  return wrap(trace, trace.builder.reshape(x.id(), ir::from_ints(shape)));
}

Tensor squeeze(const Tensor& x, Axes axis, Where where) {
  Trace& trace = trace_for(x, "squeeze", where);
  std::vector<int64_t> sizes = x.shape();
  std::vector<bool> drop(sizes.size(), false);
  for (size_t d = 0; d < sizes.size() && axis.empty(); ++d) drop[d] = sizes[d] == 1;
  for (int64_t a : axis) {
    size_t d = static_cast<size_t>(normalize(a, x.ndim(), "squeeze", where));
    if (sizes[d] != 1) {
      fail(ErrorKind::Value, "squeeze", where,
           "cannot select an axis to squeeze out which has size not equal to one (axis " +
               std::to_string(a) + " of shape " + ir::shape_string(ir::from_ints(sizes)) + ")");
    }
    drop[d] = true;
  }
  std::vector<int64_t> shape;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!drop[d]) shape.push_back(sizes[d]);
  }
  return wrap(trace, trace.builder.reshape(x.id(), ir::from_ints(shape)));
}

Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, Where where) {
  Trace& trace = trace_for(x, "broadcast_to", where);
  return wrap(trace, trace.builder.broadcast(x.id(), ir::from_ints(shape)));
}

Tensor slice(const Tensor& x, std::vector<Slice> slices, Where where) {
  Trace& trace = trace_for(x, "slice", where);
  std::vector<int64_t> sizes = x.shape();
  if (slices.size() > sizes.size()) {
    fail(ErrorKind::Value, "slice", where,
         "too many indices: " + std::to_string(slices.size()) + " slices for shape " +
             ir::shape_string(ir::from_ints(sizes)));
  }
  slices.resize(sizes.size());
  std::vector<int64_t> starts, stops, steps;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const Slice& s = slices[d];
    if (s.step == 0) fail(ErrorKind::Value, "slice", where, "slice step cannot be zero");
    // Missing bounds in Python's sense: the whole dimension in the step's direction (-n-1
    // clamps to "before the first element").
    starts.push_back(s.start.value_or(s.step > 0 ? 0 : sizes[d]));
    stops.push_back(s.stop.value_or(s.step > 0 ? sizes[d] : -sizes[d] - 1));
    steps.push_back(s.step);
  }
  return wrap(trace, trace.builder.slice(x.id(), starts, stops, steps));
}

Tensor pad(const Tensor& x, std::vector<std::pair<int64_t, int64_t>> widths, std::string mode,
           double value, Where where) {
  Trace& trace = trace_for(x, "pad", where);
  ir::PadMode pad_mode;
  if (mode == "constant") {
    pad_mode = ir::PadMode::Constant;
  } else if (mode == "edge") {
    pad_mode = ir::PadMode::Edge;
  } else if (mode == "reflect") {
    pad_mode = ir::PadMode::Reflect;
  } else {
    fail(ErrorKind::Unsupported, "pad", where,
         "mode '" + mode + "' is not supported (constant, edge, reflect)");
  }
  size_t rank = static_cast<size_t>(x.ndim());
  // NumPy's shorthands: one pair applies to every dimension.
  if (widths.size() == 1 && rank > 1) widths.resize(rank, widths[0]);
  std::vector<int64_t> low, high;
  for (auto [before, after] : widths) {
    low.push_back(before);
    high.push_back(after);
  }
  ir::Scalar fill = decompose::detail::scalar_for(x.dtype(), value);
  return wrap(trace, trace.builder.pad(x.id(), low, high, pad_mode, fill));
}

Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis, Where where) {
  Trace& trace = trace_for(xs, "concatenate", where);
  DType dtype = common_dtype(xs);
  std::vector<ValueId> values;
  for (const Tensor& x : xs) values.push_back(cast_to(trace.builder, x.id(), dtype));
  return wrap(trace, trace.builder.concat(values, axis));
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis, Where where) {
  Trace& trace = trace_for(xs, "stack", where);
  std::vector<int64_t> shape = xs[0].shape();
  for (const Tensor& x : xs) {
    if (x.shape() != shape) {
      fail(ErrorKind::Value, "stack", where,
           "all input arrays must have the same shape, got " +
               ir::shape_string(ir::from_ints(shape)) + " and " +
               ir::shape_string(ir::from_ints(x.shape())));
    }
  }
  int position = normalize(axis, static_cast<int>(shape.size()) + 1, "stack", where);
  shape.insert(shape.begin() + position, 1);
  DType dtype = common_dtype(xs);
  std::vector<ValueId> values;
  for (const Tensor& x : xs) {
    ValueId value = cast_to(trace.builder, x.id(), dtype);
    values.push_back(trace.builder.reshape(value, ir::from_ints(shape)));
  }
  return wrap(trace, trace.builder.concat(values, position));
}

Tensor flip(const Tensor& x, Axes axis, Where where) {
  Trace& trace = trace_for(x, "flip", where);
  return wrap(trace, trace.builder.flip(x.id(), std::move(axis)));
}

namespace {

// The float value and bool mask of a masked statistic, its explicit axes normalised.
std::pair<ValueId, ValueId> masked_operands(Trace& trace, const char* name, const Tensor& x,
                                            const Tensor& mask, Axes& axis) {
  if (!is_float(x.dtype()))
    throw Error(ErrorKind::Type, error_message(name, trace.builder.location(),
                                               "needs a float array (cast integers first)"));
  for (int64_t& a : axis) a = ir::normalize_axis(a, x.ndim(), name);
  return {x.id(), cast_to(trace.builder, mask.id(), DType::Bool)};
}

}  // namespace

Tensor masked_mean(const Tensor& x, const Tensor& mask, Axes axis, bool keepdims, Where where) {
  Trace& trace = trace_for(x, mask, "mean", where);
  auto [value, condition] = masked_operands(trace, "mean", x, mask, axis);
  return wrap(trace, decompose::masked_mean(trace.builder, value, condition, axis, keepdims));
}

Tensor masked_var(const Tensor& x, const Tensor& mask, Axes axis, bool keepdims, int64_t ddof,
                  Where where) {
  Trace& trace = trace_for(x, mask, "var", where);
  auto [value, condition] = masked_operands(trace, "var", x, mask, axis);
  return wrap(trace,
              decompose::masked_variance(trace.builder, value, condition, axis, keepdims, ddof));
}

Tensor tile(const Tensor& x, std::vector<int64_t> reps, Where where) {
  Trace& trace = trace_for(x, "tile", where);
  return wrap(trace, decompose::tile(trace.builder, x.id(), std::move(reps)));
}

Tensor repeat(const Tensor& x, int64_t count, std::optional<int64_t> axis, Where where) {
  Trace& trace = trace_for(x, "repeat", where);
  ValueId value = x.id();
  if (!axis || x.ndim() == 0) {  // NumPy repeats the flattened array (a 0-d array is 1-d)
    value = trace.builder.reshape(value, {-1});
    axis = 0;
  }
  int rank = static_cast<int>(trace.builder.node(value).shape.size());
  return wrap(trace, decompose::repeat(trace.builder, value, count,
                                       ir::normalize_axis(*axis, rank, "repeat")));
}

Tensor roll(const Tensor& x, std::vector<int64_t> shifts, Axes axes, Where where) {
  Trace& trace = trace_for(x, "roll", where);
  if (axes.empty()) {  // the flattened array, reshaped back
    ValueId flat = trace.builder.reshape(x.id(), {-1});
    ValueId rolled = decompose::roll(trace.builder, flat, {shifts.empty() ? 0 : shifts[0]}, {0});
    return wrap(trace, trace.builder.reshape(rolled, ir::from_ints(x.shape())));
  }
  if (shifts.size() != axes.size())
    throw Error(ErrorKind::Value, error_message("roll", trace.builder.location(),
                                                "'shift' and 'axis' should have the same length"));
  for (int64_t& axis : axes) axis = ir::normalize_axis(axis, x.ndim(), "roll");
  return wrap(trace, decompose::roll(trace.builder, x.id(), shifts, axes));
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, Where where) {
  return detail::take(x, indices, axis, true, where);
}

Tensor index_put(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                 bool accumulate, Where where) {
  return detail::index_put(x, indices, values, axis, accumulate, true, where);
}

namespace detail {

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, bool check_bounds,
            const Where& where) {
  Trace& trace = trace_for(x, indices, "take", where);
  ir::ValueId result = trace.builder.gather(x.id(), indices.id(), axis);
  if (check_bounds) {
    size_t position = static_cast<size_t>(normalize(axis, x.ndim(), "take", where));
    check_index_bounds(trace, indices.id(), trace.builder.node(x.id()).shape[position],
                       static_cast<int64_t>(position), "take");
  }
  return wrap(trace, result);
}

Tensor index_put(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                 bool accumulate, bool check_bounds, const Where& where) {
  Trace& trace = trace_for(std::vector<Tensor>{x, indices, values}, "index_put", where);
  ir::Builder& builder = trace.builder;
  const ir::Shape sizes = builder.node(x.id()).shape;  // (size symbols too: dynamic lengths)
  size_t position = static_cast<size_t>(normalize(axis, x.ndim(), "index_put", where));
  if (check_bounds)
    check_index_bounds(trace, indices.id(), sizes[position], static_cast<int64_t>(position),
                       "index_put");
  // Values broadcast to x[..., indices, ...]'s shape; the scatter takes the indices flattened.
  const ir::Shape index_shape = builder.node(indices.id()).shape;
  ir::Shape selected(sizes.begin(), sizes.begin() + static_cast<ptrdiff_t>(position));
  selected.insert(selected.end(), index_shape.begin(), index_shape.end());
  selected.insert(selected.end(), sizes.begin() + static_cast<ptrdiff_t>(position) + 1,
                  sizes.end());
  ir::Shape flat = sizes;
  flat[position] = ir::element_count_dim(index_shape);
  ValueId value = cast_to(builder, values.id(), x.dtype());
  value = builder.reshape(builder.broadcast(value, selected), flat);
  ValueId index = builder.reshape(indices.id(), {flat[position]});
  ir::ScatterMode mode = accumulate ? ir::ScatterMode::Add : ir::ScatterMode::Set;
  return wrap(trace, builder.scatter(x.id(), index, value, static_cast<int64_t>(position), mode));
}

}  // namespace detail

// ---- linear algebra ----

Tensor matmul(const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(a, b, "matmul", where);
  DType dtype = promote_types(a.dtype(), b.dtype());
  return wrap(trace, trace.builder.matmul(cast_to(trace.builder, a.id(), dtype),
                                          cast_to(trace.builder, b.id(), dtype)));
}

Tensor solve(const Tensor& a, const Tensor& b, Where where) {
  Trace& trace = trace_for(a, b, "linalg.solve", where);
  ir::Builder& builder = trace.builder;
  DType dtype = promote_types(a.dtype(), b.dtype());
  if (dtype == DType::Bool || is_integer(dtype)) dtype = DType::Float64;  // NumPy's linalg type
  const ir::Shape matrix = builder.graph().node(a.id()).shape;  // a copy: nodes are added below
  ir::Shape right = builder.graph().node(b.id()).shape;
  if (matrix.size() < 2 || right.empty())
    fail(ErrorKind::Value, "linalg.solve", where,
         "takes a (.., n, n) matrix and a (n,) or (.., n, k) right-hand side, got " +
             ir::shape_string(matrix) + " and " + ir::shape_string(right));
  const bool vector = right.size() == 1;  // NumPy 2: a vector only where b is 1-D
  ValueId rhs = cast_to(builder, b.id(), dtype);
  if (vector) rhs = builder.reshape(rhs, right = {right[0], ir::Dim(1)});
  ir::Shape batch;
  if (!ir::broadcast_shapes(ir::Shape(matrix.begin(), matrix.end() - 2),
                            ir::Shape(right.begin(), right.end() - 2), batch))
    fail(ErrorKind::Value, "linalg.solve", where,
         "batch dimensions could not be broadcast together with shapes " +
             ir::shape_string(matrix) + " " + ir::shape_string(right));
  auto with_batch = [&](ValueId value, const ir::Shape& shape) {
    ir::Shape full = batch;
    full.insert(full.end(), shape.end() - 2, shape.end());
    return full == shape ? value : builder.broadcast(value, full);
  };
  ValueId x = builder.solve(with_batch(cast_to(builder, a.id(), dtype), matrix),
                            with_batch(rhs, right));
  if (vector) {
    ir::Shape shape = builder.graph().node(x).shape;
    shape.pop_back();
    x = builder.reshape(x, shape);
  }
  return wrap(trace, x);
}

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   std::vector<int64_t> strides, std::vector<int64_t> padding,
                   std::vector<int64_t> dilation, int64_t groups, Where where) {
  Trace& trace = trace_for(input, weight, "convolution", where);
  std::optional<ir::ValueId> bias_id;
  if (bias) {
    trace_for(input, *bias, "convolution", where);  // the bias must come from the same trace
    bias_id = bias->id();
  }
  return wrap(trace, trace.builder.convolution(input.id(), weight.id(), bias_id,
                                               std::move(strides), std::move(padding),
                                               std::move(dilation), groups));
}

Tensor convolution_backward_input(const Tensor& grad_output, const Tensor& weight,
                                  const std::vector<int64_t>& input_shape,
                                  std::vector<int64_t> strides, std::vector<int64_t> padding,
                                  std::vector<int64_t> dilation, int64_t groups, Where where) {
  Trace& trace = trace_for(grad_output, weight, "convolution_backward_input", where);
  return wrap(trace, trace.builder.convolution_backward_input(
                         grad_output.id(), weight.id(), ir::from_ints(input_shape),
                         std::move(strides), std::move(padding), std::move(dilation), groups));
}

Tensor convolution_backward_weight(const Tensor& grad_output, const Tensor& input,
                                   const std::vector<int64_t>& weight_shape,
                                   std::vector<int64_t> strides, std::vector<int64_t> padding,
                                   std::vector<int64_t> dilation, int64_t groups, Where where) {
  Trace& trace = trace_for(grad_output, input, "convolution_backward_weight", where);
  return wrap(trace, trace.builder.convolution_backward_weight(
                         grad_output.id(), input.id(), weight_shape, std::move(strides),
                         std::move(padding), std::move(dilation), groups));
}

#define KILN_PRODUCT(function)                                         \
  Tensor function(const Tensor& a, const Tensor& b, Where where) {    \
    Trace& trace = trace_for(a, b, #function, where);                  \
    return wrap(trace, decompose::function(trace.builder, a.id(), b.id())); \
  }
KILN_PRODUCT(dot)
KILN_PRODUCT(inner)
KILN_PRODUCT(outer)
#undef KILN_PRODUCT

Tensor tensordot(const Tensor& a, const Tensor& b, Axes a_axes, Axes b_axes, Where where) {
  Trace& trace = trace_for(a, b, "tensordot", where);
  return wrap(trace, decompose::tensordot(trace.builder, a.id(), b.id(), std::move(a_axes),
                                       std::move(b_axes)));
}

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, Where where) {
  Trace& trace = trace_for(operands, "einsum", where);
  std::vector<ValueId> values;
  for (const Tensor& operand : operands) values.push_back(operand.id());
  return wrap(trace, decompose::einsum(trace.builder, equation, values));
}

// ---- creation ----

Tensor full(const Tensor& like, std::vector<int64_t> shape, double value, DType dtype,
            Where where) {
  Trace& trace = trace_for(like, "full", where);
  return wrap(trace, trace.builder.constant(decompose::detail::scalar_for(dtype, value), dtype,
                                            ir::from_ints(shape)));
}

Tensor full_like(const Tensor& like, double value, std::optional<DType> dtype, Where where) {
  return full(like, like.shape(), value, dtype.value_or(like.dtype()), where);
}
Tensor zeros_like(const Tensor& like, Where where) {
  return full(like, like.shape(), 0, like.dtype(), where);
}
Tensor ones_like(const Tensor& like, Where where) {
  return full(like, like.shape(), 1, like.dtype(), where);
}

Tensor arange(const Tensor& like, int64_t count, DType dtype, Where where) {
  Trace& trace = trace_for(like, "arange", where);
  if (count < 0) count = 0;  // np.arange(-3) is empty
  return wrap(trace, trace.builder.iota(dtype, {count}, 0));
}

Tensor random_uniform(const Tensor& like, std::vector<int64_t> shape, uint64_t seed, DType dtype,
                      Where where) {
  Trace& trace = trace_for(like, "random_uniform", where);
  return wrap(trace, trace.builder.random_uniform(dtype, ir::from_ints(shape), seed));
}
Tensor random_normal(const Tensor& like, std::vector<int64_t> shape, uint64_t seed, DType dtype,
                     Where where) {
  Trace& trace = trace_for(like, "random_normal", where);
  return wrap(trace, trace.builder.random_normal(dtype, ir::from_ints(shape), seed));
}

}  // namespace kiln
