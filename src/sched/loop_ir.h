// The loop IR: what the scheduler produces and the code generators print. Plain data: it can be
// printed (KILN_LOGS=schedule), compared and hashed without running anything, and it knows
// nothing about C++ or CUDA.
//
// A Program is a list of steps over numbered buffers:
//   - buffers: graph inputs, graph outputs, and intermediates (arena slots from the buffer plan);
//   - steps:   a Kernel (a loop nest), an extern call (matmul) on whole buffers, or the two
//              ends of a graph loop around the steps of its body.
// A Kernel is a tree of statements: loops, reductions (which bind a local scalar), and stores.
// Expressions live in the kernel's arena and refer to each other by id, so a shared
// subexpression is simply a reused id.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "sched/strided_views.h"

namespace kiln::sched {

using ExprId = int32_t;
using ir::Op;
using ir::Scalar;

enum class ExprKind : uint8_t {
  Constant,     // `constant` of `dtype`
  LoopVar,      // loop variable `variable` (int64)
  Local,        // the result of Reduce statement `variable`
  Load,         // buffers[`buffer`][operands[0]] (an int64 element offset)
  Elementwise,  // `op` over operands (op table expression)
  Cast,         // operands[0] converted to `dtype`
  Select,       // operands[0] ? operands[1] : operands[2]  (bounds checks, pad, concat)
  IndexAdd, IndexMul, IndexFloorDiv, IndexMod, IndexMin, IndexMax,  // int64 index arithmetic
  IndexLess,    // operands[0] < operands[1] (bool)
  Random,       // philox(`seed` + operands[1] (an int64 key), operands[0] = flat element
                // index), `op` random_uniform/normal
  ArrayLoad,    // local array `buffer` at operands[0] (a value hoisted out of a loop nest)
};

// IndexAdd ... IndexMax: int64 arithmetic of indices (not IndexLess, a comparison).
inline bool is_index_arithmetic(ExprKind kind) {
  return kind >= ExprKind::IndexAdd && kind <= ExprKind::IndexMax;
}

struct Expr {
  ExprKind kind = ExprKind::Constant;
  DType dtype = DType::Int64;
  Op op = Op::add;
  std::vector<ExprId> operands;
  int32_t buffer = -1;    // Load
  int32_t variable = -1;  // LoopVar: loop id; Local: reduce id
  Scalar constant;        // Constant
  uint64_t seed = 0;      // Random
  bool operator==(const Expr& other) const;
};

struct Loop {
  int32_t variable = -1;  // loop id
  int64_t extent = 0;
  // A reduction's innermost loop, a lane loop or the loops of a masked store may run over
  // [begin, end) clamped to [0, extent), bounds read at run time (sched/trim_loops.h,
  // sched/cpu/interchange_reductions.h); -1: 0 and extent.
  ExprId begin = -1, end = -1;
};

// Scan: one inclusive accumulation along reduce_loops[0], storing the running value each step.
// LocalArray: declares local array `buffer` (Kernel::local_arrays) for the statements after it.
enum class StmtKind : uint8_t { Loop, Reduce, Store, Scan, LocalArray };

// One accumulation inside a Reduce statement. Reductions that share loops share one pass.
struct Accumulation {
  int32_t local = -1;  // the reduce id that Local expressions refer to
  Op op = Op::sum;     // a reduction op (op_list.h)
  DType dtype = DType::Float64;  // the result dtype (argmax/argmin: the compared dtype)
  ExprId value = -1;   // the element being reduced
  ExprId position = -1;  // argmax/argmin: the flat reduction index of the element
  int64_t ddof = 0;    // var
};

struct Stmt {
  StmtKind kind = StmtKind::Loop;
  // Loop
  Loop loop;
  bool parallel = false;   // run iterations on the thread pool
  // parallel scatter-adds: its iterations add into disjoint elements, so no add is atomic
  // (sched/cpu/parallel_scatter_adds.h).
  bool disjoint_adds = false;
  bool vectorize = false;  // innermost loop worth SIMD
  // Reduce: the SIMD lanes its innermost loop is split across (0: not split), and (float sums)
  // whether it adds in blocks (sched/cpu/mark_reduction_lanes.h).
  int64_t split_lanes = 0;
  bool blocked_sum = false;
  // Reduce: loops over the reduction domain, `body` computed per iteration, then each
  // accumulation combined. parallel: split the outermost reduction loop across threads.
  std::vector<Loop> reduce_loops;
  std::vector<Accumulation> accumulations;
  // Reduce: computed only where this bool holds (sched/guard_reductions.h); elsewhere its
  // locals keep the identity: the reduction's value there, or one that nothing reads. -1: always.
  ExprId guard = -1;
  // Reduce only, when variable >= 0: the reduction is computed for every iteration of this
  // loop at once (accumulators are arrays over it, the loop runs innermost, SIMD), and its
  // results are read inside a following loop over the same variable. This is how reductions
  // over a strided axis (column sums) get stride-1 inner loops.
  Loop lanes_loop;
  // Store (and Scan's per-step store); accumulate: buffer[index] += value (scatter-add).
  // to_local_array: `buffer` names a local array instead of a program buffer.
  bool accumulate = false;
  bool to_local_array = false;
  int32_t buffer = -1;
  ExprId index = -1;
  ExprId value = -1;
  // Loop and Reduce
  std::vector<Stmt> body;
};

struct Kernel {
  std::string name;                   // e.g. "kernel2_sub_mul_sum"
  std::vector<std::string> comments;  // the graph lines it implements
  std::vector<Expr> exprs;
  std::vector<Stmt> body;
  std::vector<int64_t> loop_extents;                   // by loop id
  std::vector<std::vector<int32_t>> local_dependencies;  // by reduce id: loops its index uses
  struct LocalArray {
    DType dtype;
    int64_t size;
  };
  std::vector<LocalArray> local_arrays;
  std::vector<int32_t> buffers_read;
  std::vector<int32_t> buffers_written;
  // Top-level statements from this index on must run in order (a scatter's updates, where a
  // later duplicate index wins): never parallel. -1: none.
  int32_t ordered_from = -1;
};

enum class BufferRole : uint8_t { Input, Output, Intermediate, Constant };

struct Buffer {
  BufferRole role = BufferRole::Intermediate;
  int32_t number = 0;       // Input/Output: position among the graph's inputs/outputs
  DType dtype = DType::Float64;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; inputs may be any strides, others row-major
  int64_t arena_offset = -1;     // Intermediate: byte offset in the arena (buffer plan)
  std::string name;              // "in0", "out0", "buf3" (used in generated code)
  std::string origin;            // "add at model.py:12": the node it holds, for messages
  std::shared_ptr<const std::vector<uint8_t>> constant_data;  // Constant: row-major bytes
};

struct ExternCall {
  Op op = Op::matmul;
  std::vector<int32_t> inputs;  // buffers
  // Per input: a strided view of its buffer (sched/strided_views.h), or none: the buffer as is.
  std::vector<std::optional<StridedView>> views;
  int32_t output = -1;
  // The op's integer attributes. matmul with a bias (a third input): {1 when a ReLU follows}.
  // convolution and its gradients: strides, padding, dilation
  // (one per spatial dimension each), then groups, then the layout: 0 channels-first, 1
  // channels-last activations, 2 channels-last filters too (Attrs::filters_last).
  std::vector<int64_t> parameters;
};

// A graph `loop` (ir/loop.h) is a run of steps between LoopBegin and LoopEnd: LoopBegin reads
// the bounds (int64 0-d buffers), skips to after its LoopEnd when there are no iterations, and
// writes the induction variable; LoopEnd swaps each carried value's buffer with the buffer the
// body wrote its next value into (pointers, not data), then starts the next iteration or falls
// through. A body that updates a carried value in place writes into its own buffer: no swap.
enum class StepKind : uint8_t { Kernel, Extern, LoopBegin, LoopEnd };

struct LoopControl {
  int32_t start = -1, stop = -1;  // LoopBegin: bound buffers, or -1: the constants below
  int64_t start_value = 0, stop_value = 0;
  int64_t step = 1;
  int32_t induction = -1;         // the int64 0-d buffer the body reads the index from
  int32_t condition = -1;         // a while loop's bool 0-d buffer: no iteration once false
  int32_t partner = -1;           // LoopBegin: its LoopEnd's step index; LoopEnd: its LoopBegin's
  std::vector<std::pair<int32_t, int32_t>> swaps;  // LoopEnd: (carried, next) buffers
  // LoopBegin: the body is kernels (and loops of kernels) only, so the code generator emits the
  // whole loop as one function, `kiln_loop<step index>` (codegen/cpp/loop_driver.h): its
  // small kernels inline into one loop nest, with no call from the runtime per iteration.
  bool compiled = false;
  // LoopBegin of a compiled loop: iterations run at once on the thread pool, each thread with
  // its own copy of `private_buffers` (sched/cpu/parallel_iterations.h).
  bool parallel = false;
  std::vector<int32_t> private_buffers;
};

struct Step {
  StepKind kind = StepKind::Kernel;
  int32_t kernel = -1;  // Kernel: index into Program::kernels
  ExternCall call;      // Extern
  LoopControl loop;     // LoopBegin, LoopEnd
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  int64_t arena_bytes = 0;
  // For each graph output, the buffer holding it.
  std::vector<int32_t> output_buffers;
};

// Bytes of `buffer`'s elements (shape times element size).
int64_t buffer_bytes(const Buffer& buffer);

// The buffers `step` writes (written) or reads: a kernel's, an extern call's operands or result,
// a graph loop's bounds, induction variable and swapped buffers.
std::vector<int32_t> step_buffers(const Program& program, const Step& step, bool written);
// Whether two expressions of `kernel` compute the same thing, whatever their ids.
bool same_expr(const Kernel& kernel, ExprId a, ExprId b);
// Every expression statement `s` (its bounds, guard, index, value, accumulations and nested
// statements) refers to directly; -1 for a part it does not have.
template <class Visit>
void for_each_root(const Stmt& s, const Visit& visit) {
  for (ExprId id : {s.loop.begin, s.loop.end, s.lanes_loop.begin, s.lanes_loop.end, s.guard,
                    s.index, s.value})
    visit(id);
  for (const Loop& loop : s.reduce_loops) visit(loop.begin), visit(loop.end);
  for (const Accumulation& a : s.accumulations) visit(a.value), visit(a.position);
  for (const Stmt& inner : s.body) for_each_root(inner, visit);
}
// Each load `statements` of `kernel` make, once (the arena also holds expressions that passes
// replaced).
template <class Visit>
void for_each_load(const Kernel& kernel, const std::vector<Stmt>& statements, const Visit& visit) {
  std::vector<uint8_t> seen(kernel.exprs.size(), 0);
  std::vector<ExprId> stack;
  for (const Stmt& s : statements)
    for_each_root(s, [&](ExprId id) {
      if (id >= 0) stack.push_back(id);
    });
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = 1;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    if (e.kind == ExprKind::Load) visit(e);
    stack.insert(stack.end(), e.operands.begin(), e.operands.end());
  }
}
// Whether `test` holds for `root` or an expression it reads, each visited once: expressions are
// a DAG (a value read twice is one node), and a tree walk of a graph unrolled from a Python loop
// takes time exponential in its iterations.
template <class Test>
bool any_subexpr(const Kernel& kernel, ExprId root, Test test) {
  std::vector<uint8_t> seen(kernel.exprs.size(), 0);
  std::vector<ExprId> stack{root};
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = 1;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    if (test(e)) return true;
    stack.insert(stack.end(), e.operands.begin(), e.operands.end());
  }
  return false;
}
// Whether expression `id` (through casts) is the constant `value`.
bool is_constant_expr(const Kernel& kernel, ExprId id, double value);

// Readable text of the program (KILN_LOGS=schedule and tests).
std::string print_program(const Program& program);

// The buffers a compiled loop (LoopControl::compiled) starting at step `begin` uses, sorted: its
// kernels' arguments (kernel_arguments, by kernel index), bounds, induction variables and swaps.
// The loop's function takes them in this order, then the thread count.
std::vector<int32_t> compiled_loop_buffers(const Program& program,
                                           const std::vector<std::vector<int32_t>>& kernel_arguments,
                                           size_t begin);
// The buffers that steps outside the loop starting at step `begin` use, and the program's
// outputs: what the loop's work is seen by, or reads from before it.
std::set<int32_t> buffers_used_outside(const Program& program, size_t begin);
// The buffers the steps of the loop starting at step `begin` write: its kernels' and extern
// calls' results, its loops' induction variables and the buffers they swap.
std::set<int32_t> buffers_written_in_loop(const Program& program, size_t begin);
// The LoopBegin steps whose loops run as one function: compiled, and not inside another one.
std::vector<size_t> compiled_loops(const Program& program);

}  // namespace kiln::sched
