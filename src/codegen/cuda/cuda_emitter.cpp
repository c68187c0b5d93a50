#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/c_like_printer.h"
#include "codegen/cpp/cpp_emitter.h"
#include "ir/ops.h"
#include "kiln/error.h"
#include "prelude_text.h"
#include "sched/kernel_hash.h"

namespace kiln::codegen {
namespace {

constexpr int kWarp = 32;
constexpr int kMostThreads = 256;  // per block
// Blocks per multiprocessor a grid-stride launch asks for: enough resident warps to hide
// memory latency, few enough that each thread has several elements.
constexpr int64_t kBlocksPerMultiprocessor = 8;
// Below this much work per outer iteration a block per iteration leaves most threads idle:
// each thread takes whole iterations instead.
constexpr int64_t kBlockWorthOfWork = 32;
// Iterations of a light loop body (at most kUnrolledWork elements) a thread runs per step.
constexpr int kUnroll = 4;
constexpr int64_t kUnrolledWork = 64;

// After scalar_math.h: shuffles of the Welford state.
constexpr const char* kWelfordShuffle =
    "template <class T>\n"
    "KILN_FN kiln_welford<T> kiln_shuffle_down(kiln_welford<T> w, int delta) {\n"
    "  w.count = kiln_shuffle_down(w.count, delta);\n"
    "  w.mean = kiln_shuffle_down(w.mean, delta);\n"
    "  w.m2 = kiln_shuffle_down(w.m2, delta);\n"
    "  return w;\n"
    "}\n";

// How one launch runs its statements.
enum class LaunchKind : uint8_t {
  ThreadPerIteration,  // flattened outer loops, one iteration per thread
  BlockPerIteration,   // flattened outer loops, one iteration per block, cooperative body
  OneBlock,            // the statements cooperatively, one block
  SplitReduce,         // leading reductions over the grid, the rest by the last block
  OneThread,           // the statements in order, one thread
};

struct LaunchPlan {
  LaunchKind kind = LaunchKind::OneThread;
  size_t first = 0, last = 0;        // kernel.body[first, last)
  std::vector<const Stmt*> chain;    // flattened loops (ThreadPerIteration, BlockPerIteration)
  int64_t iterations = 1;            // product of the chain's extents
  int threads = 1;
  int unroll = 1;                    // ThreadPerIteration: iterations a thread runs per step
  size_t split_statements = 0;       // SplitReduce: the leading reductions the grid shares
  int64_t split_work = 0;            // SplitReduce: elements of the largest of them
  int state_fields = 0;              // SplitReduce: scalar fields of their accumulators
};

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

// Threads for a block that shares loops of about `parallel` iterations: a multiple of the warp.
int block_threads(int64_t parallel) {
  int threads = kWarp;
  while (threads < kMostThreads && threads < parallel) threads *= 2;
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

// The whole-array reductions at the top of `body` that the grid can share: leading Reduce
// statements none of which reads another's result, when they are long enough to need more
// than one block.
void plan_split(const Kernel& kernel, const std::vector<Stmt>& body, int64_t least_work,
                LaunchPlan& plan) {
  std::set<int32_t> locals;
  size_t count = 0;
  int64_t work = 0;
  int fields = 0;
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
  if (count == 0 || work < least_work) return;
  plan.kind = LaunchKind::SplitReduce;
  plan.split_statements = count;
  plan.split_work = work;
  plan.state_fields = fields;
  plan.threads = kMostThreads;
}

std::vector<LaunchPlan> plan_launches(const Kernel& kernel, const target::Target& target) {
  std::vector<LaunchPlan> plans;
  const size_t ordered =
      kernel.ordered_from < 0 ? kernel.body.size() : static_cast<size_t>(kernel.ordered_from);
  const bool all_loops = std::all_of(kernel.body.begin(), kernel.body.begin() + ordered,
                                     [](const Stmt& s) { return s.kind == StmtKind::Loop; });
  if (!all_loops) {
    // Top-level reductions feed the statements after them through locals: one block for all.
    LaunchPlan plan;
    plan.kind = LaunchKind::OneBlock;
    plan.last = ordered;
    const std::vector<Stmt> statements(kernel.body.begin(), kernel.body.begin() + ordered);
    plan.threads = block_threads(shared_width(statements));
    plan_split(kernel, statements, target.split_reduction_work, plan);
    plans.push_back(plan);
  } else {
    for (size_t k = 0; k < ordered; ++k) {
      LaunchPlan plan;
      plan.first = k, plan.last = k + 1;
      const Stmt* s = &kernel.body[k];
      if (!is_plain_loop(*s)) {
        plan.kind = LaunchKind::OneBlock;
        plan.threads = block_threads(shared_width({*s}));
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
      if ((reduces || inner.size() > 1) && inner_work >= kBlockWorthOfWork) {
        plan.kind = LaunchKind::BlockPerIteration;
        plan.threads = block_threads(shared_width(inner));
      } else {
        plan.kind = LaunchKind::ThreadPerIteration;
        plan.threads = block_threads(plan.iterations);
        plan.unroll = inner_work <= kUnrolledWork ? kUnroll : 1;
      }
      plans.push_back(plan);
    }
  }
  if (ordered < kernel.body.size()) {
    LaunchPlan plan;
    plan.kind = LaunchKind::OneThread;
    plan.first = ordered, plan.last = kernel.body.size();
    plans.push_back(plan);
  }
  return plans;
}

class CudaKernelEmitter : public CLikePrinter {
 public:
  CudaKernelEmitter(const Program& program, const Kernel& kernel, const Options& options,
                    const target::Target& target, std::vector<int32_t> arguments,
                    const LaunchPlan& plan)
      : CLikePrinter(program, kernel, options, target, std::move(arguments)), plan_(plan) {}

 private:
  std::string function_header() const override {
    size_t table = arguments_.size() + (plan_.kind == LaunchKind::SplitReduce ? 1 : 0);
    return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(plan_.threads) +
           ") KILN_KERNEL_NAME(const kiln_arg_table<" + std::to_string(std::max<size_t>(table, 1)) +
           "> kiln_args)";
  }
  // A split reduction's scratch (runtime::CudaLaunch::scratch_bytes) follows the buffers.
  std::string extra_arguments() const override {
    if (plan_.kind != LaunchKind::SplitReduce) return "";
    return "  char* const kiln_scratch = kiln_args[" + std::to_string(arguments_.size()) + "];\n";
  }
  bool before_loop(const Stmt&) override { return false; }
  // The launch's block size as a constant: every launch has exactly plan_.threads threads, and
  // constant strides let the compiler unroll and strength-reduce the shared loops.
  std::string threads() const { return std::to_string(plan_.threads); }
  // Buffers the kernel only reads go through the read-only data path (ld.global.nc): their
  // loads may move past the kernel's stores, so the unrolled iterations' loads issue together.
  std::string loaded_element(int32_t buffer, const std::string& index) override {
    const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
    bool written = std::find(kernel_.buffers_written.begin(), kernel_.buffers_written.end(),
                             buffer) != kernel_.buffers_written.end();
    if (written || b.dtype == DType::Bool || b.role == sched::BufferRole::Constant)
      return CLikePrinter::loaded_element(buffer, index);
    return "__ldg(" + buffer_name(buffer) + " + (" + index + "))";
  }
  void reduce(const Stmt& s) override;  // one thread's
  void body() override;

  void flattened_chain(const std::string& flat);
  void cooperative(const std::vector<Stmt>& body);
  void cooperative_reduce(const Stmt& s);
  void fold_elements(const Stmt& s, const std::string& first, const std::string& step);
  void block_combine(const Stmt& s);
  std::vector<std::pair<std::string, std::string>> state_fields(const sched::Accumulation& a) const;
  void split_reduce(const std::vector<Stmt>& body);
  void declare_accumulators(const Stmt& s);
  void combine_element(const Stmt& s);
  void merge(const sched::Accumulation& a, const std::string& into, const std::string& from);
  void finish(const Stmt& s);
  std::string accumulator(const sched::Accumulation& a) const {
    return "acc" + std::to_string(a.local);
  }
  std::string accumulator_type(const sched::Accumulation& a) const {
    std::string t = compute_type(a.dtype);
    return ir::op_info(a.op).accumulator == ir::Accumulator::Welford ? "kiln_welford<" + t + ">" : t;
  }
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

void CudaKernelEmitter::body() {
  const std::vector<Stmt> statements_of_launch(kernel_.body.begin() + plan_.first,
                                               kernel_.body.begin() + plan_.last);
  switch (plan_.kind) {
    case LaunchKind::ThreadPerIteration: {
      // plan_.unroll iterations per thread and step, their loads issued together: one 4-byte
      // load in flight per thread does not cover the memory latency at full bandwidth.
      const std::string total = std::to_string(plan_.iterations);
      const std::string stride = "(int64_t)gridDim.x * " + threads();
      line("for (int64_t kiln_base = blockIdx.x * (int64_t)" + threads() + " + threadIdx.x; kiln_base < " +
           total + "; kiln_base += " + std::to_string(plan_.unroll) + " * " + stride + ") {");
      open_block();
      line("#pragma unroll");
      line("for (int kiln_u = 0; kiln_u < " + std::to_string(plan_.unroll) + "; ++kiln_u) {");
      open_block();
      line("const int64_t kiln_flat = kiln_base + kiln_u * " + stride + ";");
      line("if (kiln_flat < " + total + ") {");
      open_block();
      flattened_chain("kiln_flat");
      statements(plan_.chain.back()->body);
      close_block();
      close_block();
      close_block();
      break;
    }
    case LaunchKind::BlockPerIteration:
      // Every thread of the block walks the same iterations: the barriers inside are uniform.
      line("for (int64_t kiln_flat = blockIdx.x; kiln_flat < " + std::to_string(plan_.iterations) +
           "; kiln_flat += gridDim.x) {");
      open_block();
      flattened_chain("kiln_flat");
      cooperative(plan_.chain.back()->body);
      close_block();
      break;
    case LaunchKind::OneBlock:
      cooperative(statements_of_launch);
      break;
    case LaunchKind::SplitReduce:
      split_reduce(statements_of_launch);
      break;
    case LaunchKind::OneThread:
      statements(statements_of_launch);
      break;
  }
}

// The chain's loop variables from one flat index, the innermost loop fastest.
void CudaKernelEmitter::flattened_chain(const std::string& flat) {
  std::string rest = flat;
  for (size_t k = plan_.chain.size(); k-- > 0;) {
    const sched::Loop& l = plan_.chain[k]->loop;
    if (l.extent == 1) continue;  // its variable was folded to 0
    std::string extent = std::to_string(l.extent);
    line("const int64_t " + loop_name(l.variable) + " = " + (k == 0 ? rest : rest + " % " + extent) + ";");
    if (k > 0) {
      std::string next = "kiln_rest" + std::to_string(k);
      line("const int64_t " + next + " = " + rest + " / " + extent + ";");
      rest = next;
    }
  }
}

// The statements run by the whole block: loops shared among the threads, reductions combined
// across them, single stores and scans by thread 0; a barrier between statements, so that
// what one statement writes is seen by the next.
void CudaKernelEmitter::cooperative(const std::vector<Stmt>& body) {
  for (size_t k = 0; k < body.size(); ++k) {
    const Stmt& s = body[k];
    switch (s.kind) {
      case StmtKind::Loop: {
        if (s.loop.extent == 1) {
          line("{");
          open_block();
          cooperative(s.body);
          close_block();
          break;
        }
        auto [begin, end] = bounds_text(s.loop);
        std::string v = loop_name(s.loop.variable);
        line("for (int64_t " + v + " = " + begin + " + threadIdx.x; " + v + " < " + end + "; " + v +
             " += " + threads() + ") {");
        open_block();
        statements(s.body);
        close_block();
        break;
      }
      case StmtKind::Reduce:
        cooperative_reduce(s);
        break;
      default:
        line("if (threadIdx.x == 0) {");
        open_block();
        statements({s});
        close_block();
        break;
    }
    if (k + 1 < body.size()) line("__syncthreads();");
  }
}

void CudaKernelEmitter::declare_accumulators(const Stmt& s) {
  for (const sched::Accumulation& a : s.accumulations) {
    line(accumulator_type(a) + " " + accumulator(a) + " = " + identity(a) + ";");
    if (has_index(a)) line("int64_t " + accumulator(a) + "_index = -1;");
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
      case ir::Accumulator::Welford:
        line(acc + " = kiln_welford_add(" + acc + ", " + x + ");");
        break;
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
      case ir::Accumulator::Welford:
        result = "kiln_welford_variance(" + acc + ", " + std::to_string(a.ddof) + ")";
        break;
      default:
        result = acc;
    }
    std::string type = has_index(a) ? "int64_t" : compute_type(a.dtype);
    line("const " + type + " " + local_name(a.local) + " = " + result + ";");
  }
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
    line("for (int64_t " + v + " = " + begin + "; " + v + " < " + end + "; ++" + v + ") {");
    open_block();
  }
  statements(s.body);
  combine_element(s);
  for (size_t k = 0; k < s.reduce_loops.size(); ++k) close_block();
  if (s.guard >= 0) close_block();
  finish(s);
}

// A reduction shared by the block: each thread folds a strided share of the flattened
// reduction loops, then the partials meet through warp shuffles and one shared-memory step.
void CudaKernelEmitter::cooperative_reduce(const Stmt& s) {
  declare_accumulators(s);
  line("{");
  open_block();
  fold_elements(s, "threadIdx.x", threads());
  block_combine(s);
  close_block();
  finish(s);
}

// Each thread folds elements first, first + step, ... of the flattened reduction loops (the
// last loop fastest) into its accumulators.
void CudaKernelEmitter::fold_elements(const Stmt& s, const std::string& first,
                                      const std::string& step) {
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
  std::string total = width;
  for (size_t k = 0; k + 1 < s.reduce_loops.size(); ++k)
    total += " * " + std::to_string(s.reduce_loops[k].extent);
  std::string flat = "kiln_r" + tag;
  line("for (int64_t " + flat + " = " + first + "; " + flat + " < " + total + "; " + flat +
       " += " + step + ") {");
  open_block();
  line("const int64_t " + loop_name(last.variable) + " = " + low + " + " + flat + " % " + width + ";");
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

// The block's accumulators combined: within each warp, then across the warps through shared
// memory; every thread ends with the block's value.
void CudaKernelEmitter::block_combine(const Stmt& s) {
  auto warp_combine = [&] {
    line("for (int kiln_delta = 16; kiln_delta > 0; kiln_delta >>= 1) {");
    open_block();
    for (const sched::Accumulation& a : s.accumulations) {
      std::string acc = accumulator(a), other = acc + "_other";
      line("const " + accumulator_type(a) + " " + other + " = kiln_shuffle_down(" + acc + ", kiln_delta);");
      if (has_index(a))
        line("const int64_t " + other + "_index = kiln_shuffle_down(" + acc + "_index, kiln_delta);");
      merge(a, acc, other);
    }
    close_block();
  };
  warp_combine();
  const std::string warps = std::to_string(kMostThreads / kWarp);
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line("__shared__ " + accumulator_type(a) + " " + acc + "_warps[" + warps + "];");
    if (has_index(a)) line("__shared__ int64_t " + acc + "_index_warps[" + warps + "];");
    line("if ((threadIdx.x & 31) == 0) " + acc + "_warps[threadIdx.x >> 5] = " + acc + ";");
    if (has_index(a)) line("if ((threadIdx.x & 31) == 0) " + acc + "_index_warps[threadIdx.x >> 5] = " + acc + "_index;");
  }
  line("__syncthreads();");
  line("if (threadIdx.x < 32) {");
  open_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + " = threadIdx.x < " + std::to_string(plan_.threads / kWarp) + " ? " + acc +
         "_warps[threadIdx.x] : " + identity(a) + ";");
    if (has_index(a))
      line(acc + "_index = threadIdx.x < " + std::to_string(plan_.threads / kWarp) + " ? " + acc +
           "_index_warps[threadIdx.x] : -1;");
  }
  warp_combine();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line("if (threadIdx.x == 0) " + acc + "_warps[0] = " + acc + ";");
    if (has_index(a)) line("if (threadIdx.x == 0) " + acc + "_index_warps[0] = " + acc + "_index;");
  }
  close_block();
  line("__syncthreads();");
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + " = " + acc + "_warps[0];");
    if (has_index(a)) line(acc + "_index = " + acc + "_index_warps[0];");
  }
  // The next pass over this code (the next row) writes the same shared slots.
  line("__syncthreads();");
}

// The scalar fields of an accumulation's state, each kept in a scratch array of one slot per
// block by a split reduction: (expression of the accumulator, C type).
std::vector<std::pair<std::string, std::string>> CudaKernelEmitter::state_fields(
    const sched::Accumulation& a) const {
  std::string acc = accumulator(a), t = compute_type(a.dtype);
  switch (ir::op_info(a.op).accumulator) {
    case ir::Accumulator::Welford:
      return {{acc + ".count", t}, {acc + ".mean", t}, {acc + ".m2", t}};
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
    block_combine(s);
    close_block();
  }
  // Scratch: the ticket counter, then one array of gridDim.x slots (8 bytes each) per field.
  line("unsigned int* const kiln_ticket = (unsigned int*)kiln_scratch;");
  int field = 0;
  std::vector<std::string> slots;  // by field, in order
  for (const Stmt& s : leading)
    for (const sched::Accumulation& a : s.accumulations)
      for (const auto& [expression, type] : state_fields(a)) {
        std::string name = "kiln_slots" + std::to_string(field);
        line("volatile " + type + "* const " + name + " = (volatile " + type + "*)(kiln_scratch + 16 + " +
             std::to_string(field) + " * 8 * (int64_t)gridDim.x);");
        line("if (threadIdx.x == 0) " + name + "[blockIdx.x] = " + expression + ";");
        slots.push_back(name);
        ++field;
      }
  line("__shared__ bool kiln_last_block;");
  line("if (threadIdx.x == 0) {");
  open_block();
  line("__threadfence();");
  line("kiln_last_block = atomicAdd(kiln_ticket, 1u) == gridDim.x - 1;");
  close_block();
  line("__syncthreads();");
  line("if (!kiln_last_block) return;");
  line("__threadfence();");
  line("if (threadIdx.x == 0) *kiln_ticket = 0;  // ready for the next launch");
  field = 0;
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    int first_field = field;
    for (const sched::Accumulation& a : s.accumulations) {
      line(accumulator(a) + " = " + identity(a) + ";");
      if (has_index(a)) line(accumulator(a) + "_index = -1;");
    }
    line("for (unsigned int kiln_block = threadIdx.x; kiln_block < gridDim.x; kiln_block += " +
         threads() + ") {");
    open_block();
    field = first_field;
    for (const sched::Accumulation& a : s.accumulations) {
      std::string other = accumulator(a) + "_other";
      line(accumulator_type(a) + " " + other + ";");
      if (has_index(a)) line("int64_t " + other + "_index;");
      for (const auto& [expression, type] : state_fields(a)) {
        std::string target = other + expression.substr(accumulator(a).size());
        line(target + " = " + slots[static_cast<size_t>(field++)] + "[kiln_block];");
      }
      merge(a, accumulator(a), other);
    }
    close_block();
    block_combine(s);
    close_block();
    finish(s);
  }
  cooperative(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
}

std::string constant_array_definition(const sched::Buffer& buffer) {
  size_t count = constant_count(buffer);
  return "__device__ const " + storage_type(buffer.dtype) + " " + buffer.name + "[" +
         std::to_string(count ? count : 1) + "]" + (count ? constant_array_values(buffer) : " = {};\n");
}

}  // namespace

CudaSource emit_cuda(const Program& program, const Options& options,
                     const target::Target& target) {
  if (target.kind != target::DeviceKind::Cuda)
    throw Error(ErrorKind::Internal, "kiln: emit_cuda called for " + target.description());
  CudaSource source;
  std::ostringstream text;
  text << "// Generated by kiln for " << target.description() << ". The comments above each\n"
          "// kernel's functions are the graph lines it implements; a kernel's functions run in\n"
          "// order, kernels with the same code share them.\n";
  text << kCudaPreludeText << "\n" << kScalarMathText << "\n" << kWelfordShuffle
       << op_table_text() << "\n";
  for (const sched::Buffer& buffer : program.buffers)
    if (buffer.role == sched::BufferRole::Constant) text << constant_array_definition(buffer);
  const int64_t most_blocks = kBlocksPerMultiprocessor * std::max(1, target.multiprocessors);
  std::unordered_map<std::string, size_t> kernel_of_key;  // the first kernel of each code
  for (const Kernel& kernel : program.kernels) {
    sched::KernelSignature signature = sched::kernel_signature(kernel, program);
    auto found = kernel_of_key.find(signature.key);
    if (found != kernel_of_key.end()) {
      runtime::CudaKernelCall same = source.kernels[found->second];
      same.arguments = signature.arguments;
      source.kernels.push_back(same);
      continue;
    }
    kernel_of_key.emplace(signature.key, source.kernels.size());
    runtime::CudaKernelCall entry;
    entry.arguments = signature.arguments;
    for (const std::string& comment : kernel.comments) text << "// " << comment_text(comment) << "\n";
    std::vector<LaunchPlan> plans = plan_launches(kernel, target);
    for (size_t k = 0; k < plans.size(); ++k) {
      const LaunchPlan& plan = plans[k];
      if (plan.iterations == 0) continue;  // an empty output: nothing to launch
      runtime::CudaLaunch launch;
      launch.symbol = kernel.name + "_" + std::to_string(k);
      launch.threads = plan.threads;
      switch (plan.kind) {
        case LaunchKind::ThreadPerIteration: {
          int64_t per_block = int64_t(plan.threads) * plan.unroll;
          launch.blocks = std::min(most_blocks, (plan.iterations + per_block - 1) / per_block);
          break;
        }
        case LaunchKind::BlockPerIteration:
          launch.blocks = std::min(most_blocks, plan.iterations);
          break;
        case LaunchKind::SplitReduce:
          launch.blocks = std::min(most_blocks, (plan.split_work + plan.threads - 1) / plan.threads);
          launch.scratch_bytes = 16 + 8 * plan.state_fields * launch.blocks;
          break;
        default:
          launch.blocks = 1;
      }
      launch.blocks = std::max<int64_t>(launch.blocks, 1);
      std::string code =
          CudaKernelEmitter(program, kernel, options, target, signature.arguments, plan).emit();
      code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), launch.symbol);
      text << code << "\n";
      entry.launches.push_back(launch);
    }
    source.kernels.push_back(entry);
  }
  source.text = text.str();
  return source;
}

}  // namespace kiln::codegen
