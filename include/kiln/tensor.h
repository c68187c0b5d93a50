// kiln::Tensor: a symbolic tensor recorded while kiln::compile traces a function. Every
// operation appends a node to the graph being traced; nothing is computed. The free functions
// follow NumPy's names and semantics (broadcasting, promotion with weak Python-like scalars,
// negative axes). Errors name the op and the caller's source line.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/op_list.h"

namespace kiln {

namespace detail {
struct Trace;  // the graph being recorded (src/api/trace.h)
}

using Axes = std::vector<int64_t>;
using Where = std::source_location;
#define KILN_WHERE ::kiln::Where where = ::kiln::Where::current()

class Tensor {
 public:
  Tensor() = default;
  Tensor(detail::Trace* trace, int32_t id) : trace_(trace), id_(id) {}

  DType dtype() const;
  std::vector<int64_t> shape() const;
  int ndim() const;
  int64_t size() const;
  detail::Trace* trace() const { return trace_; }
  int32_t id() const { return id_; }

  Tensor astype(DType dtype, KILN_WHERE) const;
  Tensor reshape(std::vector<int64_t> shape, KILN_WHERE) const;
  Tensor T() const;  // reverses the axes, like ndarray.T
  Tensor operator[](int64_t index) const;  // basic indexing along axis 0

 private:
  detail::Trace* trace_ = nullptr;
  int32_t id_ = -1;
};

// A Python-style slice for `slice(x, {...})`: missing bounds are std::nullopt.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  static Slice all() { return {}; }
};

// ---- elementwise (NumPy ufunc names) ----
// One function per elementwise entry of the op table (kiln/op_list.h), named by its `public`
// column: adding an op there adds its function here, in tensor.cpp and in the Python module.
#define KILN_DECLARE_UNARY(name, accepts, result, expression, public_name, ...) \
  Tensor public_name(const Tensor& x, KILN_WHERE);
#define KILN_DECLARE_BINARY(name, accepts, result, expression, public_name, ...) \
  Tensor public_name(const Tensor& a, const Tensor& b, KILN_WHERE);             \
  Tensor public_name(const Tensor& a, double b, KILN_WHERE);                    \
  Tensor public_name(double a, const Tensor& b, KILN_WHERE);
KILN_UNARY_OPS(KILN_DECLARE_UNARY)
KILN_BINARY_OPS(KILN_DECLARE_BINARY)
#undef KILN_DECLARE_UNARY
#undef KILN_DECLARE_BINARY
// Unary functions that are decompositions into several primitives, not table entries.
#define KILN_FOR_EACH_COMPOSITE_UNARY_FUNCTION(X) X(square) X(sigmoid) X(relu)
Tensor square(const Tensor& x, KILN_WHERE);
Tensor sigmoid(const Tensor& x, KILN_WHERE);
Tensor relu(const Tensor& x, KILN_WHERE);

Tensor gelu(const Tensor& x, bool tanh_approximation = false, KILN_WHERE);
// NumPy ufuncs that are decompositions (src/decompose/ufuncs.h), promoted as NumPy does.
Tensor fmod(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor logaddexp(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor logaddexp2(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor heaviside(const Tensor& x, const Tensor& at_zero, KILN_WHERE);
Tensor gcd(const Tensor& a, const Tensor& b, KILN_WHERE);  // integers
Tensor lcm(const Tensor& a, const Tensor& b, KILN_WHERE);  // integers
Tensor ldexp(const Tensor& x, const Tensor& exponent, KILN_WHERE);
Tensor signbit(const Tensor& x, KILN_WHERE);
// (fraction, whole) and (mantissa, int32 exponent), as np.modf and np.frexp.
std::pair<Tensor, Tensor> modf(const Tensor& x, KILN_WHERE);
std::pair<Tensor, Tensor> frexp(const Tensor& x, KILN_WHERE);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor where(const Tensor& condition, const Tensor& a, double b, KILN_WHERE);
Tensor where(const Tensor& condition, double a, const Tensor& b, KILN_WHERE);
Tensor clip(const Tensor& x, std::optional<double> low, std::optional<double> high, KILN_WHERE);
Tensor astype(const Tensor& x, DType dtype, KILN_WHERE);

Tensor operator-(const Tensor& x);
Tensor operator!(const Tensor& x);
Tensor operator~(const Tensor& x);
#define KILN_DECLARE_OPERATOR(symbol)                    \
  Tensor operator symbol(const Tensor& a, const Tensor& b); \
  Tensor operator symbol(const Tensor& a, double b);        \
  Tensor operator symbol(double a, const Tensor& b);
KILN_DECLARE_OPERATOR(+) KILN_DECLARE_OPERATOR(-) KILN_DECLARE_OPERATOR(*)
KILN_DECLARE_OPERATOR(/) KILN_DECLARE_OPERATOR(%) KILN_DECLARE_OPERATOR(==)
KILN_DECLARE_OPERATOR(!=) KILN_DECLARE_OPERATOR(<) KILN_DECLARE_OPERATOR(<=)
KILN_DECLARE_OPERATOR(>) KILN_DECLARE_OPERATOR(>=) KILN_DECLARE_OPERATOR(&)
KILN_DECLARE_OPERATOR(|) KILN_DECLARE_OPERATOR(^) KILN_DECLARE_OPERATOR(&&)
KILN_DECLARE_OPERATOR(||)
#undef KILN_DECLARE_OPERATOR

// ---- reductions: empty `axis` means all axes ----
Tensor sum(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor prod(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor max(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor min(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor any(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor all(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor mean(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor var(const Tensor& x, Axes axis = {}, bool keepdims = false, int64_t ddof = 0, KILN_WHERE);
Tensor std(const Tensor& x, Axes axis = {}, bool keepdims = false, int64_t ddof = 0, KILN_WHERE);
// argmax/argmin over one axis; std::nullopt flattens first, like NumPy.
Tensor argmax(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
              KILN_WHERE);
Tensor argmin(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
              KILN_WHERE);
// mean/var/std of the elements where `mask` is true (NumPy's where=), x in a float dtype; the
// axes are explicit here (empty: no reduction).
Tensor masked_mean(const Tensor& x, const Tensor& mask, Axes axis, bool keepdims = false,
                   KILN_WHERE);
Tensor masked_var(const Tensor& x, const Tensor& mask, Axes axis, bool keepdims = false,
                  int64_t ddof = 0, KILN_WHERE);
Tensor logsumexp(const Tensor& x, Axes axis = {}, bool keepdims = false, KILN_WHERE);
Tensor softmax(const Tensor& x, int64_t axis = -1, KILN_WHERE);
Tensor log_softmax(const Tensor& x, int64_t axis = -1, KILN_WHERE);
// ord: "1", "2", "inf", "-inf", "fro" (NumPy's linalg.norm orders over the given axes).
Tensor norm(const Tensor& x, std::string ord = "2", Axes axis = {}, bool keepdims = false,
            KILN_WHERE);
Tensor cumsum(const Tensor& x, int64_t axis, KILN_WHERE);
Tensor cumprod(const Tensor& x, int64_t axis, KILN_WHERE);
// The running maximum (minimum) along axis in x's dtype; a NaN stays from where it appears.
Tensor cummax(const Tensor& x, int64_t axis, KILN_WHERE);
Tensor cummin(const Tensor& x, int64_t axis, KILN_WHERE);
// Sorting along `axis` (an extern op, src/extern/sort.h): stable, NaN after every number
// (NumPy's and torch's order; descending: largest first, NaN first). k >= 0 keeps the first k
// (top-k). argsort gives the int64 positions; sort the values and the positions of one sort.
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false, int64_t k = -1,
               KILN_WHERE);
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis = -1, bool descending = false,
                               int64_t k = -1, KILN_WHERE);
// x's elements at int64 `indices` (x's rank) along `axis`, at their own index elsewhere.
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis, KILN_WHERE);

// ---- movement ----
Tensor reshape(const Tensor& x, std::vector<int64_t> shape, KILN_WHERE);
Tensor transpose(const Tensor& x, Axes permutation = {}, KILN_WHERE);
Tensor expand_dims(const Tensor& x, int64_t axis, KILN_WHERE);
Tensor squeeze(const Tensor& x, Axes axis = {}, KILN_WHERE);
Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, KILN_WHERE);
Tensor slice(const Tensor& x, std::vector<Slice> slices, KILN_WHERE);
Tensor pad(const Tensor& x, std::vector<std::pair<int64_t, int64_t>> widths,
           std::string mode = "constant", double value = 0, KILN_WHERE);
Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis = 0, KILN_WHERE);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0, KILN_WHERE);
Tensor flip(const Tensor& x, Axes axis = {}, KILN_WHERE);
// np.tile, np.repeat with one count (axis: nullopt flattens first), np.roll by static shifts
// (axes empty: the flattened array, rolled by shifts[0]).
Tensor tile(const Tensor& x, std::vector<int64_t> reps, KILN_WHERE);
Tensor repeat(const Tensor& x, int64_t count, std::optional<int64_t> axis = std::nullopt,
              KILN_WHERE);
Tensor roll(const Tensor& x, std::vector<int64_t> shifts, Axes axes = {}, KILN_WHERE);
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, KILN_WHERE);
// Functional x[indices] = values (or += with accumulate) along `axis`.
Tensor index_put(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis = 0,
                 bool accumulate = false, KILN_WHERE);

// ---- complex numbers: a complex tensor from float parts; NumPy's real, imag, conj, angle ----
Tensor complex(const Tensor& real_part, const Tensor& imaginary_part, KILN_WHERE);
Tensor real(const Tensor& x, KILN_WHERE);
Tensor imag(const Tensor& x, KILN_WHERE);
Tensor conj(const Tensor& x, KILN_WHERE);
Tensor angle(const Tensor& x, KILN_WHERE);

// ---- linear algebra ----
Tensor matmul(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor dot(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor inner(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor outer(const Tensor& a, const Tensor& b, KILN_WHERE);
// np.linalg.solve: x with a x = b, a (.., n, n), b (n,) or (.., n, k), batch dimensions
// broadcast; integers as float64, float32 when both are (LAPACK's gesv, an extern op). A
// singular matrix raises kiln::Error(LinAlg, "Singular matrix") when the graph runs.
Tensor solve(const Tensor& a, const Tensor& b, KILN_WHERE);
Tensor tensordot(const Tensor& a, const Tensor& b, Axes a_axes, Axes b_axes, KILN_WHERE);
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, KILN_WHERE);
// torch's aten.convolution forward (not transposed), run by oneDNN: input (N, C, *spatial) with
// 1 to 3 spatial dimensions, weight (O, C / groups, *kernel), optional bias (O,); float32 or
// float64, one dtype for all. strides, padding (both sides) and dilation have one entry per
// spatial dimension, or one for all.
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   std::vector<int64_t> strides, std::vector<int64_t> padding,
                   std::vector<int64_t> dilation, int64_t groups, KILN_WHERE);
// The gradients of that convolution, for training: with respect to its input (of
// `input_shape`) and to its weight (of `weight_shape`), given grad_output, the gradient of its
// result (N, O, *output); the forward's strides, padding, dilation and groups. The bias
// gradient is grad_output summed over every axis but 1.
Tensor convolution_backward_input(const Tensor& grad_output, const Tensor& weight,
                                  const std::vector<int64_t>& input_shape,
                                  std::vector<int64_t> strides, std::vector<int64_t> padding,
                                  std::vector<int64_t> dilation, int64_t groups, KILN_WHERE);
Tensor convolution_backward_weight(const Tensor& grad_output, const Tensor& input,
                                   const std::vector<int64_t>& weight_shape,
                                   std::vector<int64_t> strides, std::vector<int64_t> padding,
                                   std::vector<int64_t> dilation, int64_t groups, KILN_WHERE);

// ---- creation inside a traced function (need a tensor to know which trace) ----
Tensor full_like(const Tensor& like, double value, std::optional<DType> dtype = std::nullopt,
                 KILN_WHERE);
Tensor zeros_like(const Tensor& like, KILN_WHERE);
Tensor ones_like(const Tensor& like, KILN_WHERE);
Tensor full(const Tensor& like, std::vector<int64_t> shape, double value, DType dtype,
            KILN_WHERE);
Tensor arange(const Tensor& like, int64_t count, DType dtype = DType::Int64, KILN_WHERE);
Tensor random_uniform(const Tensor& like, std::vector<int64_t> shape, uint64_t seed,
                      DType dtype = DType::Float64, KILN_WHERE);
Tensor random_normal(const Tensor& like, std::vector<int64_t> shape, uint64_t seed,
                     DType dtype = DType::Float64, KILN_WHERE);

}  // namespace kiln
