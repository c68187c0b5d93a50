// Launch plans of the CUDA emitter (kernel_emitter.h's LaunchPlan): how the statements of a
// kernel map onto launches, grids and blocks, from the loop IR and the target. Internal to
// src/codegen/cuda. Every choice that compares sizes with a threshold is an ir::size_choice,
// so that the sizes of a graph with size symbols share one plan (ir/size_choices.h); choices
// that correctness bounds (16-byte accesses need whole vectors) are only narrowed by it.
#include <algorithm>
#include <map>
#include <set>

#include "codegen/cuda/kernel_emitter.h"
#include "ir/size_choices.h"
#include "sched/kernel_builder.h"
#include "sched/scatter_adds.h"

namespace kiln::codegen::cuda_detail {

namespace {

// Below this much work per outer iteration a block per iteration leaves most threads idle:
// each thread takes whole iterations instead.
constexpr int64_t kBlockWorthOfWork = 32;
// The block size of a launch too small to give every multiprocessor a full block.
constexpr int kSmallLaunchThreads = 128;


bool is_plain_loop(const Stmt& s) {
  return s.kind == StmtKind::Loop && s.loop.begin < 0 && s.loop.end < 0;
}

// Elements a statement touches: its extents times its children's.
int64_t work(const Stmt& s) {
  int64_t inner = 0;
  for (const Stmt& child : s.body) inner += work(child);
  int64_t extent = s.kind == StmtKind::Loop ? s.loop.extent : 1;
  for (const sched::Loop& l : s.reduce_loops) extent *= l.extent;
  return extent * std::max<int64_t>(inner, 1);
}

// Threads for a block that shares loops of about `parallel` iterations: a multiple of the
// warp, at most the target's block size.
int block_threads(int64_t parallel, const target::Target& target) {
  int threads = kWarp;
  while (threads < target.block_threads && ir::size_choice(threads < parallel)) threads *= 2;
  return threads;
}

// The widest loop a cooperative body shares among its threads.
int64_t shared_width(const std::vector<Stmt>& body) {
  int64_t widest = 1;
  for (const Stmt& s : body) {
    int64_t extent = 1;
    if (s.kind == StmtKind::Loop) extent = s.loop.extent == 1 ? shared_width(s.body) : s.loop.extent;
    if (s.kind == StmtKind::Reduce)
      for (const sched::Loop& l : s.reduce_loops) extent *= l.extent;
    widest = std::max(widest, extent);
  }
  return widest;
}

bool expr_reads_locals(const Kernel& kernel, ExprId id, const std::set<int32_t>& locals) {
  if (id < 0) return false;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Local && locals.count(e.variable)) return true;
  for (ExprId operand : e.operands)
    if (expr_reads_locals(kernel, operand, locals)) return true;
  return false;
}

bool stmt_reads_locals(const Kernel& kernel, const Stmt& s, const std::set<int32_t>& locals) {
  for (ExprId id : {s.guard, s.index, s.value, s.loop.begin, s.loop.end})
    if (expr_reads_locals(kernel, id, locals)) return true;
  for (const sched::Loop& l : s.reduce_loops)
    if (expr_reads_locals(kernel, l.begin, locals) || expr_reads_locals(kernel, l.end, locals))
      return true;
  for (const sched::Accumulation& a : s.accumulations)
    if (expr_reads_locals(kernel, a.value, locals) || expr_reads_locals(kernel, a.position, locals))
      return true;
  for (const Stmt& child : s.body)
    if (stmt_reads_locals(kernel, child, locals)) return true;
  return false;
}

int state_field_count(const sched::Accumulation& a) {
  switch (ir::op_info(a.op).accumulator) {
    case ir::Accumulator::Welford: return 3;
    case ir::Accumulator::ArgIndex: return 2;
    default: return 1;
  }
}

// The Reduce statements at the top of `body` none of which reads another's result: their
// count, the elements of the longest and the scalar fields of their states.
size_t leading_reductions(const Kernel& kernel, const std::vector<Stmt>& body, int64_t& work,
                          int& fields) {
  std::set<int32_t> locals;
  size_t count = 0;
  work = 0, fields = 0;
  for (; count < body.size(); ++count) {
    const Stmt& s = body[count];
    if (s.kind != StmtKind::Reduce || stmt_reads_locals(kernel, s, locals)) break;
    int64_t elements = 1;
    for (const sched::Loop& l : s.reduce_loops) elements *= l.extent;
    work = std::max(work, elements);
    for (const sched::Accumulation& a : s.accumulations) {
      locals.insert(a.local);
      fields += state_field_count(a);
    }
  }
  return count;
}

// The whole-array reductions at the top of `body` that the grid can share, when they are long
// enough to need more than one block.
void plan_split(const Kernel& kernel, const std::vector<Stmt>& body, const target::Target& target,
                LaunchPlan& plan) {
  int64_t work = 0;
  int fields = 0;
  const size_t count = leading_reductions(kernel, body, work, fields);
  if (count == 0 || !ir::size_choice(work >= target.split_reduction_work)) return;
  plan.kind = LaunchKind::SplitReduce;
  plan.split_statements = count;
  plan.split_work = work;
  plan.state_fields = fields;
  plan.threads = target.block_threads;
}

// Loads reachable from an expression.
void collect_loads(const Kernel& kernel, ExprId id, std::set<ExprId>& seen,
                   std::vector<ExprId>& loads) {
  if (id < 0 || !seen.insert(id).second) return;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Load) loads.push_back(id);
  for (ExprId operand : e.operands) collect_loads(kernel, operand, seen, loads);
}

void collect_statement_loads(const Kernel& kernel, const Stmt& s, std::set<ExprId>& seen,
                             std::vector<ExprId>& loads) {
  for (ExprId id : {s.guard, s.index, s.value}) collect_loads(kernel, id, seen, loads);
  for (const sched::Accumulation& a : s.accumulations) {
    collect_loads(kernel, a.value, seen, loads);
    collect_loads(kernel, a.position, seen, loads);
  }
  for (const Stmt& child : s.body) collect_statement_loads(kernel, child, seen, loads);
}

}  // namespace

// The loads of `id` that run whenever the statement does: not those in a select's branches
// (a pad's or a bounds check's, whose index may be out of range where the branch is not taken).
void collect_unconditional_loads(const Kernel& kernel, ExprId id, std::vector<ExprId>& loads) {
  if (id < 0) return;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Load) loads.push_back(id);
  if (e.kind == ExprKind::Select) return collect_unconditional_loads(kernel, e.operands[0], loads);
  for (ExprId operand : e.operands) collect_unconditional_loads(kernel, operand, loads);
}

// Whether index `id` is affine arithmetic of loop variables in `allowed` and constants only;
// `used` collects the variables.
bool index_of_variables(const Kernel& kernel, ExprId id, const std::set<int32_t>& allowed,
                        std::set<int32_t>& used) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Constant) return true;
  if (e.kind == ExprKind::LoopVar) {
    used.insert(e.variable);
    return allowed.count(e.variable) > 0;
  }
  return sched::is_index_arithmetic(e.kind) &&
         std::all_of(e.operands.begin(), e.operands.end(), [&](ExprId operand) {
           return index_of_variables(kernel, operand, allowed, used);
         });
}

namespace {

// The inner loops of `s` (loops and reduction loops over the whole extent) and the loads that
// run on every execution of it (not under a guard).
void inner_loops_and_loads(const Kernel& kernel, const Stmt& s, std::set<int32_t>& loops,
                           std::vector<ExprId>& loads) {
  if (s.kind == StmtKind::Reduce && s.guard >= 0) return;
  if (s.kind == StmtKind::Loop && s.loop.begin < 0 && s.loop.end < 0) loops.insert(s.loop.variable);
  for (const sched::Loop& l : s.reduce_loops)
    if (l.begin < 0 && l.end < 0) loops.insert(l.variable);
  for (ExprId id : {s.index, s.value}) collect_unconditional_loads(kernel, id, loads);
  for (const sched::Accumulation& a : s.accumulations) {
    collect_unconditional_loads(kernel, a.value, loads);
    collect_unconditional_loads(kernel, a.position, loads);
  }
  for (const Stmt& child : s.body) inner_loops_and_loads(kernel, child, loops, loads);
}

// A load a thread's step prefetches: each step's own memory, consecutive steps' addresses at
// most this many bytes apart (a warp's prefetches one contiguous run, as its loads are).
constexpr int64_t kMostPrefetchStepBytes = 16;

// LaunchPlan::prefetches, for launches of more steps than the GPU runs at once (one wave has
// nothing to overlap): loads of buffers the kernel only reads, at indices of the chain's and the
// inner loops' variables only, that use every chain variable (a broadcast operand, a channel's
// mean, is a few lines every warp of the GPU would prefetch at once: resnet18's batch-norm
// kernels took 8x as long that way), and that step densely with the innermost one (a strided
// load's prefetches cost more than they hide; resnet18's transposes were 5-15% slower). Nor a
// buffer read at several offsets (a stencil's shifted views): each line is read by neighbouring
// warps anyway, and the prefetches doubled the load instructions (H200, a 5-point stencil on
// 4096x4096 floats: 73 us with its four, 54 without).
void plan_prefetches(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  if (plan.unroll < 2) return;  // several steps a thread: more than a wave (size_small_launch)
  std::set<int32_t> chain, loops;
  for (const Stmt* s : plan.chain) chain.insert(s->loop.variable);
  std::vector<ExprId> loads;
  for (const Stmt& s : plan.chain.back()->body) inner_loops_and_loads(kernel, s, loops, loads);
  for (size_t k : plan.serial) loops.insert(plan.chain[k]->loop.variable);
  std::set<int32_t> allowed = chain;
  allowed.insert(loops.begin(), loops.end());
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  const int32_t innermost = plan.chain.back()->loop.variable;
  std::map<int32_t, std::set<ExprId>> offsets;  // by buffer
  for (ExprId id : loads) {
    const Expr& load = kernel.exprs[static_cast<size_t>(id)];
    offsets[load.buffer].insert(load.operands[0]);
  }
  std::set<int32_t> zeroed;
  for (ExprId id : loads) {
    const Expr& load = kernel.exprs[static_cast<size_t>(id)];
    const sched::Buffer& buffer = program.buffers[static_cast<size_t>(load.buffer)];
    std::set<int32_t> used;
    if (buffer.role == sched::BufferRole::Constant || offsets[load.buffer].size() > 1 ||
        std::find(kernel.buffers_written.begin(), kernel.buffers_written.end(), load.buffer) !=
            kernel.buffers_written.end() ||
        !index_of_variables(kernel, load.operands[0], allowed, used) ||
        std::any_of(plan.chain.begin(), plan.chain.end(), [&](const Stmt* c) {
          return c->loop.extent > 1 && used.count(c->loop.variable) == 0;
        }))
      continue;
    const int64_t step_bytes = builder.coefficient(load.operands[0], innermost) *
                               plan.vector_lanes * dtype_size(buffer.dtype);
    if (step_bytes <= 0 || step_bytes > kMostPrefetchStepBytes ||
        std::find(plan.prefetches.begin(), plan.prefetches.end(), id) != plan.prefetches.end())
      continue;
    plan.prefetches.push_back(id);
    for (int32_t v : used)
      if (loops.count(v) > 0) zeroed.insert(v);
  }
  plan.prefetch_zeroed.assign(zeroed.begin(), zeroed.end());
}

// Static shared memory a kernel keeps for other uses than column tiles' rows (a warp's
// partial results, the split blocks' flag).
constexpr int64_t kSharedMemoryReserve = 4096;

// Below this many elements per thread, more blocks per group cost more in merging than they
// add in parallelism.
constexpr int64_t kLeastSplitElementsPerThread = 32;
// A column tile's warp loads a row of its 32 columns per step (128 bytes of float32). Column
// sums split down to this many rows a warp, their rows unrolled (LaunchPlan::unroll_rows), keep
// enough loads in flight: at 33 rows a warp, resnet18's layer-4 batch-norm gradient sums (784
// rows of 512 channels, 6 loads a row, 3 blocks a tile) waited on memory one row after
// another, 32.6 us on an H200 where 24 blocks a tile and rows 4 at a time take 8.3 us. Welford
// statistics stay at kLeastSplitElementsPerThread, not unrolled: the same change made the
// forward's statistics slower (layer 3: 5.8 -> 9.8 us; the first layer's 23 -> 33 us): merging
// a split's Welford state costs more than merging a sum.
constexpr int64_t kLeastSplitRowsPerWarp = 4;
constexpr int kColumnRowsUnrolled = 4;

bool has_welford(const std::vector<Stmt>& statements) {
  for (const Stmt& s : statements)
    for (const sched::Accumulation& a : s.accumulations)
      if (ir::op_info(a.op).accumulator == ir::Accumulator::Welford) return true;
  return false;
}

// The last block of a group reads and merges every split's states, `threads_per_group` threads
// sharing them: at most this many a thread. Each costs a column tile's 8 readers about 30 ns a
// split (4 fields, an H200): 17 us of the 31 us of resnet18's first batch-norm statistics at
// 528 splits, 2 x 192 blocks now keeping the loads as busy (the whole training step's GPU time
// the same or 10 us less).
constexpr int64_t kMostSplitsPerReader = 24;

// The body of a block's iteration that blocks can share: leading reductions, then stores of
// their results. Their count (0: another body), as leading_reductions.
size_t shareable_reductions(const Kernel& kernel, const std::vector<Stmt>& body, int64_t& work,
                            int& fields) {
  const size_t leading = leading_reductions(kernel, body, work, fields);
  for (size_t k = 0; k < leading; ++k)
    if (body[k].lanes_loop.variable >= 0 || body[k].reduce_loops.empty()) return 0;
  for (size_t k = leading; k < body.size(); ++k)
    if (body[k].kind != StmtKind::Store || body[k].to_local_array) return 0;
  return leading;
}

// With fewer groups (tiles, iterations) than half the grid, blocks share each group's
// reductions (LaunchPlan::block_splits), when each thread still has enough elements.
void plan_block_splits(int64_t work, int64_t threads_per_group, int64_t least_per_thread,
                       int64_t most_blocks, LaunchPlan& plan) {
  const int64_t groups = split_groups(plan);
  const int64_t wanted = (most_blocks + groups - 1) / groups;
  const int64_t useful = work / (threads_per_group * least_per_thread);
  const int64_t merged = kMostSplitsPerReader * threads_per_group;
  const int64_t splits = std::min({wanted, useful, merged});
  // Sizes that follow another size's choice to split keep at least two splits (a split with
  // nothing to reduce merges an empty state).
  if (ir::size_choice(2 * groups < most_blocks && splits > 1))
    plan.block_splits = std::max<int64_t>(2, splits);
}

// A BlockPerIteration candidate with a shareable body that reads memory in columns
// (LaunchPlan::column_tiles): loads that step by one element with the innermost outer loop
// outnumber those that do with the last reduction loop. Otherwise a long shareable body of
// few iterations is split over blocks.
void plan_shared_reductions(const Kernel& kernel, const target::Target& target, LaunchPlan& plan) {
  const int64_t most_blocks = kBlocksPerMultiprocessor * std::max(1, target.multiprocessors);
  const std::vector<Stmt>& body = plan.chain.back()->body;
  const sched::Loop& innermost = plan.chain.back()->loop;
  int64_t work = 0;
  int fields = 0;
  const size_t leading = shareable_reductions(kernel, body, work, fields);
  if (leading == 0) return;
  plan.split_statements = leading;
  plan.state_fields = fields;
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  int columns = 0, rows = 0;
  for (size_t k = 0; k < leading; ++k) {
    std::set<ExprId> seen;
    std::vector<ExprId> loads;
    collect_statement_loads(kernel, body[k], seen, loads);
    const int32_t last = body[k].reduce_loops.back().variable;
    for (ExprId id : loads) {
      ExprId offset = kernel.exprs[static_cast<size_t>(id)].operands[0];
      if (builder.coefficient(offset, last) == 1)
        ++rows;
      else if (builder.coefficient(offset, innermost.variable) == 1)
        ++columns;
    }
  }
  if (columns > rows && ir::size_choice(innermost.extent >= kWarp / 2)) {
    plan.kind = LaunchKind::ColumnTiles;
    // The block's warps combine each column through shared memory, a row of 32 slots per warp
    // for every field of every accumulator (8 bytes at most each): as many warps as fit in the
    // target's static shared memory (the column sums and variances of three float64 arrays,
    // twelve fields, would take 48 KiB at 512 threads, sm_90's whole static limit).
    plan.threads = target.block_threads;
    while (plan.threads > kWarp &&
           int64_t(8) * fields * plan.threads > target.shared_memory_bytes - kSharedMemoryReserve)
      plan.threads /= 2;
    plan.column_tiles = (plan.iterations + kWarp - 1) / kWarp;
    const bool sums = !has_welford(std::vector<Stmt>(body.begin(), body.begin() + leading));
    plan.unroll_rows = sums ? kColumnRowsUnrolled : 1;
    plan_block_splits(work, plan.threads / kWarp,
                      sums ? kLeastSplitRowsPerWarp : kLeastSplitElementsPerThread, most_blocks,
                      plan);
    return;
  }
  plan_block_splits(work, plan.threads, kLeastSplitElementsPerThread, most_blocks, plan);
}


// LaunchPlan::serial: at most this many iterations a thread runs in sequence.
constexpr int64_t kMostSerialIterations = 16;

// The block size and unrolling of a ThreadPerIteration launch. A small one (BERT's bias adds
// and activations at a few tokens: 1536 to 6144 steps of four floats) is spread over as many
// multiprocessors as it can fill, a step per thread: four steps a thread and 256 threads a block
// put 6144 steps on 6 of an H100's 132 SMs and took twice Triton's time. A thread runs several
// steps only once every multiprocessor holds as many threads as it can keep resident: below
// that, no prefetches are issued (plan_prefetches) and each step's store waits for its load
// before the next step loads, so more threads with a step each keep more memory traffic in
// flight (H200, BERT-base 8x128's attention permutes of 786432 floats, 192 blocks of four steps
// a thread -> 768 blocks of one: 3.0 -> 2.5 us each, the transposing one 6.1 -> 5.1 us).
void size_small_launch(const target::Target& target, LaunchPlan& plan) {
  const int64_t steps = plan.iterations / serial_iterations(plan) / plan.vector_lanes;
  const int64_t multiprocessors = std::max(1, target.multiprocessors);
  plan.threads = block_threads(steps, target);
  if (ir::size_choice(steps < multiprocessors * target.block_threads))
    plan.threads = std::min(plan.threads, kSmallLaunchThreads);
  while (plan.unroll > 1 && ir::size_choice(steps < multiprocessors * kResidentThreads * plan.unroll))
    plan.unroll /= 2;
}

void plan_serial_loops(const Kernel& kernel, LaunchPlan& plan) {
  const std::vector<Stmt>& body = plan.chain.back()->body;
  const int32_t innermost = plan.chain.back()->loop.variable;
  if (body.empty() || plan.chain.size() < 2 ||
      !std::all_of(body.begin(), body.end(), [](const Stmt& s) {
        return s.kind == StmtKind::Store && !s.accumulate && !s.to_local_array;
      }))
    return;
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  std::set<ExprId> seen;
  std::vector<ExprId> loads;
  for (const Stmt& s : body) {
    if (builder.coefficient(s.index, innermost) != 1) return;
    collect_statement_loads(kernel, s, seen, loads);
  }
  // The loads that step by more than one element with the innermost loop, and the run of
  // chain loops one of them steps through contiguously: stride 1, then the extent so far...
  for (ExprId id : loads) {
    const ExprId offset = kernel.exprs[static_cast<size_t>(id)].operands[0];
    if (builder.coefficient(offset, innermost) <= 1) continue;
    std::vector<size_t> run;
    int64_t stride = 1;
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t k = 0; k + 1 < plan.chain.size(); ++k) {
        const sched::Loop& loop = plan.chain[k]->loop;
        if (loop.extent > 1 && builder.coefficient(offset, loop.variable) == stride &&
            stride * loop.extent <= kMostSerialIterations &&
            std::find(run.begin(), run.end(), k) == run.end()) {
          run.push_back(k);
          stride *= loop.extent;
          grew = true;
        }
      }
    }
    if (stride > 1) {
      std::sort(run.begin(), run.end());
      plan.serial = run;
      return;
    }
  }
}

// Short cooperative bodies over many iterations run a warp each (LaunchPlan::warp_iterations):
// each lane holds at most kMostUnrolledSteps elements of the widest loop (an unrolled loop), and
// the grid still has four blocks of warps per multiprocessor. H200, BERT-base at 8x128 tokens:
// the attention rows' softmax (12288 rows of 128) took 11 us a kernel as a block per row.
// Longer rows, of up to kMostWarpRowSteps elements a lane, run a warp each too (as Triton's
// persistent reductions do) where each multiprocessor has several at once but not so many that a
// block a row keeps it busy anyway: no barrier and no shared memory a row, a warp's shuffles
// alone for each reduction, a lane's 16-byte loads of the whole row in flight together. H200,
// kernel times of CuPy-launched variants, a block a row against a warp: layer norm of 1024, 2048
// and 4096 rows of 768 floats 5.0 -> 3.5, 8.8 -> 4.8 and 10.0 -> 8.9 us, softmax of 1024 and
// 2048 rows of 1024 3.7 -> 3.3 and 6.8 -> 5.8 us; 256 and 512 rows took longer as a warp (a
// lane's 24 elements in sequence, 2.4 -> 3.1 us), and so did 8192 rows of 1024 (21.3 -> 22.1).
void plan_warp_iterations(const target::Target& target, LaunchPlan& plan) {
  if (plan.kind != LaunchKind::BlockPerIteration || plan.block_splits > 1) return;
  const int warps = std::max(1, target.block_threads / kWarp);
  const int64_t multiprocessors = std::max(1, target.multiprocessors);
  const int64_t width = shared_width(plan.chain.back()->body);
  if (ir::size_choice(width <= kMostUnrolledSteps * kWarp &&
                      plan.iterations >= 4 * int64_t(warps) * multiprocessors)) {
    plan.warp_iterations = true;
  } else if (ir::size_choice(width > kMostUnrolledSteps * kWarp &&
                             width <= kMostWarpRowSteps * kWarp &&
                             plan.iterations >= kLeastWarpRowsPerMultiprocessor * multiprocessors &&
                             plan.iterations < kMostWarpRowsPerMultiprocessor * multiprocessors)) {
    plan.warp_iterations = true;
    plan.most_steps = kMostWarpRowSteps;
  } else {
    return;
  }
  plan.threads = warps * kWarp;
}

// A block per row whose threads hold twice the target's thread steps (8) of its widest loop:
// fewer threads a row and more loads in flight a thread. H200, rows of 1024 floats: softmax
// 14.2 -> 11.5 us at 128 threads against 256, layer norm 25.2 -> 22.5 (Triton 10.4 and 20.1);
// logsumexp's rows of 2048 doubles 41 us at 512 threads, 27 at 256. Only where the rows fill
// the GPU's resident threads that way too: below a wave, more threads keep more loads in flight
// (size_small_launch; BERT's layer norms at 8 and 1024 tokens keep their 256).
void size_row_blocks(const target::Target& target, LaunchPlan& plan) {
  if (plan.kind != LaunchKind::BlockPerIteration || plan.block_splits > 1 || plan.warp_iterations)
    return;
  const int64_t steps = 2 * std::max(1, target.thread_steps);
  const int64_t width = shared_width(plan.chain.back()->body);
  const int threads = std::min(plan.threads, block_threads((width + steps - 1) / steps, target));
  const int64_t resident = std::max(1, target.multiprocessors) * kResidentThreads;
  if (ir::size_choice(plan.iterations * threads >= resident))
    plan.threads = threads;
}


// A scan that is the kernel's whole body, long enough for tiles over the grid (ScanTiles): one
// accumulation, which the scan combines in any grouping (sums of floats round differently, as
// every parallel scan's do), of a dtype the look-back's slots hold.
bool is_tiled_scan(const Stmt& s) {
  if (s.kind != StmtKind::Scan || s.accumulations.size() != 1 || s.reduce_loops.size() != 1 ||
      s.reduce_loops[0].extent < kLeastTiledScan)
    return false;
  const DType dtype = s.accumulations[0].dtype;
  return dtype_size(dtype) >= 4 && dtype != DType::Bool;
}

}  // namespace

std::vector<LaunchPlan> plan_launches(const Program& program, const Kernel& kernel,
                                      const target::Target& target) {
  std::vector<LaunchPlan> plans;
  size_t ordered =
      kernel.ordered_from < 0 ? kernel.body.size() : static_cast<size_t>(kernel.ordered_from);
  while (ordered < kernel.body.size() && is_plain_loop(kernel.body[ordered]) &&
         sched::adds_in_any_order(kernel.body[ordered], program.buffers))
    ++ordered;
  const bool all_loops = std::all_of(kernel.body.begin(), kernel.body.begin() + ordered,
                                     [](const Stmt& s) { return s.kind == StmtKind::Loop; });
  if (ordered == 1 && kernel.body.size() == 1 && is_tiled_scan(kernel.body[0])) {
    LaunchPlan plan;
    plan.kind = LaunchKind::ScanTiles;
    plan.last = 1;
    plan.threads = kScanThreads;
    plan.iterations = kernel.body[0].reduce_loops[0].extent;
    plans.push_back(plan);
  } else if (!all_loops) {
    // Top-level reductions feed the statements after them through locals: one block for all.
    LaunchPlan plan;
    plan.kind = LaunchKind::OneBlock;
    plan.last = ordered;
    const std::vector<Stmt> statements(kernel.body.begin(), kernel.body.begin() + ordered);
    plan.threads = block_threads(shared_width(statements), target);
    plan_split(kernel, statements, target, plan);
    if (plan.kind == LaunchKind::OneBlock && ordered < kernel.body.size()) {
      // The ordered statements read the reductions' locals: in this launch, not a launch of
      // their own (where those locals do not exist).
      plan.last = kernel.body.size();
      plan.ordered_tail = kernel.body.size() - ordered;
    }
    plans.push_back(plan);
  } else {
    for (size_t k = 0; k < ordered; ++k) {
      LaunchPlan plan;
      plan.first = k, plan.last = k + 1;
      const Stmt* s = &kernel.body[k];
      if (!is_plain_loop(*s)) {
        plan.kind = LaunchKind::OneBlock;
        plan.threads = block_threads(shared_width({*s}), target);
        plans.push_back(plan);
        continue;
      }
      // The perfectly nested plain loops at the top.
      while (true) {
        plan.chain.push_back(s);
        plan.iterations *= s->loop.extent;
        if (s->body.size() != 1 || !is_plain_loop(s->body[0])) break;
        s = &s->body[0];
      }
      const std::vector<Stmt>& inner = plan.chain.back()->body;
      int64_t inner_work = 0;
      for (const Stmt& child : inner) inner_work += work(child);
      bool reduces = std::any_of(inner.begin(), inner.end(), [](const Stmt& c) {
        return c.kind == StmtKind::Reduce || c.kind == StmtKind::Scan;
      });
      if ((reduces || inner.size() > 1) && ir::size_choice(inner_work >= kBlockWorthOfWork)) {
        plan.kind = LaunchKind::BlockPerIteration;
        plan.threads = block_threads(shared_width(inner), target);
        plan_shared_reductions(kernel, target, plan);
        plan_warp_iterations(target, plan);
        size_row_blocks(target, plan);
        plan_row_registers(program, kernel, plan);
        plan_row_vectors(program, kernel, plan);
      } else {
        plan.kind = LaunchKind::ThreadPerIteration;
        plan_serial_loops(kernel, plan);
        if (plan.serial.empty()) plan_vectors(program, kernel, plan);
        plan_step_unrolling(kernel, target, inner_work, plan);
        size_small_launch(target, plan);
        plan_shared_loads(program, kernel, plan);
        if (plan.unroll_axis < 0) plan_prefetches(program, kernel, plan);
      }
      plans.push_back(plan);
    }
  }
  if (ordered < kernel.body.size() && (plans.empty() || plans.back().last < kernel.body.size())) {
    LaunchPlan plan;
    plan.kind = LaunchKind::OneThread;
    plan.first = ordered, plan.last = kernel.body.size();
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace kiln::codegen::cuda_detail
