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
  if (nb::hasattr(handle, "_kiln_rebuild"))
    return handle.attr("_kiln_rebuild")(build_output(handle.attr("_kiln_parts").ptr(), results));
  return nb::borrow(handle);
}

namespace {

// use[i]: bit 1 when output i is returned as a scalar, bit 2 when as an array.
void mark_uses(PyObject* spec, std::vector<int>& use) {
  if (PyLong_CheckExact(spec)) {
    Py_ssize_t index = PyLong_AsSsize_t(spec);
    size_t output = size_t(index >= 0 ? index : -index - 1);
    if (output < use.size()) use[output] |= index >= 0 ? 2 : 1;
    return;
  }
  if (PyTuple_CheckExact(spec)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(spec); ++i)
      mark_uses(PyTuple_GET_ITEM(spec, i), use);
  } else if (PyList_CheckExact(spec)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spec); ++i)
      mark_uses(PyList_GET_ITEM(spec, i), use);
  } else if (PyDict_CheckExact(spec)) {
    Py_ssize_t cursor = 0;
    PyObject *key, *value;
    while (PyDict_Next(spec, &cursor, &key, &value)) mark_uses(value, use);
  } else if (PyObject_HasAttrString(spec, "_kiln_parts")) {
    mark_uses(nb::handle(spec).attr("_kiln_parts").ptr(), use);
  }
}

}  // namespace

std::vector<bool> scalar_only_outputs(PyObject* spec, size_t output_count) {
  std::vector<int> use(output_count, 0);
  mark_uses(spec, use);
  std::vector<bool> result(output_count);
  for (size_t i = 0; i < output_count; ++i) result[i] = use[i] == 1;
  return result;
}

}  // namespace kiln::python
