// Constant folding: a node whose operands are all constants is evaluated once, by the reference
// interpreter, and replaced by a `constant` (every element equal) or a `constant_array`. Only
// small results are folded: a big constant costs memory in the generated code that the kernel
// computing it does not. Movement of a scalar constant (broadcast, reshape, ...) is folded
// whatever its size, since the result is that scalar again.
#include <algorithm>
#include <cstring>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/size_choices.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

constexpr int64_t kMaxFoldedElements = 4096;
// Operands are materialised for the interpreter; a reduction of a large constant to a small
// result is not worth that.
constexpr int64_t kMaxOperandElements = 16 * kMaxFoldedElements;
// How far past those a size of a graph with size symbols folds when the recorded sizes did.
constexpr int64_t kMostReplayedFold = 4;

bool is_constant_node(const Node& node) {
  return node.op == Op::constant || node.op == Op::constant_array;
}

bool is_movement(Op op) {
  return op == Op::broadcast || op == Op::reshape || op == Op::permute || op == Op::flip;
}

// The element at `offset` of a contiguous array as an exact Scalar of its dtype.
ir::Scalar element_scalar(const Array& array, int64_t offset) {
  const uint8_t* bytes =
      static_cast<const uint8_t*>(array.data()) + offset * dtype_size(array.dtype());
  auto read = [bytes](auto value) {
    std::memcpy(&value, bytes, sizeof(value));
    return value;
  };
  switch (array.dtype()) {
    case DType::Bool: return ir::Scalar::of_int(read(uint8_t{}) != 0 ? 1 : 0);
    case DType::Int8: return ir::Scalar::of_int(read(int8_t{}));
    case DType::Int16: return ir::Scalar::of_int(read(int16_t{}));
    case DType::Int32: return ir::Scalar::of_int(read(int32_t{}));
    case DType::Int64: return ir::Scalar::of_int(read(int64_t{}));
    case DType::UInt8: return ir::Scalar::of_int(read(uint8_t{}));
    case DType::UInt16: return ir::Scalar::of_int(read(uint16_t{}));
    case DType::UInt32: return ir::Scalar::of_int(read(uint32_t{}));
    // uint64 keeps its bits in the int64 field, as the builder stores it.
    case DType::UInt64: return ir::Scalar::of_int(static_cast<int64_t>(read(uint64_t{})));
    case DType::Float32: return ir::Scalar::of(read(float{}));
    case DType::Float64: return ir::Scalar::of(read(double{}));
    default: {
      // 16-bit floats: Array::get decodes them exactly.
      std::vector<int64_t> index(static_cast<size_t>(array.ndim()), 0);
      int64_t rest = offset;
      for (int d = array.ndim() - 1; d >= 0; --d) {
        int64_t size = array.shape()[static_cast<size_t>(d)];
        index[static_cast<size_t>(d)] = size > 0 ? rest % size : 0;
        rest = size > 0 ? rest / size : 0;
      }
      return ir::Scalar::of(array.get(index));
    }
  }
}

// Replaces `node` by the value `array` holds: one scalar when every element has the same bits.
ValueId materialise(ir::Builder& builder, const Node& node, const Array& computed) {
  Array array = computed.is_contiguous() ? computed : computed.contiguous();
  int64_t element_size = dtype_size(array.dtype());
  const uint8_t* bytes = static_cast<const uint8_t*>(array.data());
  bool all_equal = true;
  for (int64_t i = 1; i < array.size() && all_equal; ++i) {
    const uint8_t* element = bytes + i * element_size;
    all_equal = std::memcmp(bytes, element, static_cast<size_t>(element_size)) == 0;
  }
  builder.set_location(node.location);
  if (all_equal) {
    ir::Scalar value = array.size() > 0 ? element_scalar(array, 0) : ir::Scalar::of_int(0);
    return builder.constant(value, node.dtype, node.shape);
  }
  std::vector<uint8_t> data(bytes, bytes + array.nbytes());
  return builder.constant_array(std::move(data), node.dtype, node.shape);
}

}  // namespace

ir::Graph fold_constants(const ir::Graph& graph) {
  ir::Graph result;
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    // (a random draw's constant key leaves it a draw: its values are computed where used)
    bool constant_operands = !node.inputs.empty() && node.op != Op::random_uniform &&
                             node.op != Op::random_normal;
    bool small = ir::element_count(node.shape) <= kMaxFoldedElements;
    int64_t most_operand = 0;
    bool moves_a_scalar = is_movement(node.op) && node.inputs.size() == 1;
    for (ValueId input : node.inputs) {
      ValueId mapped = replacement[static_cast<size_t>(input)];
      inputs.push_back(mapped);
      const Node& operand = result.node(mapped);
      constant_operands = constant_operands && is_constant_node(operand);
      most_operand = std::max(most_operand, ir::element_count(operand.shape));
      moves_a_scalar = moves_a_scalar && operand.op == Op::constant;
    }
    small = small && most_operand <= kMaxOperandElements;
    // A threshold on sizes, so a size choice (ir/size_choices.h): every size of a graph with
    // size symbols folds what the others fold, up to a bound on the work a replayed choice
    // may ask for.
    const bool foldable = constant_operands && ir::size_choice(small) &&
                          ir::element_count(node.shape) <= kMostReplayedFold * kMaxFoldedElements &&
                          most_operand <= kMostReplayedFold * kMaxOperandElements;
    ValueId folded = -1;
    if (moves_a_scalar) {
      ir::Scalar value = result.node(inputs[0]).attrs.scalar;
      builder.set_location(node.location);
      folded = builder.constant(value, node.dtype, node.shape);
    } else if (foldable) {
      try {
        std::vector<Array> operands;
        for (ValueId input : inputs) operands.push_back(ir::interpret_node(result.node(input), {}));
        folded = materialise(builder, node, ir::interpret_node(node, operands));
      } catch (const Error&) {
        // The operation fails on these values (or the interpreter lacks it): leave it to run
        // time, where the error names the user's line as usual.
        folded = -1;
      }
    }
    replacement[static_cast<size_t>(id)] =
        folded >= 0 ? folded : builder.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) {
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  }
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
