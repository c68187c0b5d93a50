// Extern convolution: torch's aten.convolution forward (ir/convolution_shape.h) on strided
// buffers. float32 runs on oneDNN: primitives (and the reorders between the caller's layout and
// the blocked layout oneDNN picks) are created once per problem and kept in a process-wide
// cache, since a model calls the same few convolutions on every run. float64, which oneDNN's
// convolution lacks, becomes matrix products on OpenBLAS (im2col); degenerate problems (a
// zero-sized dimension) run plain loops.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "extern/strided_operand.h"
#include "ir/convolution_shape.h"

namespace kiln::externs {

// The parameters of one convolution, as sched::ExternCall::parameters carries them: strides,
// padding, dilation (one per spatial dimension each), then groups, then the layout.
struct ConvolutionParameters {
  std::vector<int64_t> strides, padding, dilation;
  int64_t groups = 1;
  bool channels_last = false;  // operands as the op has them; convolution() is channels-first
  bool filters_last = false;   // the weight (or its gradient) (O, *kernel, C / groups) too
};
ConvolutionParameters convolution_parameters(const std::vector<int64_t>& packed,
                                             size_t spatial_rank);

// Channels-first: input (N, C, *spatial), `out` the result (N, O, *output) with `out_strides`
// (empty: row-major). Error(Internal) when the operands or `out_shape` do not make the
// convolution the parameters describe (the builder has refused that already; a corrupt program
// must not make the kernel write past `out`).
void convolution(const StridedOperand& input, const StridedOperand& weight,
                 const std::optional<StridedOperand>& bias, const ConvolutionParameters& parameters,
                 void* out, const std::vector<int64_t>& out_shape,
                 std::vector<int64_t> out_strides = {});

// Whether a float32 convolution runs Winograd's F(4x4, 3x3): 2-d, 3x3, stride 1, no dilation
// or groups, padding at most 1, at least 64 channels each way and 196 output positions. The
// forward runs it on weights that repeat (their transform is kept), and on weights that change
// where the activations outweigh them; the gradients always where oneDNN has the kernels, and
// where the activations outweigh the weights with kiln's own (extern/winograd_convolution.h).
bool winograd_suits(const ir::ConvolutionGeometry& g);
// Whether it also suits weights that change on every call (training): where the activations
// outweigh the weights, at least 8 output positions per input channel.
bool winograd_changing_suits(const ir::ConvolutionGeometry& g);

// Process-wide counts of float32 convolution calls, for tests: those that ran Winograd's
// algorithm, those whose weights were found prepared (unchanged since an earlier call), and
// gradients (extern/convolution_backward.h) that ran Winograd's algorithm.
struct ConvolutionCounters {
  int64_t winograd_calls = 0;
  int64_t kept_weight_hits = 0;
  int64_t winograd_gradients = 0;
};
// Counts a gradient's call of Winograd's algorithm.
void count_winograd_gradient();
ConvolutionCounters convolution_counters();
// Whether oneDNN has Winograd's kernels on this CPU (its AVX-512 cores only): elsewhere the
// problems that suit them run kiln's own (extern/winograd_convolution.h).
bool winograd_available();

}  // namespace kiln::externs
