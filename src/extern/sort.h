// argsort's CPU kernel (ir op argsort): the positions along one axis that sort each row, stable,
// NaN after every number (before with `descending`), -0.0 equal to 0.0: NumPy's and torch's
// order. Rows run in parallel; each row's elements become unsigned keys in that order (a float's
// bits, sign-folded), sorted with their positions by LSD radix passes (short rows: std::sort on
// the (key, position) pairs), or selected for the first k (top-k) by nth_element.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

// Writes, for each row of `input` along `axis`, the first out_shape[axis] positions of its
// sorted order to `out` (int64, of `out_shape` and `out_strides` in elements).
void argsort(const StridedOperand& input, int64_t axis, bool descending, int64_t* out,
             const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides);

}  // namespace kiln::externs
