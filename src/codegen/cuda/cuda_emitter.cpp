// CudaKernelEmitter: a kernel's launches as CUDA functions (its body, a block an iteration,
// cooperative teams); cuda_source.cpp assembles a Program's source from them.
#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <functional>
#include <set>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/kernel_emitter.h"
#include "codegen/cuda/uniform_values.h"
#include "ir/ops.h"
#include "sched/scatter_adds.h"

namespace kiln::codegen {
namespace cuda_detail {

namespace {

// Whether cooperative(body) runs only first-thread statements (or a reduction's register work)
// after its last barrier: its last statement is not a loop shared among the threads.
bool team_ends_on_first_thread(const std::vector<Stmt>& body) {
  if (body.empty()) return true;
  const Stmt& last = body.back();
  if (last.kind != StmtKind::Loop) return true;
  return last.loop.extent == 1 && team_ends_on_first_thread(last.body);
}

}  // namespace

void CudaKernelEmitter::body() {
  const std::vector<Stmt> statements_of_launch = launch_statements(kernel_, plan_);
  if (!parts_.empty()) return combined_body();
  for (ExprId id : uniform_values(program_, kernel_, statements_of_launch)) value(id);
  // 16-byte accesses (LaunchPlan::vector_lanes) where every buffer they touch is 16-byte
  // aligned, checked at run time; the scalar copy of the launch otherwise.
  auto aligned_or_not = [&](const std::function<void(int)>& print) {
    std::string aligned;
    for (int32_t buffer : plan_.vector_buffers)
      aligned += (aligned.empty() ? "(unsigned long long)" : " | (unsigned long long)") + buffer_name(buffer);
    line("if (((" + aligned + ") & 15) == 0) {");
    open_block();
    print(plan_.vector_lanes);
    close_block();
    line("else {");
    open_block();
    print(1);
    close_block();
  };
  switch (plan_.kind) {
    case LaunchKind::ThreadPerIteration:
      if (plan_.vector_lanes == 1)
        thread_per_iteration(1);
      else
        aligned_or_not([&](int lanes) { thread_per_iteration(lanes); });
      break;
    case LaunchKind::BlockPerIteration:
      if (plan_.block_splits > 1) {
        split_iterations(plan_.chain.back()->body);
        break;
      }
      if (plan_.vector_lanes == 1) {
        block_per_iteration();
        break;
      }
      aligned_or_not([&](int lanes) {
        row_lanes_ = lanes;
        block_per_iteration();
        row_lanes_ = 1;
      });
      break;
    case LaunchKind::OneBlock: {
      const auto tail = statements_of_launch.end() - static_cast<std::ptrdiff_t>(plan_.ordered_tail);
      single_pass_ = !in_part_;
      cooperative({statements_of_launch.begin(), tail});
      single_pass_ = false;
      ends_on_first_thread_ = !plan_.warp_iterations && (plan_.ordered_tail > 0 ||
                              team_ends_on_first_thread({statements_of_launch.begin(), tail}));
      if (plan_.ordered_tail > 0) {
        line(barrier());
        line("if (" + thread_index() + " == 0) {");
        open_block();
        statements({tail, statements_of_launch.end()});
        close_block();
      }
      break;
    }
    case LaunchKind::SplitReduce:
      split_reduce(statements_of_launch);
      break;
    case LaunchKind::ColumnTiles:
      column_tiles(plan_.chain.back()->body);
      break;
    case LaunchKind::ScanTiles:
      scan_tiles(statements_of_launch[0]);
      break;
    case LaunchKind::OneThread:
      statements(statements_of_launch);
      break;
  }
}

// One iteration of the chain per block (or per warp: LaunchPlan::warp_iterations), its
// statements shared by the block's threads.
void CudaKernelEmitter::block_per_iteration() {
  if (plan_.warp_iterations) {  // every lane of a warp walks the warp's iterations
    const std::string warps = std::to_string(plan_.threads / kWarp);
    line("const int kiln_lane = threadIdx.x & 31;");
    line("for (int64_t kiln_flat = (int64_t)" + block_index() + " * " + warps + " + (threadIdx.x >> 5); "
         "kiln_flat < " + std::to_string(plan_.iterations) + "; kiln_flat += (int64_t)" + grid_blocks() + " * " +
         warps + ") {");
  } else {  // every thread of the block walks the same iterations: the barriers are uniform
    line("for (int64_t kiln_flat = " + block_index() + "; kiln_flat < " + std::to_string(plan_.iterations) +
         "; kiln_flat += " + grid_blocks() + ") {");
  }
  open_block();
  flattened_chain("kiln_flat");
  load_row_registers();
  cooperative(plan_.chain.back()->body);
  close_block();
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

std::string CudaKernelEmitter::load_value(ExprId id) {
  for (size_t k = 0; k < plan_.row_registers.size(); ++k)
    for (const auto& [load, variable] : plan_.row_registers[k].loads)
      if (load == id && unrolled_.count(loop_name(variable)))  // where its loop was unrolled
        return "kiln_row" + std::to_string(k) + "[" + loop_name(variable) + "_step]";
  if (auto shared = std::find(plan_.shared_loads.begin(), plan_.shared_loads.end(), id);
      shared != plan_.shared_loads.end())
    return "kiln_h" + std::to_string(shared - plan_.shared_loads.begin()) + "[" +
           loop_name(plan_.shared_loop.variable) + "]";
  if (lane_ < 0 || std::find(plan_.vector_loads.begin(), plan_.vector_loads.end(), id) ==
                       plan_.vector_loads.end())
    return CLikePrinter::load_value(id);
  return "kiln_v" + std::to_string(id) + "." + kLaneFields[lane_];
}

namespace {

// Whether expression `id` is made of constants and reduction results alone, not of any load or
// loop variable: the same for every element of the loops that follow its reductions. At most
// kMostVisited expressions are looked at (a longer one counts as not).
bool of_constants_and_reductions(const Kernel& kernel, ExprId id) {
  constexpr size_t kMostVisited = 64;
  std::vector<ExprId> pending{id};
  for (size_t visited = 0; !pending.empty(); ++visited) {
    if (visited == kMostVisited) return false;
    const Expr& e = kernel.exprs[static_cast<size_t>(pending.back())];
    pending.pop_back();
    switch (e.kind) {
      case ExprKind::Constant:
      case ExprKind::Local:
        break;
      case ExprKind::Elementwise:
      case ExprKind::Cast:
      case ExprKind::Select:
        pending.insert(pending.end(), e.operands.begin(), e.operands.end());
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

bool CudaKernelEmitter::divides_by_uniform(ExprId id) const {
  const Expr& e = expr(id);
  const std::string type = compute_type(e.dtype);
  return e.kind == ExprKind::Elementwise && e.op == ir::Op::div &&
         (type == "float" || type == "double") && expr(e.operands[0]).dtype == e.dtype &&
         expr(e.operands[1]).dtype == e.dtype && of_constants_and_reductions(kernel_, e.operands[1]);
}

std::string CudaKernelEmitter::elementwise_text(ExprId id, const std::vector<std::string>& operands) {
  if (!divides_by_uniform(id) || ieee_divisions_)
    return CLikePrinter::elementwise_text(id, operands);
  const std::string type = compute_type(expr(id).dtype);
  const std::string a = "(" + type + ")" + operands[0], b = "(" + type + ")" + operands[1];
  if (checking_divisions_) return "kiln_div_by_uniform_checked(" + a + ", " + b + ", kiln_exact)";
  return "kiln_div_by_uniform(" + a + ", " + b + ")";
}

// Plain stores dividing by a uniform value, reading no buffer they write: rerunnable whole.
bool CudaKernelEmitter::may_check_divisions(const Stmt& s) const {
  std::set<int32_t> written;
  std::vector<ExprId> pending;
  for (const Stmt& c : s.body) {
    if (c.kind != StmtKind::Store || c.accumulate || c.to_local_array || c.guard >= 0) return false;
    written.insert(c.buffer);
    pending.push_back(c.value);
    pending.push_back(c.index);
  }
  bool divides = false;
  std::set<ExprId> seen;
  while (!pending.empty()) {
    const ExprId id = pending.back();
    pending.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    const Expr& e = expr(id);
    if (e.kind == ExprKind::Load && written.count(e.buffer)) return false;
    divides = divides || divides_by_uniform(id);
    pending.insert(pending.end(), e.operands.begin(), e.operands.end());
  }
  return divides;
}

void CudaKernelEmitter::plain_store(const Stmt& s, const std::string& index, const std::string& value) {
  auto found = std::find(plan_.vector_stores.begin(), plan_.vector_stores.end(), &s);
  if (lane_ < 0 || found == plan_.vector_stores.end()) return CLikePrinter::plain_store(s, index, value);
  const DType dtype = program_.buffers[static_cast<size_t>(s.buffer)].dtype;
  line("kiln_s" + std::to_string(found - plan_.vector_stores.begin()) + "." + kLaneFields[lane_] +
       " = " + convert(value, expr(s.value).dtype, dtype) + ";");
}

// The chain's loop variables from one flat index, innermost fastest (with `lanes`: runs of that
// many innermost iterations, the first lane's variable `kiln_lane0`). Below 2^31 iterations the
// splits are 32-bit divisions (64-bit ones cost a 2-D stencil more than its loads).
void CudaKernelEmitter::flattened_chain(const std::string& flat, int lanes) {
  const bool narrow = ir::size_choice(plan_.iterations < (int64_t{1} << 31));
  const std::string rest_type = narrow ? "unsigned" : "int64_t";
  std::string rest = narrow ? "(unsigned)(" + flat + ")" : flat;
  // The outermost loop that takes the rest of the index (serial loops are the thread's own).
  size_t outermost = 0;
  while (outermost + 1 < plan_.chain.size() &&
         std::find(plan_.serial.begin(), plan_.serial.end(), outermost) != plan_.serial.end())
    ++outermost;
  for (size_t k = plan_.chain.size(); k-- > 0;) {
    const sched::Loop& l = plan_.chain[k]->loop;
    const bool innermost = k + 1 == plan_.chain.size() && lanes > 1;
    const bool along = static_cast<int>(k) == plan_.unroll_axis;  // steps_along_axis's
    const int64_t runs = innermost ? l.extent / lanes : along ? l.extent / plan_.unroll : l.extent;
    if (runs == 1 && !innermost && !along) continue;  // its variable was folded to 0
    if (std::find(plan_.serial.begin(), plan_.serial.end(), k) != plan_.serial.end()) continue;
    std::string extent = (narrow ? "(unsigned)" : "") + std::to_string(runs);
    std::string value = k <= outermost ? rest : rest + " % " + extent;
    if (narrow) value = "(int64_t)(" + value + ")";
    if (innermost)
      line("const int64_t kiln_lane0 = (" + value + ") * " + std::to_string(lanes) + ";");
    else if (along)
      line("const int64_t kiln_along = " + value + ";");
    else
      line("const int64_t " + loop_name(l.variable) + " = " + value + ";");
    if (k > outermost) {
      std::string next = "kiln_rest" + std::to_string(k);
      line("const " + rest_type + " " + next + " = " + rest + " / " + extent + ";");
      rest = next;
    }
  }
}

bool CudaKernelEmitter::few_steps_per_thread(const sched::Loop& loop) const {
  return loop.begin < 0 && loop.end < 0 &&
         ir::size_choice(loop.extent <= plan_.most_steps * team());
}

// `variable` takes begin + threadIdx.x + k * threads for k below a constant: the compiler
// unrolls the loop and a thread's loads issue together, one memory round trip for its few
// elements (a layer norm's row of 768 over 256 threads) where a loop to a bound it cannot count
// takes one per element. Returns the blocks opened, closed by the caller after the body.
int CudaKernelEmitter::unrolled_shared_loop(const std::string& variable, const std::string& begin,
                                            int64_t extent) {
  unrolled_.insert(variable);
  const int64_t steps = (extent + team() - 1) / team();
  const std::string k = variable + "_step";
  line("#pragma unroll");
  line("for (int " + k + " = 0; " + k + " < " + std::to_string(steps) + "; ++" + k + ") {");
  open_block();
  if (row_lanes_ > 1) {  // runs of row_lanes_ consecutive elements (plan_row_vectors: exact)
    const std::string lanes = std::to_string(row_lanes_);
    line("const int64_t " + variable + " = " + begin + " + ((int64_t)" + member() + " + (" + k +
         " / " + lanes + ") * " + threads() + ") * " + lanes + " + " + k + " % " + lanes + ";");
    return 1;
  }
  line("const int64_t " + variable + " = " + begin + " + " + member() + " + " + k + " * " + threads() + ";");
  // No bound check where the threads cover the loop exactly; a size of a graph with size
  // symbols keeps it where the large sizes' choice did (ir/size_choices.h).
  const bool exact = extent % team() == 0;
  const bool chosen = ir::size_choice(exact);
  if (exact && chosen) return 1;
  line("if (" + variable + " < " + begin + " + " + std::to_string(extent) + ") {");
  open_block();
  return 2;
}

// A loop of `s`'s extent shared by the team's threads, each its own iterations of the body.
void CudaKernelEmitter::shared_loop(const Stmt& s) {
  auto [begin, end] = bounds_text(s.loop);
  std::string v = loop_name(s.loop.variable);
  if (row_lanes_ > 1) {
    row_vector_loop(s);
    return;
  }
  if (few_steps_per_thread(s.loop)) {
    const std::streamoff start = out_.tellp();
    const int opened = unrolled_shared_loop(v, begin, s.loop.extent);
    statements(s.body);
    for (int k = 0; k < opened; ++k) close_block();
    cap_unrolling(start);
    return;
  }
  line("for (int64_t " + v + " = " + begin + " + " + member() + "; " + v + " < " + end + "; " + v +
       " += " + threads() + ") {");
  open_block();
  statements(s.body);
  close_block();
}

namespace {

bool stores_memory(const Stmt& s) {
  if (s.kind == StmtKind::Store || s.kind == StmtKind::Scan) return true;
  return std::any_of(s.body.begin(), s.body.end(), stores_memory);
}

}  // namespace

bool one_element(const Stmt& s) {
  if (s.kind == StmtKind::Store) return true;
  return s.kind == StmtKind::Loop && s.loop.extent == 1 && s.loop.begin < 0 && s.loop.end < 0 &&
         std::all_of(s.body.begin(), s.body.end(), one_element);
}

// The statements run by the whole team (block or warp): loops shared among its threads,
// reductions combined across them, single stores and scans by its first thread; a barrier
// between statements, so that what one statement writes is seen by the next.
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
        if (!may_check_divisions(s)) {
          shared_loop(s);
          break;
        }
        // Its divisions by a uniform value without a branch an element, then, in the threads
        // where one may not be the quotient (kiln_div_by_uniform_checked), the loop again with
        // IEEE division.
        line("{");
        open_block();
        line("bool kiln_exact = true;");
        checking_divisions_ = true;
        shared_loop(s);
        checking_divisions_ = false;
        line("if (!kiln_exact) {");
        open_block();
        ieee_divisions_ = true;
        shared_loop(s);
        ieee_divisions_ = false;
        close_block();
        close_block();
        break;
      }
      case StmtKind::Reduce:
        prefetch_epilogue_loads(body, k + 1);
        first_thread_reads_ = std::all_of(body.begin() + k + 1, body.end(), [&](const Stmt& t) {
          return (t.kind != StmtKind::Loop && t.kind != StmtKind::Reduce) ||
                 (row_lanes_ <= 1 && one_element(t));
        });
        cooperative_reduce(s);
        first_thread_reads_ = false;
        // Its values are the team's registers, and its last barrier (or a warp's shuffles)
        // came after every thread's loads: where it stores nothing, no barrier is owed.
        if (!stores_memory(s)) continue;
        break;
      default: {
        // It and the stores after it run on the first thread, in order: it sees its own
        // stores, and no barrier is owed between them (a reduction's result stored, then
        // the element it divides: forward substitution's x[i]).
        size_t last = k;
        while (s.kind == StmtKind::Store && last + 1 < body.size() &&
               body[last + 1].kind == StmtKind::Store)
          ++last;
        line("if (" + member() + " == 0) {");
        open_block();
        statements(std::vector<Stmt>(body.begin() + static_cast<long>(k),
                                     body.begin() + static_cast<long>(last) + 1));
        close_block();
        k = last;
        break;
      }
    }
    if (k + 1 < body.size()) line(barrier());
  }
}

}  // namespace cuda_detail
}  // namespace kiln::codegen
