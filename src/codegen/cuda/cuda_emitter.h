// The CUDA emitter: prints a Program's kernels as one CUDA C++ source for NVRTC. The text
// starts with the CUDA prelude and scalar_math.h (the op semantics shared with the interpreter
// and the C++ target), then, per distinct kernel code, one or more `extern "C" __global__`
// functions taking the kernel's buffers as one by-value table (kiln_arg_table<N>). A kernel's
// functions run one after another on one stream (runtime::CudaKernelCall).
//
// How the loop IR maps onto the GPU (each top-level statement run of a kernel is one launch):
//   - a nest of output loops: its perfectly nested outer loops are flattened into one index;
//     each thread takes one iteration (grid-stride), the innermost loop fastest, so that
//     neighbouring threads touch neighbouring elements;
//   - a nest whose innermost body reduces (a row reduction: softmax, layer norm, a row of
//     kmeans distances) or holds several statements: one block per iteration of the outer
//     loops; inside it the block's threads share every loop and combine every reduction
//     (warp shuffles, then one shared-memory step across warps). When the body is reductions
//     then stores: a nest that reads memory in columns (a column sum, batch norm's statistics
//     of channels-last data) takes 32 neighbouring iterations per block, one per lane, so that
//     a warp's loads are contiguous; with few iterations (or tiles of 32) and long reductions,
//     several blocks share each one and the last to finish merges their partial states;
//   - reductions at the top of a kernel (whole-array reductions with their epilogue): one
//     block runs the whole body the same way;
//   - statements that must run in order (a scatter where a later duplicate wins): one thread;
//   - a float32 matmul of at most 16 rows (x @ W.T at a few tokens): a generated kernel in place
//     of cuBLAS (skinny_matmul.cpp), a stream over the weight.
// Sizes are the Program's (static); grids are sized from the target's multiprocessors. A graph
// with size symbols shares one source across its sizes (codegen/size_parameters.h): the
// integers that differ become a by-value table of each function, the grids stay each size's.
#pragma once
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "runtime/kernel_call.h"
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::codegen {

struct CudaSource {
  std::string text;  // header, then every function
  // The same text in parts: what every compilation unit needs (prelude, op table, constant
  // arrays), and each distinct kernel's functions. Any split of `functions` into units, each
  // after the header, compiles: NVRTC compiles a big program as units in parallel
  // (compilation_units.h).
  std::string header;
  std::vector<std::string> functions;
  // By Program::kernels index, then the generated kernels that replace extern steps
  // (CudaKernelCall::replaces_step: products of few rows, skinny_matmul.cpp).
  std::vector<runtime::CudaKernelCall> kernels;
};

// target: a DeviceKind::Cuda target (target::cuda_device). `launch_alternatives`
// (max-autotune): each kernel also gets the launches of launch_variants(target) that differ
// from its own (CudaKernelCall::alternatives).
CudaSource emit_cuda(const sched::Program& program, const Options& options,
                     const target::Target& target, bool launch_alternatives = false);

// The launch shapes max-autotune tries besides the target's own: smaller and larger blocks,
// fewer and more steps a thread (target::Target::block_threads, thread_steps).
std::vector<target::Target> launch_variants(const target::Target& target);

}  // namespace kiln::codegen
