#include "extern/extern_calls.h"

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "extern/convolution.h"
#include "extern/matmul.h"
#include "kiln/error.h"

namespace kiln::externs {
namespace {

StridedOperand operand(const std::vector<sched::Buffer>& buffers, char* const* table, int32_t b) {
  const sched::Buffer& buffer = buffers[static_cast<size_t>(b)];
  return {table[b], buffer.dtype, buffer.shape, buffer.strides};
}

void run_matmul(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                char* const* table) {
  matmul(operand(buffers, table, call.inputs[0]), operand(buffers, table, call.inputs[1]),
         table[call.output], buffers[static_cast<size_t>(call.output)].shape);
}

void run_convolution(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table) {
  if (call.inputs.size() != 2 && call.inputs.size() != 3)
    throw Error(ErrorKind::Internal, "kiln: convolution call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  StridedOperand input = operand(buffers, table, call.inputs[0]);
  std::optional<StridedOperand> bias;
  if (call.inputs.size() > 2) bias = operand(buffers, table, call.inputs[2]);
  ConvolutionParameters parameters =
      convolution_parameters(call.parameters, input.shape.size() - 2);
  convolution(input, operand(buffers, table, call.inputs[1]), bias, parameters,
              table[call.output], buffers[static_cast<size_t>(call.output)].shape);
}

using ExternFunction = void (*)(const sched::ExternCall&, const std::vector<sched::Buffer>&,
                                char* const*);

constexpr std::array<std::pair<ir::Op, ExternFunction>, 2> kExternCalls = {{
    {ir::Op::matmul, run_matmul},
    {ir::Op::convolution, run_convolution},
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
