// The C-like printer of the loop IR: expressions (op-table calls, casts, loads and stores with
// 16-bit float conversion, index arithmetic), statements, loops and the kernel function around
// them. Target emitters derive from it and add what differs (Halide's CodeGen_C, tinygrad's
// cstyle renderer are the model): the C++/OpenMP emitter (codegen/cpp) adds pragmas and SIMD
// and thread-split reductions; the CUDA emitter (codegen/cuda) its launch geometry, block and
// grid reductions and read-only loads.
#pragma once
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compile.h"
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::codegen {

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
// A float16 or bfloat16 value is computed in a float register; rounding each operation's result
// back to its dtype gives the interpreter's op-by-op values, which are NumPy's and eager
// torch's (a chain kept in float would round once, at the store). Other dtypes: `text`.
std::string rounded_to(DType dtype, const std::string& text);
// A constant of `dtype` as source text (exact integers, hex floats, inf/nan spelled out).
std::string scalar_literal(const ir::Scalar& value, DType dtype);

// The op-table glue every target's source has after its prelude and scalar_math.h: one small
// template per op (kiln_op_<name>, kiln_identity_<name>, kiln_combine_<name>), generated from
// the same expressions the interpreter compiles, so both agree by construction.
std::string op_table_text();
// Elements of a constant buffer, and " = {...};": the initializer of its array.
size_t constant_count(const sched::Buffer& buffer);
std::string constant_array_values(const sched::Buffer& buffer);

class CLikePrinter {
 public:
  // arguments: the program buffers the function takes, in order (sched::KernelSignature).
  CLikePrinter(const Program& program, const Kernel& kernel, const Options& options,
               const target::Target& target, std::vector<int32_t> arguments)
      : program_(program),
        kernel_(kernel),
        options_(options),
        target_(target),
        arguments_(std::move(arguments)) {}
  virtual ~CLikePrinter() = default;

  // The kernel's function, named KILN_KERNEL_NAME (the caller names it). Buffers are its
  // arguments a0, a1, ... in the order given, so the text does not depend on buffer numbers.
  std::string emit();

 protected:
  // ---- what a target supplies ----
  virtual std::string function_header() const = 0;            // up to the opening brace
  virtual std::string extra_arguments() const { return ""; }  // lines after the buffers
  // Pragmas or qualifiers before a loop; returns whether its body runs as SIMD lanes.
  virtual bool before_loop(const Stmt& s) = 0;
  virtual void reduce(const Stmt& s) = 0;
  // A scan: one thread, in order (every target so far).
  virtual void scan(const Stmt& s);
  // A reduction result (ExprKind::Local) as text.
  virtual std::string local_value(ExprId id) { return local_name(expr(id).variable); }
  // The function's statements (a target may print only part of the kernel per function).
  virtual void body() { statements(kernel_.body); }
  // A scatter-add's store (Stmt::accumulate): buffer[index] += value, `value` of dtype `from`.
  virtual void accumulate_store(int32_t buffer, const std::string& index, const std::string& value,
                                DType from);
  // An Elementwise expression's text from its operands' (the CUDA emitter divides by values
  // shared by many elements its own way). x ** 3 of floats is kiln_cube (scalar_math.h), the
  // cube rounded once: libmvec's vector pow is up to 4 ulp from it and takes a scalar path for
  // negative bases (37.8 against 1.2 ms on 4M float64s), CUDA's pow is a general pow's cost.
  virtual std::string elementwise_text(ExprId id, const std::vector<std::string>& operands);
  // A Load expression's value (the CUDA emitter reads some from vector registers).
  virtual std::string load_value(ExprId id) { return load_text(expr(id)); }
  // A Store statement that is not an add: buffer[index] = value.
  virtual void plain_store(const Stmt& s, const std::string& index, const std::string& value) {
    line(store_text(s.buffer, index, value, expr(s.value).dtype));
  }
  // The name a kernel reads constant array `buffer` by (its static array's own, by default).
  virtual std::string constant_name(const sched::Buffer& buffer) { return buffer.name; }
  // The element of `buffer` at `index` as a load reads it (before 16-bit float conversion).
  virtual std::string loaded_element(int32_t buffer, const std::string& index) {
    return buffer_name(buffer) + "[" + index + "]";
  }

  // ---- the shared printer ----
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }
  std::string indent() const { return std::string(2 * depth_, ' '); }
  void line(const std::string& text) { out_ << indent() << text << "\n"; }
  std::string buffer_name(int32_t buffer);  // a<k>, or a constant array's own name
  // The declarations of the arguments a<k> of `which` (their pointers from kiln_args), one per
  // line at the current indent.
  std::string argument_declarations(const std::set<size_t>& which) const;
  std::string value(ExprId id);             // name or inline text, emitting temporaries as needed
  std::string index_text(ExprId id);
  // The C text of [begin, end) of `loop`: its run-time bounds clamped to [0, extent), or 0 and
  // extent (sched/loop_ir.h: Loop::begin, end).
  std::pair<std::string, std::string> bounds_text(const sched::Loop& loop);
  std::string load_text(const Expr& e);
  std::string store_text(int32_t buffer, const std::string& index, const std::string& value,
                         DType from);
  void statements(const std::vector<Stmt>& body);
  void loop(const Stmt& s);
  void open_block() {
    emitted_.emplace_back();
    ++depth_;
  }
  void close_block() {
    emitted_.pop_back();
    --depth_;
    line("}");
  }
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
  // The arguments the body names: only those are declared, where they are used (a combined
  // launch's parts each declare theirs, or the compiler keeps every part's pointers live).
  std::set<size_t> used_arguments_;
  std::ostringstream out_;  // the body
  int depth_ = 1;
  bool in_simd_loop_ = false;  // inside a loop whose iterations are SIMD lanes
  bool in_parallel_loop_ = false;  // inside a loop whose iterations run on several threads
  std::vector<std::set<ExprId>> emitted_{{}};
};

}  // namespace kiln::codegen
