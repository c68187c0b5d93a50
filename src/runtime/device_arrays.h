// kiln::Array on the GPU: the device half of Array (allocation, copies between host and device)
// and what the CUDA runtime shares with it.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln::runtime {

// The lowest and highest element offsets an array of `shape` and `strides` reaches (from its
// data pointer); {0, -1} when it is empty.
std::pair<int64_t, int64_t> element_span(const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& strides);

// A new contiguous device array (kiln's caching allocator); Error(Unsupported) without a GPU.
Array empty_device_array(DType dtype, std::vector<int64_t> shape);
// `array` copied to the other device, contiguous; returns once the copy is done.
Array copy_to_other_device(const Array& array);

}  // namespace kiln::runtime
