// Reductions and scans of the C++ emitter: accumulators, SIMD lanes, thread partials, and the
// lane form produced by interchange_reductions.
#include <algorithm>

#include "codegen/cpp/kernel_emitter.h"
#include "ir/ops.h"
#include "sched/cpu/mark_reduction_lanes.h"

namespace kiln::codegen::cpp_detail {

// Steps (SIMD steps, or rows of a column sum) per block of a blocked float sum.
using sched::cpu::kBlockSteps;

void KernelEmitter::declare_accumulators(const Stmt& s, const std::string& suffix, int64_t count) {
  const std::string extent = count > 0 ? "[" + std::to_string(count) + "]" : "";
  for (const sched::Accumulation& a : s.accumulations) {
    const ir::OpInfo& info = ir::op_info(a.op);
    const bool welford = info.accumulator == ir::Accumulator::Welford;
    const bool split = count > 0 && split_welfords_.count(a.local);
    const bool shared_count = count > 0 && (shared_count_welfords_.count(a.local) || split);
    // (lanes of kiln_welford structs, not split, divide per element anyway: double as well)
    std::string t = welford && !split ? kWelfordType : compute_type(a.dtype);
    AccumulatorNames names = accumulator_names(a, suffix);
    std::string type = welford ? "kiln_welford<" + t + ">" : t;
    std::string init = info.accumulator == ir::Accumulator::Welford
                           ? "{0, 0, 0}"
                           : "kiln_identity_" + std::string(info.name) + "<" + t + ">()";
    bool arg_index = info.accumulator == ir::Accumulator::ArgIndex;
    if (shared_count) {
      for (const char* field : {"_mean", "_m2"}) {
        line(t + " " + names.value + field + extent + ";");
        line("for (int lane = 0; lane < " + std::to_string(count) + "; ++lane) " + names.value +
             field + "[lane] = 0;");
      }
      line(t + " " + names.value + "_count = 0;");
      if (split) line(t + " " + names.value + "_shift = 0;");  // set at the first step (lane_loop)
      continue;
    }
    if (count == 0) {
      line(type + " " + names.value + " = " + init + ";");
      if (arg_index) line("int64_t " + names.index + " = -1;");
      continue;
    }
    line(type + " " + names.value + extent + ";");
    if (arg_index) line("int64_t " + names.index + extent + ";");
    line("for (int lane = 0; lane < " + std::to_string(count) + "; ++lane) {");
    open_block();
    line(names.value + "[lane] = " + init + ";");
    if (arg_index) line(names.index + "[lane] = -1;");
    close_block();
  }
}

// Folds one element into each accumulation.
void KernelEmitter::combine_elements(const Stmt& s, const std::string& suffix, const std::string& subscript) {
  for (const sched::Accumulation& a : s.accumulations) {
    const ir::OpInfo& info = ir::op_info(a.op);
    AccumulatorNames acc = accumulator_names(a, suffix, subscript);
    std::string x = convert(value(a.value), expr(a.value).dtype, a.dtype);
    switch (info.accumulator) {
      case ir::Accumulator::Plain:
        line(acc.value + " = kiln_combine_" + std::string(info.name) + "(" + acc.value + ", " + x + ");");
        break;
      case ir::Accumulator::ArgIndex:
        line("if (kiln_" + std::string(info.name) + "_better(" + x + ", " + acc.value + ") || " + acc.index +
             " < 0) { " + acc.value + " = " + x + "; " + acc.index + " = " + index_text(a.position) + "; }");
        break;
      case ir::Accumulator::Welford:
        if (shared_count_welfords_.count(a.local) ||
            (split_welfords_.count(a.local) && subscript == "[lane]")) {
          const std::string base = accumulator_names(a, suffix).value, delta = base + "_delta";
          const std::string mean = base + "_mean" + subscript, m2 = base + "_m2" + subscript;
          const bool split = split_welfords_.count(a.local) > 0;
          const std::string t = split ? compute_type(a.dtype) : std::string(kWelfordType);
          const std::string shifted = base + "_x";  // split lanes take x - K (lane_loop)
          line("{ const " + t + " " + shifted + " = " + x + (split ? " - " + base + "_shift" : "") +
               "; const " + t + " " + delta + " = " + shifted + " - " + mean + "; " + mean +
               " += " + delta + " * " + base + "_step; " + m2 + " += " + delta + " * (" +
               shifted + " - " + mean + "); }");
          break;
        }
        line(acc.value + " = kiln_welford_add(" + acc.value + ", " + x + ");");
        break;
      default:
        break;
    }
  }
}

// Merges partial accumulators (thread partials, SIMD lanes) into others. argmax/argmin ties go
// to the lower index, as in the serial loop.
void KernelEmitter::merge_partials(const Stmt& s, const std::string& into, const std::string& from,
                                   const std::string& from_subscript, const std::string& into_subscript) {
  for (const sched::Accumulation& a : s.accumulations) {
    const ir::OpInfo& info = ir::op_info(a.op);
    std::string name(info.name);
    AccumulatorNames acc = accumulator_names(a, into, into_subscript),
                     part = accumulator_names(a, from, from_subscript);
    switch (info.accumulator) {
      case ir::Accumulator::Plain:
        line(acc.value + " = kiln_combine_" + name + "(" + acc.value + ", " + part.value + ");");
        break;
      case ir::Accumulator::ArgIndex:
        line("if (" + part.index + " >= 0 && (" + acc.index + " < 0 || kiln_" + name + "_better(" + part.value +
             ", " + acc.value + ") || (!kiln_" + name + "_better(" + acc.value + ", " + part.value + ") && " +
             part.index + " < " + acc.index + "))) { " + acc.value + " = " + part.value + "; " + acc.index +
             " = " + part.index + "; }");
        break;
      case ir::Accumulator::Welford:
        if (split_welfords_.count(a.local)) {  // from split lanes (mean and m2 arrays, a count)
          line(acc.value + " = kiln_welford_merge(" + acc.value + ", " + lanes_total(a, from) +
               ");");
          break;
        }
        line(acc.value + " = kiln_welford_merge(" + acc.value + ", " + part.value + ");");
        break;
      default:
        break;
    }
  }
}

// One SIMD step of a lane split: element `start` + lane into accumulator lane `lane`, for the
// first `lanes` lanes (text: all of them, or a remainder's count). Split Welford lanes take one
// element each full step (combine_remainder leaves them out of the partial one), so they all
// hold one count: one reciprocal a step rather than a division an element, which took most of
// a layer norm's statistics (4 vdivps a step of 64).
void KernelEmitter::lane_loop(const Stmt& s, const std::string& variable, const std::string& start,
                              const std::string& lanes, const std::string& suffix) {
  for (const sched::Accumulation& a : s.accumulations) {
    if (!split_welfords_.count(a.local)) continue;
    const std::string name = accumulator_names(a, suffix).value, t = compute_type(a.dtype);
    line(name + "_count += 1;");
    line("const " + t + " " + name + "_step = " + t + "(1) / " + name + "_count;");
  }
  line("#pragma omp simd");
  line("for (int64_t lane = 0; lane < " + lanes + "; ++lane) {");
  open_block();
  line("const int64_t " + variable + " = " + start + " + lane;");
  combine_elements(s, suffix, "[lane]");
  close_block();
}

// Before a loop of lane_loop steps from `start` while `start` < `end`: split Welford lanes that
// hold no element yet take their shift K, the element at `start` (declare_accumulators). Set in
// the step loop itself, the branch kept GCC from holding the lanes in registers (a float32 var
// of 16M elements took 3.5x as long).
void KernelEmitter::shift_lanes(const Stmt& s, const std::string& variable,
                                const std::string& start, const std::string& end,
                                const std::string& suffix) {
  for (const sched::Accumulation& a : s.accumulations) {
    if (!split_welfords_.count(a.local)) continue;
    const std::string name = accumulator_names(a, suffix).value;
    line("if (" + name + "_count == 0 && " + start + " < " + end + ") {");
    open_block();
    line("const int64_t " + variable + " = " + start + ";");
    line(name + "_shift = " + convert(value(a.value), expr(a.value).dtype, a.dtype) + ";");
    close_block();
  }
}

// The split lanes of a Welford accumulation folded pairwise into lane 0, as one state (text of
// a kiln_welford<double>, the shift K added back to the mean in double). Lanes of one count
// merge without a division: the mean is the average, m2 gains delta**2 * count / 2, and the
// count doubles each level. The lanes are overwritten.
std::string KernelEmitter::lanes_total(const sched::Accumulation& a, const std::string& suffix) {
  const std::string name = accumulator_names(a, suffix).value, t = compute_type(a.dtype);
  const std::string mean = name + "_mean", m2 = name + "_m2", count = name + "_count";
  for (int64_t width = split_lanes_ / 2; width > 0; width /= 2) {
    const std::string w = std::to_string(width);
    line("#pragma omp simd");
    line("for (int lane = 0; lane < " + w + "; ++lane) {");
    open_block();
    line("const " + t + " delta = " + mean + "[lane + " + w + "] - " + mean + "[lane];");
    line(mean + "[lane] += delta * " + t + "(0.5);");
    line(m2 + "[lane] += " + m2 + "[lane + " + w + "] + delta * delta * (" + count + " * " + t +
         "(0.5));");
    close_block();
    line(count + " *= 2;");
  }
  const std::string d = kWelfordType;
  return "kiln_welford<" + d + ">{" + d + "(" + count + "), " + d + "(" + name + "_shift) + " +
         d + "(" + mean + "[0]), " + d + "(" + m2 + "[0])}";
}

// The elements [start, end) after a lane split's last full step, fewer than its lanes: one more
// SIMD step over the first end - start lanes (element start + k into lane k, as a full step
// would put it), so that vector math runs there too (a scalar tail of a softmax's exp over
// rows of 500, 52 scalar expf calls a row, was 7% of GPT-2's profile). Welford states take them
// one after another into the reduction's own accumulator (`own_suffix`): their lanes keep one
// count. The bound is written as end - start, the literals of the loops around it, so that
// size-generic code reads it from its table as it does those (codegen/size_parameters.h).
void KernelEmitter::combine_remainder(const Stmt& s, const std::string& variable,
                                      const std::string& start, const std::string& end,
                                      const std::string& lanes_suffix,
                                      const std::string& own_suffix) {
  auto welford = [](const sched::Accumulation& a) {
    return ir::op_info(a.op).accumulator == ir::Accumulator::Welford;
  };
  Stmt lanes = s, own = s;
  std::erase_if(lanes.accumulations, welford);
  std::erase_if(own.accumulations, [&](const sched::Accumulation& a) { return !welford(a); });
  if (!lanes.accumulations.empty())
    lane_loop(lanes, variable, start, end + " - " + start, lanes_suffix);
  if (own.accumulations.empty()) return;
  line("for (int64_t " + variable + " = " + start + "; " + variable + " < " + end + "; ++" +
       variable + ") {");
  open_block();
  combine_elements(own, own_suffix, "");
  close_block();
}

// The reduction loops with the body and the combine inside. A reduction whose innermost loop is
// long enough is split across s.split_lanes independent accumulators (up to four SIMD
// registers' worth), so successive elements do not wait on one another; the lanes are merged
// at the end.
void KernelEmitter::reduce_loops(const Stmt& s, bool worksharing, const std::string& suffix, bool simd_ok) {
  const sched::Loop& last = s.reduce_loops.back();
  const bool can_split = simd_ok && s.body.empty() && !in_simd_loop_;
  const bool split = can_split && s.split_lanes > 0;
  const int64_t lanes = s.split_lanes;
  // Bounds read at run time (sched/trim_loops.h): [low, high) within [0, extent).
  const bool trimmed = last.begin >= 0 || last.end >= 0;
  bool float_sums = true;  // float sums and Welford (mean/variance) states: blocked
  for (const sched::Accumulation& a : s.accumulations)
    float_sums = float_sums && is_float(a.dtype) &&
                 (a.op == ir::Op::sum ||
                  ir::op_info(a.op).accumulator == ir::Accumulator::Welford);
  // Blocked only where a lane would otherwise chain more than a block's worth of elements; a
  // last loop too short to split feeds one register of lanes (mark_reduction_lanes.h).
  const bool blocked = can_split && float_sums && s.blocked_sum && !trimmed;
  split_lanes_ = blocked && !split ? sched::cpu::short_pass_lanes(s, target_) : lanes;
  // Welford lanes as arrays of means and m2 with one count (lane_loop, lanes_total), where they
  // fold pairwise: an array of (count, mean, m2) structs made the SIMD loop shuffle them (a
  // layer norm's rows of 768 took twice as long).
  bool split_welfords = (blocked || split) && (split_lanes_ & (split_lanes_ - 1)) == 0;
  for (const sched::Accumulation& a : s.accumulations)
    split_welfords = split_welfords && ir::op_info(a.op).accumulator != ir::Accumulator::ArgIndex;
  for (const sched::Accumulation& a : s.accumulations)
    if (split_welfords && ir::op_info(a.op).accumulator == ir::Accumulator::Welford)
      split_welfords_.insert(a.local);
  if (blocked) {
    blocked_sum_loops(s, worksharing, suffix, split_lanes_);
    split_welfords_.clear();
    return;
  }
  // A reduction clause cannot name a thread's private partials, so a worksharing loop never
  // carries one: it shares out the blocks of the lane split, or runs as a plain loop.
  const bool share_last = worksharing && s.reduce_loops.size() == 1;
  if (split) declare_accumulators(s, suffix + "_lanes", lanes);
  std::string clause;
  bool clause_ok = true;  // `omp simd reduction` covers only sums and products
  for (const sched::Accumulation& a : s.accumulations) {
    clause_ok = clause_ok && (a.op == ir::Op::sum || a.op == ir::Op::prod) && a.dtype != DType::Bool;
    clause += " reduction(" + std::string(a.op == ir::Op::prod ? "*" : "+") + ":" +
              accumulator_names(a, suffix).value + ")";
  }
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k) {
    const sched::Loop& l = s.reduce_loops[k];
    if (k == 0 && worksharing) line("#pragma omp for schedule(static) nowait");
    std::string v = loop_name(l.variable);
    line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(l.extent) + "; ++" + v + ") {");
    open_block();
  }
  std::string v = loop_name(last.variable), extent = std::to_string(last.extent), low = "0";
  const std::string width = std::to_string(lanes);
  // The whole lanes' end as arithmetic of the extent, which the C++ compiler folds: size-generic
  // code (codegen/size_parameters.h) then reads it from the extent's parameter, where a literal
  // end equal at every probed size (0 below one register's lanes) stayed a constant.
  std::string full = split ? "(" + extent + " / " + width + " * " + width + ")" : extent;
  if (trimmed) {
    auto [begin, end] = bounds_text(last);
    line("const int64_t " + v + "_low = " + begin + ";");
    line("const int64_t " + v + "_high = kiln_index_max(" + end + ", " + v + "_low);");
    if (split)
      line("const int64_t " + v + "_full = " + v + "_low + (" + v + "_high - " + v + "_low) / " +
           width + " * " + width + ";");
    low = v + "_low", extent = v + "_high", full = v + "_full";
  }
  if (split) {
    shift_lanes(s, v, low, full, suffix + "_lanes");  // (every thread's: the first element)
    if (share_last) line("#pragma omp for schedule(static) nowait");
    line("for (int64_t " + v + "_block = " + low + "; " + v + "_block < " + full + "; " + v + "_block += " + width + ") {");
    open_block();
    lane_loop(s, v, v + "_block", width, suffix + "_lanes");
    close_block();
    // The remainder, written even when it is empty (the compiler drops it then), so that the
    // code has one shape for every extent (size-generic code: codegen/size_parameters.h).
    if (share_last) {
      line("#pragma omp single nowait");
      line("{");
      open_block();
    }
    combine_remainder(s, v, full, extent, suffix + "_lanes", suffix);
    if (share_last) close_block();
  } else {
    bool simd = simd_ok && clause_ok && s.body.empty() && !in_simd_loop_;
    if (share_last)
      line("#pragma omp for schedule(static) nowait");
    else if (simd)
      line("#pragma omp simd" + clause);
    line("for (int64_t " + v + " = " + low + "; " + v + " < " + extent + "; ++" + v + ") {");
    open_block();
    statements(s.body);
    combine_elements(s, suffix, "");
    close_block();
  }
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k) close_block();
  if (split) fold_lanes(s, suffix, lanes);
  split_welfords_.clear();
}

// `s` without its split Welford accumulations (folded by lanes_total instead).
Stmt KernelEmitter::without_split_welfords(const Stmt& s) const {
  Stmt rest = s;
  std::erase_if(rest.accumulations,
                [&](const sched::Accumulation& a) { return split_welfords_.count(a.local) > 0; });
  return rest;
}

// Merges the SIMD lanes into the accumulators. Pairwise, one SIMD loop per level: folded one
// lane after another, 64 lanes cost as much as the loop itself on a row of a few hundred
// elements (softmax over 128 keys, BERT's layer norms). argmax/argmin stay sequential: their
// merge is written for partials in index order.
void KernelEmitter::fold_lanes(const Stmt& s, const std::string& suffix, int64_t lanes) {
  const std::string into = suffix + "_lanes";
  bool pairwise = (lanes & (lanes - 1)) == 0;
  for (const sched::Accumulation& a : s.accumulations)
    pairwise = pairwise && ir::op_info(a.op).accumulator != ir::Accumulator::ArgIndex;
  if (!pairwise) {
    line("for (int lane = 0; lane < " + std::to_string(lanes) + "; ++lane) {");
    open_block();
    merge_partials(s, suffix, into, "[lane]");
    close_block();
    return;
  }
  for (int64_t width = lanes / 2; width > 0; width /= 2) {
    const std::string w = std::to_string(width);
    line("#pragma omp simd");
    line("for (int lane = 0; lane < " + w + "; ++lane) {");
    open_block();
    merge_partials(without_split_welfords(s), into, into, "[lane + " + w + "]", "[lane]");
    close_block();
  }
  merge_partials(s, suffix, into, "[0]");
}

void KernelEmitter::reduce(const Stmt& s) {
  if (s.lanes_loop.variable >= 0) return lane_reduce(s);
  // Splitting a reduction into SIMD lanes or thread partials changes the order of combination:
  // harmless for max/min/argmax/any/all and integer sums, a reassociation for float sums,
  // products and Welford, which the options must allow.
  bool simd_ok = true;
  for (const sched::Accumulation& a : s.accumulations) {
    bool order_free = !is_float(a.dtype) || a.op == ir::Op::max || a.op == ir::Op::min ||
                      ir::op_info(a.op).accumulator == ir::Accumulator::ArgIndex;
    simd_ok = simd_ok && (order_free || options_.allow_reassociation);
  }
  declare_accumulators(s, "");
  if (s.guard >= 0) {  // sched/guard_reductions.h: the result is read only where it holds
    line("if (" + value(s.guard) + ") {");
    open_block();
  }
  if (s.parallel && !s.reduce_loops.empty()) {
    // Each thread reduces a static share of the outermost loop into its own partials.
    line("#pragma omp parallel" + parallel_clause());
    line("{");
    open_block();
    declare_accumulators(s, "_part");
    reduce_loops(s, /*worksharing=*/true, "_part", simd_ok);
    line("#pragma omp critical");
    line("{");
    open_block();
    merge_partials(s, "", "_part");
    close_block();
    close_block();
  } else {
    reduce_loops(s, /*worksharing=*/false, "", simd_ok);
  }
  if (s.guard >= 0) close_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string type = ir::op_info(a.op).accumulator == ir::Accumulator::ArgIndex ? "int64_t" : compute_type(a.dtype);
    line("const " + type + " " + local_name(a.local) + " = " + finalized(a, "") + ";");
  }
}

// The value an accumulation stands for once all elements are in.
std::string KernelEmitter::finalized(const sched::Accumulation& a, const std::string& subscript) {
  AccumulatorNames acc = accumulator_names(a, "", subscript);
  switch (ir::op_info(a.op).accumulator) {
    case ir::Accumulator::ArgIndex:
      return acc.index + " < 0 ? 0 : " + acc.index;
    case ir::Accumulator::Welford:
      if (shared_count_welfords_.count(a.local)) {
        const std::string base = accumulator_names(a, "").value;
        return rounded_to(a.dtype, "kiln_welford_variance(kiln_welford<" +
                                       std::string(kWelfordType) + ">{" + base + "_count, " +
                                       base + "_mean" + subscript + ", " + base + "_m2" +
                                       subscript + "}, " + std::to_string(a.ddof) + ")");
      }
      return rounded_to(a.dtype, "kiln_welford_variance(" + acc.value + ", " +
                                     std::to_string(a.ddof) + ")");
    default:
      return rounded_to(a.dtype, acc.value);
  }
}

// A reduction computed for every lane of s.lanes_loop at once: arrays of accumulators, the
// lane loop innermost (stride 1, SIMD); the results are read in the following lane loop.
void KernelEmitter::lane_reduce(const Stmt& s) {
  const sched::Loop& lanes = s.lanes_loop;
  std::string lane = loop_name(lanes.variable);
  for (const sched::Accumulation& a : s.accumulations)
    if (ir::op_info(a.op).accumulator == ir::Accumulator::Welford)
      shared_count_welfords_.insert(a.local);
  declare_accumulators(s, "", lanes.extent);
  // Float sums down columns add rows in blocks of kBlockSteps, and blocks in blocks, into arrays
  // of their own: a lane's longest chain is 2 * kBlockSteps + rows / kBlockSteps**2, not one
  // addition per row (a (156250, 64) float32 column sum was 1.7e-5 off, eager's 2e-7). Plain
  // reductions beside them (a max) fold alike; Welford and arg reductions keep their form.
  bool blocked = options_.allow_reassociation, float_sum = false;
  for (const sched::Accumulation& a : s.accumulations) {
    blocked = blocked && ir::op_info(a.op).accumulator == ir::Accumulator::Plain;
    float_sum = float_sum || (a.op == ir::Op::sum && is_float(a.dtype));
  }
  blocked = blocked && float_sum;
  // (named after the statement's first accumulator: reductions beside it share its lane loop)
  const std::string counter = s.accumulations.empty() ? lane
                                                       : accumulator_names(s.accumulations[0], "").value;
  const std::string rows = counter + "_row_count", blocks = counter + "_block_count";
  const std::string steps = std::to_string(kBlockSteps);
  auto [begin, end] = bounds_text(lanes);
  auto fold = [&](const std::string& into, const std::string& from) {  // from's lanes join into's
    line("#pragma omp simd");
    line("for (int64_t " + lane + " = " + begin + "; " + lane + " < " + end + "; ++" + lane + ") {");
    open_block();
    merge_partials(s, into, from, "[" + lane + "]", "[" + lane + "]");
    for (const sched::Accumulation& a : s.accumulations)
      line(accumulator_names(a, from, "[" + lane + "]").value + " = kiln_identity_" +
           std::string(ir::op_info(a.op).name) + "<" + compute_type(a.dtype) + ">();");
    close_block();
  };
  if (blocked) {
    declare_accumulators(s, "_rows", lanes.extent);
    declare_accumulators(s, "_blocks", lanes.extent);
    line("int64_t " + rows + " = 0, " + blocks + " = 0;");
  }
  for (const sched::Loop& l : s.reduce_loops) {
    std::string v = loop_name(l.variable);
    line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(l.extent) + "; ++" + v + ") {");
    open_block();
  }
  for (const sched::Accumulation& a : s.accumulations) {  // the lanes' shared count and its reciprocal
    if (!shared_count_welfords_.count(a.local)) continue;
    const std::string base = accumulator_names(a, "").value, t = kWelfordType;
    line(base + "_count += 1;");
    line("const " + t + " " + base + "_step = " + t + "(1) / " + base + "_count;");
  }
  // Lanes outside [begin, end) (sched/cpu/interchange_reductions.h) keep the identity.
  line("#pragma omp simd");
  line("for (int64_t " + lane + " = " + begin + "; " + lane + " < " + end + "; ++" + lane + ") {");
  open_block();
  combine_elements(s, blocked ? "_rows" : "", "[" + lane + "]");
  close_block();
  if (blocked) {
    line("if (++" + rows + " == " + steps + ") {");
    open_block();
    fold("_blocks", "_rows");
    line(rows + " = 0;");
    line("if (++" + blocks + " == " + steps + ") {");
    open_block();
    fold("", "_blocks");
    line(blocks + " = 0;");
    close_block();
    close_block();
  }
  for (size_t k = 0; k < s.reduce_loops.size(); ++k) close_block();
  if (blocked) {
    fold("_blocks", "_rows");
    fold("", "_blocks");
  }
  for (const sched::Accumulation& a : s.accumulations) {
    LaneAccumulation entry;
    static_cast<sched::Accumulation&>(entry) = a;
    entry.lane_variable = lanes.variable;
    lane_locals_[a.local] = entry;
  }
}

// A scan of every lane of s.lanes_loop at once (sched/cpu/interleave_scans.h): an array of
// accumulators, the lane loop inside the scan's loop (SIMD), each lane in its own order.
void KernelEmitter::scan(const Stmt& s) {
  if (s.lanes_loop.variable < 0) return CLikePrinter::scan(s);
  const sched::Accumulation& a = s.accumulations[0];
  const std::string t = compute_type(a.dtype), acc = "acc" + std::to_string(a.local);
  const std::string name(ir::op_info(a.op).name), lane = loop_name(s.lanes_loop.variable);
  const std::string width = std::to_string(s.lanes_loop.extent);
  line(t + " " + acc + "[" + width + "];");
  line("for (int64_t " + lane + " = 0; " + lane + " < " + width + "; ++" + lane + ") " + acc + "[" +
       lane + "] = kiln_identity_" + name + "<" + t + ">();");
  const std::string step = loop_name(s.reduce_loops[0].variable);
  line("for (int64_t " + step + " = 0; " + step + " < " + std::to_string(s.reduce_loops[0].extent) +
       "; ++" + step + ") {");
  open_block();
  auto [begin, end] = bounds_text(s.lanes_loop);
  line("#pragma omp simd");
  line("for (int64_t " + lane + " = " + begin + "; " + lane + " < " + end + "; ++" + lane + ") {");
  open_block();
  const std::string x = convert(value(a.value), expr(a.value).dtype, a.dtype);
  line(acc + "[" + lane + "] = kiln_combine_" + name + "(" + acc + "[" + lane + "], " + x + ");");
  line(store_text(s.buffer, index_text(s.index), acc + "[" + lane + "]", a.dtype));
  close_block();
  close_block();
}

}  // namespace kiln::codegen::cpp_detail
