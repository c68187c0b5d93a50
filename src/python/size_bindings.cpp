// kiln.Size, a symbolic size (ir/shape.h) as Python sees it, and shapes that hold them.
#include <optional>
#include <string>

#include <nanobind/stl/string.h>

#include "python/common.h"

namespace kiln::python {

// A shape as Python sees it: ints, and kiln.Size objects for symbolic dimensions.
nb::tuple shape_tuple(const ir::Shape& shape) {
  nb::list items;
  for (const ir::Dim& extent : shape) {
    if (extent.is_constant()) {
      items.append(extent.constant());
    } else {
      items.append(nb::cast(extent));
    }
  }
  return nb::tuple(items);
}

ir::Dim dim_from_object(nb::handle object) {
  if (nb::isinstance<ir::Dim>(object)) return nb::cast<ir::Dim>(object);
  int64_t extent = 0;
  if (!nb::try_cast<int64_t>(object, extent)) {
    // A Python int past int64 (np.ones(2**63), an arange of 2**63 steps) was nanobind's bare
    // std::bad_cast. NumPy's words, without "kiln:": the tracer adds the op and the user's line.
    if (PyIndex_Check(object.ptr()))
      throw Error(ErrorKind::Value, "Maximum allowed dimension exceeded: " +
                                        nb::cast<std::string>(nb::str(object)));
    throw Error(ErrorKind::Type, std::string("'") + Py_TYPE(object.ptr())->tp_name +
                                     "' object cannot be interpreted as an integer");
  }
  return ir::Dim(extent);
}

// A shape from Python: a sequence of ints and kiln.Size objects.
ir::Shape shape_from_object(nb::handle object) {
  ir::Shape shape;
  for (nb::handle item : nb::iter(object)) shape.push_back(dim_from_object(item));
  return shape;
}

void bind_sizes(nb::module_& module) {
  nb::class_<ir::Dim>(module, "Size",
                      "A symbolic size (a polynomial in size symbols, each standing for a size "
                      ">= 2), as in a Tensor's shape; int() of it is a TypeError.")
      .def("__add__", [](const ir::Dim& a, const ir::Dim& b) { return a + b; })
      .def("__add__", [](const ir::Dim& a, int64_t b) { return a + b; })
      .def("__radd__", [](const ir::Dim& a, int64_t b) { return a + b; })
      .def("__sub__", [](const ir::Dim& a, const ir::Dim& b) { return a - b; })
      .def("__sub__", [](const ir::Dim& a, int64_t b) { return a - b; })
      .def("__rsub__", [](const ir::Dim& a, int64_t b) { return ir::Dim(b) - a; })
      .def("__mul__", [](const ir::Dim& a, const ir::Dim& b) { return a * b; })
      .def("__mul__", [](const ir::Dim& a, int64_t b) { return a * b; })
      .def("__rmul__", [](const ir::Dim& a, int64_t b) { return a * b; })
      .def("__floordiv__",
           [](const ir::Dim& a, nb::handle b) {
             ir::Dim divisor = nb::isinstance<ir::Dim>(b) ? nb::cast<ir::Dim>(b)
                                                          : ir::Dim(nb::cast<int64_t>(b));
             std::optional<ir::Dim> quotient = a.divided_by(divisor);
             if (!quotient) {
               throw Error(ErrorKind::Unsupported, "the size " + a.to_string() +
                                                       " is not a multiple of " +
                                                       divisor.to_string() + " for every value");
             }
             return *quotient;
           })
      .def("__eq__", [](const ir::Dim& a, const ir::Dim& b) { return a == b; })
      .def("__eq__", [](const ir::Dim& a, int64_t b) { return a == ir::Dim(b); })
      .def("__hash__", [](const ir::Dim& a) { return std::hash<std::string>()(a.to_string()); })
      .def("__repr__", &ir::Dim::to_string);
  module.def(
      "size_value",
      [](const Tensor& like, const ir::Dim& extent, nb::handle dtype) {
        return build_on(like,
                        [&](ir::Builder& b) { return b.size(extent, dtype_from_object(dtype)); });
      },
      nb::arg("like"), nb::arg("extent"), nb::arg("dtype") = "int64", nb::keep_alive<0, 1>(),
      "A size (a kiln.Size: a dynamic length) as a 0-d integer in the trace of `like`.");
}

}  // namespace kiln::python
