// The float64 convolution gradients of extern/convolution_backward.h, as matrix products on
// OpenBLAS (oneDNN has no float64 convolution). Internal to the extern convolution files: the
// caller has checked the geometry and handles empty problems.
#pragma once
#include "extern/strided_operand.h"
#include "ir/convolution_shape.h"

namespace kiln::externs::detail {

// Per image and group: columns = W_g^T dY, scattered back onto the input positions each column
// entry was read from (col2im). `out` is row-major (N, C, *spatial).
void convolution_backward_input_float64(const ir::ConvolutionGeometry& g,
                                        const StridedOperand& grad_output,
                                        const StridedOperand& weight, double* out);

// Per group: dW_g = sum over images of dY times the input windows unrolled (im2col)
// transposed. `out` is row-major (O, C / groups, *kernel).
void convolution_backward_weight_float64(const ir::ConvolutionGeometry& g,
                                         const StridedOperand& grad_output,
                                         const StridedOperand& input, double* out);

}  // namespace kiln::externs::detail
