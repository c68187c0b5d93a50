#include "python/aliasing.h"

#include <utility>

namespace kiln::python {
namespace {

// [lowest byte, one past the highest byte] an array's elements occupy.
std::pair<const char*, const char*> extent_of(PyArrayObject* array) {
  const char* low = static_cast<const char*>(PyArray_DATA(array));
  const char* high = low;
  if (PyArray_SIZE(array) == 0) return {low, low};
  for (int d = 0; d < PyArray_NDIM(array); ++d) {
    npy_intp span = (PyArray_DIMS(array)[d] - 1) * PyArray_STRIDES(array)[d];
    (span < 0 ? low : high) += span;
  }
  return {low, high + PyArray_ITEMSIZE(array)};
}

}  // namespace

// Overlapping calls are traced with the sharing made explicit (python/kiln/_aliasing.py).
bool any_overlap(const std::vector<nb::object>& arrays) {
  if (arrays.size() < 2) return false;
  std::vector<std::pair<const char*, const char*>> extents;
  extents.reserve(arrays.size());
  for (const nb::object& array : arrays) {
    auto extent = extent_of(reinterpret_cast<PyArrayObject*>(array.ptr()));
    if (extent.first == extent.second) continue;  // empty: shares nothing
    for (const auto& other : extents)
      if (extent.first < other.second && other.first < extent.second) return true;
    extents.push_back(extent);
  }
  return false;
}

}  // namespace kiln::python
