#include "sched/division_splits.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

namespace kiln::sched {

LoopSplits division_splits(KernelBuilder& builder, const std::vector<int32_t>& loops) {
  std::vector<std::set<int64_t, std::greater<>>> wanted(loops.size());
  const Kernel& kernel = builder.kernel();
  for (size_t id = 0; id < kernel.exprs.size(); ++id) {
    const Expr& e = kernel.exprs[id];
    int64_t divisor = 0;
    if ((e.kind != ExprKind::IndexFloorDiv && e.kind != ExprKind::IndexMod) ||
        !builder.is_constant(e.operands[1], &divisor) || divisor <= 1)
      continue;
    for (size_t d = 0; d < loops.size(); ++d) {
      const int64_t coefficient = std::abs(builder.coefficient(e.operands[0], loops[d]));
      if (coefficient == 0) continue;
      // Steps of the loop that cross a multiple of the divisor: an inner loop of this extent
      // keeps coefficient * inner below the divisor.
      const int64_t inner = divisor / std::gcd(coefficient, divisor);
      const int64_t extent = builder.loop_extent(loops[d]);
      if (inner > 1 && inner < extent && extent % inner == 0) wanted[d].insert(inner);
    }
  }
  LoopSplits splits(loops.size());
  for (size_t d = 0; d < loops.size(); ++d) {
    int64_t outer = builder.loop_extent(loops[d]);
    for (int64_t inner : wanted[d])  // largest first; each must divide the one before
      if (outer % inner == 0) splits[d].push_back(outer = inner);
  }
  return splits;
}

bool any_split(const LoopSplits& splits) {
  return std::any_of(splits.begin(), splits.end(), [](const auto& s) { return !s.empty(); });
}

}  // namespace kiln::sched
