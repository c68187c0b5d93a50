// The ThreadPerIteration launch: a thread's steps over the flattened output loops (runs of steps
// a block, prefetches into registers, 16-byte vector lanes), beside cuda_emitter.cpp's other
// launches.
#include <algorithm>
#include <functional>
#include <set>

#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

// The chain's iterations, `lanes` consecutive ones of the innermost loop per thread and step
// (plan_.vector_lanes, or 1): a block takes plan_.unroll * threads consecutive steps at a time,
// a warp's accesses contiguous in each, and the grid covers them all once (a grid-stride loop
// of a few blocks per SM was 5-10% slower on bandwidth-bound kernels); plan_.prefetches first
// put every step's loads in flight (LaunchPlan::prefetches), vector loads into registers.
void CudaKernelEmitter::thread_per_iteration(int lanes) {
  // Along an unroll axis a thread's steps share one flat index (steps_along_axis).
  const int64_t along = plan_.unroll_axis >= 0 ? plan_.unroll : 1;
  const std::string total =
      std::to_string(plan_.iterations / serial_iterations(plan_) / lanes / along);
  const std::string run = std::to_string(int64_t(plan_.threads) * plan_.unroll / along);
  line("for (int64_t kiln_run = " + block_index() + " * (int64_t)" + run + "; kiln_run < " +
       total + "; kiln_run += (int64_t)" + grid_blocks() + " * " + run + ") {");
  open_block();
  prefetched_vectors_.clear();
  // Registers by address, numbered in order: the text must not name expression ids, which
  // differ between the sizes a size-generic kernel is compared at (size_parameters.h), and two
  // loads of one vector share them.
  int64_t words = 0;  // of registers the prefetched vectors take
  for (ExprId id : plan_.prefetches) {  // (a step of serial loops loads in each, step())
    if (lanes == 1 || !plan_.serial.empty() || std::find(plan_.vector_loads.begin(), plan_.vector_loads.end(), id) ==
                          plan_.vector_loads.end())
      continue;
    const std::string address = load_address(id);
    if (prefetched_vectors_.count(address)) continue;
    const DType dtype = program_.buffers[static_cast<size_t>(expr(id).buffer)].dtype;
    words += plan_.unroll * lanes * dtype_size(dtype) / 4;
    if (words > kMostPrefetchedVectorWords) break;
    const std::string name = "kiln_pv" + std::to_string(prefetched_vectors_.size());
    prefetched_vectors_.emplace(address, name);
    line(vector_type(dtype) + " " + name + "[" + std::to_string(plan_.unroll) + "];");
  }
  const auto steps = [&](bool guarded) {
    if (!plan_.prefetches.empty())
      each_step(total, lanes, guarded, [&] { prefetch_step(lanes); });
    each_step(total, lanes, guarded, [&] { step(lanes); });
  };
  if (plan_.unroll_axis >= 0) {
    steps_along_axis(total);
  } else if (plan_.unroll == 1) {
    steps(true);
  } else {
    // A run wholly in range takes its steps without a guard each: the compiler then issues
    // every step's loads before the first store, where a guard per step made it branch around
    // each step (a 5-point stencil on an H200: 4 loads in flight a thread instead of 16, 54
    // against 43 us). The same text at every size (size-generic kernels): the guarded copy
    // is there even where the runs divide the total.
    line("if (kiln_run + " + run + " <= " + total + ") {");
    open_block();
    steps(false);
    close_block();
    line("else {");
    open_block();
    steps(true);
    close_block();
  }
  prefetched_vectors_.clear();
  close_block();
}

// `print`ed for each of a thread's steps in the block's run, the chain's variables defined;
// `guarded`: a step past the total is skipped.
void CudaKernelEmitter::each_step(const std::string& total, int lanes, bool guarded,
                                  const std::function<void()>& print) {
  line("#pragma unroll");
  line("for (int kiln_u = 0; kiln_u < " + std::to_string(plan_.unroll) + "; ++kiln_u) {");
  open_block();
  line("const int64_t kiln_flat = kiln_run + kiln_u * " + threads() + " + " + thread_index() + ";");
  line(guarded ? "if (kiln_flat < " + total + ") {" : "{");
  open_block();
  flattened_chain("kiln_flat", lanes);
  print();
  close_block();
  close_block();
}

// The step's prefetches: each address once, at lane 0 and the inner loops' first iteration.
void CudaKernelEmitter::prefetch_step(int lanes) {
  if (lanes > 1)
    line("const int64_t " + loop_name(plan_.chain.back()->loop.variable) + " = kiln_lane0;");
  for (int32_t variable : plan_.prefetch_zeroed) line("const int64_t " + loop_name(variable) + " = 0;");
  std::set<std::string> addresses;
  for (ExprId id : plan_.prefetches) {
    const std::string address = load_address(id);
    if (!addresses.insert(address).second) continue;
    auto registers = prefetched_vectors_.find(address);
    if (registers == prefetched_vectors_.end()) {
      line("kiln_prefetch(" + address + ");");
      continue;
    }
    const std::string type = vector_type(program_.buffers[static_cast<size_t>(expr(id).buffer)].dtype);
    line(registers->second + "[kiln_u] = " + vector_load(expr(id).buffer, type, address) + ";");
  }
}

// The address a load reads: its buffer plus its index.
std::string CudaKernelEmitter::load_address(ExprId id) {
  const Expr& e = expr(id);
  return buffer_name(e.buffer) + " + (" + index_text(e.operands[0]) + ")";
}

void CudaKernelEmitter::step(int lanes) {
  const std::vector<Stmt>& body = plan_.chain.back()->body;
  if (!plan_.serial.empty()) {  // the serial loops, in their order, inside the thread
    for (size_t k : plan_.serial) {
      const sched::Loop& l = plan_.chain[k]->loop;
      const std::string v = loop_name(l.variable);
      line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(l.extent) + "; ++" + v + ") {");
      open_block();
    }
    statements(body);
    for (size_t k = 0; k < plan_.serial.size(); ++k) close_block();
  } else if (lanes == 1) {
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
      if (auto r = prefetched_vectors_.find(load_address(id)); r != prefetched_vectors_.end()) {
        line(type + " kiln_v" + std::to_string(id) + " = " + r->second + "[kiln_u];");
        continue;
      }
      line(type + " kiln_v" + std::to_string(id) + ";");
      lane_zero([&] {
        line("kiln_v" + std::to_string(id) + " = " +
             vector_load(e.buffer, type, buffer_name(e.buffer) + " + (" + index_text(e.operands[0]) + ")") +
             ";");
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
}

}  // namespace kiln::codegen::cuda_detail
