// The output spec of a cache entry: how the graph's outputs become the function's result.
#pragma once
#include <vector>

#include "python/common.h"

namespace kiln::python {

// An exact int i is graph output i, -(i+1) is output i as a NumPy scalar (what NumPy returns
// for 0-d results), tuples/lists/dicts are rebuilt, Constant unwraps, Rebuilt (a namedtuple)
// calls its _kiln_rebuild with its built _kiln_parts, ArgumentView is the call's array
// `arrays[_kiln_argument]` or a view of it, ResultView a view of output _kiln_result
// (python/kiln/_returned_views.py), anything else is returned as it is.
nb::object build_output(PyObject* spec, const std::vector<nb::object>& results,
                        const std::vector<nb::object>& arrays);

// For each of `output_count` graph outputs, whether the spec only ever returns it as a NumPy
// scalar: such outputs are converted straight to scalars, never wrapped as arrays first.
std::vector<bool> scalar_only_outputs(PyObject* spec, size_t output_count);

}  // namespace kiln::python
