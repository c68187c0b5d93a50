// A library kernel's view of one buffer: its memory, dtype, shape and element strides (inputs
// may have any strides; the scheduler gives intermediates and outputs row-major ones).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::externs {

struct StridedOperand {
  const void* data;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements
};

}  // namespace kiln::externs
