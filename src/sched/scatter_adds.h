// Scatter-adds whose additions may run in any order, on many threads at once: a loop nest
// whose only stores add into their buffer (np.add.at, index_put with accumulate, the gradients
// of embeddings and pooling), each add atomic. Additions in another order round floats
// differently, as every parallel library's scatter-add does (PyTorch's on the GPU, Inductor's
// atomic_add on the CPU); other scatters (later wins) and 16-bit or 8-bit adds stay in order on
// one thread.
#pragma once
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

// The dtypes both targets add atomically (CUDA's atomicAdd, OpenMP's atomic update).
bool has_atomic_add(DType dtype);

// Whether ordered statement `s` (a scatter's) may run its iterations at once with atomic adds.
bool adds_in_any_order(const Stmt& s, const std::vector<Buffer>& buffers);

}  // namespace kiln::sched
