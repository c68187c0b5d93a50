// Winograd's F(4x4, 3x3) float32 convolution of kiln's own (Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", 2016), for the CPUs where oneDNN has no Winograd kernels
// (oneDNN's need AVX-512; on an AVX2 host its direct kernels were all there was, and resnet18
// only matched Inductor's). Each 6x6 input tile and each 3x3 filter is transformed into 36
// points; the convolution becomes 36 matrix products (tiles x C) x (C x O), one per point,
// whose results transform back into 4x4 output tiles: 36 multiply-adds per tile and channel
// pair where the direct algorithm takes 144. Tiles go in blocks, one block per thread at a
// time, so that a block's transformed inputs and products stay in the core's cache.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/strided_operand.h"
#include "ir/convolution_shape.h"

namespace kiln::externs {

// Floats of a filter's transform: 36 (C, O) matrices (O rounded up to 16).
int64_t winograd_weight_size(const ir::ConvolutionGeometry& g);

// The transform of `weight` (O, C, 3, 3 at any strides) into `transformed`
// (winograd_weight_size floats).
void winograd_transform_weights(const StridedOperand& weight, float* transformed);

// The convolution `g` (2-d, 3x3, stride 1, no dilation or groups, padding at most 1:
// winograd_suits) of `input` (N, C, H, W at any strides) with transformed weights, plus `bias`
// (O values `bias_stride` apart; nullptr: none), written to `out` (N, O, OH, OW) at
// `out_strides`. `scratch` holds the threads' blocks (kept by the caller between calls: pages
// touched afresh on every call cost more than a small layer's products).
void winograd_convolution(const ir::ConvolutionGeometry& g, const StridedOperand& input,
                          const float* transformed, const float* bias, int64_t bias_stride,
                          float* out, const std::vector<int64_t>& out_strides,
                          std::vector<float>& scratch);

// The gradient of the convolution `g` (as above) with respect to its weights, from its
// `input` and `grad_output` (N, O, OH, OW at any strides): `out` (O, C, 3, 3), row-major. Each
// thread sums its blocks' 36 products V^T dY into a transformed gradient of its own; their
// total is transformed back (G^T du G).
void winograd_weight_gradient(const ir::ConvolutionGeometry& g, const StridedOperand& input,
                              const StridedOperand& grad_output, float* out,
                              std::vector<float>& scratch);

}  // namespace kiln::externs
