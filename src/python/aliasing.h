// Arguments that share memory: the guarded cache's check (the Python side that traces such calls
// is python/kiln/_aliasing.py).
#pragma once
#include <vector>

#include "python/common.h"

namespace kiln::python {

// Whether two of the arrays may share memory (their byte extents intersect).
bool any_overlap(const std::vector<nb::object>& arrays);

}  // namespace kiln::python
