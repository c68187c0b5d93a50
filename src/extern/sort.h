// The sort kernel of argsort and sort (ir ops): along one axis, stable, NaN after every number
// (before with `descending`), -0.0 equal to 0.0: NumPy's and torch's order. Each row's
// elements become unsigned keys in that order (a float's bits, sign-folded); argsort sorts them
// with their positions, sort sorts the keys alone and turns them back into values (zeros and
// NaNs, equal keys of several bit patterns, are written back in their original order: a stable
// sort's). Rows of at most 32 elements go through a bitonic sorting network, longer ones through
// Highway's vqsort where kiln is built with it (libhwy-dev), else (and 1-byte keys) through
// LSD radix passes over the key (8-bit digits; a pass where every key has the same digit is
// skipped), a top-k of a small part of its row through a heap of the k
// smallest, other top-k through nth_element then std::sort, a few single positions of each row
// (median, quantiles) through nth_element alone. Rows run in parallel; a single long
// row that the radix passes sort is sorted in one chunk per thread, then merged.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

// Writes, for each row of `input` along `axis`, the first out_shape[axis] elements of its
// sorted order to `out` (of `out_shape` and `out_strides` in elements): their int64 positions
// with `positions`, else their values (of input's dtype). `threads`: at most this many (0: the
// free cores' share of OpenMP's, runtime/thread_budget.h). With `picks` (ascending positions of
// a sorted row, out_shape[axis] of them) element j of each output row is the element at
// picks[j] of the row's sorted order instead, found by selection (nth_element), bit for bit
// what the sort puts there.
void sort(const StridedOperand& input, int64_t axis, bool descending, bool positions, void* out,
          const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides,
          int threads = 0, const std::vector<int64_t>& picks = {});

}  // namespace kiln::externs
