// The attention op's library kernel (op_list.h: softmax(q kᵀ + bias) v), flash attention's
// blocked form on the CPU: each thread takes a block of query rows of one head and walks the
// keys in blocks, keeping each row's running maximum and sum, so the scores never leave the
// cache (the length x length matrix a matmul, a softmax and a matmul store is 4 MB a head at
// 1000 tokens) and a causal mask's upper blocks are never computed.
#pragma once
#include <optional>

#include "extern/strided_operand.h"

namespace kiln::externs {

// float32 or float64 q (B, H, L, D), k (B, Hk, S, D), v (B, Hk, S, Dv) and an optional bias
// (B, H, L, S) of their dtype (added) or bool (true keeps a score), any strides (ir/
// attention_shape.h); `out` is (B, H, L, Dv), row-major, of their dtype.
void attention(const StridedOperand& q, const StridedOperand& k, const StridedOperand& v,
               const std::optional<StridedOperand>& bias, bool causal, void* out);

}  // namespace kiln::externs
