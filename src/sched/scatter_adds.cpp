#include "sched/scatter_adds.h"

#include <algorithm>

namespace kiln::sched {

bool has_atomic_add(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Int32 ||
         dtype == DType::UInt32 || dtype == DType::Int64 || dtype == DType::UInt64;
}

bool adds_in_any_order(const Stmt& s, const std::vector<Buffer>& buffers) {
  switch (s.kind) {
    case StmtKind::Loop:
    case StmtKind::Reduce:
      return std::all_of(s.body.begin(), s.body.end(),
                         [&](const Stmt& c) { return adds_in_any_order(c, buffers); });
    case StmtKind::Store:
      return s.accumulate && !s.to_local_array &&
             has_atomic_add(buffers[static_cast<size_t>(s.buffer)].dtype);
    default:
      return false;
  }
}

}  // namespace kiln::sched
