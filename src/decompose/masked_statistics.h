// NumPy's mean/var/std with where=: statistics of the elements where `mask` is true. x is in
// the compute dtype already (the caller promotes and casts the result); mask is bool and
// broadcasts to x. Axes are explicit and normalised (empty: no reduction, as NumPy's axis=()).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace kiln::decompose {

using ir::Builder;
using ir::ValueId;

ValueId masked_mean(Builder& b, ValueId x, ValueId mask, const std::vector<int64_t>& axes,
                    bool keepdims);
// sum of squared deviations from the masked mean / (count - ddof); std = its square root.
ValueId masked_variance(Builder& b, ValueId x, ValueId mask, const std::vector<int64_t>& axes,
                        bool keepdims, int64_t ddof);

}  // namespace kiln::decompose
