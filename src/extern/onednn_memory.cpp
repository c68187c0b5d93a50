#include "extern/onednn_memory.h"

#include <ranges>

#include "ir/convolution_shape.h"
#include "ir/shape.h"

namespace kiln::externs {

using dnnl::memory;

memory::dims to_dims(const std::vector<int64_t>& values) {
  return memory::dims(values.begin(), values.end());
}

bool is_channels_last(const StridedOperand& activation) {
  const size_t rank = activation.shape.size();
  if (rank < 3) return false;
  int64_t expected = 1;  // the stride each dimension has in a dense (N, *spatial, C) array
  for (int64_t d : ir::channels_last_order(rank) | std::views::reverse) {
    const size_t dim = static_cast<size_t>(d);
    if (activation.shape[dim] != 1 && activation.strides[dim] != expected) return false;
    expected *= activation.shape[dim];
  }
  return true;
}

dnnl::memory::format_tag activation_format(size_t rank, bool channels_last) {
  using tag = dnnl::memory::format_tag;
  if (!channels_last) return tag::any;
  switch (rank) {
    case 3: return tag::nwc;
    case 4: return tag::nhwc;
    case 5: return tag::ndhwc;
    default: return tag::any;
  }
}

StridedOperand describable_operand(StridedOperand operand, std::vector<float>& copy) {
  bool positive = true;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    if (operand.shape[d] == 1)
      operand.strides[d] = 1;  // never stepped along: any positive value describes it
    else if (operand.strides[d] <= 0)
      positive = false;
  }
  if (positive) return operand;
  int64_t count = 1;
  for (int64_t size : operand.shape) count *= size;
  copy.assign(static_cast<size_t>(count), 0.0f);
  const float* source = static_cast<const float*>(operand.data);
  std::vector<int64_t> index(operand.shape.size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * operand.strides[d];
    copy[static_cast<size_t>(k)] = source[offset];
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < operand.shape[d]) break;
      index[d] = 0;
    }
  }
  operand.data = copy.data();
  operand.strides = ir::contiguous_strides(ir::from_ints(operand.shape));
  return operand;
}

memory::desc plain_desc(const StridedOperand& operand) {
  return memory::desc(to_dims(operand.shape), memory::data_type::f32, to_dims(operand.strides));
}

memory::desc row_major_desc(const std::vector<int64_t>& shape) {
  return memory::desc(to_dims(shape), memory::data_type::f32,
                      to_dims(ir::contiguous_strides(ir::from_ints(shape))));
}

memory::desc grouped_weight_desc(const memory::desc& layout, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& strides, int64_t groups) {
  if (groups == 1) return layout;
  std::vector<int64_t> grouped_shape{groups, shape[0] / groups};
  std::vector<int64_t> grouped_strides{strides[0] * (shape[0] / groups), strides[0]};
  grouped_shape.insert(grouped_shape.end(), shape.begin() + 1, shape.end());
  grouped_strides.insert(grouped_strides.end(), strides.begin() + 1, strides.end());
  return memory::desc(to_dims(grouped_shape), memory::data_type::f32, to_dims(grouped_strides));
}

void plan_reorder(const dnnl::engine& engine, const memory::desc& from, const memory::desc& to,
                  const memory::desc& library, std::optional<dnnl::reorder>& reorder,
                  memory& buffer) {
  if (from == to) return;
  reorder.emplace(dnnl::reorder::primitive_desc(engine, from, engine, to));
  buffer = memory(library, engine);
}

}  // namespace kiln::externs
