// Small builder helpers shared by the decomposition files (decompositions.cpp, einsum.cpp) and
// the C++ Tensor API. Internal to kiln.
#pragma once
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln::decompose::detail {

using ir::Builder;
using ir::ValueId;

// `value` as a Scalar of `dtype` (integers exact, bool as 0/1).
ir::Scalar scalar_for(DType dtype, double value);
// A scalar (shape ()) constant; binary ops broadcast it.
ValueId constant(Builder& b, double value, DType dtype);
// x itself when it already has `dtype`.
ValueId cast_to(Builder& b, ValueId x, DType dtype);
// Integers and bool become float64; floats stay.
ValueId to_float(Builder& b, ValueId x);
// The type float statistics accumulate in: float32 for 16-bit floats, float64 for integers.
DType accumulation_float(DType dtype);
// Non-negative, duplicate-free axes; empty means all axes. Errors name `op` and the builder's
// location.
std::vector<int64_t> normalize_axes(const Builder& b, std::vector<int64_t> axes, int rank,
                                    const std::string& op);
// Reshapes a keepdims=true reduction result to the keepdims=false shape.
ValueId drop_reduced_axes(Builder& b, ValueId kept, const std::vector<int64_t>& axes);

}  // namespace kiln::decompose::detail
