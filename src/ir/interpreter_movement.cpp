// Data movement (reshape, permute, broadcast, slice, flip, pad, concat, gather, scatter) and
// matmul for the reference interpreter. The view ops are one strided copy each; elements are
// moved as bytes, so they need no per-dtype code.
#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ir/interpreter_kernels.h"

namespace kiln::ir::interpreter_detail {
namespace {

std::string rank_message(const View& view, const Node& node) {
  return "operand of shape " + shape_string(from_ints(view.shape)) + " does not fit result " +
         shape_string(node.shape);
}

// Row-major element order is kept; only the shape changes.
Array reshape(const Node& node, const View& in) {
  Array output = Array::empty(in.dtype, to_ints(node.shape));
  if (element_count(from_ints(in.shape)) != output.size()) {
    fail(node, ErrorKind::Internal, rank_message(in, node));
  }
  const int64_t element_size = dtype_size(in.dtype);
  char* out = static_cast<char*>(output.data());
  IndexWalker walker(in.shape, {in.strides});
  for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
    std::memcpy(out + n * element_size, in.data + walker.offset(0) * element_size,
                static_cast<size_t>(element_size));
  }
  return output;
}

Array permute(const Node& node, const View& in) {
  const auto& permutation = node.attrs.permutation;
  if (permutation.size() != in.shape.size() || node.shape.size() != in.shape.size()) {
    fail(node, ErrorKind::Internal, rank_message(in, node));
  }
  std::vector<int64_t> strides;
  for (int64_t axis : permutation) {
    strides.push_back(in.strides[static_cast<size_t>(
        normalize_axis(axis, static_cast<int>(in.shape.size()), "permute"))]);
  }
  return copy_strided(in, to_ints(node.shape), strides, 0);
}

// Python slicing with the builder's normalised starts and steps; the count is the result shape.
Array slice(const Node& node, const View& in) {
  const auto& starts = node.attrs.starts;
  const auto& steps = node.attrs.steps;
  std::vector<int64_t> shape = to_ints(node.shape);
  if (starts.size() != in.shape.size() || steps.size() != in.shape.size() ||
      shape.size() != in.shape.size()) {
    fail(node, ErrorKind::Internal, rank_message(in, node));
  }
  int64_t offset = 0;
  std::vector<int64_t> strides(in.shape.size());
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (shape[d] == 0) continue;  // nothing is read along an empty dimension
    int64_t last = starts[d] + (shape[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= in.shape[d] || last < 0 || last >= in.shape[d]) {
      fail(node, ErrorKind::Internal, "slice start " + std::to_string(starts[d]) + " step " +
                                          std::to_string(steps[d]) + " leaves dimension " +
                                          std::to_string(d) + " of " + rank_message(in, node));
    }
    offset += starts[d] * in.strides[d];
    strides[d] = in.strides[d] * steps[d];
  }
  return copy_strided(in, shape, strides, offset);
}

Array flip(const Node& node, const View& in) {
  int64_t offset = 0;
  std::vector<int64_t> strides = in.strides;
  for (int64_t axis : node.attrs.axes) {
    size_t d = static_cast<size_t>(normalize_axis(axis, static_cast<int>(in.shape.size()), "flip"));
    if (in.shape[d] == 0) continue;
    offset += (in.shape[d] - 1) * in.strides[d];
    strides[d] = -in.strides[d];
  }
  return copy_strided(in, in.shape, strides, offset);
}

// NumPy's 'reflect': mirrored about the edge elements, which are not repeated; repeated
// reflection for pads wider than the array (period 2 * (size - 1)).
int64_t reflect_index(int64_t index, int64_t size) {
  if (size == 1) return 0;
  int64_t period = 2 * (size - 1);
  index = (index < 0 ? -index : index) % period;
  return index >= size ? period - index : index;
}

Array pad(const Node& node, const View& in) {
  const auto& low = node.attrs.pad_low;
  std::vector<int64_t> shape = to_ints(node.shape);
  if (low.size() != in.shape.size() || shape.size() != in.shape.size()) {
    fail(node, ErrorKind::Internal, rank_message(in, node));
  }
  const PadMode mode = node.attrs.pad_mode;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    bool padded = shape[d] > in.shape[d];
    if (mode != PadMode::Constant && padded && in.shape[d] == 0) {
      fail(node, ErrorKind::Value, "cannot pad the empty dimension " + std::to_string(d) +
                                       " of shape " + shape_string(from_ints(in.shape)) +
                                       " except with a constant");
    }
  }
  Array output = Array::empty(in.dtype, shape);
  const int64_t element_size = dtype_size(in.dtype);
  alignas(8) char fill[8] = {};
  store_scalar(node.attrs.scalar, in.dtype, fill);
  char* out = static_cast<char*>(output.data());
  IndexWalker walker(shape, {});
  for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
    int64_t source = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size() && inside; ++d) {
      int64_t index = walker.index()[d] - low[d];
      if (index < 0 || index >= in.shape[d]) {
        if (mode == PadMode::Constant) inside = false;
        else if (mode == PadMode::Edge) index = std::clamp<int64_t>(index, 0, in.shape[d] - 1);
        else index = reflect_index(index, in.shape[d]);
      }
      source += index * in.strides[d];
    }
    const char* from = inside ? in.data + source * element_size : fill;
    std::memcpy(out + n * element_size, from, static_cast<size_t>(element_size));
  }
  return output;
}

Array concat(const Node& node, const std::vector<Array>& operands) {
  std::vector<int64_t> shape = to_ints(node.shape);
  Array output = Array::empty(node.dtype, shape);
  size_t axis = static_cast<size_t>(normalize_axis(node.attrs.axis, static_cast<int>(shape.size()),
                                                   "concat"));
  std::vector<int64_t> out_strides = contiguous_strides(node.shape);
  const int64_t element_size = dtype_size(node.dtype);
  char* out = static_cast<char*>(output.data());
  int64_t axis_offset = 0;
  for (const Array& operand : operands) {
    View in = view_of(operand);
    if (in.dtype != node.dtype || in.shape.size() != shape.size() ||
        axis_offset + in.shape[axis] > shape[axis]) {
      fail(node, ErrorKind::Internal, rank_message(in, node));
    }
    IndexWalker walker(in.shape, {in.strides, out_strides}, {0, axis_offset * out_strides[axis]});
    int64_t count = element_count(from_ints(in.shape));
    for (int64_t n = 0; n < count; ++n, walker.advance()) {
      std::memcpy(out + walker.offset(1) * element_size, in.data + walker.offset(0) * element_size,
                  static_cast<size_t>(element_size));
    }
    axis_offset += in.shape[axis];
  }
  return output;
}

// Negative indices wrap once, then every index is clamped into [0, size).
int64_t normalize_index(const Node& node, int64_t index, int64_t size) {
  if (size == 0) fail(node, ErrorKind::Value, "cannot index an empty dimension");
  if (index < 0) index += size;
  return std::clamp<int64_t>(index, 0, size - 1);
}

// np.take(a, index, axis): result shape a[:axis] + index.shape + a[axis + 1:].
Array gather(const Node& node, const View& in, const View& index) {
  std::vector<int64_t> shape = to_ints(node.shape);
  size_t rank = in.shape.size();
  size_t index_rank = index.shape.size();
  size_t axis = static_cast<size_t>(normalize_axis(node.attrs.axis, static_cast<int>(rank),
                                                   "gather"));
  if (shape.size() != rank + index_rank - 1) {
    fail(node, ErrorKind::Internal, rank_message(in, node));
  }
  std::vector<int64_t> input_strides(shape.size(), 0);
  std::vector<int64_t> index_strides(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) input_strides[d] = in.strides[d];
    else if (d < axis + index_rank) index_strides[d] = index.strides[d - axis];
    else input_strides[d] = in.strides[d - index_rank + 1];
  }
  Array output = Array::empty(in.dtype, shape);
  const int64_t element_size = dtype_size(in.dtype);
  char* out = static_cast<char*>(output.data());
  IndexWalker walker(shape, {input_strides, index_strides});
  for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
    int64_t position =
        normalize_index(node, load_index(index, walker.offset(1)), in.shape[axis]);
    int64_t source = walker.offset(0) + position * in.strides[axis];
    std::memcpy(out + n * element_size, in.data + source * element_size,
                static_cast<size_t>(element_size));
  }
  return output;
}

// Functional `a[..., index, ...] = values` along attrs.axis with a 1-D index; values has a's
// shape with index.size() along the axis. Set: a later duplicate index wins. Add: duplicates
// accumulate (np.add.at), rounding to the dtype after each addition.
Array scatter(const Node& node, const View& in, const View& index, const View& values) {
  size_t rank = in.shape.size();
  size_t axis = static_cast<size_t>(normalize_axis(node.attrs.axis, static_cast<int>(rank),
                                                   "scatter"));
  if (index.shape.size() != 1 || values.shape.size() != rank || values.dtype != in.dtype ||
      values.shape[axis] != index.shape[0]) {
    fail(node, ErrorKind::Internal, "index of shape " + shape_string(from_ints(index.shape)) +
                                        " and values of shape " +
                                        shape_string(from_ints(values.shape)) + " do not fit " +
                                        rank_message(in, node));
  }
  Array output = copy_strided(in, in.shape, in.strides, 0);
  std::vector<int64_t> out_strides = contiguous_strides(from_ints(in.shape));
  std::vector<int64_t> target_strides = out_strides;
  target_strides[axis] = 0;
  std::vector<int64_t> index_strides(rank, 0);
  index_strides[axis] = index.strides[0];
  IndexWalker walker(values.shape, {values.strides, target_strides, index_strides});
  int64_t count = element_count(from_ints(values.shape));
  const bool add = node.attrs.scatter_mode == ScatterMode::Add;
  visit_dtype(in.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    using Storage = typename Traits::Storage;
    auto* out = output.data_as<Storage>();
    const auto* source = reinterpret_cast<const Storage*>(values.data);
    for (int64_t n = 0; n < count; ++n, walker.advance()) {
      int64_t position = normalize_index(node, load_index(index, walker.offset(2)), in.shape[axis]);
      int64_t target = walker.offset(1) + position * out_strides[axis];
      Storage value = source[walker.offset(0)];
      out[target] = add ? convert<Traits::dtype>(Traits::load(out[target]) + Traits::load(value))
                        : value;
    }
  });
  return output;
}

}  // namespace

Array evaluate_movement(const Node& node, const std::vector<Array>& operands) {
  View in = view_of(operands[0]);
  switch (node.op) {
    case Op::reshape: return reshape(node, in);
    case Op::permute: return permute(node, in);
    case Op::broadcast:
      return copy_strided(in, to_ints(node.shape), broadcast_strides(node, in, to_ints(node.shape)),
                          0);
    case Op::slice: return slice(node, in);
    case Op::flip: return flip(node, in);
    case Op::pad: return pad(node, in);
    case Op::concat: return concat(node, operands);
    case Op::gather: return gather(node, in, view_of(operands[1]));
    case Op::scatter: return scatter(node, in, view_of(operands[1]), view_of(operands[2]));
    default:
      fail(node, ErrorKind::Unsupported, "the reference interpreter has no rule for this op");
  }
}

// Batched matrix product with NumPy's rules: a 1-D left operand is a row (1, k), a 1-D right
// operand a column (k, 1) (the builder reshapes them, but hand-built graphs may not), batch
// dimensions broadcast. The result is written in row-major order of batch + (n, m), which is
// also the order of the node's shape with those unit dimensions dropped. Floats accumulate in
// double; integers wrap in their own type, as NumPy's integer matmul does.
Array evaluate_matmul(const Node& node, const Array& left, const Array& right, const Array* bias) {
  View a = view_of(left);
  View b = view_of(right);
  if (a.shape.empty() || b.shape.empty() || a.dtype != b.dtype) {
    fail(node, ErrorKind::Internal, "operands " + std::string(dtype_name(a.dtype)) +
                                        shape_string(from_ints(a.shape)) + " and " +
                                        std::string(dtype_name(b.dtype)) +
                                        shape_string(from_ints(b.shape)) + " cannot be multiplied");
  }
  if (a.shape.size() == 1) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b.shape.size() == 1) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  const int64_t rows = a.shape[a.shape.size() - 2];
  const int64_t inner = a.shape.back();
  const int64_t columns = b.shape.back();
  Shape batch;
  bool fits = b.shape[b.shape.size() - 2] == inner &&
              broadcast_shapes(from_ints({a.shape.begin(), a.shape.end() - 2}),
                               from_ints({b.shape.begin(), b.shape.end() - 2}), batch);
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  if (!fits || output.size() != element_count(batch) * rows * columns || node.dtype != a.dtype) {
    fail(node, ErrorKind::Internal, "operands of shapes " + shape_string(from_ints(a.shape)) +
                                        " and " + shape_string(from_ints(b.shape)) +
                                        " do not give the result " + shape_string(node.shape));
  }
  std::vector<int64_t> batch_shape = to_ints(batch);
  View a_batch = a;
  View b_batch = b;
  for (View* view : {&a_batch, &b_batch}) {
    view->shape.resize(view->shape.size() - 2);
    view->strides.resize(view->strides.size() - 2);
  }
  IndexWalker walker(batch_shape, {broadcast_strides(node, a_batch, batch_shape),
                                   broadcast_strides(node, b_batch, batch_shape)});
  const int64_t batch_count = element_count(batch);
  const int64_t a_row = a.strides[a.strides.size() - 2], a_inner = a.strides.back();
  const int64_t b_inner = b.strides[b.strides.size() - 2], b_column = b.strides.back();
  std::optional<View> bias_view;
  if (bias != nullptr) bias_view = view_of(*bias);
  visit_dtype(a.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    using Compute = typename Traits::Compute;
    using Acc = std::conditional_t<std::is_floating_point_v<Compute>, double, Compute>;
    auto* out = output.data_as<typename Traits::Storage>();
    int64_t written = 0;
    for (int64_t batch_index = 0; batch_index < batch_count; ++batch_index, walker.advance()) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < columns; ++j) {
          Acc acc = Acc(0);
          int64_t a_offset = walker.offset(0) + i * a_row;
          int64_t b_offset = walker.offset(1) + j * b_column;
          for (int64_t p = 0; p < inner; ++p, a_offset += a_inner, b_offset += b_inner) {
            Acc x = static_cast<Acc>(load<Traits>(a.data, a_offset));
            Acc y = static_cast<Acc>(load<Traits>(b.data, b_offset));
            if constexpr (std::is_same_v<Acc, bool>) acc = acc || (x && y);
            else acc = static_cast<Acc>(acc + static_cast<Acc>(x * y));
          }
          if constexpr (!std::is_same_v<Acc, bool>) {
            if (bias_view)
              acc = static_cast<Acc>(acc + static_cast<Acc>(load<Traits>(
                                               bias_view->data, j * bias_view->strides[0])));
            if (node.attrs.relu && acc < Acc(0)) acc = Acc(0);  // NaN stays NaN, as torch's
          }
          out[written++] = convert<Traits::dtype>(acc);
        }
      }
    }
  });
  return output;
}

}  // namespace kiln::ir::interpreter_detail
