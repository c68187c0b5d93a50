#include "python/output_spec.h"

#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <tuple>

namespace kiln::python {

namespace {

// The view (offset, shape, strides, read_only) of `array`, in elements of its memory, with
// the array as its base (NumPy collapses that to the array owning the memory).
nb::object view_of(const nb::object& array, nb::handle view) {
  auto* base = reinterpret_cast<PyArrayObject*>(array.ptr());
  const auto [offset, shape, strides, read_only] =
      nb::cast<std::tuple<int64_t, std::vector<npy_intp>, std::vector<npy_intp>, bool>>(view);
  if (shape.size() != strides.size())
    throw Error(ErrorKind::Internal, "kiln: a returned view's shape and strides differ in rank");
  PyArray_Descr* descr = PyArray_DESCR(base);
  const npy_intp itemsize = PyArray_ITEMSIZE(base);
  std::vector<npy_intp> byte_strides(strides.size());
  for (size_t d = 0; d < strides.size(); ++d) byte_strides[d] = strides[d] * itemsize;
  const bool writeable = PyArray_ISWRITEABLE(base) && !read_only;
  Py_INCREF(descr);  // (stolen)
  PyObject* result = PyArray_NewFromDescr(
      &PyArray_Type, descr, static_cast<int>(shape.size()), shape.data(), byte_strides.data(),
      PyArray_BYTES(base) + offset * itemsize, writeable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
  if (result == nullptr) throw nb::python_error();
  nb::object owned = nb::steal(result);
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(result), array.inc_ref().ptr()) < 0)
    throw nb::python_error();
  PyArray_UpdateFlags(reinterpret_cast<PyArrayObject*>(result), NPY_ARRAY_UPDATE_ALL);
  return owned;
}

// build_output's walk, with the views it built by their spec leaf: a view returned twice
// (`v = a[1:]; return v, v`) is one array, as in NumPy.
struct OutputBuilder {
  const std::vector<nb::object>& results;
  const std::vector<nb::object>& arrays;
  std::vector<std::pair<PyObject*, nb::object>> views{};

  nb::object build(PyObject* spec) {
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
        PyTuple_SET_ITEM(tuple.ptr(), i, build(PyTuple_GET_ITEM(spec, i)).release().ptr());
      return tuple;
    }
    if (PyList_CheckExact(spec)) {
      nb::list list;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spec); ++i)
        list.append(build(PyList_GET_ITEM(spec, i)));
      return list;
    }
    if (PyDict_CheckExact(spec)) {
      nb::dict dict;
      Py_ssize_t cursor = 0;
      PyObject *key, *value;
      while (PyDict_Next(spec, &cursor, &key, &value)) dict[nb::handle(key)] = build(value);
      return dict;
    }
    nb::handle handle(spec);
    if (nb::hasattr(handle, "_kiln_constant")) return handle.attr("_kiln_constant");
    if (nb::hasattr(handle, "_kiln_rebuild"))
      return handle.attr("_kiln_rebuild")(build(handle.attr("_kiln_parts").ptr()));
    if (nb::hasattr(handle, "_kiln_argument")) {
      const auto position = nb::cast<size_t>(handle.attr("_kiln_argument"));
      if (position >= arrays.size() || !PyArray_Check(arrays[position].ptr()))
        throw Error(ErrorKind::Internal, "kiln: an argument view names no array of the call");
      nb::object view = handle.attr("_kiln_view");
      return view.is_none() ? arrays[position] : memoized(spec, arrays[position], view);
    }
    if (nb::hasattr(handle, "_kiln_result")) {
      const auto slot = nb::cast<size_t>(handle.attr("_kiln_result"));
      if (slot >= results.size() || !PyArray_Check(results[slot].ptr()) ||
          !PyArray_IS_C_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(results[slot].ptr())))
        throw Error(ErrorKind::Internal, "kiln: a result view names no row-major result");
      return memoized(spec, results[slot], handle.attr("_kiln_view"));
    }
    return nb::borrow(handle);
  }

  nb::object memoized(PyObject* spec, const nb::object& array, nb::handle view) {
    for (const auto& [leaf, built] : views)
      if (leaf == spec) return built;
    return views.emplace_back(spec, view_of(array, view)).second;
  }
};

}  // namespace

nb::object build_output(PyObject* spec, const std::vector<nb::object>& results,
                        const std::vector<nb::object>& arrays) {
  return OutputBuilder{results, arrays}.build(spec);
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
