// pin_masked_elements: a masked update whose mask names one position of a loop stores there.
//
// NumPy's element assignment inside a captured loop, x[i, j] = v, traces as a row rewritten
// through a mask, x[i] = where(column == j, v, x[i]) (sched/in_place.h makes it an update in
// place). Each loop of the store's nest that such an equality bounds (`column == j`, j an
// integer computed outside the loop) runs once, at clamp(j, 0, extent - 1): the mask is kept,
// so where j is outside the axis the store writes back what is there, as it did. The update is
// one element's work, where it was the row's: one thread's on the GPU (a device loop of such
// cells runs on one thread, with no barrier: lcs's table). A GPU pass: on the CPU, trim_loops
// bounds the loop to [j, j + 1) at run time, an empty loop where j is outside the axis, and
// drops the mask (which kept doitgen's row store from vectorising).
//
// Rules as trim_loops' (which bounds the loops of other comparisons to run-time windows): the
// store is x[index] = where(c, new, x[index]), not an accumulation; the equality is a conjunct
// of c, between the loop's variable (or its int64 cast) and an int64 value that reads neither
// that loop nor the loops inside it.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

bool pin_masked_elements(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched
