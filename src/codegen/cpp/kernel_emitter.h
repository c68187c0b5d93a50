// The C++ emitter's kernel printer, shared by cpp_emitter.cpp (expressions, loops, stores) and
// reduce_emitter.cpp (reductions and scans). Internal to src/codegen/cpp.
#pragma once
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen::cpp_detail {

using sched::Expr;
using sched::ExprId;
using sched::ExprKind;
using sched::Kernel;
using sched::Program;
using sched::Stmt;
using sched::StmtKind;

inline std::string compute_type(DType t) { return std::string(dtype_compute_ctype(t)); }
inline std::string storage_type(DType t) { return std::string(dtype_storage_ctype(t)); }
inline std::string loop_name(int32_t loop) { return "i" + std::to_string(loop); }
inline std::string local_name(int32_t local) { return "r" + std::to_string(local); }
// `text` (of dtype `from`, in its compute type) converted to `to`'s compute type, with kiln's
// defined float-to-integer semantics.
std::string convert(const std::string& text, DType from, DType to);

// An accumulation's variables: acc<local><suffix><subscript> and, for argmax/argmin,
// acc<local><suffix>_index<subscript>. `suffix` selects a thread's partials ("_part") or the
// SIMD lanes ("_lanes", with subscript "[lane]").
struct AccumulatorNames {
  std::string value, index;
};
inline AccumulatorNames accumulator_names(const sched::Accumulation& a, const std::string& suffix,
                                   const std::string& subscript = "") {
  std::string base = "acc" + std::to_string(a.local) + suffix;
  return {base + subscript, base + "_index" + subscript};
}

// One kernel's function, named KILN_KERNEL_NAME (the caller names it). Buffers are its
// arguments a0, a1, ... in the order the kernel's signature lists them, so that the text does
// not depend on buffer numbers.

class KernelEmitter {
 public:
  // arguments: the program buffers the function takes, in order (sched::KernelSignature).
  KernelEmitter(const Program& program, const Kernel& kernel, const Options& options,
                const target::Target& target, std::vector<int32_t> arguments)
      : program_(program), kernel_(kernel), options_(options), target_(target),
        arguments_(std::move(arguments)) {}

  std::string emit();

 private:
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }
  std::string indent() const { return std::string(2 * depth_, ' '); }
  void line(const std::string& text) { out_ << indent() << text << "\n"; }
  std::string buffer_name(int32_t buffer);  // a<k>, or a constant array's own name
  std::string value(ExprId id);  // name or inline text, emitting temporaries as needed
  std::string index_text(ExprId id);
  std::string load_text(const Expr& e);
  std::string store_text(int32_t buffer, const std::string& index, const std::string& value, DType from);
  void statements(const std::vector<Stmt>& body);
  void loop(const Stmt& s);
  void reduce(const Stmt& s);
  // count > 0: arrays of `count` accumulators (SIMD lanes).
  void declare_accumulators(const Stmt& s, const std::string& suffix, int64_t count = 0);
  void combine_elements(const Stmt& s, const std::string& suffix, const std::string& subscript);
  void merge_partials(const Stmt& s, const std::string& into, const std::string& from,
                      const std::string& from_subscript = "");
  void reduce_loops(const Stmt& s, bool worksharing, const std::string& suffix, bool simd_ok);
  void blocked_sum_loops(const Stmt& s, bool worksharing, const std::string& suffix,
                         int64_t lanes);
  void lane_loop(const Stmt& s, const std::string& variable, const std::string& start,
                 int64_t lanes, const std::string& suffix);
  void scan(const Stmt& s);
  void open_block() { emitted_.emplace_back(); ++depth_; }
  void close_block() { emitted_.pop_back(); --depth_; line("}"); }
  bool is_emitted(ExprId id) const {
    for (const auto& block : emitted_)
      if (block.count(id)) return true;
    return false;
  }

  const Program& program_;
  const Kernel& kernel_;
  const Options& options_;
  const target::Target& target_;
  std::vector<int32_t> arguments_;
  std::ostringstream out_;  // the body
  // Every parallel region runs on the threads the runtime passes with the call (the target's,
  // lowered on a busy machine or by autotuning: runtime/kernel_call.h).
  std::string parallel_clause() const { return " num_threads(kiln_threads)"; }
  std::string finalized(const sched::Accumulation& a, const std::string& subscript);
  void lane_reduce(const Stmt& s);

  int depth_ = 1;
  struct LaneAccumulation : sched::Accumulation {
    int32_t lane_variable;
  };
  std::map<int32_t, LaneAccumulation> lane_locals_;  // by local id
  bool in_simd_loop_ = false;  // OpenMP forbids a simd construct nested in another
  std::vector<std::set<ExprId>> emitted_{{}};
};

}  // namespace kiln::codegen::cpp_detail
