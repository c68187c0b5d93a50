// Checked factory for scaled dot-product attention (an extern op: src/extern/attention.h).
#include "ir/attention_shape.h"
#include "ir/builder.h"
#include "ir/builder_checker.h"

namespace kiln::ir {

std::string attention_mismatch(const Node& q, const Node& k, const Node& v, const Node* bias) {
  if (q.dtype != DType::Float32 && q.dtype != DType::Float64)
    return "computes in float32 or float64, not " + std::string(dtype_name(q.dtype));
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return "q, k and v have dtypes " + std::string(dtype_name(q.dtype)) + ", " +
           std::string(dtype_name(k.dtype)) + " and " + std::string(dtype_name(v.dtype));
  const std::string shapes = "q " + shape_string(q.shape) + ", k " + shape_string(k.shape) +
                             ", v " + shape_string(v.shape);
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    return "takes (batch, heads, length, features) operands, got " + shapes;
  const Dim &heads = q.shape[1], &key_heads = k.shape[1];
  const bool divides = heads.is_constant() && key_heads.is_constant() &&
                       key_heads.constant() > 0 && heads.constant() % key_heads.constant() == 0;
  const bool heads_fit = heads == key_heads || divides;
  if (q.shape[0] != k.shape[0] || k.shape[0] != v.shape[0] || !heads_fit ||
      v.shape[1] != key_heads || q.shape[3] != k.shape[3] || k.shape[2] != v.shape[2])
    return "operand shapes do not fit: " + shapes;
  if (bias == nullptr) return "";
  const Shape scores{q.shape[0], heads, q.shape[2], k.shape[2]};
  if (bias->dtype != q.dtype && bias->dtype != DType::Bool)
    return "a bias of dtype " + std::string(dtype_name(bias->dtype)) + " (bool or q's)";
  if (bias->shape != scores)
    return "a bias of shape " + shape_string(bias->shape) + " for scores " + shape_string(scores);
  return "";
}

Shape attention_shape(const Node& q, const Node& v) {
  return {q.shape[0], q.shape[1], q.shape[2], v.shape[3]};
}

ValueId Builder::attention(ValueId q, ValueId k, ValueId v, std::optional<ValueId> bias,
                           bool causal) {
  builder_detail::Checker checker(Op::attention, graph_, location_);
  std::vector<ValueId> inputs{q, k, v};
  if (bias) inputs.push_back(*bias);
  for (ValueId input : inputs) checker.operand(input);
  const std::string mismatch = attention_mismatch(
      graph_.node(q), graph_.node(k), graph_.node(v), bias ? &graph_.node(*bias) : nullptr);
  if (!mismatch.empty()) checker.fail(ErrorKind::Value, mismatch);
  Attrs attrs;
  attrs.causal = causal;
  const DType dtype = graph_.node(q).dtype;
  return add(Op::attention, dtype, attention_shape(graph_.node(q), graph_.node(v)),
             std::move(inputs), std::move(attrs));
}

}  // namespace kiln::ir
