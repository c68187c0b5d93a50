#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/kernel_emitter.h"
#include "ir/ops.h"
#include "kiln/error.h"
#include "prelude_text.h"
#include "sched/kernel_builder.h"
#include "sched/kernel_hash.h"
#include "sched/scatter_adds.h"

namespace kiln::codegen {
namespace cuda_detail {

namespace {

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
void plan_split(const Kernel& kernel, const std::vector<Stmt>& body, int64_t least_work,
                LaunchPlan& plan) {
  int64_t work = 0;
  int fields = 0;
  const size_t count = leading_reductions(kernel, body, work, fields);
  if (count == 0 || work < least_work) return;
  plan.kind = LaunchKind::SplitReduce;
  plan.split_statements = count;
  plan.split_work = work;
  plan.state_fields = fields;
  plan.threads = kMostThreads;
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

// Below this many elements per thread, more blocks per group cost more in merging than they
// add in parallelism.
constexpr int64_t kLeastSplitElementsPerThread = 32;

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
void plan_block_splits(int64_t work, int64_t threads_per_group, int64_t most_blocks,
                       LaunchPlan& plan) {
  const int64_t groups = split_groups(plan);
  if (2 * groups >= most_blocks) return;
  const int64_t wanted = (most_blocks + groups - 1) / groups;
  const int64_t useful = work / (threads_per_group * kLeastSplitElementsPerThread);
  plan.block_splits = std::max<int64_t>(1, std::min(wanted, useful));
}

// A BlockPerIteration candidate with a shareable body that reads memory in columns
// (LaunchPlan::column_tiles): loads that step by one element with the innermost outer loop
// outnumber those that do with the last reduction loop. Otherwise a long shareable body of
// few iterations is split over blocks.
void plan_shared_reductions(const Kernel& kernel, int64_t most_blocks, LaunchPlan& plan) {
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
  if (columns > rows && innermost.extent >= kWarp / 2) {
    plan.kind = LaunchKind::ColumnTiles;
    plan.threads = kMostThreads;
    plan.column_tiles = (plan.iterations + kWarp - 1) / kWarp;
    plan_block_splits(work, kMostThreads / kWarp, most_blocks, plan);
    return;
  }
  plan_block_splits(work, plan.threads, most_blocks, plan);
}

// The 16-byte vector type of a dtype of 4 or 8 bytes, or "" (narrower dtypes stay scalar).
std::string vector_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float4";
    case DType::Int32: return "int4";
    case DType::UInt32: return "uint4";
    case DType::Float64: return "double2";
    case DType::Int64: return "longlong2";
    case DType::UInt64: return "ulonglong2";
    default: return "";
  }
}

// A ThreadPerIteration plan whose body only stores: the loads and stores that step by one
// element with the innermost loop, from a multiple of the vector width, become 16-byte
// accesses (LaunchPlan::vector_lanes). Four-byte scalar accesses leave the H100's memory
// system under-used (kmeans and sin+cos reached 56-63% of its copy bandwidth).
void plan_vectors(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  const std::vector<Stmt>& body = plan.chain.back()->body;
  const sched::Loop& innermost = plan.chain.back()->loop;
  if (body.empty() || !std::all_of(body.begin(), body.end(), [](const Stmt& s) {
        return s.kind == StmtKind::Store && !s.accumulate && !s.to_local_array;
      }))
    return;
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  auto element_size = [&](int32_t buffer) {
    return int64_t(dtype_size(program.buffers[static_cast<size_t>(buffer)].dtype));
  };
  // Accesses of `bytes`-wide elements that qualify at that width.
  auto vectorizable = [&](int32_t buffer, ExprId offset, int64_t bytes) {
    const int64_t lanes = 16 / bytes;
    return element_size(buffer) == bytes &&
           !vector_type(program.buffers[static_cast<size_t>(buffer)].dtype).empty() &&
           innermost.extent % lanes == 0 &&
           builder.aligned_unit_stride(offset, innermost.variable, lanes);
  };
  std::vector<ExprId> loads;
  std::set<ExprId> seen;
  std::vector<ExprId> stack;
  for (const Stmt& s : body) stack.push_back(s.value);
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    if (e.kind == ExprKind::Load) loads.push_back(id);
    if (e.kind == ExprKind::Local) return;  // a reduction's result: not a plain body
    stack.insert(stack.end(), e.operands.begin(), e.operands.end());
  }
  for (int64_t bytes : {4, 8}) {  // the narrower width first: more lanes per thread
    LaunchPlan vector = plan;
    for (ExprId id : loads) {
      const Expr& e = kernel.exprs[static_cast<size_t>(id)];
      if (vectorizable(e.buffer, e.operands[0], bytes)) vector.vector_loads.push_back(id);
    }
    for (const Stmt& s : body)
      if (vectorizable(s.buffer, s.index, bytes)) vector.vector_stores.push_back(&s);
    if (vector.vector_loads.empty() && vector.vector_stores.empty()) continue;
    std::set<int32_t> buffers;
    for (ExprId id : vector.vector_loads) buffers.insert(kernel.exprs[static_cast<size_t>(id)].buffer);
    for (const Stmt* s : vector.vector_stores) buffers.insert(s->buffer);
    vector.vector_buffers.assign(buffers.begin(), buffers.end());
    vector.vector_lanes = static_cast<int>(16 / bytes);
    plan = std::move(vector);
    return;
  }
}

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
        plan_shared_reductions(kernel, kBlocksPerMultiprocessor * std::max(1, target.multiprocessors),
                               plan);
      } else {
        plan.kind = LaunchKind::ThreadPerIteration;
        plan.threads = block_threads(plan.iterations);
        plan.unroll = inner_work <= kUnrolledWork ? kUnroll : 1;
        plan_vectors(program, kernel, plan);
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

}  // namespace

void CudaKernelEmitter::body() {
  const std::vector<Stmt> statements_of_launch(kernel_.body.begin() + plan_.first,
                                               kernel_.body.begin() + plan_.last);
  switch (plan_.kind) {
    case LaunchKind::ThreadPerIteration: {
      if (plan_.vector_lanes == 1) {
        thread_per_iteration(1);
        break;
      }
      std::string aligned;
      for (int32_t buffer : plan_.vector_buffers)
        aligned += (aligned.empty() ? "(unsigned long long)" : " | (unsigned long long)") + buffer_name(buffer);
      line("if (((" + aligned + ") & 15) == 0) {");
      open_block();
      thread_per_iteration(plan_.vector_lanes);
      close_block();
      line("else {");
      open_block();
      thread_per_iteration(1);
      close_block();
      break;
    }
    case LaunchKind::BlockPerIteration:
      if (plan_.block_splits > 1) {
        split_iterations(plan_.chain.back()->body);
        break;
      }
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
    case LaunchKind::ColumnTiles:
      column_tiles(plan_.chain.back()->body);
      break;
    case LaunchKind::OneThread:
      statements(statements_of_launch);
      break;
  }
}

void CudaKernelEmitter::accumulate_store(int32_t buffer, const std::string& index,
                                         const std::string& value, DType from) {
  const DType dtype = program_.buffers[static_cast<size_t>(buffer)].dtype;
  if (!sched::has_atomic_add(dtype)) return CLikePrinter::accumulate_store(buffer, index, value, from);
  const std::string element = "&" + buffer_name(buffer) + "[" + index + "]";
  const std::string added = convert(value, from, dtype);
  if (dtype == DType::Int64 || dtype == DType::UInt64)  // two's complement: the same bits
    line("atomicAdd((unsigned long long*)" + element + ", (unsigned long long)(" + added + "));");
  else
    line("atomicAdd(" + element + ", " + added + ");");
}

// The chain's iterations, `lanes` consecutive ones of the innermost loop per thread and step
// (plan_.vector_lanes, or 1): plan_.unroll steps per thread at a time, their loads issued
// together, since one 4-byte load in flight per thread does not cover the memory latency.
void CudaKernelEmitter::thread_per_iteration(int lanes) {
  const std::string total = std::to_string(plan_.iterations / lanes);
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
  flattened_chain("kiln_flat", lanes);
  const std::vector<Stmt>& body = plan_.chain.back()->body;
  if (lanes == 1) {
    statements(body);
  } else {
    // The innermost variable of lane 0, then each vector load, each lane's statements (the
    // vector accesses through registers), and each vector store.
    const std::string v = loop_name(plan_.chain.back()->loop.variable);
    auto lane_zero = [&](const std::function<void()>& print) {
      line("{");
      open_block();
      line("const int64_t " + v + " = kiln_lane0;");
      print();
      close_block();
    };
    for (ExprId id : plan_.vector_loads) {
      const Expr& e = expr(id);
      const std::string type = vector_type(program_.buffers[static_cast<size_t>(e.buffer)].dtype);
      line(type + " kiln_v" + std::to_string(id) + ";");
      lane_zero([&] {
        std::string address = "reinterpret_cast<const " + type + "*>(" + buffer_name(e.buffer) +
                              " + (" + index_text(e.operands[0]) + "))";
        bool written = std::find(kernel_.buffers_written.begin(), kernel_.buffers_written.end(),
                                 e.buffer) != kernel_.buffers_written.end();
        line("kiln_v" + std::to_string(id) + " = " + (written ? "*" + address : "__ldg(" + address + ")") + ";");
      });
    }
    for (size_t k = 0; k < plan_.vector_stores.size(); ++k) {
      const Stmt& s = *plan_.vector_stores[k];
      line(vector_type(program_.buffers[static_cast<size_t>(s.buffer)].dtype) + " kiln_s" +
           std::to_string(k) + ";");
    }
    for (lane_ = 0; lane_ < lanes; ++lane_) {
      line("{");
      open_block();
      line("const int64_t " + v + " = kiln_lane0 + " + std::to_string(lane_) + ";");
      statements(body);
      close_block();
    }
    lane_ = -1;
    for (size_t k = 0; k < plan_.vector_stores.size(); ++k) {
      const Stmt& s = *plan_.vector_stores[k];
      const std::string type = vector_type(program_.buffers[static_cast<size_t>(s.buffer)].dtype);
      lane_zero([&] {
        line("*reinterpret_cast<" + type + "*>(" + buffer_name(s.buffer) + " + (" +
             index_text(s.index) + ")) = kiln_s" + std::to_string(k) + ";");
      });
    }
  }
  close_block();
  close_block();
  close_block();
}

namespace {
const char* const kLaneFields[] = {"x", "y", "z", "w"};
}  // namespace

std::string CudaKernelEmitter::load_value(ExprId id) {
  if (lane_ < 0 || std::find(plan_.vector_loads.begin(), plan_.vector_loads.end(), id) ==
                       plan_.vector_loads.end())
    return CLikePrinter::load_value(id);
  return "kiln_v" + std::to_string(id) + "." + kLaneFields[lane_];
}

void CudaKernelEmitter::plain_store(const Stmt& s, const std::string& index, const std::string& value) {
  auto found = std::find(plan_.vector_stores.begin(), plan_.vector_stores.end(), &s);
  if (lane_ < 0 || found == plan_.vector_stores.end()) return CLikePrinter::plain_store(s, index, value);
  const DType dtype = program_.buffers[static_cast<size_t>(s.buffer)].dtype;
  line("kiln_s" + std::to_string(found - plan_.vector_stores.begin()) + "." + kLaneFields[lane_] +
       " = " + convert(value, expr(s.value).dtype, dtype) + ";");
}

// The chain's loop variables from one flat index, the innermost loop fastest. With `lanes`,
// the flat index counts runs of that many innermost iterations: the innermost variable of the
// run's first lane is `kiln_lane0`.
void CudaKernelEmitter::flattened_chain(const std::string& flat, int lanes) {
  std::string rest = flat;
  for (size_t k = plan_.chain.size(); k-- > 0;) {
    const sched::Loop& l = plan_.chain[k]->loop;
    const bool innermost = k + 1 == plan_.chain.size() && lanes > 1;
    const int64_t runs = innermost ? l.extent / lanes : l.extent;
    if (runs == 1 && !innermost) continue;  // its variable was folded to 0
    std::string extent = std::to_string(runs);
    std::string value = k == 0 ? rest : rest + " % " + extent;
    if (innermost)
      line("const int64_t kiln_lane0 = (" + value + ") * " + std::to_string(lanes) + ";");
    else
      line("const int64_t " + loop_name(l.variable) + " = " + value + ";");
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

}  // namespace cuda_detail

namespace {

std::string constant_array_definition(const sched::Buffer& buffer) {
  size_t count = constant_count(buffer);
  return "__device__ const " + storage_type(buffer.dtype) + " " + buffer.name + "[" +
         std::to_string(count ? count : 1) + "]" + (count ? constant_array_values(buffer) : " = {};\n");
}

}  // namespace

CudaSource emit_cuda(const Program& program, const Options& options,
                     const target::Target& target) {
  using namespace cuda_detail;
  if (target.kind != target::DeviceKind::Cuda)
    throw Error(ErrorKind::Internal, "kiln: emit_cuda called for " + target.description());
  CudaSource source;
  std::ostringstream header;
  header << "// Generated by kiln for " << target.description() << ". The comments above each\n"
            "// kernel's functions are the graph lines it implements; a kernel's functions run in\n"
            "// order, kernels with the same code share them.\n";
  header << kCudaPreludeText << "\n" << kScalarMathText << "\n" << kWelfordShuffle
         << op_table_text() << "\n";
  for (const sched::Buffer& buffer : program.buffers)
    if (buffer.role == sched::BufferRole::Constant) header << constant_array_definition(buffer);
  source.header = header.str();
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
    std::ostringstream text;
    for (const std::string& comment : kernel.comments) text << "// " << comment_text(comment) << "\n";
    std::vector<LaunchPlan> plans = plan_launches(program, kernel, target);
    for (size_t k = 0; k < plans.size(); ++k) {
      const LaunchPlan& plan = plans[k];
      if (plan.iterations == 0) continue;  // an empty output: nothing to launch
      runtime::CudaLaunch launch;
      launch.symbol = kernel.name + "_" + std::to_string(k);
      launch.threads = plan.threads;
      switch (plan.kind) {
        case LaunchKind::ThreadPerIteration: {
          int64_t per_block = int64_t(plan.threads) * plan.unroll * plan.vector_lanes;
          launch.blocks = std::min(most_blocks, (plan.iterations + per_block - 1) / per_block);
          break;
        }
        case LaunchKind::BlockPerIteration:
          launch.blocks = plan.block_splits > 1 ? plan.iterations * plan.block_splits
                                                 : std::min(most_blocks, plan.iterations);
          break;
        case LaunchKind::SplitReduce:
          launch.blocks = std::min(most_blocks, (plan.split_work + plan.threads - 1) / plan.threads);
          launch.scratch_bytes = 16 + 8 * plan.state_fields * launch.blocks;
          break;
        case LaunchKind::ColumnTiles:
          launch.blocks = plan.block_splits > 1 ? plan.column_tiles * plan.block_splits
                                                 : std::min(most_blocks, plan.column_tiles);
          break;
        default:
          launch.blocks = 1;
      }
      launch.blocks = std::max<int64_t>(launch.blocks, 1);
      if (plan.block_splits > 1) launch.scratch_bytes = split_scratch_bytes(plan);
      std::string code =
          CudaKernelEmitter(program, kernel, options, target, signature.arguments, plan).emit();
      code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), launch.symbol);
      text << code << "\n";
      entry.launches.push_back(launch);
    }
    source.functions.push_back(text.str());
    source.kernels.push_back(entry);
  }
  source.text = source.header;
  for (const std::string& functions : source.functions) source.text += functions;
  return source;
}

std::vector<std::string> split_cuda_source(const CudaSource& source, size_t units) {
  const size_t count = source.functions.size();
  units = std::max<size_t>(1, std::min(units, count));
  std::vector<std::string> texts;
  for (size_t u = 0; u < units; ++u) {
    std::string text = source.header;
    for (size_t f = u * count / units; f < (u + 1) * count / units; ++f) text += source.functions[f];
    texts.push_back(std::move(text));
  }
  return texts;
}

}  // namespace kiln::codegen
