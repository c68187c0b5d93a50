// The reference interpreter's driver: runs the graph node by node, frees each value after its
// last use, and evaluates the source ops (constants, iota, random) itself. The op families live
// in interpreter_elementwise.cpp, interpreter_reductions.cpp and interpreter_movement.cpp.
#include "ir/interpreter.h"

#include <map>

#include "ir/complex_lowering.h"
#include "ir/cond.h"
#include "ir/loop.h"
#include "ir/specialize.h"

#include <cstring>
#include <limits>

#include "ir/interpreter_kernels.h"
#include "ir/scalar_random.h"

namespace kiln::ir {
namespace interpreter_detail {

void fail(const Node& node, ErrorKind kind, const std::string& message) {
  throw Error(kind, error_message(std::string(op_name(node.op)), node.location, message));
}

View view_of(const Array& array) {
  View view;
  view.data = static_cast<const char*>(array.data());
  view.dtype = array.dtype();
  view.shape = array.shape();
  view.strides = array.strides();
  if (view.strides.size() != view.shape.size()) {
    view.strides.assign(view.shape.size(), 1);
    for (int d = static_cast<int>(view.shape.size()) - 2; d >= 0; --d) {
      view.strides[static_cast<size_t>(d)] =
          view.strides[static_cast<size_t>(d) + 1] * view.shape[static_cast<size_t>(d) + 1];
    }
  }
  return view;
}

IndexWalker::IndexWalker(std::vector<int64_t> shape, std::vector<std::vector<int64_t>> strides,
                         std::vector<int64_t> base_offsets)
    : shape_(std::move(shape)), strides_(std::move(strides)), offsets_(std::move(base_offsets)) {
  offsets_.resize(strides_.size(), 0);
  index_.assign(shape_.size(), 0);
}

void IndexWalker::advance() {
  for (size_t d = shape_.size(); d-- > 0;) {
    ++index_[d];
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < shape_[d]) return;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * shape_[d];
    index_[d] = 0;
  }
}

void store_scalar(const Scalar& value, DType dtype, void* destination) {
  visit_dtype(dtype, [&](auto traits) {
    using Traits = decltype(traits);
    auto* out = static_cast<typename Traits::Storage*>(destination);
    *out = value.is_integer ? convert<Traits::dtype>(value.i) : convert<Traits::dtype>(value.f);
  });
}

int64_t load_index(const View& view, int64_t offset) {
  int64_t result = 0;
  visit_dtype(view.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    result = convert<DType::Int64>(load<Traits>(view.data, offset));
  });
  return result;
}

std::vector<int64_t> broadcast_strides(const Node& node, const View& view,
                                       const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  bool fits = view.shape.size() <= shape.size();
  size_t offset = shape.size() - view.shape.size();
  for (size_t d = 0; fits && d < view.shape.size(); ++d) {
    if (view.shape[d] == shape[offset + d]) strides[offset + d] = view.strides[d];
    else fits = view.shape[d] == 1;
  }
  if (!fits) {
    fail(node, ErrorKind::Internal, "operand of shape " + shape_string(from_ints(view.shape)) +
                                        " does not broadcast to the result shape " +
                                        shape_string(node.shape));
  }
  return strides;
}

Array copy_strided(const View& source, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides, int64_t base_offset) {
  Array output = Array::empty(source.dtype, shape);
  const int64_t element_size = dtype_size(source.dtype);
  char* out = static_cast<char*>(output.data());
  IndexWalker walker(shape, {strides}, {base_offset});
  for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
    std::memcpy(out + n * element_size, source.data + walker.offset(0) * element_size,
                static_cast<size_t>(element_size));
  }
  return output;
}

}  // namespace interpreter_detail

namespace {

using namespace interpreter_detail;

Array evaluate_constant(const Node& node) {
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  const int64_t element_size = dtype_size(node.dtype);
  char* out = static_cast<char*>(output.data());
  if (output.size() == 0) return output;
  store_scalar(node.attrs.scalar, node.dtype, out);
  for (int64_t n = 1; n < output.size(); ++n) {
    std::memcpy(out + n * element_size, out, static_cast<size_t>(element_size));
  }
  return output;
}

Array evaluate_constant_array(const Node& node) {
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  const auto& data = node.attrs.data;
  size_t size = data ? data->size() : 0;
  if (static_cast<int64_t>(size) != output.nbytes()) {
    fail(node, ErrorKind::Internal, std::to_string(size) + " bytes of data for " +
                                        std::to_string(output.nbytes()) + " bytes of " +
                                        std::string(dtype_name(node.dtype)) +
                                        shape_string(node.shape));
  }
  if (size > 0) std::memcpy(output.data(), data->data(), size);
  return output;
}

Array evaluate_iota(const Node& node) {
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  int axis = normalize_axis(node.attrs.axis, static_cast<int>(node.shape.size()),
                            std::string(op_name(node.op)));
  visit_dtype(node.dtype, [&](auto traits) {
    using Traits = decltype(traits);
    auto* out = output.data_as<typename Traits::Storage>();
    IndexWalker walker(output.shape(), {});
    for (int64_t n = 0; n < output.size(); ++n, walker.advance()) {
      out[n] = convert<Traits::dtype>(walker.index()[static_cast<size_t>(axis)]);
    }
  });
  return output;
}

// Philox counter = the element's row-major index, so every backend draws the same numbers;
// key = attrs.seed + the 0-d int64 operand (wrapping), as the kernels compute it.
Array evaluate_random(const Node& node, const Array& key) {
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  bool normal = node.op == Op::random_normal;
  uint64_t seed = node.attrs.seed + static_cast<uint64_t>(*key.data_as<int64_t>());
  auto fill = [&](auto traits) {
    using Traits = decltype(traits);
    auto* out = output.data_as<typename Traits::Storage>();
    for (int64_t n = 0; n < output.size(); ++n) {
      uint64_t counter = static_cast<uint64_t>(n);
      if constexpr (Traits::dtype == DType::Float64) {
        out[n] = normal ? kiln_philox_normal_f64(seed, counter)
                        : kiln_philox_uniform_f64(seed, counter);
      } else {
        float value = normal ? kiln_philox_normal_f32(seed, counter)
                             : kiln_philox_uniform_f32(seed, counter);
        out[n] = convert<Traits::dtype>(value);
      }
    }
  };
  switch (node.dtype) {
    case DType::Float16: fill(DTypeTraits<DType::Float16>{}); break;
    case DType::BFloat16: fill(DTypeTraits<DType::BFloat16>{}); break;
    case DType::Float32: fill(DTypeTraits<DType::Float32>{}); break;
    case DType::Float64: fill(DTypeTraits<DType::Float64>{}); break;
    default:
      fail(node, ErrorKind::Type, "random values need a floating-point dtype, got " +
                                      std::string(dtype_name(node.dtype)));
  }
  return output;
}

void check_operand_count(const Node& node, const std::vector<Array>& operands) {
  int arity = op_info(node.op).arity;
  bool fits = arity < 0 ? !operands.empty() : static_cast<int>(operands.size()) == arity;
  if (!fits) {
    fail(node, ErrorKind::Internal, "interpreter got " + std::to_string(operands.size()) +
                                        " operands for an op of arity " + std::to_string(arity));
  }
}

// A parameter's value is the caller's array, which must match the declared dtype and shape.
const Array& parameter_value(const Node& node, const std::vector<Array>& inputs) {
  int64_t index = node.attrs.index;
  if (index < 0 || index >= static_cast<int64_t>(inputs.size())) {
    fail(node, ErrorKind::Value, "graph input " + std::to_string(index) + " was not given (" +
                                     std::to_string(inputs.size()) + " inputs)");
  }
  const Array& input = inputs[static_cast<size_t>(index)];
  if (input.dtype() != node.dtype) {
    fail(node, ErrorKind::Type, "input " + std::to_string(index) + " has dtype " +
                                    std::string(dtype_name(input.dtype())) + ", expected " +
                                    std::string(dtype_name(node.dtype)));
  }
  if (input.shape() != to_ints(node.shape)) {
    fail(node, ErrorKind::Value, "input " + std::to_string(index) + " has shape " +
                                     shape_string(from_ints(input.shape())) + ", expected " +
                                     shape_string(node.shape));
  }
  if (!input.defined()) {
    fail(node, ErrorKind::Value, "input " + std::to_string(index) + " has no data");
  }
  return input;
}

}  // namespace

Array interpret_node(const Node& node, const std::vector<Array>& operands) {
  check_operand_count(node, operands);
  if (is_elementwise(node.op)) return evaluate_elementwise(node, operands);
  if (is_reduction(node.op)) return evaluate_reduction(node, operands[0]);
  if (is_scan(node.op)) return evaluate_scan(node, operands[0]);
  switch (node.op) {
    case Op::parameter:
    case Op::loop:
    case Op::cond:
    case Op::loop_result:
    case Op::placeholder:
      fail(node, ErrorKind::Internal, "has no value outside interpret() of its graph");
    case Op::constant: return evaluate_constant(node);
    case Op::constant_array: return evaluate_constant_array(node);
    case Op::iota: return evaluate_iota(node);
    case Op::random_uniform:
    case Op::random_normal: return evaluate_random(node, operands[0]);
    case Op::cast: return evaluate_cast(node, operands[0]);
    case Op::matmul:
      return evaluate_matmul(node, operands[0], operands[1],
                             operands.size() > 2 ? &operands[2] : nullptr);
    case Op::convolution: return evaluate_convolution(node, operands);
    case Op::attention: return evaluate_attention(node, operands);
    case Op::solve: return evaluate_solve(node, operands[0], operands[1]);
    case Op::argsort:
    case Op::sort: return evaluate_sort(node, operands[0]);
    case Op::convolution_backward_input:
    case Op::convolution_backward_weight: return evaluate_convolution_backward(node, operands);
    default: return evaluate_movement(node, operands);
  }
}

// Complex graphs run as the compiled code does: lowered to real pairs (ir/complex_lowering.h),
// with the same memory seen as real arrays at the boundary.
std::vector<Array> interpret_complex(const Graph& graph, const std::vector<Array>& inputs) {
  std::vector<Array> real_inputs;
  for (const Array& input : inputs) real_inputs.push_back(is_complex(input.dtype()) ? input.view_as_real() : input);
  std::vector<Array> outputs = interpret(lower_complex(graph), real_inputs);
  for (size_t k = 0; k < outputs.size(); ++k)
    if (is_complex(graph.node(graph.outputs()[k]).dtype)) outputs[k] = outputs[k].view_as_complex();
  return outputs;
}

std::vector<Array> interpret(const Graph& graph, const std::vector<Array>& inputs) {
  if (!graph.symbol_hints().empty()) {  // size symbols: the inputs' shapes give their values
    std::vector<std::vector<int64_t>> shapes;
    for (const Array& input : inputs) shapes.push_back(input.shape());
    return interpret(specialize(graph, bind_sizes(graph, shapes)), inputs);
  }
  if (has_complex_values(graph)) return interpret_complex(graph, inputs);
  if (inputs.size() != graph.inputs().size()) {
    throw Error(ErrorKind::Value,
                error_message("", "", "the graph takes " + std::to_string(graph.inputs().size()) +
                                          " inputs, got " + std::to_string(inputs.size())));
  }
  // Each value is dropped after its last user so that long graphs do not hold every
  // intermediate at once.
  constexpr int kKeep = std::numeric_limits<int>::max();
  std::vector<int> last_use(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    for (ValueId input : graph.node(id).inputs) last_use[static_cast<size_t>(input)] = id;
  }
  for (ValueId output : graph.outputs()) last_use[static_cast<size_t>(output)] = kKeep;

  std::vector<Array> values(static_cast<size_t>(graph.size()));
  std::map<ValueId, std::vector<Array>> loop_values;
  std::vector<Array> operands;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op == Op::parameter) {
      values[static_cast<size_t>(id)] = parameter_value(node, inputs);
    } else if (node.op == Op::loop || node.op == Op::cond) {  // loop_result nodes pick results
      for (ValueId input : node.inputs) operands.push_back(values[static_cast<size_t>(input)]);
      loop_values[id] =
          node.op == Op::loop ? interpret_loop(node, operands) : interpret_cond(node, operands);
      operands.clear();
    } else if (node.op == Op::loop_result) {
      values[static_cast<size_t>(id)] =
          loop_values.at(node.inputs[0])[static_cast<size_t>(node.attrs.index)];
    } else {
      operands.clear();
      for (ValueId input : node.inputs) operands.push_back(values[static_cast<size_t>(input)]);
      values[static_cast<size_t>(id)] = interpret_node(node, operands);
      operands.clear();
    }
    for (ValueId input : node.inputs) {
      if (last_use[static_cast<size_t>(input)] == id) values[static_cast<size_t>(input)] = Array();
    }
    if (last_use[static_cast<size_t>(id)] < 0) values[static_cast<size_t>(id)] = Array();
  }

  // Outputs are fresh contiguous arrays: copy graph inputs, and any value listed twice.
  std::vector<Array> results;
  std::vector<bool> handed_out(static_cast<size_t>(graph.size()), false);
  for (ValueId output : graph.outputs()) {
    const Array& value = values[static_cast<size_t>(output)];
    bool must_copy =
        graph.node(output).op == Op::parameter || handed_out[static_cast<size_t>(output)];
    if (must_copy) {
      View view = view_of(value);
      results.push_back(copy_strided(view, view.shape, view.strides, 0));
    } else {
      results.push_back(value);
    }
    handed_out[static_cast<size_t>(output)] = true;
  }
  return results;
}

}  // namespace kiln::ir
