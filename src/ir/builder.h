// Checked factories for graph nodes: each computes the result dtype and shape from the op table
// and the operands, and throws kiln::Error (naming the op, the location and the shapes or
// dtypes) when the operands do not fit. Every frontend and every pass builds nodes through here.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::ir {

class Builder {
 public:
  explicit Builder(Graph& graph) : graph_(graph) {}
  Graph& graph() { return graph_; }

  // The user's source location recorded on the nodes built next (file:line).
  void set_location(std::string location) { location_ = std::move(location); }
  const std::string& location() const { return location_; }
  // NumPy's size rule (its ValueError "array is too big"): an empty value's other extents still
  // count, so (0, 2**62) float64 is too big, which torch allows. Set by the NumPy front end.
  void set_count_empty_extents(bool count) { count_empty_extents_ = count; }
  bool count_empty_extents() const { return count_empty_extents_; }

  ValueId parameter(DType dtype, const Shape& shape);
  ValueId constant(Scalar value, DType dtype, const Shape& shape = {});
  ValueId constant_array(std::vector<uint8_t> bytes, DType dtype, const Shape& shape);
  ValueId iota(DType dtype, const Shape& shape, int64_t axis);
  // A size's value as a 0-d integer: a number, or an expression in size symbols (a dynamic
  // length used as data: arange's start, an index bound).
  ValueId size(const Dim& extent, DType dtype = DType::Int64);
  // Philox draws keyed by seed + `key`, a 0-d int64 value (a graph input: each call's own
  // numbers, torch.compile's dropout); without a key, by the seed alone (fixed when compiled).
  ValueId random_uniform(DType dtype, const Shape& shape, uint64_t seed, ValueId key = -1);
  ValueId random_normal(DType dtype, const Shape& shape, uint64_t seed, ValueId key = -1);

  // Elementwise ops broadcast their operands (NumPy rules) and require one shared dtype.
  ValueId unary(Op op, ValueId a);
  ValueId binary(Op op, ValueId a, ValueId b);
  ValueId where(ValueId condition, ValueId a, ValueId b);
  ValueId cast(ValueId a, DType dtype);
  // Complex numbers (ir/complex_lowering.h): float parts -> complex, and back.
  ValueId complex(ValueId real_part, ValueId imaginary_part);
  ValueId real(ValueId value);
  ValueId imag(ValueId value);

  // Axes may be negative; empty axes with all=true means every axis.
  ValueId reduce(Op op, ValueId a, std::vector<int64_t> axes, bool keepdims, int64_t ddof = 0);
  ValueId scan(Op op, ValueId a, int64_t axis);

  ValueId reshape(ValueId a, const Shape& shape);  // one -1 allowed
  ValueId permute(ValueId a, std::vector<int64_t> permutation);
  ValueId broadcast(ValueId a, const Shape& shape);
  // Per dimension: start, stop, step with Python slice semantics (clamped, negative steps).
  ValueId slice(ValueId a, const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                const std::vector<int64_t>& steps);
  // The same with stops that may be size symbols (ir/shape.h): `start:stop` with step 1.
  ValueId slice_to(ValueId a, const std::vector<int64_t>& starts, const Shape& stops,
                const std::vector<int64_t>& steps);
  ValueId pad(ValueId a, std::vector<int64_t> low, std::vector<int64_t> high, PadMode mode,
              Scalar fill = {});
  ValueId concat(const std::vector<ValueId>& values, int64_t axis);
  ValueId flip(ValueId a, std::vector<int64_t> axes);
  ValueId gather(ValueId a, ValueId index, int64_t axis);
  ValueId scatter(ValueId a, ValueId index, ValueId values, int64_t axis, ScatterMode mode);
  ValueId matmul(ValueId a, ValueId b);
  // torch's aten.convolution, forward (ir/convolution_shape.h): input (N, C, *spatial), weight
  // (O, C / groups, *kernel), optional bias (O,); float32 or float64, one dtype for all.
  // channels_last: input and result are (N, *spatial, C) instead (Attrs::channels_last);
  // filters_last (with channels_last): the weight is (O, *kernel, C / groups).
  ValueId convolution(ValueId input, ValueId weight, std::optional<ValueId> bias,
                      std::vector<int64_t> strides, std::vector<int64_t> padding,
                      std::vector<int64_t> dilation, int64_t groups, bool channels_last = false,
                      bool filters_last = false);
  // The gradients of that convolution (builder_convolution_backward.cpp) with respect to its
  // input (of `input_shape`) and to its weight (of `weight_shape`), given grad_output, the
  // gradient of its result; the forward's attributes. The bias gradient is a sum of
  // grad_output: no op of its own. channels_last: grad_output, the input and the input's
  // gradient are (N, *spatial, C) (`input_shape` stays channels-first); the weight is not.
  // filters_last (with channels_last): the weight, and the weight's gradient, are
  // (O, *kernel, C / groups) (`weight_shape` stays channels-first). The batch (dimension 0 of
  // grad_output, the input and `input_shape`) may be symbolic; no other size.
  ValueId convolution_backward_input(ValueId grad_output, ValueId weight, const Shape& input_shape,
                                     std::vector<int64_t> strides, std::vector<int64_t> padding,
                                     std::vector<int64_t> dilation, int64_t groups,
                                     bool channels_last = false, bool filters_last = false);
  ValueId convolution_backward_weight(ValueId grad_output, ValueId input,
                                      const std::vector<int64_t>& weight_shape,
                                      std::vector<int64_t> strides, std::vector<int64_t> padding,
                                      std::vector<int64_t> dilation, int64_t groups,
                                      bool channels_last = false, bool filters_last = false);

  // The int64 positions along `axis` that sort `a` (builder_sort.cpp): stable, NaN after
  // every number, or before with `descending` (torch's order; NumPy's ascending one); k >= 0
  // keeps the first k positions (top-k), k < 0 all of them. Real dtypes (bool included).
  ValueId argsort(ValueId a, int64_t axis, bool descending, int64_t k = -1);
  // The values of `a` in that order (a graph that also computes the argsort reads them through
  // it: passes/share_sorts.cpp).
  ValueId sort(ValueId a, int64_t axis, bool descending, int64_t k = -1);
  // x with a x = b (builder_solve.cpp): a (.., n, n), b (.., n, k), one float dtype
  // (float32 or float64) and one batch shape (callers broadcast first).
  ValueId solve(ValueId a, ValueId b);
  // softmax(q kᵀ + bias) v, torch's scaled dot-product attention with its scale already in q
  // (builder_attention.cpp, ir/attention_shape.h): `causal` lets query i see keys j <= i.
  ValueId attention(ValueId q, ValueId k, ValueId v, std::optional<ValueId> bias, bool causal);
  // a's elements at `indices` along `axis` and at their own index elsewhere (NumPy's
  // take_along_axis, indices of a's rank, in range): one gather through a flat index.
  ValueId take_along_axis(ValueId a, ValueId indices, int64_t axis);

  // A loop node (ir/loop.h: start and stop are int64 0-d values) and its carried results.
  ValueId loop(ValueId start, ValueId stop, int64_t step, const std::vector<ValueId>& init,
               const std::vector<ValueId>& invariants, std::shared_ptr<const Graph> body,
               bool while_loop = false);
  // A cond node (ir/cond.h): each region takes the carried values, then its own invariants.
  ValueId cond(ValueId predicate, const std::vector<ValueId>& carried,
               const std::vector<ValueId>& then_invariants,
               const std::vector<ValueId>& else_invariants, std::shared_ptr<const Graph> then_region,
               std::shared_ptr<const Graph> else_region);
  // Carried value `index` of a loop or cond node, after it runs.
  ValueId loop_result(ValueId loop, int64_t index);
  // A loop body's input while the body is traced (api/loop_trace.h); never in a finished graph.
  ValueId placeholder(DType dtype, const Shape& shape);

  // Raw append for passes that copy an already-checked node (e.g. CSE rebuilding a graph).
  ValueId copy_node(const Node& node, std::vector<ValueId> inputs);

  const Node& node(ValueId id) const { return graph_.node(id); }

 private:
  ValueId random(Op op, DType dtype, const Shape& shape, uint64_t seed, ValueId key);
  ValueId complex_part(Op op, ValueId value);
  ValueId sort_node(Op op, ValueId a, int64_t axis, bool descending, int64_t k);
  ValueId add(Op op, DType dtype, Shape shape, std::vector<ValueId> inputs, Attrs attrs = {});
  [[noreturn]] void fail(ErrorKind kind, Op op, const std::string& message) const;

  Graph& graph_;
  std::string location_;
  bool count_empty_extents_ = false;
};

}  // namespace kiln::ir
