#include "codegen/cuda/uniform_values.h"

#include <set>

#include "ir/ops.h"

namespace kiln::codegen::cuda_detail {

using sched::Expr;
using sched::ExprId;
using sched::ExprKind;
using sched::Kernel;
using sched::Stmt;

namespace {

// The most values hoisted a launch: each holds a register for the whole kernel.
constexpr size_t kMostUniformValues = 8;

enum class Uniform : uint8_t { Unknown, No, Yes, Costly };  // Costly: uniform, with a slow op

// The buffers `s` stores into (not its local arrays).
void add_written(const Stmt& s, std::set<int32_t>& written) {
  if ((s.kind == sched::StmtKind::Store || s.kind == sched::StmtKind::Scan) && !s.to_local_array)
    written.insert(s.buffer);
  for (const Stmt& inner : s.body) add_written(inner, written);
}

class Classifier {
 public:
  Classifier(const sched::Program& program, const Kernel& kernel,
             const std::vector<Stmt>& statements)
      : program_(program), kernel_(kernel), state_(kernel.exprs.size(), Uniform::Unknown) {
    for (const Stmt& s : statements) add_written(s, written_);
  }

  Uniform classify(ExprId root) {
    // Post-order without recursion: a graph unrolled from a Python loop nests deeply.
    std::vector<std::pair<ExprId, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [id, operands_done] = stack.back();
      stack.pop_back();
      if (state_[static_cast<size_t>(id)] != Uniform::Unknown) continue;
      const Expr& e = kernel_.exprs[static_cast<size_t>(id)];
      if (!operands_done) {
        stack.push_back({id, true});
        for (ExprId operand : e.operands) stack.push_back({operand, false});
        continue;
      }
      state_[static_cast<size_t>(id)] = own(e);
    }
    return state_[static_cast<size_t>(root)];
  }

 private:
  Uniform own(const Expr& e) const {
    bool costly = false;
    for (ExprId operand : e.operands) {
      const Uniform u = state_[static_cast<size_t>(operand)];
      if (u == Uniform::No) return Uniform::No;
      costly = costly || u == Uniform::Costly;
    }
    switch (e.kind) {
      case ExprKind::Constant:
        return Uniform::Yes;
      case ExprKind::Load:
        return readable_everywhere(e) ? Uniform::Yes : Uniform::No;
      case ExprKind::Elementwise:
        return costly || ir::op_info(e.op).cost != ir::Cost::Cheap ? Uniform::Costly
                                                                    : Uniform::Yes;
      case ExprKind::Cast:
      case ExprKind::Select:
        return costly ? Uniform::Costly : Uniform::Yes;
      default:  // loop variables, reductions' results, random draws, local arrays, indices
        return Uniform::No;
    }
  }

  // A load every thread may make before its loops: of a buffer the launch does not write (an
  // earlier launch of the kernel may: a step count's increment), at a constant position inside
  // it (a thread with no iterations reads it too).
  bool readable_everywhere(const Expr& load) const {
    if (written_.count(load.buffer)) return false;
    const Expr& index = kernel_.exprs[static_cast<size_t>(load.operands[0])];
    if (index.kind != ExprKind::Constant) return false;
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(load.buffer)];
    int64_t elements = 1;
    for (int64_t extent : buffer.shape) elements *= extent;
    const ir::Scalar& position = index.constant;
    return position.is_integer && position.i >= 0 && position.i < elements;
  }

  const sched::Program& program_;
  const Kernel& kernel_;
  std::vector<Uniform> state_;
  std::set<int32_t> written_;  // by the launch's statements
};

}  // namespace

std::vector<ExprId> uniform_values(const sched::Program& program, const Kernel& kernel,
                                   const std::vector<Stmt>& statements) {
  Classifier classifier(program, kernel, statements);
  std::vector<ExprId> found;
  std::vector<uint8_t> seen(kernel.exprs.size(), 0);
  std::vector<ExprId> stack;
  for (const Stmt& s : statements)
    sched::for_each_root(s, [&](ExprId id) {
      if (id >= 0) stack.push_back(id);
    });
  // From the statements down: the first uniform expression met on each path is the largest.
  while (!stack.empty() && found.size() < kMostUniformValues) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = 1;
    const Uniform u = classifier.classify(id);
    if (u == Uniform::Costly) {
      found.push_back(id);
      continue;
    }
    if (u == Uniform::No) {
      const Expr& e = kernel.exprs[static_cast<size_t>(id)];
      stack.insert(stack.end(), e.operands.begin(), e.operands.end());
    }
  }
  return found;
}

}  // namespace kiln::codegen::cuda_detail
