// Blocked float sums of the C++ emitter (KernelEmitter::blocked_sum_loops): SIMD lanes summed
// per block, the block totals joined in a pairwise cascade.
#include <algorithm>

#include "codegen/cpp/kernel_emitter.h"
#include "ir/ops.h"
#include "ir/size_choices.h"
#include "sched/cpu/mark_reduction_lanes.h"

namespace kiln::codegen::cpp_detail {

// SIMD steps per block before its total joins the pairwise cascade.
using sched::cpu::kBlockSteps;

// Float sums (and Welford mean/variance states), blocked for accuracy at the same speed: each block of `lanes` x kBlockSteps
// elements is summed into fresh SIMD lanes, and the block totals join a pairwise cascade
// (kiln_cascade_push, a binary counter of partial sums). The longest chain of additions is
// kBlockSteps + log2(blocks) instead of n / lanes: a float32 sum of 10**7 elements keeps
// NumPy's accuracy (pairwise summation) instead of losing three digits.
void KernelEmitter::blocked_sum_loops(const Stmt& s, bool worksharing, const std::string& suffix,
                                      int64_t lanes) {
  const sched::Loop& last = s.reduce_loops.back();
  const int64_t block = lanes * kBlockSteps;
  const bool share_last = worksharing && s.reduce_loops.size() == 1;
  for (const sched::Accumulation& a : s.accumulations) {
    std::string name = accumulator_names(a, suffix).value, type = compute_type(a.dtype);
    if (ir::op_info(a.op).accumulator == ir::Accumulator::Welford)  // fed by lanes_total
      type = "kiln_welford<" + std::string(kWelfordType) + ">";
    line(type + " " + name + "_levels[64] = {};");
    line("uint64_t " + name + "_count = 0;");
  }
  std::string v = loop_name(last.variable), width = std::to_string(lanes);
  const int64_t full = last.extent / block * block;
  // The ends as arithmetic of the extent (reduce_loops says why).
  const std::string full_text = "(" + std::to_string(last.extent) + " / " +
                                std::to_string(block) + " * " + std::to_string(block) + ")";
  // A last loop shorter than a block (a sum over several loops): its passes share lanes until
  // they hold about a block, so the cascade is fed per block, not per pass.
  // Every part below is written whatever the extent (one that has no elements here runs no
  // iteration, and pushes identities), and where the passes' lanes live is a size choice
  // (ir/size_choices.h): every size of a graph with size symbols has one shape of code.
  const bool short_passes = ir::size_choice(full == 0);
  const int64_t passes_per_block = std::max<int64_t>(1, block / last.extent);
  const std::string passes = v + "_passes";
  if (short_passes) {
    declare_accumulators(s, suffix + "_rest", lanes);
    line("int64_t " + passes + " = 0;");
  }
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k) {
    const sched::Loop& l = s.reduce_loops[k];
    if (k == 0 && worksharing) line("#pragma omp for schedule(static) nowait");
    std::string loop = loop_name(l.variable);
    line("for (int64_t " + loop + " = 0; " + loop + " < " + std::to_string(l.extent) + "; ++" +
         loop + ") {");
    open_block();
  }
  auto push_totals = [&](const std::string& from) {  // the lanes' total joins the cascade
    for (const sched::Accumulation& a : s.accumulations) {
      std::string name = accumulator_names(a, suffix).value;
      const std::string total = split_welfords_.count(a.local)
                                    ? lanes_total(a, from)
                                    : "kiln_lanes_total(" + accumulator_names(a, from).value +
                                          ", " + width + ")";
      line("kiln_cascade_push(" + name + "_levels, " + name + "_count, " + total + ");");
    }
  };
  {  // the blocks
    if (share_last) line("#pragma omp for schedule(static) nowait");
    line("for (int64_t " + v + "_block = 0; " + v + "_block < " + full_text + "; " + v +
         "_block += " + std::to_string(block) + ") {");
    open_block();
    declare_accumulators(s, suffix + "_lanes", lanes);
    shift_lanes(s, v, v + "_block", v + "_block + " + std::to_string(block), suffix + "_lanes");
    line("for (int64_t " + v + "_step = " + v + "_block; " + v + "_step < " + v + "_block + " +
         std::to_string(block) + "; " + v + "_step += " + width + ") {");
    open_block();
    lane_loop(s, v, v + "_step", width, suffix + "_lanes");
    close_block();
    push_totals(suffix + "_lanes");
    close_block();
  }
  {  // the remainder, shorter than a block: SIMD lanes, then a tail
    const std::string lane_end = "(" + full_text + " + (" + std::to_string(last.extent) + " - " +
                                 full_text + ") / " + width + " * " + width + ")";
    if (share_last) line("#pragma omp single nowait");
    line("{");
    open_block();
    if (!short_passes) declare_accumulators(s, suffix + "_rest", lanes);
    shift_lanes(s, v, full_text, lane_end, suffix + "_rest");
    line("for (int64_t " + v + "_step = " + full_text + "; " + v + "_step < " + lane_end + "; " +
         v + "_step += " + width + ") {");
    open_block();
    lane_loop(s, v, v + "_step", width, suffix + "_rest");
    close_block();
    combine_remainder(s, v, lane_end, std::to_string(last.extent), suffix + "_rest", suffix);
    if (short_passes) {
      line("if (++" + passes + " == " + std::to_string(passes_per_block) + ") {");
      open_block();
      push_totals(suffix + "_rest");
      for (const sched::Accumulation& a : s.accumulations) {
        const std::string rest = accumulator_names(a, suffix + "_rest").value;
        if (!split_welfords_.count(a.local)) {
          line("for (int lane = 0; lane < " + width + "; ++lane) " + rest + "[lane] = {};");
          continue;
        }
        line("for (int lane = 0; lane < " + width + "; ++lane) " + rest + "_mean[lane] = " +
             rest + "_m2[lane] = 0;");
        line(rest + "_count = 0;");
      }
      line(passes + " = 0;");
      close_block();
    } else {
      push_totals(suffix + "_rest");
    }
    close_block();
  }
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k) close_block();
  if (short_passes) push_totals(suffix + "_rest");
  for (const sched::Accumulation& a : s.accumulations) {
    std::string name = accumulator_names(a, suffix).value;
    line(name + " = kiln_cascade_combine(" + name + ", kiln_cascade_total(" + name +
         "_levels));");
  }
}

}  // namespace kiln::codegen::cpp_detail
