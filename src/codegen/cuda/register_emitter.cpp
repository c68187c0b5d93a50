// What the CUDA emitter holds in registers across the loops that would load it again
// (register_plans.cpp decides): the shared loads of a thread's steps along an outer loop, and
// the elements of a row its statements each load. CudaKernelEmitter::load_value reads them.
#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

// A thread's steps along LaunchPlan::unroll_axis: one flat index for all of them, the shared
// loads read into registers (kiln_h<k>[the reduction loop's variable]), then each step's
// statements with the axis variable kiln_along * unroll + kiln_u.
void CudaKernelEmitter::steps_along_axis(const std::string& total) {
  line("const int64_t kiln_flat = kiln_run + threadIdx.x;");
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
// loops (unrolled_shared_loop), before the first of them.
void CudaKernelEmitter::load_row_registers() {
  for (size_t k = 0; k < plan_.row_registers.size(); ++k) {
    const LaunchPlan::RowRegisters& row = plan_.row_registers[k];
    const auto [load, variable] = row.loads[0];
    const std::string name = "kiln_row" + std::to_string(k), v = loop_name(variable);
    const std::string steps = std::to_string((row.extent + team() - 1) / team());
    line(compute_type(expr(load).dtype) + " " + name + "[" + std::to_string(kMostUnrolledSteps) +
         "];");
    line("#pragma unroll");
    line("for (int " + v + "_step = 0; " + v + "_step < " + steps + "; ++" + v + "_step) {");
    open_block();
    line("const int64_t " + v + " = " + member() + " + " + v + "_step * " + threads() + ";");
    line("if (" + v + " < " + std::to_string(row.extent) + ") " + name + "[" + v + "_step] = " +
         load_text(expr(load)) + ";");
    close_block();
  }
}

}  // namespace kiln::codegen::cuda_detail
