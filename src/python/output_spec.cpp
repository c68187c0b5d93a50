#include "python/output_spec.h"

namespace kiln::python {

nb::object build_output(PyObject* spec, const std::vector<nb::object>& results) {
  if (PyLong_CheckExact(spec)) {
    Py_ssize_t index = PyLong_AsSsize_t(spec);
    if (index >= 0) return results[size_t(index)];
    PyObject* scalar = PyArray_Return(
        reinterpret_cast<PyArrayObject*>(results[size_t(-index - 1)].inc_ref().ptr()));
    if (scalar == nullptr) throw nb::python_error();
    return nb::steal(scalar);
  }
  if (PyTuple_CheckExact(spec)) {
    Py_ssize_t count = PyTuple_GET_SIZE(spec);
    nb::object tuple = nb::steal(PyTuple_New(count));
    for (Py_ssize_t i = 0; i < count; ++i)
      PyTuple_SET_ITEM(tuple.ptr(), i,
                       build_output(PyTuple_GET_ITEM(spec, i), results).release().ptr());
    return tuple;
  }
  if (PyList_CheckExact(spec)) {
    nb::list list;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spec); ++i)
      list.append(build_output(PyList_GET_ITEM(spec, i), results));
    return list;
  }
  if (PyDict_CheckExact(spec)) {
    nb::dict dict;
    Py_ssize_t cursor = 0;
    PyObject *key, *value;
    while (PyDict_Next(spec, &cursor, &key, &value))
      dict[nb::handle(key)] = build_output(value, results);
    return dict;
  }
  nb::handle handle(spec);
  if (nb::hasattr(handle, "_kiln_constant")) return handle.attr("_kiln_constant");
  return nb::borrow(handle);
}

}  // namespace kiln::python
