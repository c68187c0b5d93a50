// The shape rule of the attention op (op_list.h), shared by the builder (user errors) and the
// verifier (kiln's own bugs): q (B, H, L, D), k (B, Hk, S, D), v (B, Hk, S, Dv) with Hk
// dividing H (query head h reads key head h / (H / Hk)), an optional bias (B, H, L, S) of q's
// dtype (added to the scores) or bool (true keeps a score); the result (B, H, L, Dv).
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

// What is wrong with these operands ("" when nothing is); `bias` may be null.
std::string attention_mismatch(const Node& q, const Node& k, const Node& v, const Node* bias);

// The result's shape (of operands attention_mismatch accepts).
Shape attention_shape(const Node& q, const Node& v);

}  // namespace kiln::ir
