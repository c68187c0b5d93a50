// Decompositions: the richer operations that frontends offer, expressed in primitives through
// the Builder. Each is one function; every frontend (C++ Tensor API, NumPy tracer, torch)
// calls these instead of writing its own. Axes may be negative; empty axes mean all.
#pragma once
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln::decompose {

using ir::Builder;
using ir::ValueId;

ValueId mean(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims);
ValueId variance(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims, int64_t ddof);
ValueId standard_deviation(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims,
                           int64_t ddof);
ValueId softmax(Builder& b, ValueId x, int64_t axis);
ValueId log_softmax(Builder& b, ValueId x, int64_t axis);
ValueId logsumexp(Builder& b, ValueId x, std::vector<int64_t> axes, bool keepdims);
// Either bound may be absent (has_low/has_high false).
ValueId clip(Builder& b, ValueId x, bool has_low, double low, bool has_high, double high);
// ord: "fro", "inf", "-inf" or a number ("2", "0", "0.5", "-1"); vector norms over one axis
// (any p), matrix norms over two ("fro", 1, -1, inf, -inf; the spectral ones are Unsupported).
ValueId norm(Builder& b, ValueId x, const std::string& ord, std::vector<int64_t> axes,
             bool keepdims);
ValueId square(Builder& b, ValueId x);
ValueId sigmoid(Builder& b, ValueId x);
ValueId relu(Builder& b, ValueId x);
ValueId gelu(Builder& b, ValueId x, bool tanh_approximation);
// einsum without ellipsis: "ij,jk->ik", implicit output allowed; lowered to
// permute/reshape/broadcast-multiply/reduce and matmul where a contraction pairs two operands.
ValueId einsum(Builder& b, const std::string& equation, const std::vector<ValueId>& operands);
ValueId dot(Builder& b, ValueId x, ValueId y);        // np.dot
ValueId inner(Builder& b, ValueId x, ValueId y);      // np.inner
ValueId outer(Builder& b, ValueId x, ValueId y);      // np.outer (flattens)
ValueId tensordot(Builder& b, ValueId x, ValueId y, std::vector<int64_t> x_axes,
                  std::vector<int64_t> y_axes);

}  // namespace kiln::decompose
