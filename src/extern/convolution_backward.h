// Extern convolution gradients (op_list.h: convolution_backward_input and
// convolution_backward_weight) on strided buffers, for the forward's parameters
// (extern/convolution.h). float32 runs on oneDNN's backward-data and backward-weights
// primitives, created once per problem and cached like the forward's (3x3 stride-1 problems
// where oneDNN has no Winograd kernels: kiln's, extern/winograd_convolution.h); float64 becomes matrix
// products on OpenBLAS (the input gradient as W^T dY scattered back by col2im, the weight
// gradient as dY times the im2col of the input). The bias gradient is a sum of grad_output,
// which the graph computes with its own reduction.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/convolution.h"
#include "extern/strided_operand.h"

namespace kiln::externs {

// The gradient with respect to the forward's input: `out` is row-major with `out_shape`, the
// input's shape (N, C, *spatial), or with parameters.channels_last row-major (N, *spatial, C). Error(Internal) when the operands and `out_shape` do not
// make the convolution the parameters describe.
void convolution_backward_input(const StridedOperand& grad_output, const StridedOperand& weight,
                                const ConvolutionParameters& parameters, void* out,
                                const std::vector<int64_t>& out_shape);

// The gradient with respect to the forward's weight: `out` is row-major with `out_shape`, the
// weight's shape (O, C / groups, *kernel).
void convolution_backward_weight(const StridedOperand& grad_output, const StridedOperand& input,
                                 const ConvolutionParameters& parameters, void* out,
                                 const std::vector<int64_t>& out_shape);

}  // namespace kiln::externs
