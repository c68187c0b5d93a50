// Array manipulation that is views of views, written once for every front end: np.tile,
// np.repeat with one count, np.roll with static shifts. Each is reshapes, a broadcast and
// slices, which the scheduler turns into index arithmetic (no copies).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace kiln::decompose {

using ir::Builder;
using ir::ValueId;

// np.tile: `reps` (non-negative) aligned to the trailing axes; the result has
// max(len(reps), rank) axes.
ValueId tile(Builder& b, ValueId x, std::vector<int64_t> reps);
// np.repeat with one non-negative count along `axis` (already normalised).
ValueId repeat(Builder& b, ValueId x, int64_t count, int64_t axis);
// np.roll: shifts[k] along axes[k] (normalised; an axis may repeat, its shifts add up).
ValueId roll(Builder& b, ValueId x, const std::vector<int64_t>& shifts,
             const std::vector<int64_t>& axes);

}  // namespace kiln::decompose
