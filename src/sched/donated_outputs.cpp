#include "sched/donated_outputs.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/shape.h"
#include "sched/strided_views.h"

namespace kiln::sched {
namespace {

bool row_major(const Buffer& buffer) {
  return buffer.strides.empty() || sched::row_major(buffer.shape, buffer.strides);
}

int64_t element_count(const Buffer& buffer) {
  int64_t count = 1;
  for (int64_t extent : buffer.shape) count *= extent;
  return count;
}

bool stores_into(const Stmt& s, int32_t buffer) {
  return (s.kind == StmtKind::Store || s.kind == StmtKind::Scan) && !s.to_local_array &&
         s.buffer == buffer;
}

// The statements that write `buffer`: the body holding them and the statements around it, or
// null when they are not plain stores in one body.
struct Stores {
  std::vector<Stmt>* body = nullptr;
  std::vector<const Stmt*> enclosing;  // outermost first
  bool usable = true;
};

void find_stores(std::vector<Stmt>& body, int32_t buffer, std::vector<const Stmt*>& enclosing,
                 Stores& stores) {
  for (Stmt& s : body) {
    if (stores_into(s, buffer)) {
      if (s.kind != StmtKind::Store || s.accumulate || (stores.body && stores.body != &body))
        stores.usable = false;
      stores.body = &body;
      stores.enclosing = enclosing;
    }
    enclosing.push_back(&s);
    find_stores(s.body, buffer, enclosing, stores);
    enclosing.pop_back();
  }
}

// The index every store of `output` in `kernel` writes at, when each element of the output is
// written once and the kernel reads `input` there only (and `output` nowhere); else -1.
ExprId common_index(Kernel& kernel, int32_t output, int32_t input, int64_t elements,
                    Stores& stores) {
  std::vector<const Stmt*> enclosing;
  find_stores(kernel.body, output, enclosing, stores);
  if (!stores.usable || stores.body == nullptr) return -1;
  ExprId index = -1;
  for (const Stmt& s : *stores.body) {
    if (!stores_into(s, output)) continue;
    if (index >= 0 && !same_expr(kernel, index, s.index)) return -1;
    index = s.index;
  }
  std::set<int32_t> variables;
  any_subexpr(kernel, index, [&](const Expr& e) {
    if (e.kind == ExprKind::LoopVar) variables.insert(e.variable);
    return false;
  });
  int64_t iterations = 1;
  for (const Stmt* s : stores.enclosing) {
    if (s->kind != StmtKind::Loop || s->loop.begin >= 0 || s->loop.end >= 0) return -1;
    // a loop over an extent-1 dimension runs once, whatever its index leaves it out
    if (!variables.count(s->loop.variable) && s->loop.extent != 1) return -1;
    iterations *= s->loop.extent;
  }
  if (iterations != elements) return -1;
  bool usable = true;
  for_each_load(kernel, kernel.body, [&](const Expr& load) {
    if (load.buffer == output || (load.buffer == input && !same_expr(kernel, load.operands[0], index)))
      usable = false;
  });
  return usable ? index : -1;
}

bool touches(const Program& program, const Step& step, int32_t buffer) {
  for (bool written : {false, true}) {
    std::vector<int32_t> used = step_buffers(program, step, written);
    if (std::find(used.begin(), used.end(), buffer) != used.end()) return true;
  }
  return false;
}

// The kernel step writing `output`, when it is the only step that does and no step after it
// touches `input` (nor any step writes it); else -1.
int writing_step(const Program& program, int32_t output, int32_t input) {
  int found = -1;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    std::vector<int32_t> written = step_buffers(program, step, true);
    if (std::find(written.begin(), written.end(), input) != written.end()) return -1;
    if (found >= 0 && touches(program, step, input)) return -1;
    if (std::find(written.begin(), written.end(), output) == written.end()) continue;
    if (found >= 0 || step.kind != StepKind::Kernel) return -1;
    found = static_cast<int>(s);
  }
  return found;
}

// Applies `renamed` to every buffer number of the program: its kernels' loads, stores and
// lists, the extern calls' operands and results, the outputs.
template <class Rename>
void renumber_buffers(Program& program, Rename renamed) {
  for (Kernel& kernel : program.kernels) {
    for (Expr& e : kernel.exprs)
      if (e.kind == ExprKind::Load) e.buffer = renamed(e.buffer);
    for (int32_t& b : kernel.buffers_read) b = renamed(b);
    for (int32_t& b : kernel.buffers_written) b = renamed(b);
    std::vector<Stmt*> stack;
    for (Stmt& s : kernel.body) stack.push_back(&s);
    while (!stack.empty()) {
      Stmt* s = stack.back();
      stack.pop_back();
      if ((s->kind == StmtKind::Store || s->kind == StmtKind::Scan) && !s->to_local_array)
        s->buffer = renamed(s->buffer);
      for (Stmt& inner : s->body) stack.push_back(&inner);
    }
  }
  for (Step& step : program.steps) {
    for (int32_t& b : step.call.inputs) b = renamed(b);
    if (step.call.output >= 0) step.call.output = renamed(step.call.output);
  }
  for (int32_t& b : program.output_buffers) b = renamed(b);
}

// The output's buffer replaced by the input's everywhere (the steps after the kernel read the
// new value there), then dropped.
void merge_into_input(Program& program, int32_t output, int32_t input) {
  renumber_buffers(program, [&](int32_t b) { return b == output ? input : b; });
  for (Kernel& kernel : program.kernels)  // a kernel that read both lists the input twice now
    for (std::vector<int32_t>* list : {&kernel.buffers_read, &kernel.buffers_written}) {
      std::vector<int32_t> seen;
      std::erase_if(*list, [&](int32_t b) {
        if (std::find(seen.begin(), seen.end(), b) != seen.end()) return true;
        seen.push_back(b);
        return false;
      });
    }
}

// Output k written into `input`'s buffer, when the conditions of the header hold but for the
// order of the stores (write_donated_outputs orders them).
struct Candidate {
  size_t output = 0;
  int32_t output_buffer = -1, input_buffer = -1;
  size_t kernel = 0;
  std::vector<Stmt>* body = nullptr;  // holding the output's stores
};

std::optional<Candidate> candidate(Program& program, size_t k, int32_t input) {
  const int32_t output = program.output_buffers[k];
  const Buffer &out = program.buffers[static_cast<size_t>(output)],
               &in = program.buffers[static_cast<size_t>(input)];
  if (out.role != BufferRole::Output || out.dtype != in.dtype || out.shape != in.shape ||
      !row_major(out) || !row_major(in) ||
      std::count(program.output_buffers.begin(), program.output_buffers.end(), output) != 1)
    return std::nullopt;
  const int step = writing_step(program, output, input);
  if (step < 0) return std::nullopt;
  const auto kernel = static_cast<size_t>(program.steps[static_cast<size_t>(step)].kernel);
  Stores stores;
  if (common_index(program.kernels[kernel], output, input, element_count(out), stores) < 0)
    return std::nullopt;
  return Candidate{k, output, input, kernel, stores.body};
}

// Whether statement `s` (its expressions, bounds and nested statements) reads `buffer`.
bool reads(const Kernel& kernel, const Stmt& s, int32_t buffer) {
  bool found = false;
  for_each_root(s, [&](ExprId root) {
    found = found || (root >= 0 && any_subexpr(kernel, root, [&](const Expr& e) {
                        return e.kind == ExprKind::Load && e.buffer == buffer;
                      }));
  });
  return found;
}

// Reorders the body of `taken` (candidates whose stores share one body) so that each iteration
// reads every old value before it is overwritten: the other statements first, then the stores,
// each output's before those of the inputs it reads. Returns the candidates so ordered; those
// left out read each other's inputs (a cycle) and keep their own buffers.
std::vector<Candidate> order_stores(const Kernel& kernel, std::vector<Candidate> taken) {
  std::vector<Stmt>& body = *taken.front().body;
  auto stores_of = [&](const Candidate& c) {
    std::vector<const Stmt*> found;
    for (const Stmt& s : body)
      if (stores_into(s, c.output_buffer)) found.push_back(&s);
    return found;
  };
  auto reads_input_of = [&](const Candidate& reader, const Candidate& written) {
    for (const Stmt* s : stores_of(reader))
      if (reads(kernel, *s, written.input_buffer)) return true;
    return false;
  };
  std::vector<Candidate> ordered;
  while (!taken.empty()) {  // next: one whose input none of those left reads
    auto next = std::find_if(taken.begin(), taken.end(), [&](const Candidate& c) {
      return std::none_of(taken.begin(), taken.end(), [&](const Candidate& other) {
        return other.output != c.output && reads_input_of(other, c);
      });
    });
    if (next == taken.end()) break;
    ordered.push_back(*next);
    taken.erase(next);
  }
  std::vector<Stmt> reordered;
  for (const Stmt& s : body)
    if (std::none_of(ordered.begin(), ordered.end(),
                     [&](const Candidate& c) { return stores_into(s, c.output_buffer); }))
      reordered.push_back(s);
  for (const Candidate& c : ordered)
    for (const Stmt& s : body)
      if (stores_into(s, c.output_buffer)) reordered.push_back(s);
  body = std::move(reordered);
  return ordered;
}

}  // namespace

std::vector<int32_t> usable_donations(const ir::Graph& graph,
                                      const std::vector<std::vector<int64_t>>& input_strides,
                                      const std::vector<int32_t>& donated) {
  if (std::any_of(graph.nodes().begin(), graph.nodes().end(),
                  [](const ir::Node& node) { return node.op == ir::Op::loop; }))
    return {};
  std::vector<int32_t> usable(std::min(donated.size(), graph.outputs().size()), -1);
  std::set<int32_t> given;
  bool any = false;
  for (size_t k = 0; k < usable.size(); ++k) {
    const int32_t j = donated[k];
    if (j < 0 || static_cast<size_t>(j) >= graph.inputs().size() || !given.insert(j).second)
      continue;
    const ir::Node &output = graph.node(graph.outputs()[k]),
                   &input = graph.node(graph.inputs()[static_cast<size_t>(j)]);
    if (output.dtype != input.dtype || output.shape != input.shape || !ir::is_static(input.shape))
      continue;
    const auto position = static_cast<size_t>(j);
    if (position < input_strides.size() && !input_strides[position].empty() &&
        !row_major(ir::to_ints(input.shape), input_strides[position]))
      continue;
    usable[k] = j;
    any = true;
  }
  if (!any) usable.clear();
  return usable;
}

bool write_donated_outputs(Program& program, const std::vector<int32_t>& donated) {
  if (std::any_of(program.steps.begin(), program.steps.end(), [](const Step& step) {
        return step.kind != StepKind::Kernel && step.kind != StepKind::Extern;
      }))
    return false;
  std::vector<Candidate> candidates;
  for (size_t k = 0; k < donated.size() && k < program.output_buffers.size(); ++k) {
    for (size_t b = 0; b < program.buffers.size() && donated[k] >= 0; ++b) {
      const Buffer& buffer = program.buffers[b];
      if (buffer.role != BufferRole::Input || buffer.number != donated[k]) continue;
      if (std::optional<Candidate> c = candidate(program, k, static_cast<int32_t>(b)))
        candidates.push_back(*c);
    }
  }
  std::vector<int32_t> removed;
  while (!candidates.empty()) {
    std::vector<Candidate> same_body;
    std::vector<Stmt>* body = candidates.front().body;
    std::erase_if(candidates, [&](const Candidate& c) {
      if (c.body == body) same_body.push_back(c);
      return c.body == body;
    });
    Kernel& kernel = program.kernels[same_body.front().kernel];
    for (const Candidate& c : order_stores(kernel, std::move(same_body))) {
      merge_into_input(program, c.output_buffer, c.input_buffer);
      removed.push_back(c.output_buffer);
    }
  }
  std::sort(removed.begin(), removed.end());
  for (auto b = removed.rbegin(); b != removed.rend(); ++b)
    program.buffers.erase(program.buffers.begin() + *b);
  renumber_buffers(program, [&](int32_t b) {  // down past the buffers removed before it
    return b - static_cast<int32_t>(std::lower_bound(removed.begin(), removed.end(), b) -
                                    removed.begin());
  });
  return !removed.empty();
}

size_t first_input_write(const Program& program) {
  for (size_t s = 0; s < program.steps.size(); ++s)
    for (int32_t b : step_buffers(program, program.steps[s], true))
      if (program.buffers[static_cast<size_t>(b)].role == BufferRole::Input) return s;
  return program.steps.size();
}

bool checks_precede_input_writes(const Program& program, size_t checks) {
  const size_t first = first_input_write(program);
  auto raises = [](const Step& step) {
    return step.kind == StepKind::Extern && step.call.op == ir::Op::solve;
  };
  const bool raising = std::any_of(program.steps.begin(), program.steps.end(), raises);
  if ((checks == 0 && !raising) || first == program.steps.size()) return true;
  if (std::any_of(program.steps.begin(), program.steps.end(), [](const Step& step) {
        return step.kind == StepKind::LoopBegin;
      }))
    return false;
  if (std::any_of(program.steps.begin() + static_cast<std::ptrdiff_t>(first), program.steps.end(),
                  raises))
    return false;
  const size_t outputs = program.output_buffers.size();
  for (size_t k = outputs - std::min(outputs, 2 * checks); k < outputs; ++k)
    for (size_t s = first; s < program.steps.size(); ++s)
      if (touches(program, program.steps[s], program.output_buffers[k])) return false;
  return true;
}

}  // namespace kiln::sched
