// The reference attention: each query row's scores in double, softmax with the row's maximum
// subtracted (0 where that maximum is not finite, so a row that sees no key gets weights 0 and
// output 0, torch's "safe softmax"), then the weighted sum of the values: the textbook two-pass
// form, independent of the library kernel's blocked, running-maximum one (src/extern/attention.h).
#include <cmath>
#include <limits>

#include "ir/interpreter_kernels.h"

namespace kiln::ir::interpreter_detail {
namespace {

template <class T>
double at(const View& view, const int64_t (&index)[4]) {
  int64_t offset = 0;
  for (int d = 0; d < 4; ++d) offset += index[d] * view.strides[static_cast<size_t>(d)];
  return static_cast<double>(reinterpret_cast<const T*>(view.data)[offset]);
}

template <class T>
void attend(const Node& node, const View& q, const View& k, const View& v, const View* bias,
            T* out) {
  const int64_t batch = q.shape[0], heads = q.shape[1], length = q.shape[2];
  const int64_t features = q.shape[3], keys = k.shape[2], values = v.shape[3];
  const int64_t group = heads / k.shape[1];
  constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();
  std::vector<double> scores(static_cast<size_t>(keys));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < length; ++i) {
        double top = kMinusInfinity;
        for (int64_t j = 0; j < keys; ++j) {
          double score = 0;
          for (int64_t d = 0; d < features; ++d)
            score += at<T>(q, {b, h, i, d}) * at<T>(k, {b, h / group, j, d});
          if (bias != nullptr) {
            if (bias->dtype == DType::Bool) {
              if (at<bool>(*bias, {b, h, i, j}) == 0) score = kMinusInfinity;
            } else {
              score += at<T>(*bias, {b, h, i, j});
            }
          }
          if (node.attrs.causal && j > i) score = kMinusInfinity;
          scores[static_cast<size_t>(j)] = score;
          top = std::isnan(score) || std::isnan(top) ? std::nan("") : std::max(top, score);
        }
        const double shift = std::isfinite(top) ? top : 0;
        double total = 0;
        for (double& score : scores) total += score = std::exp(score - shift);
        for (int64_t c = 0; c < values; ++c) {
          double sum = 0;
          for (int64_t j = 0; j < keys; ++j)
            sum += scores[static_cast<size_t>(j)] * at<T>(v, {b, h / group, j, c});
          out[((b * heads + h) * length + i) * values + c] =
              static_cast<T>(sum / (total == 0 ? 1 : total));
        }
      }
}

}  // namespace

Array evaluate_attention(const Node& node, const std::vector<Array>& operands) {
  View q = view_of(operands[0]), k = view_of(operands[1]), v = view_of(operands[2]);
  View bias;
  if (operands.size() > 3) bias = view_of(operands[3]);
  const View* bias_view = operands.size() > 3 ? &bias : nullptr;
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4 || k.shape[1] == 0)
    fail(node, ErrorKind::Internal, "attention's operands do not fit its node");
  if (node.dtype == DType::Float64)
    attend<double>(node, q, k, v, bias_view, output.data_as<double>());
  else if (node.dtype == DType::Float32)
    attend<float>(node, q, k, v, bias_view, output.data_as<float>());
  else
    fail(node, ErrorKind::Internal, "attention in " + std::string(dtype_name(node.dtype)));
  return output;
}

}  // namespace kiln::ir::interpreter_detail
