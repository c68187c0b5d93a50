// Device loops: a graph loop whose body is small kernels (and loops of them) runs on the GPU as
// one kernel of one block, the loop's control on the device. Run from the host, each iteration
// costs a launch per kernel (a few microseconds of host time each) and, for a while loop or
// bounds computed in the loop, a copy of 8 bytes back and a wait; a loop of one element per
// iteration (a CRC, a sieve, a DP table) then takes microseconds an element. Here the loop's
// kernel walks the iterations itself: each body launch is a __device__ function run by the
// first threads of the block as a grid of one block (CudaKernelEmitter::inside_device_loop),
// a block barrier between launches, the carried buffers' pointers swapped in registers.
//
// The loop's 0-d buffers live in shared memory while it runs (scalars_to_shared); where every
// launch is one element's work, the block's first thread runs the loop alone, with no
// barrier, its 0-d buffers in a local array the compiler keeps in registers. The host's
// table of buffers is left as it was: the block copies back what the steps after the loop read,
// the 0-d values and the carried values the loop left in their partner's buffer (an odd number
// of swaps), so those steps find them where a run of no swaps leaves them.
//
// One block of one multiprocessor is a small part of the GPU: a loop is run here only where its
// body's launches take that block less time than the host takes to queue them (plan_loop).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/device_loop_printer.h"
#include "codegen/cuda/kernel_emitter.h"
#include "ir/loop.h"
#include "sched/independent_iterations.h"
#include "sched/induction_ranges.h"
#include "sched/kernel_builder.h"
#include "sched/kernel_hash.h"
#include "sched/trim_loops.h"

namespace kiln::codegen::cuda_detail {

namespace {

// The choice between the two, per pass over the loop's steps (a rough model, from an H100's
// loop programs run both ways): from the host a launch costs ~4 us (such loops are host-bound;
// writing the loop's index each iteration costs one more), and a bound or while test read
// back ~20 us; on the device a launch costs a barrier and a memory round trip, ~0.3 us, plus
// its elements at ~32 per microsecond a thread (lcs's row of 301 in one thread: 9.5 us), or
// its bytes at ~130 a nanosecond, one multiprocessor's share of the memory system, where that
// is longer (a Gray-Scott step of 256x256 float64 points, 160 bytes loaded or stored a point
// counting neighbours: 82 us in one block, ~4 us from the host as a grid).
constexpr int64_t kHostLaunchNs = 4000;
constexpr int64_t kReadBackNs = 20000;
constexpr int64_t kDeviceLaunchNs = 300;
constexpr int64_t kElementsPerThreadMicrosecond = 32;
constexpr int64_t kBlockBytesPerNs = 130;
// A round of a block's sorting network (sort_kernels.cpp): a compare-exchange and a barrier.
constexpr int64_t kSortRoundNs = 80;
// A loop of independent iterations of one thread's work: a thread an iteration, in blocks of
// this many threads.
constexpr int kIterationThreads = 128;
// Of a block's work: a block an iteration, this many blocks a multiprocessor at most.
constexpr int64_t kIterationBlocksPerMultiprocessor = 4;
// The loop kernel's table of buffer pointers must fit a kernel's 4 KiB of parameters.
constexpr size_t kMostLoopBuffers = 480;

// The bytes a load of one element moves where its address steps by more than one element
// between a warp's lanes: a 32-byte sector.
constexpr int64_t kSectorBytes = 32;

// The bytes the loads in the expressions from `roots` read, each load once. A load whose
// address steps by more than one element with `lane` (the loop a warp's lanes take) reads a
// sector an element: a column of a row-major matrix read a lane a row (Gram-Schmidt's
// Q[:, :j].T @ a[:, j], 200 rows of 200: 43 us an iteration in one block on an H100, against
// 15 us as launches over the grid).
int64_t bytes_loaded(const sched::KernelBuilder& builder, std::vector<ExprId> roots,
                     int32_t lane) {
  std::set<ExprId> seen;
  int64_t bytes = 0;
  while (!roots.empty()) {
    const ExprId id = roots.back();
    roots.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    const Expr& e = builder.expr(id);
    if (e.kind == ExprKind::Load) {
      const int64_t step = lane < 0 ? 0 : builder.coefficient(e.operands[0], lane);
      bytes += step > 1 || step < -1 ? std::max<int64_t>(kSectorBytes, dtype_size(e.dtype))
                                     : dtype_size(e.dtype);
    }
    roots.insert(roots.end(), e.operands.begin(), e.operands.end());
  }
  return bytes;
}

// What a launch of statement `s` does: the elements its loops visit and the bytes it loads
// (a neighbour's load counted apart) and stores. A loop trimmed to its mask's window
// (trim_loops) counts once: the windows of the loop programs are an element (lcs's cell,
// cholesky's pivot) or a few.
struct Work {
  int64_t elements = 0, bytes = 0;
  Work& operator+=(const Work& other) {
    elements += other.elements;
    bytes += other.bytes;
    return *this;
  }
};

// `lane`: the innermost loop around `s` (a warp's lanes take it), -1 at the top.
Work statement_work(const sched::KernelBuilder& builder, const Stmt& s, int32_t lane) {
  if (s.kind == StmtKind::Loop) lane = s.loop.variable;
  if (!s.reduce_loops.empty()) lane = s.reduce_loops.back().variable;
  Work inner;
  for (const Stmt& child : s.body) inner += statement_work(builder, child, lane);
  std::vector<ExprId> roots{s.index, s.value};
  for (const sched::Accumulation& a : s.accumulations) roots.push_back(a.value);
  inner.bytes += bytes_loaded(builder, roots, lane);
  if ((s.kind == StmtKind::Store || s.kind == StmtKind::Scan) && !s.to_local_array)
    inner.bytes += dtype_size(builder.expr(s.value).dtype);
  const bool trimmed = s.kind == StmtKind::Loop && (s.loop.begin >= 0 || s.loop.end >= 0);
  int64_t extent = s.kind == StmtKind::Loop && !trimmed ? s.loop.extent : 1;
  for (const sched::Loop& l : s.reduce_loops) extent *= l.extent;
  return {extent * std::max<int64_t>(inner.elements, 1), extent * inner.bytes};
}

// The target a device loop's launches are planned for: one multiprocessor, no reduction split
// over blocks (one block runs the launch).
target::Target loop_target(const target::Target& target) {
  target::Target one = target;
  one.multiprocessors = 1;
  one.block_threads = 1024;  // a block as wide as it goes: the loop has one
  one.split_reduction_work = int64_t{1} << 62;
  return one;
}

// Whether a launch of `plan` runs as a device loop's function: a grid-stride launch, or one
// block or thread, with no scratch, on whole warps (its barrier is a named one of whole warps).
bool runs_inside_loop(const LaunchPlan& plan) {
  switch (plan.kind) {
    case LaunchKind::ThreadPerIteration:
    case LaunchKind::BlockPerIteration:
    case LaunchKind::OneBlock:
      return plan.block_splits == 1 && plan.threads % kWarp == 0;
    case LaunchKind::OneThread:
      return true;
    default:  // split, column and scan tiles keep scratch or much shared memory
      return false;
  }
}

// Whether statements store single elements: no reduction, no loop of more than one iteration.
bool single_elements(const std::vector<Stmt>& body) {
  return std::all_of(body.begin(), body.end(), [](const Stmt& s) {
    return s.kind == StmtKind::Store ||
           (s.kind == StmtKind::Loop && s.loop.extent == 1 && single_elements(s.body));
  });
}

// Whether a launch of `plan` is one thread's work: a OneThread launch, a grid-stride one of a
// single element, or a block's single stores (its other threads skip them).
bool one_threads_work(const Kernel& kernel, const LaunchPlan& plan) {
  switch (plan.kind) {
    case LaunchKind::OneThread:
      return true;
    case LaunchKind::ThreadPerIteration:
      return plan.iterations <= 1;
    case LaunchKind::OneBlock:
      return single_elements(launch_statements(kernel, plan));
    default:
      return false;
  }
}

// A body kernel as the loop runs it, and its launches, which point into it. A kernel with
// statements that run in order on one thread (a scatter: lcs's `table[i, j] = ...`, a masked
// update of row i) has its loops trimmed to the bounds its mask puts on them
// (sched/trim_loops.h, which the GPU's passes otherwise leave to the CPU): that thread visits
// one element, not the row (H100: lcs 855 -> 43 ms). Elsewhere the block's threads share the
// whole masked loop: LU's trailing update trimmed to its window left most of them idle
// (3.7 -> 5.5 ms).
struct BodyKernel {
  Kernel kernel;
  std::vector<LaunchPlan> plans;
};

struct LoopPlan {
  LoopPlan() = default;
  LoopPlan(const LoopPlan&) = delete;  // the plans point into the kernels: moved, never copied
  LoopPlan(LoopPlan&&) = default;
  size_t begin = 0;
  std::map<size_t, BodyKernel> body;  // by kernel step
  std::map<size_t, LoopSort> sorts;   // by extern step: rows the block sorts
  int threads = 1;                    // the loop kernel's block
  // Every launch is one thread's work (a CRC's bit, a DP cell, a sieve's test): the block's
  // first thread runs the whole loop alone, with no barrier, its 0-d buffers in its registers.
  bool one_thread = true;
  // The iterations are independent (sched/independent_iterations.h: `out[i] = f(x[i])` with a
  // branch, a row's sort and counts written to out[i]): each thread of a grid (one_thread) or
  // each block runs its own iterations, as a NumPy function's launch would (0 when not).
  int64_t parallel_trips = 0;
  std::set<int32_t> private_buffers;
  // A block's own copies of the private arrays, in the loop launch's scratch: bytes a block.
  int64_t private_bytes = 0;
  std::map<int32_t, int64_t> private_offsets;  // by buffer, into a block's share
};

// A loop run by one block reads its arrays at one multiprocessor's pace, each iteration waiting
// out its loads' latency from memory (a row a step). The arrays it reads and never writes,
// from 64 KiB up to 16 MiB in all, are prefetched into L2 (50 MiB on an H100) by the block's
// threads before the first iteration, so that the iterations' loads wait for L2 (H100:
// row_recurrence's 4000 rows 2.33 -> 1.67 ms; forward substitution, whose 8 MB matrix a
// repeated call finds in L2 already, 795-802 -> 823 us, the requests' own time).
constexpr int64_t kSmallestPrefetch = 64 << 10, kMostPrefetched = 16 << 20;

std::string read_only_prefetches(const Program& program, const std::vector<int32_t>& buffers,
                                 size_t begin) {
  const std::set<int32_t> written = sched::buffers_written_in_loop(program, begin);
  std::string text;
  int64_t total = 0;
  for (size_t k = 0; k < buffers.size(); ++k) {
    const sched::Buffer& buffer = program.buffers[static_cast<size_t>(buffers[k])];
    const int64_t bytes = sched::buffer_bytes(buffer);
    if (written.count(buffers[k]) || bytes < kSmallestPrefetch || total + bytes > kMostPrefetched)
      continue;
    total += bytes;
    text += "  kiln_prefetch_l2(kiln_args[" + std::to_string(k) + "], " + std::to_string(bytes) +
            "ll);\n";
  }
  return text;
}

// Sets loop.parallel_trips and its private buffers where its iterations are independent: a
// thread an iteration where every launch is one thread's work and what each writes for itself
// is 0-d (a thread's registers), else a block an iteration, its arrays in the launch's scratch
// and its 0-d buffers in the block's shared memory. Every other 0-d buffer the loop writes
// would need the last iteration's value: those loops stay in one block.
void plan_parallel_iterations(const Program& program, LoopPlan& loop) {
  const std::optional<std::vector<int32_t>> own =
      sched::independent_iterations(program, loop.begin, !loop.sorts.empty());
  if (!own) return;
  const std::set<int32_t> private_buffers(own->begin(), own->end());
  std::map<int32_t, int64_t> offsets;
  int64_t bytes = 0;
  for (int32_t b : private_buffers) {
    const sched::Buffer& buffer = program.buffers[static_cast<size_t>(b)];
    if (buffer.shape.empty()) continue;
    if (loop.one_thread) return;
    offsets[b] = bytes;
    bytes += (sched::buffer_bytes(buffer) + 15) / 16 * 16;
  }
  for (int32_t b : sched::buffers_written_in_loop(program, loop.begin))
    if (program.buffers[static_cast<size_t>(b)].shape.empty() && !private_buffers.count(b)) return;
  loop.parallel_trips = sched::constant_trip_count(program.steps[loop.begin].loop);
  if (loop.parallel_trips <= 0) return;
  loop.private_buffers = private_buffers;
  loop.private_bytes = bytes;
  loop.private_offsets = std::move(offsets);
}

int64_t iteration_blocks(const LoopPlan& loop, const target::Target& target) {
  return std::min<int64_t>(loop.parallel_trips,
                           kIterationBlocksPerMultiprocessor * std::max(1, target.multiprocessors));
}

// How the program's loops run, from KILN_CUDA_DEVICE_LOOPS: unset the cost model chooses, 0 none
// on the device, 1 every loop that can (for measuring the two against each other).
int forced_choice() {
  const char* text = std::getenv("KILN_CUDA_DEVICE_LOOPS");
  if (text == nullptr || *text == 0) return -1;
  return std::string(text) == "0" ? 0 : 1;
}

// The loop at `begin` as a device loop, or nullopt.
std::optional<LoopPlan> plan_loop(const Program& program, size_t begin,
                                  const target::Target& target, const target::Target& device) {
  LoopPlan loop;
  loop.begin = begin;
  const size_t end = static_cast<size_t>(program.steps[begin].loop.partner);
  // Each step's share of one pass over the loop's body: an inner loop's steps count as many
  // times as it has iterations where its bounds are constants (once otherwise).
  int64_t host_ns = 0, device_ns = 0;
  std::vector<int64_t> passes{1};
  std::set<int32_t> swapped, buffers;
  const std::set<int32_t> outside = sched::buffers_used_outside(program, begin);
  for (size_t s = begin; s <= end; ++s) {
    const sched::Step& step = program.steps[s];
    const sched::LoopControl& control = step.loop;
    if (step.kind == sched::StepKind::Extern) {
      std::optional<LoopSort> sort =
          loop_sort(program, s, "kiln_loop" + std::to_string(begin) + "_s" + std::to_string(s));
      if (!sort) return std::nullopt;
      loop.one_thread = false;
      loop.threads = std::max(loop.threads, sort->threads);
      buffers.insert(sort->arguments.begin(), sort->arguments.end());
      host_ns += passes.back() * kHostLaunchNs;
      device_ns += passes.back() * (kDeviceLaunchNs + std::max(sort->rounds * kSortRoundNs,
                                                               sort->bytes / kBlockBytesPerNs));
      loop.sorts.emplace(s, std::move(*sort));
      continue;
    }
    if (step.kind == sched::StepKind::LoopBegin) {
      const bool constant = control.start < 0 && control.stop < 0;
      if (control.condition >= 0 || (!constant && s > begin)) host_ns += passes.back() * kReadBackNs;
      if (s > begin)
        passes.push_back(passes.back() *
                         (constant ? std::max<int64_t>(1, ir::loop_trip_count(control.start_value,
                                                                              control.stop_value,
                                                                              control.step))
                                   : 1));
    }
    if (step.kind == sched::StepKind::LoopEnd) {
      host_ns += passes.back() * kHostLaunchNs;  // writing the index, each iteration
      if (s < end) passes.pop_back();
    }
    for (const auto& [carried, next] : control.swaps)  // each buffer in one swap (copy_back)
      if (!swapped.insert(carried).second || !swapped.insert(next).second || outside.count(next))
        return std::nullopt;
    for (int32_t b : {control.start, control.stop, control.induction, control.condition})
      if (b >= 0) buffers.insert(b);
    if (step.kind != sched::StepKind::Kernel) continue;
    BodyKernel& body = loop.body[s];
    body.kernel = program.kernels[static_cast<size_t>(step.kernel)];
    const Kernel& kernel = body.kernel;
    buffers.insert(kernel.buffers_read.begin(), kernel.buffers_read.end());
    buffers.insert(kernel.buffers_written.begin(), kernel.buffers_written.end());
    body.plans = plan_launches(program, kernel, target);
    if (std::any_of(body.plans.begin(), body.plans.end(),
                    [](const LaunchPlan& plan) { return plan.kind == LaunchKind::OneThread; }) &&
        sched::trim_loops(body.kernel, target))
      body.plans = plan_launches(program, kernel, target);
    const sched::KernelBuilder builder(body.kernel);
    for (const LaunchPlan& plan : body.plans) {
      if (!runs_inside_loop(plan)) return std::nullopt;
      loop.one_thread = loop.one_thread && one_threads_work(kernel, plan);
      Work work;
      for (size_t k = plan.first; k < plan.last; ++k)
        work += statement_work(builder, kernel.body[k], -1);
      loop.threads = std::max(loop.threads, plan.threads);
      host_ns += passes.back() * kHostLaunchNs;
      const int64_t threads_ns =
          work.elements * 1000 / (kElementsPerThreadMicrosecond * plan.threads);
      device_ns += passes.back() *
                   (kDeviceLaunchNs + std::max(threads_ns, work.bytes / kBlockBytesPerNs));
    }
  }
  if (buffers.size() + swapped.size() > kMostLoopBuffers) return std::nullopt;
  const int forced = forced_choice();
  if (forced == 0) return std::nullopt;
  plan_parallel_iterations(program, loop);
  // A block an iteration: the iterations' device time shared by the blocks that run at once.
  if (loop.parallel_trips > 0 && !loop.one_thread) {
    const int64_t blocks = iteration_blocks(loop, device);
    device_ns = device_ns * ((loop.parallel_trips + blocks - 1) / blocks) / loop.parallel_trips;
  }
  const bool threads_parallel = loop.parallel_trips > 0 && loop.one_thread;
  if (forced < 0 && !threads_parallel && device_ns >= host_ns) return std::nullopt;
  return loop;
}

// The outermost loops the device may run: compiled ones (sched::compiled_loops), and those
// whose only extern steps are sorts (the loop's block runs a sort of short rows as one of its
// functions: sort_kernels.cpp).
std::vector<size_t> device_loop_candidates(const Program& program) {
  std::vector<size_t> loops;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const sched::Step& step = program.steps[s];
    if (step.kind != sched::StepKind::LoopBegin) continue;
    const size_t end = static_cast<size_t>(step.loop.partner);
    bool sorts_only = true;
    for (size_t k = s; k <= end && sorts_only; ++k)
      sorts_only = program.steps[k].kind != sched::StepKind::Extern ||
                   ir::is_sort(program.steps[k].call.op);
    if (step.loop.compiled || sorts_only) {
      loops.push_back(s);
      s = end;
    }
  }
  return loops;
}

}  // namespace

struct DeviceLoopPlans {
  std::vector<LoopPlan> loops;
};

DeviceLoops plan_device_loops(const Program& program, const target::Target& target) {
  auto plans = std::make_shared<DeviceLoopPlans>();
  const target::Target one = loop_target(target);
  std::set<int32_t> inside, outside;
  std::vector<bool> in_loop(program.steps.size(), false);
  for (size_t begin : device_loop_candidates(program)) {
    std::optional<LoopPlan> plan = plan_loop(program, begin, one, target);
    if (!plan) continue;
    plans->loops.push_back(std::move(*plan));
    for (size_t s = begin; s <= static_cast<size_t>(program.steps[begin].loop.partner); ++s)
      in_loop[s] = true;
  }
  DeviceLoops loops;
  for (size_t s = 0; s < program.steps.size(); ++s)
    if (program.steps[s].kind == sched::StepKind::Kernel)
      (in_loop[s] ? inside : outside).insert(program.steps[s].kernel);
  for (int32_t kernel : inside)
    if (!outside.count(kernel)) loops.kernels.insert(kernel);
  loops.plans = std::move(plans);
  return loops;
}

void add_device_loops(const Program& program, const Options& options, const target::Target& target,
                      const DeviceLoops& loops, CudaSource& source) {
  const target::Target one = loop_target(target);
  for (const LoopPlan& plan : loops.plans->loops) {
    const size_t begin = plan.begin;
    const std::string name = "kiln_loop" + std::to_string(begin);
    std::vector<std::vector<int32_t>> kernel_arguments(program.kernels.size());
    std::map<size_t, std::vector<int32_t>> arguments;  // by step
    std::map<size_t, std::vector<LoopCall>> calls;
    std::string text = "// Steps " + std::to_string(begin) + ".." +
                       std::to_string(program.steps[begin].loop.partner) +
                       ": a graph loop run on the device (codegen/cuda/device_loops.cpp).\n";
    int64_t parallel_trips = plan.parallel_trips;
    for (const auto& [step, body] : plan.body) {
      const int32_t k = program.steps[step].kernel;
      const Kernel& kernel = body.kernel;
      const std::vector<LaunchPlan>& plans = body.plans;
      const std::vector<int32_t> signature = sched::kernel_signature(kernel, program).arguments;
      kernel_arguments[static_cast<size_t>(k)] = signature;
      arguments[step] = signature;
      for (const std::string& comment : kernel.comments) text += "// " + comment_text(comment) + "\n";
      for (size_t l = 0; l < plans.size(); ++l) {
        const std::string symbol = name + "_s" + std::to_string(step) + "_" + std::to_string(l);
        CudaKernelEmitter emitter(program, kernel, options, one, signature, plans[l]);
        emitter.inside_device_loop(plan.one_thread);
        std::string code = emitter.emit();
        code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), symbol);
        text += code;
        // Each thread of a loop of independent iterations is thread 0 of every launch
        // (inside_device_loop's `alone`), each block of a loop of a block an iteration block 0:
        // a launch whose code still names its thread (block) keeps the loop in one thread (block).
        if (code.find(plan.one_thread ? "threadIdx" : "blockIdx") != std::string::npos)
          parallel_trips = 0;
        calls[step].push_back({symbol, plans[l].threads, one_threads_work(kernel, plans[l]),
                               emitter.ends_on_first_thread()});
      }
    }
    std::vector<int32_t> buffers = sched::compiled_loop_buffers(program, kernel_arguments, begin);
    if (!plan.sorts.empty() && source.header.find(sort_device_code()) == std::string::npos)
      source.header += sort_device_code();
    for (const auto& [step, sort] : plan.sorts) {
      text += sort.function;
      arguments[step] = sort.arguments;
      calls[step].push_back({sort.symbol, sort.threads, false, false});
      buffers.insert(buffers.end(), sort.arguments.begin(), sort.arguments.end());
    }
    std::sort(buffers.begin(), buffers.end());
    buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
    std::map<int32_t, size_t> slot;
    for (size_t k = 0; k < buffers.size(); ++k) slot[buffers[k]] = k;
    const std::set<int32_t> none;
    LoopPrinter printer(program, slot, calls, arguments, plan.threads, plan.one_thread,
                        parallel_trips > 0 ? plan.private_buffers : none);
    const bool block_iterations = parallel_trips > 0 && !plan.one_thread;
    if (block_iterations)
      printer.private_arrays(plan.private_offsets, plan.private_bytes, buffers.size());
    printer.scalars_to_shared();
    printer.loop(begin, 1);
    printer.copy_back(begin);
    const size_t slots = buffers.size() + (block_iterations ? 1 : 0);  // + the scratch
    const std::string count = std::to_string(std::max<size_t>(slots, 1));
    runtime::CudaLaunch launch;
    launch.symbol = name;
    launch.threads = plan.threads;
    if (parallel_trips > 0 && plan.one_thread) {
      launch.threads = kIterationThreads;
      launch.blocks = std::min<int64_t>((parallel_trips + kIterationThreads - 1) / kIterationThreads,
                                        kBlocksPerMultiprocessor * std::max(1, target.multiprocessors));
    }
    if (block_iterations) {
      launch.blocks = iteration_blocks(plan, target);
      launch.scratch_bytes = std::max<int64_t>(launch.blocks * plan.private_bytes, 16);
    }
    const bool first_thread_alone = plan.one_thread && parallel_trips == 0;
    text += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(launch.threads) + ") " +
            name + "(const kiln_arg_table<" + count + "> kiln_args) {\n" +
            (parallel_trips == 0 ? read_only_prefetches(program, buffers, begin) : "") +
            (first_thread_alone ? "  if (threadIdx.x != 0) return;\n" : "") + "  char* b[" + count +
            "];\n#pragma unroll\n  for (int j = 0; j < " + std::to_string(buffers.size()) +
            "; ++j) b[j] = kiln_args[j];\n" + printer.text() + "}\n";
    source.functions.push_back(text);
    runtime::CudaKernelCall call;
    call.arguments = buffers;
    call.launches.push_back(launch);
    call.replaces_step = static_cast<int32_t>(begin);
    source.kernels.push_back(call);
  }
}

}  // namespace kiln::codegen::cuda_detail
