// Reductions of the CUDA emitter: one thread's, a block's (warp shuffles, then one
// shared-memory step) and the grid's (split reductions).
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
  for (size_t k = from; k < body.size() && body[k].kind == StmtKind::Store; ++k) {
    collect(body[k].index);
    collect(body[k].value);
  }
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

// The scalar fields of an accumulation's state, each kept in a scratch array of one slot per
// block by a split reduction: (expression of the accumulator, C type).
std::vector<std::pair<std::string, std::string>> CudaKernelEmitter::state_fields(
    const sched::Accumulation& a) const {
  std::string acc = accumulator(a), t = compute_type(a.dtype);
  switch (ir::op_info(a.op).accumulator) {
    case ir::Accumulator::Welford:  // double, as accumulator_type
      return {{acc + ".count", "double"}, {acc + ".mean", "double"}, {acc + ".m2", "double"}};
    case ir::Accumulator::ArgIndex:
      return {{acc, t}, {acc + "_index", "int64_t"}};
    default:
      return {{acc, t}};
  }
}

// A split reduction (LaunchKind::SplitReduce): the grid folds the leading reductions, each block
// leaves its partial states in the scratch arrays, and the last block to finish (a ticket
// counter, as CUDA's threadFenceReduction sample) merges them and runs the rest of the body.
void CudaKernelEmitter::split_reduce(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  for (const Stmt& s : leading) declare_accumulators(s);
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    fold_elements(s, "blockIdx.x * (int64_t)" + threads() + " + threadIdx.x",
                  "(int64_t)gridDim.x * " + threads());
    state_from_fold(s);
    block_combine(s);
    close_block();
  }
  merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  cooperative(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
}


// LaunchKind::ColumnTiles: lane k of every warp takes outer iteration 32 * tile + k (clamped to
// the last one past the end; those lanes store nothing), warp w the rows w, w + 8, ... of the
// flattened reduction loops (with split blocks: the rows of its block's share), so each warp
// load is one contiguous run of 32 elements.
void CudaKernelEmitter::column_tiles(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  const int rows = plan_.threads / kWarp;
  const std::string tiles = std::to_string(plan_.column_tiles);
  const bool split = plan_.block_splits > 1;
  if (split) {  // one tile and share per block: the last block of a tile may return early
    line("{");
    open_block();
    line("const int64_t kiln_tile = blockIdx.x % " + tiles + ";");
    line("const int64_t kiln_split = blockIdx.x / " + tiles + ";");
  } else {
    line("for (int64_t kiln_tile = " + block_index() + "; kiln_tile < " + tiles + "; kiln_tile += " + grid_blocks() + ") {");
    open_block();
  }
  line("const int64_t kiln_column = kiln_tile * " + std::to_string(kWarp) + " + (threadIdx.x & 31);");
  line("const int kiln_row = threadIdx.x >> 5;");
  line("const bool kiln_live = kiln_column < " + std::to_string(plan_.iterations) + ";");
  line("const int64_t kiln_flat = kiln_live ? kiln_column : " +
       std::to_string(plan_.iterations - 1) + ";");
  flattened_chain("kiln_flat");
  const std::string first = split ? "kiln_split * " + std::to_string(rows) + " + kiln_row"
                                  : "(int64_t)kiln_row";
  const std::string step = std::to_string(int64_t(rows) * plan_.block_splits);
  for (const Stmt& s : leading) declare_accumulators(s);
  // The rows column_combine merges through, declared once for both of its uses (the block's
  // combine and the split blocks' merge): each __shared__ declaration takes its own memory.
  for (const Stmt& s : leading)
    for (const sched::Accumulation& a : s.accumulations) {
      const std::string acc = accumulator(a), rows_text = std::to_string(rows);
      line("__shared__ " + accumulator_type(a) + " " + acc + "_rows[" + rows_text + "][32];");
      if (has_index(a)) line("__shared__ int64_t " + acc + "_index_rows[" + rows_text + "][32];");
    }
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    fold_elements(s, first, step);
    state_from_fold(s);
    column_combine(s);
    close_block();
  }
  if (split) merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  line("if (kiln_row == 0 && kiln_live) {");
  open_block();
  statements(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
  close_block();
  close_block();
}

// A column's accumulators combined across the block's warps through shared memory (the rows
// column_tiles declares); every thread of the column ends with the block's value.
void CudaKernelEmitter::column_combine(const Stmt& s) {
  const std::string rows = std::to_string(plan_.threads / kWarp);
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + "_rows[kiln_row][threadIdx.x & 31] = " + acc + ";");
    if (has_index(a)) line(acc + "_index_rows[kiln_row][threadIdx.x & 31] = " + acc + "_index;");
  }
  line(block_barrier());
  line("if (kiln_row == 0) {");
  open_block();
  line("for (int kiln_other_row = 1; kiln_other_row < " + rows + "; ++kiln_other_row) {");
  open_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a), other = acc + "_other";
    line("const " + accumulator_type(a) + " " + other + " = " + acc +
         "_rows[kiln_other_row][threadIdx.x & 31];");
    if (has_index(a))
      line("const int64_t " + other + "_index = " + acc + "_index_rows[kiln_other_row][threadIdx.x & 31];");
    merge(a, acc, other);
  }
  close_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + "_rows[0][threadIdx.x & 31] = " + acc + ";");
    if (has_index(a)) line(acc + "_index_rows[0][threadIdx.x & 31] = " + acc + "_index;");
  }
  close_block();
  line(block_barrier());
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + " = " + acc + "_rows[0][threadIdx.x & 31];");
    if (has_index(a)) line(acc + "_index = " + acc + "_index_rows[0][threadIdx.x & 31];");
  }
  line(block_barrier());  // the next tile or statement writes the same slots
}

// BlockPerIteration with split blocks: block b takes iteration b % iterations and share
// b / iterations of its reductions' elements; the last block of the iteration stores.
void CudaKernelEmitter::split_iterations(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  const std::string iterations = std::to_string(plan_.iterations);
  line("{");
  open_block();
  line("const int64_t kiln_flat = blockIdx.x % " + iterations + ";");
  line("const int64_t kiln_split = blockIdx.x / " + iterations + ";");
  flattened_chain("kiln_flat");
  for (const Stmt& s : leading) declare_accumulators(s);
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    if (nests_over_threads(s))  // the blocks share the outermost loop, the threads the last
      fold_elements(s, "threadIdx.x", threads(), "kiln_split", std::to_string(plan_.block_splits));
    else
      fold_elements(s, "kiln_split * " + threads() + " + threadIdx.x",
                    std::to_string(int64_t(plan_.threads) * plan_.block_splits));
    state_from_fold(s);
    block_combine(s);
    close_block();
  }
  merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  line("if (threadIdx.x == 0) {");
  open_block();
  statements(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
  close_block();
  close_block();
}

// Split blocks (LaunchPlan::block_splits, and SplitReduce's whole grid as one group): each
// block leaves its partial states (a tile's: one per lane) in the scratch slots of (group,
// split), and the last block of the group to finish (a ticket counter per group, as CUDA's
// threadFenceReduction sample) merges them; every thread ends with the group's states.
void CudaKernelEmitter::merge_block_splits(const std::vector<Stmt>& leading) {
  const bool columns = plan_.kind == LaunchKind::ColumnTiles;
  const bool whole_grid = plan_.kind == LaunchKind::SplitReduce;
  const std::string group = columns ? "kiln_tile" : whole_grid ? "0" : "kiln_flat";
  const std::string split = whole_grid ? "blockIdx.x" : "kiln_split";
  const std::string splits = whole_grid ? "gridDim.x" : std::to_string(plan_.block_splits);
  const std::string lanes = std::to_string(split_lanes(plan_));
  const std::string lane = columns ? " + (threadIdx.x & 31)" : "";
  const std::string slots_per_field =
      whole_grid ? "(int64_t)gridDim.x"
                 : std::to_string(split_groups(plan_) * plan_.block_splits * split_lanes(plan_));
  auto slot = [&](const std::string& part) {
    return "(" + group + " * " + splits + " + " + part + ") * " + lanes + lane;
  };
  line("unsigned int* const kiln_tickets = (unsigned int*)kiln_scratch;");
  int field = 0;
  std::vector<std::string> slots, slot_types;  // by field, in order
  for (const Stmt& s : leading)
    for (const sched::Accumulation& a : s.accumulations)
      for (const auto& [expression, type] : state_fields(a)) {
        std::string name = "kiln_slots" + std::to_string(field);
        line("volatile " + type + "* const " + name + " = (volatile " + type + "*)(kiln_scratch + " +
             std::to_string(split_ticket_bytes(plan_)) + " + " + std::to_string(8 * field) +
             " * " + slots_per_field + ");");
        line("if (" + std::string(columns ? "kiln_row" : "threadIdx.x") + " == 0) " + name + "[" +
             slot(split) + "] = " + expression + ";");
        slots.push_back(name);
        slot_types.push_back(type);
        ++field;
      }
  line("__threadfence();");
  line(block_barrier());
  line("__shared__ bool kiln_last_block;");
  line("if (threadIdx.x == 0) kiln_last_block = atomicAdd(kiln_tickets + " + group + ", 1u) == " +
       splits + " - 1u;");
  line(block_barrier());
  line("if (!kiln_last_block) return;");
  line("__threadfence();");
  line("if (threadIdx.x == 0) kiln_tickets[" + group + "] = 0;  // ready for the next launch");
  field = 0;
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    const int first_field = field;
    for (const sched::Accumulation& a : s.accumulations) {
      line(accumulator(a) + " = " + identity(a) + ";");
      if (has_index(a)) line(accumulator(a) + "_index = -1;");
    }
    // The parts in batches: a batch's loads all issue before its merges, one round trip to L2
    // per batch where each merge waited for its own load (resnet18's first batch-norm
    // statistics, 196 parts a column tile: 15.0 to 12.0 us on an H200).
    const std::string step = std::to_string(columns ? plan_.threads / kWarp : plan_.threads);
    const std::string batch = std::to_string(kPartsPerBatch);
    line("for (int64_t kiln_batch = " + std::string(columns ? "kiln_row" : "threadIdx.x") +
         "; kiln_batch < " + splits + "; kiln_batch += " + step + " * " + batch + ") {");
    open_block();
    int last_field = first_field;
    for (const sched::Accumulation& a : s.accumulations)
      last_field += static_cast<int>(state_fields(a).size());
    for (int f = first_field; f < last_field; ++f)
      line(slot_types[static_cast<size_t>(f)] + " kiln_loaded" + std::to_string(f) + "[" + batch + "];");
    line("#pragma unroll");
    line("for (int kiln_b = 0; kiln_b < " + batch + "; ++kiln_b) {");
    open_block();
    line("const int64_t kiln_part = kiln_batch + kiln_b * " + step + ";");
    line("if (kiln_part < " + splits + ") {");
    open_block();
    for (int f = first_field; f < last_field; ++f)
      line("kiln_loaded" + std::to_string(f) + "[kiln_b] = " + slots[static_cast<size_t>(f)] +
           "[" + slot("kiln_part") + "];");
    close_block();
    close_block();
    // Then merged as a tree: a batch's parts pairwise, their results pairwise, ... and the last
    // into the running state, so that a batch's chain of dependent merges (a Welford merge
    // divides) is 4 long, not 8: resnet18's first batch-norm statistics (196 parts a column
    // tile) 10.8 to 10.4 us on an H200. Most of the rest of the last block's time is its loads
    // of the parts' states (the kernel without a last block: 4.85 us).
    for (int b = 0; b < kPartsPerBatch; ++b) {
      const std::string part = "kiln_batch + " + std::to_string(b) + " * " + step;
      field = first_field;
      for (const sched::Accumulation& a : s.accumulations) {
        const std::string acc = accumulator(a), mine = part_state(a, b);
        line(accumulator_type(a) + " " + mine + " = " + identity(a) + ";");
        if (has_index(a)) line("int64_t " + mine + "_index = -1;");
        std::string loads;
        for (const auto& [expression, type] : state_fields(a))
          loads += mine + expression.substr(acc.size()) + " = kiln_loaded" +
                   std::to_string(field++) + "[" + std::to_string(b) + "]; ";
        line("if (" + part + " < " + splits + ") { " + loads + "}");
      }
    }
    for (int width = kPartsPerBatch / 2; width >= 1; width /= 2)
      for (int b = 0; b < width; ++b)
        for (const sched::Accumulation& a : s.accumulations)
          merge(a, part_state(a, b), part_state(a, b + width));
    for (const sched::Accumulation& a : s.accumulations)
      merge(a, accumulator(a), part_state(a, 0));
    close_block();
    if (columns)
      column_combine(s);
    else
      block_combine(s);
    close_block();
  }
}

}  // namespace kiln::codegen::cuda_detail
