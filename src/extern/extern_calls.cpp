#include "extern/extern_calls.h"

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "extern/convolution.h"
#include "extern/convolution_backward.h"
#include "extern/matmul.h"
#include "kiln/error.h"

namespace kiln::externs {

StridedOperand extern_operand(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                       char* const* table, size_t k) {
  int32_t b = call.inputs[k];
  const sched::Buffer& buffer = buffers[static_cast<size_t>(b)];
  if (k < call.views.size() && call.views[k]) {
    const sched::StridedView& view = *call.views[k];
    return {table[b] + view.offset * dtype_size(buffer.dtype), buffer.dtype, view.shape,
            view.strides};
  }
  return {table[b], buffer.dtype, buffer.shape, buffer.strides};
}

namespace {

void run_matmul(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                char* const* table) {
  matmul(extern_operand(call, buffers, table, 0), extern_operand(call, buffers, table, 1), table[call.output],
         buffers[static_cast<size_t>(call.output)].shape);
}

void run_convolution(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table) {
  if (call.inputs.size() != 2 && call.inputs.size() != 3)
    throw Error(ErrorKind::Internal, "kiln: convolution call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  StridedOperand input = extern_operand(call, buffers, table, 0);
  std::optional<StridedOperand> bias;
  if (call.inputs.size() > 2) bias = extern_operand(call, buffers, table, 2);
  ConvolutionParameters parameters =
      convolution_parameters(call.parameters, input.shape.size() - 2);
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  if (!parameters.channels_last) {
    convolution(input, extern_operand(call, buffers, table, 1), bias, parameters, table[call.output],
                out.shape);
    return;
  }
  // Channels-last operands seen as the channels-first ones they are permutations of.
  const std::vector<int64_t> order = ir::channels_first_order(input.shape.size());
  input.shape = ir::permuted(input.shape, order);
  input.strides = ir::permuted(input.strides, order);
  convolution(input, extern_operand(call, buffers, table, 1), bias, parameters, table[call.output],
              ir::permuted(out.shape, order), ir::permuted(out.strides, order));
}

// convolution_backward_input (grad_output, weight) and convolution_backward_weight
// (grad_output, input): the result buffer has the shape of the forward operand it differentiates.
void run_convolution_backward(const sched::ExternCall& call,
                              const std::vector<sched::Buffer>& buffers, char* const* table) {
  if (call.inputs.size() != 2)
    throw Error(ErrorKind::Internal, "kiln: " + std::string(ir::op_name(call.op)) + " call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  StridedOperand grad_output = extern_operand(call, buffers, table, 0);
  StridedOperand other = extern_operand(call, buffers, table, 1);
  ConvolutionParameters parameters =
      convolution_parameters(call.parameters, grad_output.shape.size() - 2);
  std::vector<int64_t> shape = buffers[static_cast<size_t>(call.output)].shape;
  const bool for_input = call.op == ir::Op::convolution_backward_input;
  if (parameters.channels_last) {  // the activations seen as the channels-first ones they permute
    const std::vector<int64_t> order = ir::channels_first_order(grad_output.shape.size());
    for (StridedOperand* operand : {&grad_output, &other}) {
      if (operand == &other && for_input) continue;  // the weight keeps its layout
      operand->shape = ir::permuted(operand->shape, order);
      operand->strides = ir::permuted(operand->strides, order);
    }
    if (for_input) shape = ir::permuted(shape, order);  // written channels-last (parameters)
  }
  if (for_input)
    convolution_backward_input(grad_output, other, parameters, table[call.output], shape);
  else
    convolution_backward_weight(grad_output, other, parameters, table[call.output], shape);
}

using ExternFunction = void (*)(const sched::ExternCall&, const std::vector<sched::Buffer>&,
                                char* const*);

constexpr std::array<std::pair<ir::Op, ExternFunction>, 4> kExternCalls = {{
    {ir::Op::matmul, run_matmul},
    {ir::Op::convolution, run_convolution},
    {ir::Op::convolution_backward_input, run_convolution_backward},
    {ir::Op::convolution_backward_weight, run_convolution_backward},
}};

ExternFunction find(ir::Op op) {
  for (const auto& [entry_op, function] : kExternCalls)
    if (entry_op == op) return function;
  return nullptr;
}

}  // namespace

void run_extern_call(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table) {
  ExternFunction function = find(call.op);
  if (function == nullptr)
    throw Error(ErrorKind::Internal, "kiln: no library kernel for extern op '" +
                                         std::string(ir::op_name(call.op)) + "'");
  function(call, buffers, table);
}

}  // namespace kiln::externs
