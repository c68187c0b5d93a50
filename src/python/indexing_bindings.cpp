// Indexing with index tensors (take, index_put) and the runtime checks front ends add for it
// (indices in bounds, integer exponents non-negative): the detail:: forms of include/kiln's
// functions, which let a front end check indices once before merging them. As in
// tensor_bindings.cpp: the location comes from `trace.location`, and the result keeps its first
// tensor operand (and so its trace) alive.
#include <nanobind/stl/string.h>

#include "api/runtime_checks.h"
#include "kiln/tensor.h"
#include "python/common.h"

namespace kiln::python {

void bind_indexing(nb::module_& module) {
  // check_bounds=False: the caller checked the indices already (check_index), e.g. per axis
  // before merging several index arrays into one flat index.
  module.def(
      "take",
      [](const Tensor& x, const Tensor& indices, int64_t axis, bool check_bounds) {
        return detail::take(x, indices, axis, check_bounds, kNoWhere);
      },
      nb::arg("x"), nb::arg("indices"), nb::arg("axis"), nb::arg("check_bounds") = true,
      Keep<>());
  module.def(
      "index_put",
      [](const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
         bool accumulate, bool check_bounds) {
        return detail::index_put(x, indices, values, axis, accumulate, check_bounds, kNoWhere);
      },
      nb::arg("x"), nb::arg("indices"), nb::arg("values"), nb::arg("axis") = 0,
      nb::arg("accumulate") = false, nb::arg("check_bounds") = true, Keep<>());
  module.def(
      "check_index",
      [](const Tensor& indices, nb::handle size, int64_t axis, const std::string& op,
         bool negative, const std::string& error) {
        ErrorKind kind = error == "IndexError"     ? ErrorKind::Index
                         : error == "RuntimeError" ? ErrorKind::Runtime
                         : error == "either"       ? ErrorKind::IndexOrRuntime
                                                   : ErrorKind::Internal;
        if (kind == ErrorKind::Internal)
          throw Error(ErrorKind::Value, "kiln: check_index: unknown error '" + error + "'");
        detail::Trace& trace = detail::trace_for(indices, op, kNoWhere);
        detail::check_index_bounds(trace, indices.id(), dim_from_object(size), axis, op,
                                   negative, kind);
      },
      nb::arg("indices"), nb::arg("size"), nb::arg("axis"), nb::arg("op") = "index",
      nb::arg("negative") = true, nb::arg("error") = "IndexError",
      "Raises IndexError when the graph runs if an element of `indices` is outside "
      "[-size, size), as NumPy does for x[indices] along `axis` ([0, size) without "
      "`negative`, as torch's gather and scatter). error='RuntimeError' raises that, as "
      "eager torch's gather, scatter, index_add and embedding_bag do; 'either' raises "
      "kiln.IndexOutOfRange, both (torch's index_select raises either by layout).");
  module.def(
      "check_nonnegative_exponent",
      [](const Tensor& exponent, const std::string& op) {
        detail::Trace& trace = detail::trace_for(exponent, op, kNoWhere);
        detail::check_nonnegative_exponent(trace, exponent.id(), op);
      },
      nb::arg("exponent"), nb::arg("op") = "power",
      "Raises NumPy's ValueError when the graph runs if an integer exponent is negative.");
  module.def(
      "check_python_int_fits",
      [](const Tensor& value, int64_t low, int64_t high, const std::string& dtype_name,
         const std::string& op) {
        detail::Trace& trace = detail::trace_for(value, op, kNoWhere);
        detail::check_python_int_fits(trace, value.id(), low, high, dtype_name, op);
      },
      nb::arg("value"), nb::arg("low"), nb::arg("high"), nb::arg("dtype_name"), nb::arg("op"),
      "Raises NumPy 2's OverflowError when the graph runs if the traced Python int `value` is "
      "outside [low, high], the range of the integer dtype it is cast to.");
  module.def(
      "check_flag",
      [](const Tensor& flag, const Tensor& values, const std::string& before,
         const std::string& after, const std::string& op, const std::string& error) {
        ErrorKind kind = error == "ValueError"          ? ErrorKind::Value
                         : error == "IndexError"        ? ErrorKind::Index
                         : error == "ZeroDivisionError" ? ErrorKind::ZeroDivision
                         : error == "LinAlgError"       ? ErrorKind::LinAlg
                         : error == "OverflowError"     ? ErrorKind::Overflow
                         : error == "RuntimeError"      ? ErrorKind::Runtime
                                                        : ErrorKind::Internal;
        if (kind == ErrorKind::Internal)
          throw Error(ErrorKind::Value, "kiln: check_flag: unknown error '" + error + "'");
        detail::Trace& trace = detail::trace_for(flag, values, op, kNoWhere);
        detail::check_flag(trace, flag.id(), values.id(), kind, op, before, after);
      },
      nb::arg("flag"), nb::arg("values"), nb::arg("before"), nb::arg("after"), nb::arg("op"),
      nb::arg("error") = "ValueError",
      "Raises `error` (ValueError, IndexError, ZeroDivisionError, OverflowError, LinAlgError "
      "(NumPy's numpy.linalg.LinAlgError) or RuntimeError, eager torch's value checks) when "
      "the graph runs if the "
      "bool 0-d `flag` holds: `before`, the elements of `values` (0-d or 1-d) as NumPy's "
      "messages print them, comma-separated, then `after` (NumPy's data-dependent errors: "
      "np.histogram's autodetected range that is not finite, np.average's zero weights).");
  module.def(
      "check_nonzero_divisor",
      [](const Tensor& divisor, const std::string& op) {
        detail::Trace& trace = detail::trace_for(divisor, op, kNoWhere);
        detail::check_nonzero_divisor(trace, divisor.id(), op);
      },
      nb::arg("divisor"), nb::arg("op") = "divide",
      "Raises ValueError (torch's ZeroDivisionError) when the graph runs if an element of the "
      "integer `divisor` is zero.");
}

}  // namespace kiln::python
