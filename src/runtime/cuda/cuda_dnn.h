// cuDNN's convolutions, opened with dlopen on first use (libcudnn.so.9: pip's nvidia-cudnn
// wheel, the copy torch loaded, or a system one). Without it, a convolution on the GPU is
// Error(Unsupported) saying what was tried.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::runtime::cuda {

// A channels-first operand: shape (N, C, *spatial) or a weight's (O, C / groups, *kernel), with
// element strides (any: channels-last memory is a permutation of these).
struct DnnTensor {
  const void* data = nullptr;
  std::vector<int64_t> shape, strides;
};

struct DnnConvolution {
  DType dtype = DType::Float32;
  std::vector<int64_t> strides, padding, dilation;  // one per spatial dimension
  int64_t groups = 1;
  // TF32 tensor cores for float32 (torch.backends.cudnn.allow_tf32, on by default in torch).
  bool allow_tf32 = false;
};

// y = conv(x, w) (+ bias, shape (O,)), cross-correlation as aten.convolution; queued on
// `stream`. `kept`: where the workspace goes instead of back to the allocator (a CUDA graph
// capture: the graph's replays use it), or null. Weights must be packed channels-first (O, C, *kernel) or channels-last
// (O, *kernel, C): cuDNN's filters have no strides; others are Error(Unsupported).
void convolution_forward(const DnnConvolution& conv, const DnnTensor& x, const DnnTensor& w,
                         const DnnTensor* bias, const DnnTensor& y, void* stream,
                         std::vector<std::shared_ptr<void>>* kept = nullptr);
// dx from dy and w (dx has x's shape).
void convolution_backward_data(const DnnConvolution& conv, const DnnTensor& dy,
                               const DnnTensor& w, const DnnTensor& dx, void* stream,
                               std::vector<std::shared_ptr<void>>* kept = nullptr);
// dw from dy and x (dw has w's shape, packed channels-first).
void convolution_backward_filter(const DnnConvolution& conv, const DnnTensor& dy,
                                 const DnnTensor& x, const DnnTensor& dw, void* stream,
                                 std::vector<std::shared_ptr<void>>* kept = nullptr);

// Whether cuDNN convolves `dtype` (float16, bfloat16, float32, float64).
bool dnn_computes(DType dtype);

}  // namespace kiln::runtime::cuda
