// The library (extern) ops: the convolution functions of include/kiln/tensor.h, torch's
// aten.convolution forward and its gradients, and the attention that the torch front end's
// lowering of the CPU attention op builds. As in tensor_bindings.cpp: the location comes from
// `trace.location`, and the result keeps its first tensor operand (and so the trace all
// operands share) alive.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include "api/trace.h"
#include "kiln/tensor.h"
#include "python/common.h"

namespace kiln::python {

void bind_library_ops(nb::module_& module) {
  module.def(
      "convolution",
      [](const Tensor& input, const Tensor& weight, std::optional<Tensor> bias,
         std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> dilation,
         int64_t groups) {
        return kiln::convolution(input, weight, bias, std::move(strides), std::move(padding),
                                 std::move(dilation), groups, kNoWhere);
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("strides"),
      nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"), Keep<>(),
      "torch's aten.convolution forward: input (N, C, *spatial), weight (O, C / groups, "
      "*kernel), bias (O,) or None.");
  module.def(
      "convolution_backward_input",
      [](const Tensor& grad_output, const Tensor& weight, nb::handle input_shape,
         std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> dilation,
         int64_t groups) {
        // input_shape may hold a symbolic batch (builder.h), which the Tensor API has no call for
        ir::Shape shape = shape_from_object(input_shape);
        detail::trace_for(grad_output, weight, "convolution_backward_input", kNoWhere);
        return build_on(grad_output, [&](ir::Builder& b) {
          return b.convolution_backward_input(grad_output.id(), weight.id(), shape,
                                              std::move(strides), std::move(padding),
                                              std::move(dilation), groups);
        });
      },
      nb::arg("grad_output"), nb::arg("weight"), nb::arg("input_shape"), nb::arg("strides"),
      nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"), Keep<>(),
      "The gradient of that convolution with respect to its input (of input_shape: ints, and a "
      "kiln.Size for a dynamic batch), given grad_output (N, O, *output).");
  module.def(
      "convolution_backward_weight",
      [](const Tensor& grad_output, const Tensor& input, std::vector<int64_t> weight_shape,
         std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> dilation,
         int64_t groups) {
        return kiln::convolution_backward_weight(grad_output, input, weight_shape,
                                                 std::move(strides), std::move(padding),
                                                 std::move(dilation), groups, kNoWhere);
      },
      nb::arg("grad_output"), nb::arg("input"), nb::arg("weight_shape"), nb::arg("strides"),
      nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"), Keep<>(),
      "The gradient of that convolution with respect to its weight (of weight_shape), given "
      "grad_output (N, O, *output) and the forward's input.");
  module.def(
      "attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> bias,
         bool causal) {
        detail::trace_for(q, k, "attention", kNoWhere);
        detail::trace_for(q, v, "attention", kNoWhere);
        if (bias) detail::trace_for(q, *bias, "attention", kNoWhere);
        return build_on(q, [&](ir::Builder& b) {
          return b.attention(q.id(), k.id(), v.id(),
                             bias ? std::optional<ir::ValueId>(bias->id()) : std::nullopt, causal);
        });
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("bias").none(), nb::arg("causal"),
      Keep<>(),
      "softmax(q kᵀ + bias) v over (batch, heads, length, features), the scale already in q; k "
      "and v may have fewer heads (dividing q's); bias (batch, heads, L, S) of q's dtype, or "
      "bool (true keeps a score), or None; causal: query i sees keys j <= i. A CPU library "
      "kernel (no CUDA one yet).");
}

}  // namespace kiln::python
