// The CUDA kernel emitter: the C-like printer (codegen/c_like_printer.h) plus what the GPU adds:
// launch plans (how the statements of a kernel map onto one launch's grid and blocks), shared
// loops, and reductions within a thread, across a block and across the grid. Internal to
// src/codegen/cuda; split over launch_plans.cpp (plans), register_plans.cpp and
// vector_plans.cpp (values held in registers, 16-byte accesses), cuda_emitter.cpp (a launch's
// body, loops), cuda_source.cpp (a Program's source: header, launches, variants),
// step_emitter.cpp (a thread's steps), register_emitter.cpp (registers, capped unrolling),
// reduce_emitter.cpp (a thread's and a block's reductions), grid_reduce_emitter.cpp (split
// reductions, column tiles), fold_emitter.cpp (each thread's share of a reduction's elements),
// scan_emitter.cpp (long scans in tiles), device_loops.cpp (graph loops run on the device, each
// launch a __device__ function; device_loop_printer.h writes the loop kernel) and
// sort_kernels.cpp (argsort and sort).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/c_like_printer.h"
#include "codegen/cuda/cuda_emitter.h"
#include "ir/ops.h"
#include "ir/size_choices.h"

namespace kiln::codegen::cuda_detail {

constexpr int kWarp = 32;
// Split blocks' partial states the last block loads at once before merging them.
constexpr int kPartsPerBatch = 8;  // a power of two: merge_block_splits' tree
constexpr int64_t kResidentThreads = 2048;  // per multiprocessor (sm_70 and later)
// Blocks per multiprocessor a grid-stride launch asks for: enough resident warps to hide
// memory latency, few enough that each thread has several elements.
constexpr int64_t kBlocksPerMultiprocessor = 8;
// ThreadPerIteration: a block per run of steps, up to this many (then the runs repeat).
constexpr int64_t kMostRunBlocks = int64_t{1} << 22;
// A loop a block's threads share is unrolled when each thread has at most this many elements.
constexpr int64_t kMostUnrolledSteps = 8;
// A loop unrolled whole whose copies come to more code than this (estimated_nvrtc_cost's
// characters, compilation_units.h) is unrolled kCappedUnrollSteps at a time instead
// (CudaKernelEmitter::cap_unrolling): NVRTC's time grows with the copies.
constexpr int64_t kMostUnrolledCode = 12000;
constexpr int kCappedUnrollSteps = 4;
// A warp's lanes share a row of at most this many elements each (LaunchPlan::warp_iterations)
// where the rows a multiprocessor are at least the least and fewer than the most below.
constexpr int64_t kMostWarpRowSteps = 32;
constexpr int64_t kLeastWarpRowsPerMultiprocessor = 6;
constexpr int64_t kMostWarpRowsPerMultiprocessor = 32;
// The longest reduction loop whose loads LaunchPlan::shared_loads holds in registers.
constexpr int64_t kMostSharedSteps = 16;
// A thread's elements of a long reduction folded in one pass (fold_unrolled): their loads in
// flight together.
constexpr int kFoldedSteps = 4;
// A block of at most this many warps ends its reductions with every thread merging the warps'
// values in order (block_combine); a larger one through a first warp's shuffles.
constexpr int kMostWarpsMergedInOrder = 8;
// 32-bit registers a thread may hold its steps' prefetched vector loads in (LaunchPlan::
// prefetches); loads beyond them are prefetched into L1. Four float4 loads at four steps a thread.
constexpr int64_t kMostPrefetchedVectorWords = 64;

// How one launch runs its statements.
enum class LaunchKind : uint8_t {
  ThreadPerIteration,  // flattened outer loops, one iteration per thread
  BlockPerIteration,   // flattened outer loops, one iteration per block, cooperative body
  OneBlock,            // the statements cooperatively, one block
  SplitReduce,         // leading reductions over the grid, the rest by the last block
  ColumnTiles,         // 32 neighbouring outer iterations per block, one per lane (below)
  ScanTiles,           // one long scan, a tile per block (scan_emitter.cpp)
  OneThread,           // the statements in order, one thread
};

struct LaunchPlan {
  LaunchKind kind = LaunchKind::OneThread;
  size_t first = 0, last = 0;        // kernel.body[first, last)
  // OneBlock: its last `ordered_tail` statements (a scatter's updates, in order: Kernel::
  // ordered_from) run on thread 0 after the block's reductions, which feed them through locals.
  size_t ordered_tail = 0;
  std::vector<const Stmt*> chain;    // flattened loops (ThreadPerIteration, BlockPerIteration)
  int64_t iterations = 1;            // product of the chain's extents
  int threads = 1;
  int unroll = 1;                    // ThreadPerIteration: iterations a thread runs per step
  size_t split_statements = 0;       // SplitReduce, ColumnTiles: the leading reductions
  int64_t split_work = 0;            // SplitReduce: elements of the largest of them
  int state_fields = 0;              // SplitReduce, ColumnTiles: scalar fields of their accumulators
  // ColumnTiles: reductions whose loads step by one element with the innermost outer loop and
  // by rows with the reduction (a column sum; batch norm's statistics over N, H and W of
  // channels-last data). A block per tile of 32 outer iterations, lane k taking iteration k, so
  // a warp's loads are one contiguous run; the block's warps share the rows.
  int64_t column_tiles = 0;
  // ColumnTiles: the rows of a warp unrolled by this many (their loads issued together).
  int unroll_rows = 1;
  // ColumnTiles and BlockPerIteration with few tiles or iterations and long reductions (a
  // channel's statistics over 200704 elements): `block_splits` blocks share each one's
  // reductions, the last of them to finish merging their partial states and storing.
  int64_t block_splits = 1;
  // BlockPerIteration over many short iterations (a softmax over attention rows of 128): each
  // warp of the block takes its own iteration, its lanes sharing the body, the reductions
  // combined by shuffles alone: no shared memory and no block barrier per row, where a block of
  // 128 threads per row spent more on its barriers than on the row's 512 bytes.
  bool warp_iterations = false;
  // The most elements of a loop the team shares that each thread holds unrolled (the length of
  // row_registers' arrays): kMostUnrolledSteps, or kMostWarpRowSteps for a warp per long row.
  int64_t most_steps = kMostUnrolledSteps;
  // ThreadPerIteration transposing (a permute's copy: its loads step by many elements with the
  // innermost loop, its stores by one): the chain loops, by index into `chain`, that each
  // thread runs in sequence rather than across threads, the few iterations (a 3x3 filter's
  // positions) that some load steps through by one element. A warp's stores stay one run per
  // position, and its loads of the later positions hit the lines the first one brought into
  // the L1 cache; across threads those positions would each fetch the lines again.
  std::vector<size_t> serial;
  // ThreadPerIteration over stores only: a thread runs `vector_lanes` consecutive iterations
  // of the innermost loop at once, and the loads and stores that step by one element with it
  // move as one 16-byte access each (when every buffer they touch is 16-byte aligned, checked
  // at run time; else the scalar loop runs). BlockPerIteration over rows held in registers
  // (row_registers): a thread's elements of the row are runs of `vector_lanes` consecutive
  // ones, so that the rows are loaded, and the loops over the row that store load and store,
  // 16 bytes at a time (plan_row_vectors).
  int vector_lanes = 1;
  std::vector<ExprId> vector_loads;
  std::vector<const Stmt*> vector_stores;
  std::vector<int32_t> vector_buffers;  // what the run-time alignment check looks at
  // ThreadPerIteration with several steps a thread, more than one wave of them: the dense,
  // unbroadcast loads whose lines a first pass over the steps brings into L1
  // (prefetch.global.L1) before any step computes (launch_plans.cpp: plan_prefetches), and the
  // loop variables those addresses take at 0 (serial and inner loops). A thread's step loads
  // wait on memory one after another where its steps are a reduction each (kmeans' distances),
  // and the prefetches put all of its steps' memory traffic in flight at once: H200
  // microbenchmarks, kmeans 20M points 92 -> 81 us, sin + cos of 64M floats 151 -> 138 us
  // (copy: 83 and 132). A vector load among them (up to kMostPrefetchedVectorWords a thread)
  // is loaded into registers instead, which the step reads: one memory instruction a step, not
  // a prefetch and a load (H200: BERT-base 8x128's bias + GELU 6.2 -> 5.6 us a layer, Triton's
  // 5.6; sin + cos of 64M floats 147-149 -> 145 us).
  std::vector<ExprId> prefetches;
  std::vector<int32_t> prefetch_zeroed;
  // ThreadPerIteration whose steps reduce over a short loop, reading there what one outer chain
  // loop does not move (all-pairs distances: a row of B, the same for every row of A): a
  // thread's `unroll` steps are consecutive iterations of chain[unroll_axis], and those loads
  // (`shared_loads`, of the reduction loop `shared_loop`'s whole extent) are read into registers
  // once for all of them. -1: the steps are a block's width apart.
  int unroll_axis = -1;
  std::vector<ExprId> shared_loads;
  sched::Loop shared_loop;
  // BlockPerIteration whose statements each share one unrolled loop over the row (softmax's max,
  // sum and division; a layer norm's two statistics and its output): the loads several of them
  // make of one element (the same buffer and index but for the loop's variable) are read into
  // registers kiln_row<k>[step] once before the first, in the loops' own order of steps.
  struct RowRegisters {
    std::vector<std::pair<ExprId, int32_t>> loads;  // each load and its statement's variable
    int64_t extent = 0;
  };
  std::vector<RowRegisters> row_registers;
};

// launch_plans.cpp: the loads of expression `id` that run whenever its statement does (not in
// a select's branches); whether index `id` is affine in loop variables of `allowed` alone
// (`used` collects them).
void collect_unconditional_loads(const Kernel& kernel, ExprId id, std::vector<ExprId>& loads);
bool index_of_variables(const Kernel& kernel, ExprId id, const std::set<int32_t>& allowed,
                        std::set<int32_t>& used);
// register_plans.cpp: LaunchPlan::shared_loads (with unroll_axis) and row_registers.
void plan_shared_loads(const Program& program, const Kernel& kernel, LaunchPlan& plan);
void plan_row_registers(const Program& program, const Kernel& kernel, LaunchPlan& plan);

// The statements of `kernel` that `plan` launches: body[first, last).
inline std::vector<Stmt> launch_statements(const Kernel& kernel, const LaunchPlan& plan) {
  return {kernel.body.begin() + static_cast<std::ptrdiff_t>(plan.first),
          kernel.body.begin() + static_cast<std::ptrdiff_t>(plan.last)};
}

// The iterations a thread of a ThreadPerIteration plan runs in sequence (LaunchPlan::serial).
inline int64_t serial_iterations(const LaunchPlan& plan) {
  int64_t iterations = 1;
  for (size_t k : plan.serial) iterations *= plan.chain[k]->loop.extent;
  return iterations;
}

// Split blocks (LaunchPlan::block_splits): what the blocks of one group share (a tile, or an
// iteration), and the partial states each block leaves per group: a tile's lanes, or one.
inline int64_t split_groups(const LaunchPlan& plan) {
  return plan.kind == LaunchKind::ColumnTiles ? plan.column_tiles : plan.iterations;
}
inline int64_t split_lanes(const LaunchPlan& plan) {
  return plan.kind == LaunchKind::ColumnTiles ? kWarp : 1;
}
// The scratch starts with one ticket counter (4 bytes) per group, rounded up to 16 bytes; one
// array of 8-byte slots per state field follows, a slot per group, block and lane.
inline int64_t split_ticket_bytes(const LaunchPlan& plan) {
  return (4 * split_groups(plan) + 15) / 16 * 16;
}
inline int64_t split_scratch_bytes(const LaunchPlan& plan) {
  return split_ticket_bytes(plan) +
         8 * plan.state_fields * split_groups(plan) * plan.block_splits * split_lanes(plan);
}

// ScanTiles: a scan at the top of a kernel (np.cumsum of a whole array) of at least
// kLeastTiledScan elements runs in tiles of kScanTile, a block of kScanThreads each, in one
// launch: each thread holds kScanItems elements, one per run of kScanThreads consecutive ones.
constexpr int kScanThreads = 256;
constexpr int kScanItems = 8;  // kScanItems * warps == 64: two partial totals per lane of a warp
constexpr int64_t kScanTile = int64_t{kScanThreads} * kScanItems;
constexpr int64_t kLeastTiledScan = 16 * kScanTile;
inline int64_t scan_tile_count(const LaunchPlan& plan) {
  return (plan.iterations + kScanTile - 1) / kScanTile;
}
// Its scratch: the counts of tiles taken and finished, a flag per tile (16-byte aligned), then
// per tile its total and its inclusive prefix (8-byte slots).
inline int64_t scan_flag_bytes(const LaunchPlan& plan) {
  return (16 + 4 * scan_tile_count(plan) + 15) / 16 * 16;
}
inline int64_t scan_scratch_bytes(const LaunchPlan& plan) {
  return scan_flag_bytes(plan) + 16 * scan_tile_count(plan);
}

// vector_plans.cpp: LaunchPlan::vector_lanes and the accesses that move 16 bytes at a time, of a
// ThreadPerIteration plan over stores only, or of a BlockPerIteration plan's rows in registers.
void plan_vectors(const Program& program, const Kernel& kernel, LaunchPlan& plan);
void plan_row_vectors(const Program& program, const Kernel& kernel, LaunchPlan& plan);

// step_unrolling.cpp: LaunchPlan::unroll of a ThreadPerIteration plan, its vector plan made;
// inner_work: the elements its innermost loop's body touches.
void plan_step_unrolling(const Kernel& kernel, const target::Target& target, int64_t inner_work,
                         LaunchPlan& plan);

// launch_plans.cpp: the launches of a kernel, in order.
std::vector<LaunchPlan> plan_launches(const Program& program, const Kernel& kernel,
                                      const target::Target& target);

// device_loops.cpp: the graph loops that run on the device as one kernel each (their plans),
// and the Program kernels only those loops run (the emitter gives them no launch of their own);
// add_device_loops appends each loop's functions and its call, which replaces the loop's steps
// (runtime::CudaKernelCall::replaces_step).
struct DeviceLoopPlans;
struct DeviceLoops {
  std::shared_ptr<const DeviceLoopPlans> plans;
  std::set<int32_t> kernels;
};
DeviceLoops plan_device_loops(const Program& program, const target::Target& target);
void add_device_loops(const Program& program, const Options& options, const target::Target& target,
                      const DeviceLoops& loops, CudaSource& source);

// combined_launches.cpp: consecutive launches of a kernel that may run as one, by index into
// `plans`: ThreadPerIteration launches of loops of stores that share no buffer one of them
// writes (the parts a kernel took in from others: sched/independent_kernels.h). Each group of
// more than one is one function whose blocks are split between the parts, in order, of the
// parts' largest block (a part planned for fewer threads leaves the others idle).
std::vector<std::vector<size_t>> combined_launches(const Program& program, const Kernel& kernel,
                                                   const std::vector<LaunchPlan>& plans);
// skinny_matmul.cpp: generated kernels for the Program's extern matmuls of few rows (their
// device code added to the header, their functions and calls appended, each replacing its step).
void add_skinny_matmuls(const Program& program, CudaSource& source);
// sort_kernels.cpp: generated kernels for the Program's extern argsort and sort steps (each
// replacing its step; their device code added to the header).
void add_sort_kernels(const Program& program, const target::Target& target, CudaSource& source);
// A sort step a device loop runs (rows its block sorts in shared memory): its __device__
// function `symbol`, run by the loop block's first `threads` threads, which take `rounds`
// barriers and move `bytes`; nullopt for other steps and longer rows.
struct LoopSort {
  std::string symbol, function;
  int threads = 1;
  int64_t rounds = 0, bytes = 0;
  std::vector<int32_t> arguments;  // input, output
};
std::optional<LoopSort> loop_sort(const Program& program, size_t step, const std::string& symbol);
// The device code every sort function needs (once in the header).
std::string sort_device_code();
// The 16-byte vector type of a dtype of 4 or 8 bytes, or "" (narrower dtypes stay scalar),
// and the names of its lanes' fields.
std::string vector_type(DType dtype);
inline constexpr const char* kLaneFields[] = {"x", "y", "z", "w"};

// Whether a block's statement is one element's work, which its first thread does: a store, or
// a plain loop of one iteration around such statements (a 0-d result stored as shape (1,)).
bool one_element(const Stmt& s);

class CudaKernelEmitter : public CLikePrinter {
 public:
  CudaKernelEmitter(const Program& program, const Kernel& kernel, const Options& options,
                    const target::Target& target, std::vector<int32_t> arguments,
                    const LaunchPlan& plan)
      : CLikePrinter(program, kernel, options, target, std::move(arguments)), plan_(plan) {}

  // A combined launch (combined_launches): each part's plan, and the grid's blocks it takes,
  // the next ones after the part before it. The emitter's own plan is the part of the most
  // threads (the launch's block).
  struct Part {
    const LaunchPlan* plan;
    int64_t blocks;
  };
  void combine(std::vector<Part> parts) { parts_ = std::move(parts); }
  // The launch as a __device__ function a device loop's kernel calls (device_loops.cpp): the
  // first plan_.threads threads of that kernel's one block run it as a grid of one block, and
  // its barriers are theirs alone (kiln_team_barrier); `alone`: the block's first thread runs
  // it by itself (a launch of one thread's work), with no barrier, as its thread 0.
  void inside_device_loop(bool alone) {
    in_device_loop_ = true;
    alone_ = alone;
  }
  // After emit(): whether past the launch's last barrier only its first thread touches memory
  // (a team's reduction and the single stores after it), so that a device loop's next call,
  // when the first thread runs it alone, needs no barrier before it (device_loop_printer.h).
  bool ends_on_first_thread() const { return ends_on_first_thread_; }

 private:
  std::vector<Part> parts_;
  bool in_part_ = false;
  bool in_device_loop_ = false;
  bool alone_ = false;
  // The block's index in the grid, and the grid's blocks: a part's own range of them.
  std::string block_index() const {
    return in_device_loop_ ? "0" : in_part_ ? "kiln_block" : "blockIdx.x";
  }
  std::string grid_blocks() const { return in_device_loop_ ? "1" : in_part_ ? "kiln_grid" : "gridDim.x"; }
  // The barrier of the launch's threads.
  std::string block_barrier() const {
    if (alone_) return "";
    return in_device_loop_ ? "kiln_team_barrier(" + std::to_string(plan_.threads) + ");"
                           : "__syncthreads();";
  }
  void combined_body();

  std::string function_header() const override {
    size_t table = arguments_.size() + (has_scratch() ? 1 : 0);
    const std::string arguments =
        "kiln_arg_table<" + std::to_string(std::max<size_t>(table, 1)) + ">";
    if (in_device_loop_)
      return "static __device__ void KILN_KERNEL_NAME(const " + arguments + "& kiln_args)";
    return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(plan_.threads) +
           ") KILN_KERNEL_NAME(const " + arguments + " kiln_args)";
  }
  std::string extra_arguments() const override {
    if (!has_scratch()) return "";
    return "  char* const kiln_scratch = kiln_args[" + std::to_string(arguments_.size()) + "];\n";
  }
  bool before_loop(const Stmt&) override { return false; }
  // The threads that share a cooperative body, as a constant: the launch's block (every launch
  // has exactly plan_.threads threads), or a warp (LaunchPlan::warp_iterations). Constant
  // strides let the compiler unroll and strength-reduce the shared loops.
  int team() const { return plan_.warp_iterations ? kWarp : plan_.threads; }
  std::string threads() const { return std::to_string(team()); }
  // A thread's place in its team, and the barrier of the team.
  std::string member() const { return plan_.warp_iterations ? "kiln_lane" : thread_index(); }
  // The thread's index in the block: 0 for a launch a device loop's thread runs alone (each
  // thread of a loop of independent iterations is its iterations' thread 0).
  std::string thread_index() const { return alone_ ? "0" : "threadIdx.x"; }
  std::string barrier() const {
    return plan_.warp_iterations && !alone_ ? "__syncwarp();" : block_barrier();
  }
  // A split reduction's or a column tile's scratch (runtime::CudaLaunch::scratch_bytes) follows the buffers.
  bool has_scratch() const {
    return plan_.kind == LaunchKind::SplitReduce || plan_.kind == LaunchKind::ScanTiles ||
           plan_.block_splits > 1;
  }
  // Buffers the kernel only reads go through the read-only data path (ld.global.nc): their
  // loads may move past the kernel's stores, so the unrolled iterations' loads issue together.
  // Not in a device loop, whose other launches may write a buffer in the same kernel.
  bool read_only(int32_t buffer) const {
    return !in_device_loop_ && std::find(kernel_.buffers_written.begin(),
                                         kernel_.buffers_written.end(),
                                         buffer) == kernel_.buffers_written.end();
  }
  std::string loaded_element(int32_t buffer, const std::string& index) override {
    const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
    if (!read_only(buffer) || b.dtype == DType::Bool || b.role == sched::BufferRole::Constant)
      return CLikePrinter::loaded_element(buffer, index);
    return "__ldg(" + buffer_name(buffer) + " + (" + index + "))";
  }
  // A 16-byte vector of `buffer` at `address` (an element pointer), as loaded_element reads.
  std::string vector_load(int32_t buffer, const std::string& type, const std::string& address) const {
    const std::string pointer = "reinterpret_cast<const " + type + "*>(" + address + ")";
    return read_only(buffer) ? "__ldg(" + pointer + ")" : "*" + pointer;
  }
  void reduce(const Stmt& s) override;  // one thread's
  void body() override;
  // atomicAdd where the dtype has one (adds_in_any_order): threads may add into one element.
  void accumulate_store(int32_t buffer, const std::string& index, const std::string& value,
                        DType from) override;

  void flattened_chain(const std::string& flat, int lanes = 1);
  void thread_per_iteration(int lanes);
  void each_step(const std::string& total, int lanes, bool guarded,
                 const std::function<void()>& print);
  void prefetch_step(int lanes);
  void steps_along_axis(const std::string& total);  // LaunchPlan::unroll_axis
  void block_per_iteration();
  void load_row_registers();                         // LaunchPlan::row_registers
  // A loop of stores over the row in runs of row_lanes_ (LaunchPlan::vector_lanes).
  void row_vector_loop(const Stmt& s);
  int row_lanes_ = 1;  // the row's elements a thread takes in each run (block_per_iteration)
  std::set<std::string> unrolled_;                   // loops unrolled_shared_loop printed
  void step(int lanes);  // one step's statements
  std::string load_value(ExprId id) override;
  // Division by a value of constants and reduction results (a row's sum, a norm): by its
  // reciprocal, corrected (kiln_div_by_uniform in cuda_prelude.h), computed once for the row.
  std::string elementwise_text(ExprId id, const std::vector<std::string>& operands) override;
  bool divides_by_uniform(ExprId id) const;
  // cooperative's loops of stores that may print their divisions checked (kiln_exact), then
  // again with IEEE division (ieee_divisions_) for the threads where a check failed.
  bool may_check_divisions(const Stmt& s) const;
  void shared_loop(const Stmt& s);
  bool checking_divisions_ = false, ieee_divisions_ = false;
  void plain_store(const Stmt& s, const std::string& index, const std::string& value) override;
  int lane_ = -1;  // the vector lane being printed (thread_per_iteration), or -1
  // thread_per_iteration: the register arrays (kiln_pv<n>, indexed by kiln_u) each step's
  // prefetch loads vectors into, by address (load_address), which the step's loads then read.
  std::map<std::string, std::string> prefetched_vectors_;
  std::string load_address(ExprId id);
  // A block's Welford states (cooperative_reduce): 0 one pass of shifted sums (each thread's,
  // made Welford states by state_from_fold); 1 the count and sum (in the mean field); 2 the
  // sums of the deviations from the mean (in the mean field) and of their squares.
  int welford_pass_ = 0;
  // LaunchKind::OneBlock: the team's statements run once a launch (a device loop's calls have
  // the loop's barrier after them), so no next pass may overwrite a reduction's shared slots.
  bool single_pass_ = false;
  // The statements after the reduction being printed run on the first thread alone: only it
  // needs the reduction's value.
  bool first_thread_reads_ = false;
  bool ends_on_first_thread_ = false;
  void cooperative(const std::vector<Stmt>& body);
  // The loads of the single stores body[from], ... that follow a team's reduction, issued
  // before it where they read neither its values nor a buffer this kernel writes.
  void prefetch_epilogue_loads(const std::vector<Stmt>& body, size_t from);
  bool readable_early(ExprId id) const;
  // A loop shared by the block's threads whose constant extent gives each only a few elements.
  bool few_steps_per_thread(const sched::Loop& loop) const;
  int unrolled_shared_loop(const std::string& variable, const std::string& begin, int64_t extent);
  // The loop unrolled_shared_loop began printing at out_'s offset `start`, now closed: unrolled
  // kCappedUnrollSteps at a time, not whole, where its copies would be more code than
  // kMostUnrolledCode and it holds nothing in arrays that only a whole unrolling keeps in
  // registers (row registers, shared loads, local arrays).
  void cap_unrolling(std::streamoff start);
  void cooperative_reduce(const Stmt& s);
  // Each thread folds elements first, first + step, ... of the reduction (with the last loop
  // shared by the block's threads, where nests_over_threads: the outermost loop's iterations
  // outer_first, outer_first + outer_step, ...).
  void fold_elements(const Stmt& s, const std::string& first, const std::string& step,
                     const std::string& outer_first = "0", const std::string& outer_step = "1");
  void fold_unrolled(const Stmt& s, const std::string& flat, const std::string& first,
                     const std::string& step, const std::string& total, const std::string& low);
  // Whether the block's threads share the last reduction loop, nested in the others.
  bool nests_over_threads(const Stmt& s) const;
  void block_combine(const Stmt& s);
  // grid_reduce_emitter.cpp
  std::vector<std::pair<std::string, std::string>> state_fields(const sched::Accumulation& a) const;
  void split_reduce(const std::vector<Stmt>& body);
  void column_tiles(const std::vector<Stmt>& body);
  void column_combine(const Stmt& s);
  void split_iterations(const std::vector<Stmt>& body);
  void scan_tiles(const Stmt& s);  // scan_emitter.cpp
  void merge_block_splits(const std::vector<Stmt>& leading);
  void declare_accumulators(const Stmt& s);
  void combine_element(const Stmt& s);
  void merge(const sched::Accumulation& a, const std::string& into, const std::string& from);
  void state_from_fold(const Stmt& s);
  void finish(const Stmt& s);
  // The name of a reduction's state; in a block's passes 1 and 2 (welford_pass_) a Welford
  // reduction's threads merge their sums in the compute type, so its name there is the
  // thread's fold_state, that of the merged double state welford_state.
  std::string accumulator(const sched::Accumulation& a) const {
    return welford_pass_ != 0 && ir::op_info(a.op).accumulator == ir::Accumulator::Welford
               ? fold_state(a)
               : welford_state(a);
  }
  std::string welford_state(const sched::Accumulation& a) const {
    return "acc" + std::to_string(a.local);
  }
  // Part `b` of a batch of split blocks' states (merge_block_splits).
  std::string part_state(const sched::Accumulation& a, int b) const {
    return accumulator(a) + "_p" + std::to_string(b);
  }
  // A Welford state that threads, warps, blocks and split parts merge is double, whatever the
  // dtype: float32 merges of data far from zero relative to its spread (mean 1e3, spread 1e-2)
  // rounded the means by 3e-5 a merge, and the variances came out 2e-5 off (eager: 2e-7). Each
  // thread still folds its own elements in the compute type (fold_state: shifted sums, no FP64
  // work per element, which consumer GPUs run at 1/64 the rate). A block's two passes merge
  // plain sums, in the compute type (cooperative_reduce says why that keeps the digits).
  std::string accumulator_type(const sched::Accumulation& a) const {
    if (ir::op_info(a.op).accumulator != ir::Accumulator::Welford) return compute_type(a.dtype);
    return welford_pass_ != 0 ? "kiln_welford<" + compute_type(a.dtype) + ">"
                              : "kiln_welford<double>";
  }
  // A thread's own sums of a Welford reduction's elements (combine_element), in the compute type.
  std::string fold_state(const sched::Accumulation& a) const { return welford_state(a) + "_fold"; }
  std::string identity(const sched::Accumulation& a) const {
    const ir::OpInfo& info = ir::op_info(a.op);
    if (info.accumulator == ir::Accumulator::Welford) return accumulator_type(a) + "{0, 0, 0}";
    return "kiln_identity_" + std::string(info.name) + "<" + compute_type(a.dtype) + ">()";
  }
  bool has_index(const sched::Accumulation& a) const {
    return ir::op_info(a.op).accumulator == ir::Accumulator::ArgIndex;
  }

  const LaunchPlan& plan_;
};

}  // namespace kiln::codegen::cuda_detail
