#include "extern/extern_calls.h"

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "extern/attention.h"
#include "extern/convolution.h"
#include "extern/convolution_backward.h"
#include "extern/matmul.h"
#include "extern/solve.h"
#include "extern/sort.h"
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

void permute_operand(StridedOperand& operand, const std::vector<int64_t>& order) {
  operand.shape = ir::permuted(operand.shape, order);
  operand.strides = ir::permuted(operand.strides, order);
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

// Writes row-major `source` (of `shape`) permuted by `order` (out[d] = in[order[d]]), row-major,
// to `out`: a filter's gradient, a few hundred kilobytes, once per call.
void copy_permuted(const char* source, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& order, int element, char* out) {
  const size_t rank = shape.size();
  std::vector<int64_t> source_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) source_strides[d - 1] = source_strides[d] * shape[d];
  const std::vector<int64_t> out_shape = ir::permuted(shape, order);
  const std::vector<int64_t> strides = ir::permuted(source_strides, order);
  std::vector<int64_t> index(rank, 0);
  const int64_t count = element_count(shape);
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * strides[d];
    std::memcpy(out + n * element, source + offset * element, static_cast<size_t>(element));
    for (size_t d = rank; d-- > 0;) {  // the next index of the output, row-major
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

void run_matmul(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                char* const* table) {
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  matmul(extern_operand(call, buffers, table, 0), extern_operand(call, buffers, table, 1),
         table[call.output], out.shape, out.dtype);
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
  StridedOperand weight = extern_operand(call, buffers, table, 1);
  permute_operand(input, order);
  if (parameters.filters_last) permute_operand(weight, order);
  convolution(input, weight, bias, parameters, table[call.output], ir::permuted(out.shape, order),
              ir::permuted(out.strides, order));
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
  const std::vector<int64_t> order = ir::channels_first_order(grad_output.shape.size());
  if (parameters.channels_last) {  // the activations seen as the channels-first ones they permute
    permute_operand(grad_output, order);
    if (!for_input || parameters.filters_last) permute_operand(other, order);  // input or filter
    if (for_input) shape = ir::permuted(shape, order);  // written channels-last (parameters)
  }
  if (for_input) {
    convolution_backward_input(grad_output, other, parameters, table[call.output], shape);
  } else if (!parameters.filters_last) {
    convolution_backward_weight(grad_output, other, parameters, table[call.output], shape);
  } else {  // (O, *kernel, C): computed channels-first, then stored in the filter's order
    const std::vector<int64_t> first = ir::permuted(shape, order);
    std::vector<char> staged(static_cast<size_t>(element_count(first) * dtype_size(grad_output.dtype)));
    convolution_backward_weight(grad_output, other, parameters, staged.data(), first);
    copy_permuted(staged.data(), first, ir::channels_last_order(first.size()),
                  dtype_size(grad_output.dtype), table[call.output]);
  }
}

// argsort and sort: parameters {axis, descending, picks...}; the result buffer holds the first
// k positions or values, or those at the picked positions of the sorted rows.
void run_sort(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
              char* const* table) {
  if (call.inputs.size() != 1 || call.parameters.size() < 2)
    throw Error(ErrorKind::Internal, "kiln: " + std::string(ir::op_name(call.op)) + " call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  sort(extern_operand(call, buffers, table, 0), call.parameters[0], call.parameters[1] != 0,
       call.op == ir::Op::argsort, table[call.output], out.shape, out.strides, 0,
       std::vector<int64_t>(call.parameters.begin() + 2, call.parameters.end()));
}

// attention: q, k, v[, bias]; parameters {causal}.
void run_attention(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                   char* const* table) {
  if (call.inputs.size() < 3 || call.inputs.size() > 4 || call.parameters.size() != 1)
    throw Error(ErrorKind::Internal, "kiln: attention call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  std::optional<StridedOperand> bias;
  if (call.inputs.size() == 4) bias = extern_operand(call, buffers, table, 3);
  attention(extern_operand(call, buffers, table, 0), extern_operand(call, buffers, table, 1),
            extern_operand(call, buffers, table, 2), bias, call.parameters[0] != 0,
            table[call.output]);
}

// solve: a, b; no parameters.
void run_solve(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
               char* const* table) {
  if (call.inputs.size() != 2)
    throw Error(ErrorKind::Internal, "kiln: solve call with " +
                                         std::to_string(call.inputs.size()) + " operands");
  solve(extern_operand(call, buffers, table, 0), extern_operand(call, buffers, table, 1),
        table[call.output]);
}

using ExternFunction = void (*)(const sched::ExternCall&, const std::vector<sched::Buffer>&,
                                char* const*);

constexpr std::array<std::pair<ir::Op, ExternFunction>, 8> kExternCalls = {{
    {ir::Op::attention, run_attention},
    {ir::Op::argsort, run_sort},
    {ir::Op::sort, run_sort},
    {ir::Op::solve, run_solve},
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
