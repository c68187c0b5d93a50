#include "sched/cpu/interleave_scans.h"

#include <algorithm>
#include <map>

#include "sched/kernel_builder.h"

namespace kiln::sched::cpu {
namespace {

// Lanes per block, at most: rows of this many elements are read whole, and the accumulators stay in L1.
constexpr int64_t kLanes = 128;

bool trimmed(const Loop& loop) { return loop.begin >= 0 || loop.end >= 0; }

}  // namespace

bool interleave_scans(Kernel& kernel, const target::Target&) {
  if (kernel.body.size() != 1 || kernel.body[0].kind != StmtKind::Loop) return false;
  // Down the nest of loops to the one whose body is the scan.
  Stmt* around = &kernel.body[0];
  while (around->body.size() == 1 && around->body[0].kind == StmtKind::Loop)
    around = &around->body[0];
  if (around->body.size() != 1 || around->body[0].kind != StmtKind::Scan) return false;
  Stmt& scan = around->body[0];
  if (!scan.body.empty() || scan.accumulations.size() != 1 || scan.reduce_loops.size() != 1 ||
      scan.lanes_loop.variable >= 0 || trimmed(scan.reduce_loops[0]) || trimmed(around->loop))
    return false;
  const int64_t extent = around->loop.extent;
  if (extent < 2) return false;
  KernelBuilder builder(kernel);
  const int32_t a = around->loop.variable;
  Accumulation& accumulation = scan.accumulations[0];
  if (builder.coefficient(scan.index, a) != 1) return false;
  // Blocks of at most kLanes lanes, as even as they can be (130 columns: 65 and 65).
  const int64_t blocks = (extent + kLanes - 1) / kLanes;
  const int64_t width = (extent + blocks - 1) / blocks;

  const int32_t block_loop = builder.new_loop(blocks), lane_loop = builder.new_loop(width);
  const ExprId offset = builder.mul(builder.loop_var(block_loop), width);
  const std::map<int32_t, ExprId> substitution{{a, builder.add(offset, builder.loop_var(lane_loop))}};
  accumulation.value = builder.substitute(accumulation.value, substitution);
  scan.index = builder.substitute(scan.index, substitution);
  scan.lanes_loop = Loop{lane_loop, width};
  // The last block's lanes past the extent: none (the emitter clamps the end to the width).
  if (extent % width != 0) scan.lanes_loop.end = builder.add(builder.index_constant(extent),
                                                             builder.mul(offset, -1));
  around->loop = Loop{block_loop, blocks};
  return true;
}

}  // namespace kiln::sched::cpu
