#include "runtime/device_arrays.h"

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::runtime {

std::pair<int64_t, int64_t> element_span(const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& strides) {
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return {0, -1};
    int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? low : high) += reach;
  }
  return {low, high};
}

Array empty_device_array(DType dtype, std::vector<int64_t> shape) {
  if (!cuda::available())
    throw Error(ErrorKind::Unsupported,
                error_message("array", "", "a device array needs a GPU: " +
                                               cuda::unavailable_reason()));
  int64_t bytes = dtype_size(dtype);
  for (int64_t extent : shape) bytes *= extent;
  std::shared_ptr<void> block = cuda::allocate(bytes);
  return Array::borrow(block.get(), dtype, std::move(shape), {}, block, Device::Cuda);
}

Array copy_to_other_device(const Array& array) {
  const int64_t element = dtype_size(array.dtype());
  if (array.device() == Device::Cpu) {
    Array contiguous = array.is_contiguous() ? array : array.contiguous();
    Array result = empty_device_array(array.dtype(), array.shape());
    if (result.nbytes() > 0)
      cuda::copy_to_device(result.data(), contiguous.data(), result.nbytes(), nullptr);
    return result;
  }
  // To the host: the elements the array reaches, then (strided) a contiguous copy of them.
  auto [low, high] = element_span(array.shape(), array.strides());
  Array span = Array::empty(array.dtype(), {high - low + 1});
  if (high >= low)
    cuda::copy_to_host(span.data(), static_cast<const char*>(array.data()) + low * element,
                       span.nbytes(), nullptr);
  Array view = Array::borrow(static_cast<char*>(span.data()) - low * element, array.dtype(),
                             array.shape(), array.strides(), nullptr);
  return view.contiguous();
}

}  // namespace kiln::runtime
