// Products (matmul, dot, tensordot, solve ...) and creation (full, arange, constants, random
// draws ...) of include/kiln/tensor.h. As in tensor_bindings.cpp: the location comes from
// `trace.location`, and a result keeps its first tensor operand (and so its trace) alive.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "api/loop_trace.h"
#include "api/runtime_checks.h"
#include "decompose/helpers.h"
#include "ir/ops.h"
#include "kiln/tensor.h"
#include "python/common.h"

namespace kiln::python {

void bind_linear_algebra_and_creation(nb::module_& module) {
#define KILN_BIND_TENSOR_PAIR(name)                                                        \
  module.def(#name, [](const Tensor& a, const Tensor& b) { return kiln::name(a, b, kNoWhere); }, \
             Keep<1>());
  KILN_BIND_TENSOR_PAIR(matmul) KILN_BIND_TENSOR_PAIR(dot) KILN_BIND_TENSOR_PAIR(inner)
  KILN_BIND_TENSOR_PAIR(outer) KILN_BIND_TENSOR_PAIR(solve)
#undef KILN_BIND_TENSOR_PAIR
  module.def(
      "tensordot",
      [](const Tensor& a, const Tensor& b, Axes a_axes, Axes b_axes) {
        return kiln::tensordot(a, b, std::move(a_axes), std::move(b_axes), kNoWhere);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("a_axes"), nb::arg("b_axes"), Keep<1>());
  module.def(
      "einsum",
      [](const std::string& equation, const std::vector<Tensor>& operands) {
        return kiln::einsum(equation, operands, kNoWhere);
      },
      nb::arg("equation"), nb::arg("operands"), Keep<2>());

  module.def(
      "full_like",
      [](const Tensor& like, double value, nb::handle dtype) {
        std::optional<DType> converted;
        if (!dtype.is_none()) converted = dtype_from_object(dtype);
        return kiln::full_like(like, value, converted, kNoWhere);
      },
      nb::arg("like"), nb::arg("value"), nb::arg("dtype").none() = nb::none(), Keep<1>());
  module.def(
      "zeros_like", [](const Tensor& like) { return kiln::zeros_like(like, kNoWhere); },
      Keep<1>());
  module.def(
      "ones_like", [](const Tensor& like) { return kiln::ones_like(like, kNoWhere); }, Keep<1>());
  module.def(
      "full",
      [](const Tensor& like, nb::handle shape, double value, nb::handle dtype) {
        ir::Shape target = shape_from_object(shape);
        DType kind = dtype_from_object(dtype);
        if (ir::is_static(target)) {
          return kiln::full(like, ir::to_ints(target), value, kind, kNoWhere);
        }
        return build_on(like, [&](ir::Builder& b) {
          return b.constant(decompose::detail::scalar_for(kind, value), kind, target);
        });
      },
      nb::arg("like"), nb::arg("shape"), nb::arg("value"), nb::arg("dtype"), Keep<1>(),
      "A constant of `shape` and `dtype` in the trace of `like`.");
  module.def(
      "full_integer",
      [](const Tensor& like, nb::handle shape, int64_t bits, nb::handle dtype) {
        detail::Trace& trace = detail::trace_for(like, "full", kNoWhere);
        DType type = dtype_from_object(dtype);
        return Tensor(&trace, trace.builder.constant(ir::Scalar::of_int(bits), type,
                                                     shape_from_object(shape)));
      },
      nb::arg("like"), nb::arg("shape"), nb::arg("bits"), nb::arg("dtype"), Keep<1>(),
      "An integer constant given exactly (a double loses integers past 2**53): `bits` is the "
      "value as int64 (uint64 values past 2**63 wrapped).");
  module.def(
      "arange",
      [](const Tensor& like, nb::handle count, nb::handle dtype) {
        ir::Dim extent = dim_from_object(count);  // a symbolic count: a dynamic length
        if (extent.is_constant())
          return kiln::arange(like, extent.constant(), dtype_from_object(dtype), kNoWhere);
        return build_on(like,
                        [&](ir::Builder& b) { return b.iota(dtype_from_object(dtype), {extent}, 0); });
      },
      nb::arg("like"), nb::arg("count"), nb::arg("dtype") = "int64", Keep<1>(),
      "0, 1, ..., count - 1; `count` an int or a kiln.Size.");
  // `key`: a 0-d int64 tensor of the same trace (a graph input), added to the seed when the
  // graph runs: every call draws its own numbers (torch.compile's dropout).
  auto random = [](ir::Op op) {
    return [op](const Tensor& like, std::vector<int64_t> shape, uint64_t seed, nb::handle dtype,
                std::optional<Tensor> key) {
      if (!key) {
        return op == ir::Op::random_uniform
                   ? kiln::random_uniform(like, std::move(shape), seed, dtype_from_object(dtype),
                                          kNoWhere)
                   : kiln::random_normal(like, std::move(shape), seed, dtype_from_object(dtype),
                                         kNoWhere);
      }
      detail::trace_for(like, *key, std::string(ir::op_name(op)), kNoWhere);
      return build_on(*key, [&](ir::Builder& b) {
        ir::Shape extents = ir::from_ints(shape);
        return op == ir::Op::random_uniform
                   ? b.random_uniform(dtype_from_object(dtype), extents, seed, key->id())
                   : b.random_normal(dtype_from_object(dtype), extents, seed, key->id());
      });
    };
  };
  module.def("random_uniform", random(ir::Op::random_uniform), nb::arg("like"), nb::arg("shape"),
             nb::arg("seed"), nb::arg("dtype") = "float64", nb::arg("key") = nb::none(),
             Keep<1>());
  module.def("random_normal", random(ir::Op::random_normal), nb::arg("like"), nb::arg("shape"),
             nb::arg("seed"), nb::arg("dtype") = "float64", nb::arg("key") = nb::none(),
             Keep<1>());
}

}  // namespace kiln::python
