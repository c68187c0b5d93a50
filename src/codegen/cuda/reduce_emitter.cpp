// Reductions of the CUDA emitter: one thread's and a block's (warp shuffles, then one
// shared-memory step); those spanning blocks or a block's columns are grid_reduce_emitter.cpp's.
#include "codegen/cuda/kernel_emitter.h"

#include <algorithm>
#include <functional>

namespace kiln::codegen::cuda_detail {

void CudaKernelEmitter::declare_accumulators(const Stmt& s) {
  for (const sched::Accumulation& a : s.accumulations) {
    line(accumulator_type(a) + " " + accumulator(a) + " = " + identity(a) + ";");
    if (has_index(a)) line("int64_t " + accumulator(a) + "_index = -1;");
    if (ir::op_info(a.op).accumulator == ir::Accumulator::Welford) {  // shifted sums (below)
      const std::string t = compute_type(a.dtype);
      line("kiln_welford<" + t + "> " + fold_state(a) + " = kiln_welford<" + t + ">{0, 0, 0};");
      line(t + " " + welford_state(a) + "_shift = 0;");
    }
  }
}

// A thread's own elements of a Welford reduction are folded as shifted sums: the count, the sum
// of x - K and the sum of (x - K)^2 in the fields of its fold_state, in the compute type, K the
// first element the thread met (a sample of the data, so the subtraction loses few digits). A
// Welford update divides per element, and the divisions made batch norm's column statistics
// 2.3x slower than plain sums on an H200; this adds and multiplies. state_from_fold makes them
// the thread's double Welford state before threads merge theirs (Chan's formula,
// kiln_welford_merge). A block's two passes (cooperative_reduce) merge the sums themselves.
void CudaKernelEmitter::state_from_fold(const Stmt& s) {
  for (const sched::Accumulation& a : s.accumulations) {
    if (ir::op_info(a.op).accumulator != ir::Accumulator::Welford) continue;
    const std::string acc = welford_state(a), fold = fold_state(a);
    line("if (" + fold + ".count > 0) { const double kiln_s = " + fold + ".mean, kiln_m = kiln_s / " +
         fold + ".count; " + acc + ".count = " + fold + ".count; " + acc + ".mean = (double)" +
         acc + "_shift + kiln_m; " + acc + ".m2 = kiln_maximum((double)" + fold +
         ".m2 - kiln_s * kiln_m, 0.0); }");
  }
}

void CudaKernelEmitter::combine_element(const Stmt& s) {
  for (const sched::Accumulation& a : s.accumulations) {
    const ir::OpInfo& info = ir::op_info(a.op);
    std::string acc = accumulator(a), name(info.name);
    std::string x = convert(value(a.value), expr(a.value).dtype, a.dtype);
    switch (info.accumulator) {
      case ir::Accumulator::Plain:
        line(acc + " = kiln_combine_" + name + "(" + acc + ", " + x + ");");
        break;
      case ir::Accumulator::ArgIndex:
        line("if (kiln_" + name + "_better(" + x + ", " + acc + ") || " + acc + "_index < 0) { " +
             acc + " = " + x + "; " + acc + "_index = " + index_text(a.position) + "; }");
        break;
      case ir::Accumulator::Welford: {
        const std::string fold = fold_state(a), t = compute_type(a.dtype);
        if (welford_pass_ == 1) {  // count and sum
          line(fold + ".count += 1; " + fold + ".mean += " + x + ";");
        } else if (welford_pass_ == 2) {  // deviations from the block's mean, and their squares
          line("{ const " + t + " kiln_d = " + x + " - " + welford_state(a) + "_center; " + fold +
               ".mean += kiln_d; " + fold + ".m2 += kiln_d * kiln_d; }");
        } else {  // shifted sums, made a Welford state by state_from_fold
          line("{ const " + t + " kiln_x = " + x + "; if (" + fold + ".count == 0) " + acc +
               "_shift = kiln_x; const " + t + " kiln_d = kiln_x - " + acc + "_shift; " + fold +
               ".count += 1; " + fold + ".mean += kiln_d; " + fold + ".m2 += kiln_d * kiln_d; }");
        }
        break;
      }
      default:
        break;
    }
  }
}

// Folds the partial `from` (and from_index) into `into`; argmax/argmin ties go to the lower
// index, as in the serial loop.
void CudaKernelEmitter::merge(const sched::Accumulation& a, const std::string& into,
                              const std::string& from) {
  const ir::OpInfo& info = ir::op_info(a.op);
  std::string name(info.name);
  switch (info.accumulator) {
    case ir::Accumulator::Plain:
      line(into + " = kiln_combine_" + name + "(" + into + ", " + from + ");");
      break;
    case ir::Accumulator::ArgIndex:
      line("if (" + from + "_index >= 0 && (" + into + "_index < 0 || kiln_" + name + "_better(" +
           from + ", " + into + ") || (!kiln_" + name + "_better(" + into + ", " + from + ") && " +
           from + "_index < " + into + "_index))) { " + into + " = " + from + "; " + into +
           "_index = " + from + "_index; }");
      break;
    case ir::Accumulator::Welford:
      if (welford_pass_ == 1)
        line(into + ".count += " + from + ".count; " + into + ".mean += " + from + ".mean;");
      else if (welford_pass_ == 2)
        line(into + ".mean += " + from + ".mean; " + into + ".m2 += " + from + ".m2;");
      else
        line(into + " = kiln_welford_merge(" + into + ", " + from + ");");
      break;
    default:
      break;
  }
}

// The locals the statements after a reduction read.
void CudaKernelEmitter::finish(const Stmt& s) {
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a), result;
    switch (ir::op_info(a.op).accumulator) {
      case ir::Accumulator::ArgIndex:
        result = acc + "_index < 0 ? 0 : " + acc + "_index";
        break;
      case ir::Accumulator::Welford:  // a double state
        result = "(" + compute_type(a.dtype) + ")kiln_welford_variance(" + acc + ", " +
                 std::to_string(a.ddof) + ")";
        break;
      default:
        result = acc;
    }
    std::string type = has_index(a) ? "int64_t" : compute_type(a.dtype);
    if (!has_index(a)) result = rounded_to(a.dtype, result);
    line("const " + type + " " + local_name(a.local) + " = " + result + ";");
  }
}

// A store after a reduction runs on the first thread once the team has combined it, after
// the reduction's barriers; its loads of what the kernel never writes are issued before the
// reduction, their latency passing during it (forward substitution's b[i] and L[i, i] after
// the row's dot product: an L2 round trip each iteration). Every thread issues them: the
// store's thread 0 reads the same elements (a select evaluates both operands: no load is
// conditional, and NumPy indexing's are clamped).
void CudaKernelEmitter::prefetch_epilogue_loads(const std::vector<Stmt>& body, size_t from) {
  std::vector<ExprId> loads;
  std::function<void(ExprId)> collect = [&](ExprId id) {
    const Expr& e = expr(id);
    if (e.kind == ExprKind::Load && readable_early(id)) {
      loads.push_back(id);
      return;
    }
    for (ExprId operand : e.operands) collect(operand);
  };
  // Its stores, also those of one-element loops (a pointwise nest over a (1, 1) result).
  std::function<void(const Stmt&)> collect_stores = [&](const Stmt& s) {
    if (s.kind == StmtKind::Store) {
      collect(s.index);
      collect(s.value);
    }
    for (const Stmt& t : s.body) collect_stores(t);
  };
  for (size_t k = from; k < body.size() && one_element(body[k]); ++k) collect_stores(body[k]);
  for (ExprId id : loads) value(id);
}

bool CudaKernelEmitter::readable_early(ExprId id) const {
  const Expr& e = expr(id);
  switch (e.kind) {
    case ExprKind::Constant:
      return true;
    case ExprKind::Load:
      if (std::count(kernel_.buffers_written.begin(), kernel_.buffers_written.end(), e.buffer))
        return false;
      break;
    case ExprKind::LoopVar:  // (a loop of the store's own, or the reduction's)
    case ExprKind::Local:
    case ExprKind::Random:
    case ExprKind::ArrayLoad:
      return false;
    default:
      break;
  }
  return std::all_of(e.operands.begin(), e.operands.end(),
                     [&](ExprId operand) { return readable_early(operand); });
}

// One thread's reduction: the loops in order.
void CudaKernelEmitter::reduce(const Stmt& s) {
  declare_accumulators(s);
  if (s.guard >= 0) {  // sched/guard_reductions.h: the result is read only where it holds
    line("if (" + value(s.guard) + ") {");
    open_block();
  }
  for (const sched::Loop& l : s.reduce_loops) {
    auto [begin, end] = bounds_text(l);
    std::string v = loop_name(l.variable);
    if (!plan_.shared_loads.empty() && l.variable == plan_.shared_loop.variable)
      line("#pragma unroll");  // the shared loads' registers are indexed by it
    line("for (int64_t " + v + " = " + begin + "; " + v + " < " + end + "; ++" + v + ") {");
    open_block();
  }
  statements(s.body);
  combine_element(s);
  for (size_t k = 0; k < s.reduce_loops.size(); ++k) close_block();
  if (s.guard >= 0) close_block();
  state_from_fold(s);
  finish(s);
}

// A reduction shared by the block: each thread folds a strided share of the flattened
// reduction loops, then the partials meet through warp shuffles and one shared-memory step.
// Mean and variance (Welford states) take two passes over the elements, as Inductor's
// persistent reductions do: the count and sum, then the squared deviations from the mean. A
// Welford update per element divides, and the divisions bound a layer norm's speed (2.4x
// slower than torch.compile's); the second pass reads what the first left in the caches. Both
// passes' sums are plain ones, merged in the compute type (accumulator() names the threads'
// fold states there): the second pass's deviations are from the mean rounded to the compute type
// (the center: a float32 sum of data near 1e3 puts it up to 1e-3 off), and their sum s, merged
// beside the squares, corrects for the center's error exactly (m2 - s^2 / n), while both sums,
// of small deviations, keep their digits in float32. Double merges cost a layer norm 10%.
void CudaKernelEmitter::cooperative_reduce(const Stmt& s) {
  declare_accumulators(s);
  Stmt deviations = s;
  std::erase_if(deviations.accumulations, [](const sched::Accumulation& a) {
    return ir::op_info(a.op).accumulator != ir::Accumulator::Welford;
  });
  welford_pass_ = deviations.accumulations.empty() ? 0 : 1;
  line("{");
  open_block();
  fold_elements(s, member(), threads());
  if (welford_pass_ == 0) state_from_fold(s);
  block_combine(s);
  close_block();
  if (welford_pass_ == 1) {
    for (const sched::Accumulation& a : deviations.accumulations) {
      const std::string acc = welford_state(a), fold = fold_state(a), t = compute_type(a.dtype);
      line(acc + ".count = " + fold + ".count; " + acc + ".mean = " + fold + ".count > 0 ? (double)" +
           fold + ".mean / " + fold + ".count : 0;");
      line("const " + t + " " + acc + "_center = (" + t + ")" + acc + ".mean;");
      line(fold + " = kiln_welford<" + t + ">{0, 0, 0};");
    }
    welford_pass_ = 2;
    line("{");
    open_block();
    fold_elements(deviations, member(), threads());
    block_combine(deviations);
    close_block();
    // The deviations' sum s moves the mean off the center, and n (s / n)^2 of their squares
    // is that offset's share.
    for (const sched::Accumulation& a : deviations.accumulations) {
      const std::string acc = welford_state(a), fold = fold_state(a);
      line("if (" + acc + ".count > 0) { const double kiln_s = " + fold + ".mean, kiln_m = kiln_s / " +
           acc + ".count; " + acc + ".mean = (double)" + acc + "_center + kiln_m; " + acc +
           ".m2 = kiln_maximum((double)" + fold + ".m2 - kiln_s * kiln_m, 0.0); }");
    }
    welford_pass_ = 0;
  }
  finish(s);
}

// The team's accumulators combined: within each warp, then across the block's warps through
// shared memory (a warp team: lane 0's value shuffled to the others); every thread ends with
// the team's value.
void CudaKernelEmitter::block_combine(const Stmt& s) {
  auto warp_combine = [&] {
    line("for (int kiln_delta = 16; kiln_delta > 0; kiln_delta >>= 1) {");
    open_block();
    for (const sched::Accumulation& a : s.accumulations) {
      std::string acc = accumulator(a), other = acc + "_other";
      const bool welford = ir::op_info(a.op).accumulator == ir::Accumulator::Welford;
      if (welford && welford_pass_ != 0) {  // only the fields this pass merges
        line(accumulator_type(a) + " " + other + ";");
        const std::vector<std::string> fields =
            welford_pass_ == 1 ? std::vector<std::string>{"count", "mean"}
                               : std::vector<std::string>{"mean", "m2"};
        for (const std::string& f : fields)
          line(other + "." + f + " = kiln_shuffle_down(" + acc + "." + f + ", kiln_delta);");
        merge(a, acc, other);
        continue;
      }
      line("const " + accumulator_type(a) + " " + other + " = kiln_shuffle_down(" + acc + ", kiln_delta);");
      if (has_index(a))
        line("const int64_t " + other + "_index = kiln_shuffle_down(" + acc + "_index, kiln_delta);");
      merge(a, acc, other);
    }
    close_block();
  };
  warp_combine();
  if (plan_.warp_iterations) {  // the team is the warp: lane 0's value to every lane
    for (const sched::Accumulation& a : s.accumulations) {
      const std::string acc = accumulator(a);
      line(acc + " = kiln_shuffle_first(" + acc + ");");
      if (has_index(a)) line(acc + "_index = kiln_shuffle_first(" + acc + "_index);");
    }
    return;
  }
  const std::string warps = std::to_string(std::max(1, plan_.threads / kWarp));
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line("__shared__ " + accumulator_type(a) + " " + acc + "_warps[" + warps + "];");
    if (has_index(a)) line("__shared__ int64_t " + acc + "_index_warps[" + warps + "];");
    line("if ((threadIdx.x & 31) == 0) " + acc + "_warps[threadIdx.x >> 5] = " + acc + ";");
    if (has_index(a)) line("if ((threadIdx.x & 31) == 0) " + acc + "_index_warps[threadIdx.x >> 5] = " + acc + "_index;");
  }
  line(block_barrier());
  if (plan_.threads / kWarp <= kMostWarpsMergedInOrder) {
    // Every thread merges the warps' values in order (the same value in each): one barrier
    // fewer than a first warp's shuffles and its broadcast (softmax rows 12.2 -> 11.7 us).
    for (const sched::Accumulation& a : s.accumulations) {
      const std::string acc = accumulator(a), other = acc + "_other";
      line(acc + " = " + acc + "_warps[0];");
      if (has_index(a)) line(acc + "_index = " + acc + "_index_warps[0];");
      line("#pragma unroll");
      line("for (int kiln_w = 1; kiln_w < " + warps + "; ++kiln_w) {");
      open_block();
      line("const " + accumulator_type(a) + " " + other + " = " + acc + "_warps[kiln_w];");
      if (has_index(a)) line("const int64_t " + other + "_index = " + acc + "_index_warps[kiln_w];");
      merge(a, acc, other);
      close_block();
    }
  } else {
    line("if (threadIdx.x < 32) {");
    open_block();
    for (const sched::Accumulation& a : s.accumulations) {
      std::string acc = accumulator(a);
      line(acc + " = threadIdx.x < " + warps + " ? " + acc + "_warps[threadIdx.x] : " +
           identity(a) + ";");
      if (has_index(a))
        line(acc + "_index = threadIdx.x < " + warps + " ? " + acc +
             "_index_warps[threadIdx.x] : -1;");
    }
    warp_combine();
    // The first thread holds the team's value: where only it reads it, no broadcast (a
    // triangular solve's row: 5 barriers an iteration before, 2 now).
    const bool broadcast = !(first_thread_reads_ && welford_pass_ != 1);
    if (!broadcast) {
      close_block();
      if (!single_pass_) line(block_barrier());
      return;
    }
    for (const sched::Accumulation& a : s.accumulations) {
      std::string acc = accumulator(a);
      line("if (threadIdx.x == 0) " + acc + "_warps[0] = " + acc + ";");
      if (has_index(a)) line("if (threadIdx.x == 0) " + acc + "_index_warps[0] = " + acc + "_index;");
    }
    close_block();
    line(block_barrier());
    for (const sched::Accumulation& a : s.accumulations) {
      std::string acc = accumulator(a);
      line(acc + " = " + acc + "_warps[0];");
      if (has_index(a)) line(acc + "_index = " + acc + "_index_warps[0];");
    }
  }
  // The next pass over this code (the next row) writes the same shared slots.
  if (!single_pass_) line(block_barrier());
}

}  // namespace kiln::codegen::cuda_detail
