// How each thread of a reduction's team walks its share of the elements (the CUDA emitter's
// reductions, reduce_emitter.cpp, fold what these loops visit).
#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

bool CudaKernelEmitter::nests_over_threads(const Stmt& s) const {
  const sched::Loop& last = s.reduce_loops.back();
  return s.reduce_loops.size() > 1 && last.begin < 0 && last.end < 0 &&
         ir::size_choice(2 * last.extent >= team());
}

// Each thread folds elements first, first + step, ... of the flattened reduction loops (the
// last loop fastest) into its accumulators.
void CudaKernelEmitter::fold_elements(const Stmt& s, const std::string& first,
                                      const std::string& step, const std::string& outer_first,
                                      const std::string& outer_step) {
  const std::string tag = std::to_string(s.accumulations[0].local);
  if (s.guard >= 0) {  // uniform over the block: only the loads are skipped
    line("if (" + value(s.guard) + ") {");
    open_block();
  }
  // Only the last loop may have run-time bounds (sched/trim_loops.h).
  const sched::Loop& last = s.reduce_loops.back();
  std::string low = "0", width = "(int64_t)" + std::to_string(last.extent);
  if (last.begin >= 0 || last.end >= 0) {  // divisions by a constant are a multiply and a shift
    auto [begin, end] = bounds_text(last);
    low = "kiln_low" + tag, width = "kiln_width" + tag;
    line("const int64_t " + low + " = " + begin + ";");
    line("const int64_t " + width + " = kiln_index_max(" + end + " - " + low + ", (int64_t)0);");
  }
  // A block's threads over the last loop, nested in the others, when it is long enough to
  // keep them busy: no 64-bit division per element, and what only the outer indices decide is
  // computed once per outer step, not per element (numpy_fn's sum over (j, k) of x[i, j] *
  // y[i, k], each normalised: two divisions per element, and a 64-bit one for the indices).
  // With split blocks (outer_step > 1) the blocks share the outermost loop.
  if (step == threads() && nests_over_threads(s)) {
    for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k) {
      const std::string v = loop_name(s.reduce_loops[k].variable);
      line("for (int64_t " + v + " = " + (k == 0 ? outer_first : "0") + "; " + v + " < " +
           std::to_string(s.reduce_loops[k].extent) + "; " + v + " += " + (k == 0 ? outer_step : "1") + ") {");
      open_block();
    }
    const std::string v = loop_name(last.variable);
    line("for (int64_t " + v + " = " + first + "; " + v + " < " + width + "; " + v + " += " +
         step + ") {");
    open_block();
    statements(s.body);
    combine_element(s);
    for (size_t k = 0; k < s.reduce_loops.size(); ++k) close_block();
    if (s.guard >= 0) close_block();
    return;
  }
  // One short loop with constant bounds, each thread a few of its elements: unrolled.
  if (first == member() && step == threads() && s.reduce_loops.size() == 1 &&
      few_steps_per_thread(last)) {
    const std::streamoff start = out_.tellp();
    const int opened = unrolled_shared_loop(loop_name(last.variable), "(int64_t)0", last.extent);
    statements(s.body);
    combine_element(s);
    for (int k = 0; k < opened; ++k) close_block();
    cap_unrolling(start);
    if (s.guard >= 0) close_block();
    return;
  }
  std::string total = width;
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k)
    total += " * " + std::to_string(s.reduce_loops[k].extent);
  std::string flat = "kiln_r" + tag;
  // One loop: the flat index is below its width already (a 64-bit modulo costs ~20 instructions).
  const bool one_loop = s.reduce_loops.size() == 1;
  if (one_loop && plan_.kind != LaunchKind::ColumnTiles) {
    fold_unrolled(s, flat, first, step, total, low);
    if (s.guard >= 0) close_block();
    return;
  }
  if (plan_.kind == LaunchKind::ColumnTiles && plan_.unroll_rows > 1)
    line("#pragma unroll " + std::to_string(plan_.unroll_rows));
  line("for (int64_t " + flat + " = " + first + "; " + flat + " < " + total + "; " + flat +
       " += " + step + ") {");
  open_block();
  line("const int64_t " + loop_name(last.variable) + " = " + low + " + " + flat +
       (one_loop ? "" : " % " + width) + ";");
  std::string rest = flat + " / " + width;
  for (size_t k = s.reduce_loops.size() - 1; k-- > 0;) {
    const sched::Loop& l = s.reduce_loops[k];
    std::string extent = std::to_string(l.extent);
    line("const int64_t " + loop_name(l.variable) + " = " + (k == 0 ? rest : "(" + rest + ") % " + extent) + ";");
    rest = "(" + rest + ") / " + extent;
  }
  statements(s.body);
  combine_element(s);
  close_block();
  if (s.guard >= 0) close_block();
}

// A thread's elements first, first + step, ... of a one-loop reduction, kFoldedSteps a pass:
// while all of a pass's elements exist their loads issue together, with no bound check
// between them (a grid-stride loop of one element a pass had one load in flight a thread and
// ran whole-array sums at about half the copy bandwidth); the last pass checks each.
void CudaKernelEmitter::fold_unrolled(const Stmt& s, const std::string& flat,
                                      const std::string& first, const std::string& step,
                                      const std::string& total, const std::string& low) {
  const std::string steps = std::to_string(kFoldedSteps);
  const std::string base = flat + "_base";
  line("for (int64_t " + base + " = " + first + "; " + base + " < " + total + "; " + base +
       " += " + steps + " * (int64_t)(" + step + ")) {");
  open_block();
  for (bool whole : {true, false}) {
    if (whole) {
      line("if (" + base + " + " + std::to_string(kFoldedSteps - 1) + " * (int64_t)(" + step +
           ") < " + total + ") {");
    } else {
      line("else {");
    }
    open_block();
    line("#pragma unroll");
    line("for (int kiln_fold = 0; kiln_fold < " + steps + "; ++kiln_fold) {");
    open_block();
    line("const int64_t " + flat + " = " + base + " + kiln_fold * (int64_t)(" + step + ");");
    if (!whole) {
      line("if (" + flat + " < " + total + ") {");
      open_block();
    }
    line("const int64_t " + loop_name(s.reduce_loops.back().variable) + " = " + low + " + " +
         flat + ";");
    statements(s.body);
    combine_element(s);
    if (!whole) close_block();
    close_block();
    close_block();
  }
  close_block();
}

}  // namespace kiln::codegen::cuda_detail
