// What the CUDA emitter holds in registers across the loops that would load it again
// (register_plans.cpp decides): the shared loads of a thread's steps along an outer loop, and
// the elements of a row its statements each load. CudaKernelEmitter::load_value reads them.
// And where a loop unrolled to keep values in registers is partly unrolled (cap_unrolling).
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

// A thread's steps along LaunchPlan::unroll_axis: one flat index for all of them, the shared
// loads read into registers (kiln_h<k>[the reduction loop's variable]), then each step's
// statements with the axis variable kiln_along * unroll + kiln_u.
void CudaKernelEmitter::steps_along_axis(const std::string& total) {
  line("const int64_t kiln_flat = kiln_run + " + thread_index() + ";");
  line("if (kiln_flat < " + total + ") {");
  open_block();
  flattened_chain("kiln_flat", 1);
  const std::string v = loop_name(plan_.shared_loop.variable);
  const std::string extent = std::to_string(plan_.shared_loop.extent);
  for (size_t k = 0; k < plan_.shared_loads.size(); ++k) {
    const std::string name = "kiln_h" + std::to_string(k);
    line(compute_type(expr(plan_.shared_loads[k]).dtype) + " " + name + "[" +
         std::to_string(kMostSharedSteps) + "];");
    line("#pragma unroll");
    line("for (int64_t " + v + " = 0; " + v + " < " + extent + "; ++" + v + ") " + name + "[" + v +
         "] = " + load_text(expr(plan_.shared_loads[k])) + ";");
  }
  const std::string unroll = std::to_string(plan_.unroll);
  line("#pragma unroll");
  line("for (int kiln_u = 0; kiln_u < " + unroll + "; ++kiln_u) {");
  open_block();
  const sched::Loop& axis = plan_.chain[static_cast<size_t>(plan_.unroll_axis)]->loop;
  line("const int64_t " + loop_name(axis.variable) + " = kiln_along * " + unroll + " + kiln_u;");
  statements(plan_.chain.back()->body);
  close_block();
  close_block();
}

// LaunchPlan::row_registers: each element the statements load, at the steps of their unrolled
// loops (unrolled_shared_loop), before the first of them; in runs of row_lanes_ elements, a
// 16-byte load each (plan_row_vectors).
void CudaKernelEmitter::load_row_registers() {
  for (size_t k = 0; k < plan_.row_registers.size(); ++k) {
    const LaunchPlan::RowRegisters& row = plan_.row_registers[k];
    const auto [load, variable] = row.loads[0];
    const std::string name = "kiln_row" + std::to_string(k), v = loop_name(variable);
    const int64_t steps = (row.extent + team() - 1) / team();
    line(compute_type(expr(load).dtype) + " " + name + "[" + std::to_string(plan_.most_steps) +
         "];");
    line("#pragma unroll");
    if (row_lanes_ == 1) {
      line("for (int " + v + "_step = 0; " + v + "_step < " + std::to_string(steps) + "; ++" + v +
           "_step) {");
      open_block();
      line("const int64_t " + v + " = " + member() + " + " + v + "_step * " + threads() + ";");
      line("if (" + v + " < " + std::to_string(row.extent) + ") " + name + "[" + v + "_step] = " +
           load_text(expr(load)) + ";");
      close_block();
      continue;
    }
    const std::string lanes = std::to_string(row_lanes_);
    const std::string type =
        vector_type(program_.buffers[static_cast<size_t>(expr(load).buffer)].dtype);
    line("for (int " + v + "_run = 0; " + v + "_run < " + std::to_string(steps / row_lanes_) +
         "; ++" + v + "_run) {");
    open_block();
    line("const int64_t " + v + " = ((int64_t)" + member() + " + " + v + "_run * " + threads() +
         ") * " + lanes + ";");
    line("const " + type + " kiln_vector = " + vector_load(expr(load).buffer, type, load_address(load)) +
         ";");
    for (int lane = 0; lane < row_lanes_; ++lane)
      line(name + "[" + v + "_run * " + lanes + " + " + std::to_string(lane) + "] = kiln_vector." +
           kLaneFields[lane] + ";");
    close_block();
  }
}

// A loop of stores over the row (plan_row_vectors) in runs of row_lanes_ consecutive elements
// a thread, as unrolled_shared_loop's steps run: each run's vector loads, each element's
// statements (vector accesses through registers, row registers by step), each vector store.
void CudaKernelEmitter::row_vector_loop(const Stmt& s) {
  const std::string v = loop_name(s.loop.variable), lanes = std::to_string(row_lanes_);
  unrolled_.insert(v);
  line("#pragma unroll");
  line("for (int " + v + "_run = 0; " + v + "_run < " +
       std::to_string(s.loop.extent / team() / row_lanes_) + "; ++" + v + "_run) {");
  open_block();
  line("const int64_t " + v + "_lane0 = ((int64_t)" + member() + " + " + v + "_run * " +
       threads() + ") * " + lanes + ";");
  std::vector<ExprId> loads;
  for (const Stmt& store : s.body) collect_unconditional_loads(kernel_, store.value, loads);
  std::vector<size_t> stores;  // of plan_.vector_stores
  for (size_t k = 0; k < plan_.vector_stores.size(); ++k)
    for (const Stmt& store : s.body)
      if (plan_.vector_stores[k] == &store) stores.push_back(k);
  auto at_lane_zero = [&](const std::function<void()>& print) {
    line("{");
    open_block();
    line("const int64_t " + v + " = " + v + "_lane0;");
    print();
    close_block();
  };
  std::set<ExprId> declared;
  for (ExprId id : plan_.vector_loads) {
    if (std::find(loads.begin(), loads.end(), id) == loads.end() || !declared.insert(id).second)
      continue;
    const std::string type = vector_type(program_.buffers[static_cast<size_t>(expr(id).buffer)].dtype);
    line(type + " kiln_v" + std::to_string(id) + ";");
    at_lane_zero([&] {
      line("kiln_v" + std::to_string(id) + " = " + vector_load(expr(id).buffer, type, load_address(id)) +
           ";");
    });
  }
  for (size_t k : stores)
    line(vector_type(program_.buffers[static_cast<size_t>(plan_.vector_stores[k]->buffer)].dtype) +
         " kiln_s" + std::to_string(k) + ";");
  for (lane_ = 0; lane_ < row_lanes_; ++lane_) {
    line("{");
    open_block();
    line("const int64_t " + v + " = " + v + "_lane0 + " + std::to_string(lane_) + ";");
    line("const int " + v + "_step = " + v + "_run * " + lanes + " + " + std::to_string(lane_) + ";");
    statements(s.body);
    close_block();
  }
  lane_ = -1;
  for (size_t k : stores) {
    const Stmt& store = *plan_.vector_stores[k];
    const std::string type = vector_type(program_.buffers[static_cast<size_t>(store.buffer)].dtype);
    at_lane_zero([&] {
      line("*reinterpret_cast<" + type + "*>(" + buffer_name(store.buffer) + " + (" +
           index_text(store.index) + ")) = kiln_s" + std::to_string(k) + ";");
    });
  }
  close_block();
}

namespace {

// Whether `code` indexes a register array (kiln_row<k>, kiln_h<k>, kiln_pv<k>, local h<k>):
// in a partly unrolled loop it would go to local memory.
bool indexes_register_arrays(const std::string& code) {
  for (const char* name : {"kiln_row", "kiln_h", "kiln_pv"})
    if (code.find(name) != std::string::npos) return true;
  for (size_t at = code.find('h'); at != std::string::npos; at = code.find('h', at + 1)) {
    const bool starts_name = at == 0 || !(std::isalnum(static_cast<unsigned char>(code[at - 1])) ||
                                          code[at - 1] == '_');
    size_t end = at + 1;
    while (end < code.size() && std::isdigit(static_cast<unsigned char>(code[end]))) ++end;
    if (starts_name && end > at + 1 && end < code.size() && code[end] == '[') return true;
  }
  return false;
}

}  // namespace

void CudaKernelEmitter::cap_unrolling(std::streamoff start) {
  std::string text = out_.str();
  const std::string whole = "#pragma unroll\n";
  const size_t pragma = text.find(whole, static_cast<size_t>(start));
  if (pragma == std::string::npos) return;
  const std::string loop = text.substr(pragma);
  if (estimated_nvrtc_cost(loop) <= kMostUnrolledCode || indexes_register_arrays(loop)) return;
  text.replace(pragma, whole.size(),
               "#pragma unroll " + std::to_string(kCappedUnrollSteps) + "  // (NVRTC's time)\n");
  out_.str(text);
  out_.seekp(0, std::ios_base::end);
}

}  // namespace kiln::codegen::cuda_detail
