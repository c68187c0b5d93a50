#include "sched/loop_ir.h"

#include <set>

#include <sstream>

namespace kiln::sched {
namespace {

// Expressions are DAGs: past a few levels the text names the expression (e12) rather than
// expanding it again, which keeps the text linear in the kernel size.
std::string expr_text(const Kernel& k, ExprId id, int depth = 0) {
  const Expr& e = k.exprs[static_cast<size_t>(id)];
  if (depth > 6 && !e.operands.empty()) return "e" + std::to_string(id);
  auto operand = [&](size_t i) { return expr_text(k, e.operands[i], depth + 1); };
  switch (e.kind) {
    case ExprKind::Constant:
      return e.constant.is_integer ? std::to_string(e.constant.i) : std::to_string(e.constant.f);
    case ExprKind::LoopVar: return "i" + std::to_string(e.variable);
    case ExprKind::Local: return "r" + std::to_string(e.variable);
    case ExprKind::Load: return "b" + std::to_string(e.buffer) + "[" + operand(0) + "]";
    case ExprKind::Elementwise: {
      std::string text = std::string(ir::op_name(e.op)) + "(";
      for (size_t i = 0; i < e.operands.size(); ++i) text += (i ? ", " : "") + operand(i);
      return text + ")";
    }
    case ExprKind::Cast: return std::string(dtype_name(e.dtype)) + "(" + operand(0) + ")";
    case ExprKind::Select: return "(" + operand(0) + " ? " + operand(1) + " : " + operand(2) + ")";
    case ExprKind::IndexAdd: return operand(0) + " + " + operand(1);
    case ExprKind::IndexMul: return "(" + operand(0) + ")*" + operand(1);
    case ExprKind::IndexFloorDiv: return "(" + operand(0) + ")//" + operand(1);
    case ExprKind::IndexMod: return "(" + operand(0) + ")%" + operand(1);
    case ExprKind::IndexMin: return "min(" + operand(0) + ", " + operand(1) + ")";
    case ExprKind::IndexMax: return "max(" + operand(0) + ", " + operand(1) + ")";
    case ExprKind::IndexLess: return "(" + operand(0) + " < " + operand(1) + ")";
    case ExprKind::Random:
      return std::string(ir::op_name(e.op)) + "(" + operand(0) + ", key " + operand(1) + ")";
    case ExprKind::ArrayLoad: return "h" + std::to_string(e.buffer) + "[" + operand(0) + "]";
  }
  return "?";
}

void print_statements(std::ostringstream& out, const Kernel& k, const std::vector<Stmt>& body, int depth) {
  std::string pad(2 * static_cast<size_t>(depth), ' ');
  for (const Stmt& s : body) {
    switch (s.kind) {
      case StmtKind::Loop:
        out << pad << "for i" << s.loop.variable << " in 0.." << s.loop.extent;
        if (s.loop.begin >= 0 || s.loop.end >= 0)
          out << " within [" << (s.loop.begin >= 0 ? expr_text(k, s.loop.begin) : "0") << ", "
              << (s.loop.end >= 0 ? expr_text(k, s.loop.end) : std::to_string(s.loop.extent)) << ")";
        out << (s.parallel ? " parallel" : "") << (s.vectorize ? " simd" : "") << ":\n";
        break;
      case StmtKind::Reduce:
      case StmtKind::Scan: {
        out << pad << (s.kind == StmtKind::Scan ? "scan" : "reduce") << (s.parallel ? " parallel" : "");
        if (s.split_lanes > 0) out << " lanes " << s.split_lanes;
        if (s.lanes_loop.variable >= 0)  // every lane at once (interchange_reductions, interleave_scans)
          out << " for all i" << s.lanes_loop.variable << " in 0.." << s.lanes_loop.extent;
        for (const Loop& l : s.reduce_loops) {
          out << " i" << l.variable << " in 0.." << l.extent;
          if (l.begin >= 0 || l.end >= 0)  // trimmed at run time (sched/trim_loops.h)
            out << " within [" << (l.begin >= 0 ? expr_text(k, l.begin) : "0") << ", "
                << (l.end >= 0 ? expr_text(k, l.end) : std::to_string(l.extent)) << ")";
        }
        if (s.guard >= 0) out << " if " << expr_text(k, s.guard);
        out << ":";
        for (const Accumulation& a : s.accumulations)
          out << " r" << a.local << " = " << ir::op_name(a.op) << "(" << expr_text(k, a.value) << ")";
        if (s.kind == StmtKind::Scan) out << " -> b" << s.buffer << "[" << expr_text(k, s.index) << "]";
        out << "\n";
        break;
      }
      case StmtKind::LocalArray:
        out << pad << "local h" << s.buffer << "[" << k.local_arrays[static_cast<size_t>(s.buffer)].size << "]\n";
        break;
      case StmtKind::Store:
        out << pad << (s.to_local_array ? "h" : "b") << s.buffer << "[" << expr_text(k, s.index) << "] " << (s.accumulate ? "+=" : "=")
            << " " << expr_text(k, s.value) << "\n";
        break;
    }
    print_statements(out, k, s.body, depth + 1);
  }
}

}  // namespace

std::vector<int32_t> step_buffers(const Program& program, const Step& step, bool written) {
  switch (step.kind) {
    case StepKind::Kernel: {
      const Kernel& k = program.kernels[static_cast<size_t>(step.kernel)];
      return written ? k.buffers_written : k.buffers_read;
    }
    case StepKind::Extern:
      return written ? std::vector<int32_t>{step.call.output} : step.call.inputs;
    case StepKind::LoopBegin: {
      if (written) return {step.loop.induction};
      std::vector<int32_t> read;
      for (int32_t b : {step.loop.start, step.loop.stop, step.loop.condition})
        if (b >= 0) read.push_back(b);
      return read;
    }
    case StepKind::LoopEnd: {
      std::vector<int32_t> swapped{step.loop.induction};
      for (const auto& [carried, next] : step.loop.swaps)
        swapped.insert(swapped.end(), {carried, next});
      return swapped;
    }
  }
  return {};
}

bool same_expr(const Kernel& kernel, ExprId a, ExprId b) {
  if (a == b) return true;
  if (a < 0 || b < 0) return false;
  const Expr &x = kernel.exprs[static_cast<size_t>(a)], &y = kernel.exprs[static_cast<size_t>(b)];
  if (x.kind != y.kind || x.dtype != y.dtype || x.op != y.op || x.buffer != y.buffer ||
      x.variable != y.variable || !(x.constant == y.constant) || x.seed != y.seed ||
      x.operands.size() != y.operands.size())
    return false;
  for (size_t k = 0; k < x.operands.size(); ++k)
    if (!same_expr(kernel, x.operands[k], y.operands[k])) return false;
  return true;
}

bool is_constant_expr(const Kernel& kernel, ExprId id, double value) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Cast) return is_constant_expr(kernel, e.operands[0], value);
  return e.kind == ExprKind::Constant && e.constant.as_double() == value;
}

namespace {
std::string shape_list(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (int64_t value : values) text += std::to_string(value) + ",";
  return text + ")";
}
}  // namespace

std::string print_program(const Program& program) {
  std::ostringstream out;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const Buffer& buffer = program.buffers[b];
    out << "b" << b << " " << buffer.name << " " << dtype_name(buffer.dtype) << "(";
    for (int64_t e : buffer.shape) out << e << ",";
    out << ")";
    if (buffer.role == BufferRole::Intermediate) out << " @arena+" << buffer.arena_offset;
    out << "\n";
  }
  for (const Step& step : program.steps) {
    if (step.kind == StepKind::Extern) {
      out << "extern " << ir::op_name(step.call.op) << "(";
      for (size_t k = 0; k < step.call.inputs.size(); ++k) {
        out << (k ? ", b" : "b") << step.call.inputs[k];
        if (k < step.call.views.size() && step.call.views[k]) {
          const StridedView& view = *step.call.views[k];
          out << " viewed as " << shape_list(view.shape) << " strides "
              << shape_list(view.strides) << " from " << view.offset;
        }
      }
      out << ")";
      if (!step.call.parameters.empty()) {
        out << " [";
        for (size_t k = 0; k < step.call.parameters.size(); ++k)
          out << (k ? ", " : "") << step.call.parameters[k];
        out << "]";
      }
      out << " -> b" << step.call.output << "\n";
      continue;
    }
    if (step.kind == StepKind::LoopBegin) {
      auto bound = [](int32_t buffer, int64_t value) {
        return buffer < 0 ? std::to_string(value) : "b" + std::to_string(buffer);
      };
      out << "loop b" << step.loop.induction << " in range(" << bound(step.loop.start, step.loop.start_value)
          << ", " << bound(step.loop.stop, step.loop.stop_value) << ", " << step.loop.step << ")"
          << (step.loop.condition >= 0 ? " while b" + std::to_string(step.loop.condition) : "");
      if (step.loop.parallel) {
        out << " parallel, own";
        for (int32_t b : step.loop.private_buffers) out << " b" << b;
      }
      out << ":\n";
      continue;
    }
    if (step.kind == StepKind::LoopEnd) {
      out << "end loop; swap";
      for (const auto& [carried, next] : step.loop.swaps) out << " b" << carried << "<->b" << next;
      out << "\n";
      continue;
    }
    const Kernel& k = program.kernels[static_cast<size_t>(step.kernel)];
    out << k.name << ":\n";
    print_statements(out, k, k.body, 1);
  }
  return out.str();
}

std::vector<int32_t> compiled_loop_buffers(const Program& program,
                                           const std::vector<std::vector<int32_t>>& kernel_arguments,
                                           size_t begin) {
  std::set<int32_t> buffers;
  size_t end = static_cast<size_t>(program.steps[begin].loop.partner);
  for (size_t s = begin; s <= end; ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::Kernel) {
      const auto& arguments = kernel_arguments[static_cast<size_t>(step.kernel)];
      buffers.insert(arguments.begin(), arguments.end());
      continue;
    }
    for (int32_t b : {step.loop.start, step.loop.stop, step.loop.induction, step.loop.condition})
      if (b >= 0) buffers.insert(b);
    for (const auto& [carried, next] : step.loop.swaps) buffers.insert({carried, next});
  }
  return {buffers.begin(), buffers.end()};
}

int64_t buffer_bytes(const Buffer& buffer) {
  int64_t elements = 1;
  for (int64_t extent : buffer.shape) elements *= extent;
  return elements * dtype_size(buffer.dtype);
}

std::set<int32_t> buffers_used_outside(const Program& program, size_t begin) {
  std::set<int32_t> outside(program.output_buffers.begin(), program.output_buffers.end());
  size_t end = static_cast<size_t>(program.steps[begin].loop.partner);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (s >= begin && s <= end) continue;
    const Step& step = program.steps[s];
    if (step.kind == StepKind::Kernel) {
      const Kernel& k = program.kernels[static_cast<size_t>(step.kernel)];
      outside.insert(k.buffers_read.begin(), k.buffers_read.end());
      outside.insert(k.buffers_written.begin(), k.buffers_written.end());
    } else if (step.kind == StepKind::Extern) {
      outside.insert(step.call.inputs.begin(), step.call.inputs.end());
      outside.insert(step.call.output);
    } else {
      for (int32_t b : {step.loop.start, step.loop.stop, step.loop.induction, step.loop.condition})
        outside.insert(b);
      for (const auto& [carried, next] : step.loop.swaps) outside.insert({carried, next});
    }
  }
  return outside;
}

std::set<int32_t> buffers_written_in_loop(const Program& program, size_t begin) {
  std::set<int32_t> written;
  const size_t end = static_cast<size_t>(program.steps[begin].loop.partner);
  for (size_t s = begin; s <= end; ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::Kernel) {
      const Kernel& kernel = program.kernels[static_cast<size_t>(step.kernel)];
      written.insert(kernel.buffers_written.begin(), kernel.buffers_written.end());
    }
    if (step.kind == StepKind::Extern) written.insert(step.call.output);
    if (step.kind == StepKind::LoopBegin) written.insert(step.loop.induction);
    for (const auto& [carried, next] : step.loop.swaps) written.insert({carried, next});
  }
  return written;
}

std::vector<size_t> compiled_loops(const Program& program) {
  std::vector<size_t> loops;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.kind != StepKind::LoopBegin) continue;
    if (step.loop.compiled) {
      loops.push_back(s);
      s = static_cast<size_t>(step.loop.partner);  // loops inside it are part of it
    }
  }
  return loops;
}

}  // namespace kiln::sched
