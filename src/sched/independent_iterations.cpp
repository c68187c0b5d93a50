#include "sched/independent_iterations.h"

#include <algorithm>
#include <set>

#include "ir/ops.h"
#include "sched/induction_ranges.h"

namespace kiln::sched {
namespace {

void collect_stores(const std::vector<Stmt>& body, std::vector<const Stmt*>& stores) {
  for (const Stmt& s : body) {
    if ((s.kind == StmtKind::Store && !s.to_local_array) || s.kind == StmtKind::Scan)
      stores.push_back(&s);
    collect_stores(s.body, stores);
  }
}

// The block of elements one iteration touches in a shared buffer: all accesses a * v + r.
struct Footprint {
  bool any = false;
  int64_t coefficient = 0, low = 0, high = 0;
  bool add(const Affine& access) {
    if (access.coefficient == 0) return false;
    if (any && access.coefficient != coefficient) return false;
    low = any ? std::min(low, access.low) : access.low;
    high = any ? std::max(high, access.high) : access.high;
    coefficient = access.coefficient;
    any = true;
    return true;
  }
};

}  // namespace

std::optional<std::vector<int32_t>> independent_iterations(const Program& program, size_t begin,
                                                           bool sorts) {
  const LoopControl& loop = program.steps[begin].loop;
  size_t end = static_cast<size_t>(loop.partner);
  int64_t trips = constant_trip_count(loop);
  if ((!loop.compiled && !sorts) || loop.condition >= 0 || trips <= 1 ||
      !program.steps[end].loop.swaps.empty())
    return std::nullopt;
  std::vector<const Kernel*> kernels;
  std::vector<const ExternCall*> externs;
  for (size_t s = begin + 1; s < end; ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::Extern && sorts && ir::is_sort(step.call.op))
      externs.push_back(&step.call);
    else if (step.kind == StepKind::Kernel)
      kernels.push_back(&program.kernels[static_cast<size_t>(step.kernel)]);
    else
      return std::nullopt;
  }
  // Buffers the rest of the program touches: a body buffer among them is shared.
  const std::set<int32_t> outside = buffers_used_outside(program, begin);
  std::set<int32_t> written;
  for (const Kernel* kernel : kernels)
    written.insert(kernel->buffers_written.begin(), kernel->buffers_written.end());
  for (const ExternCall* call : externs) written.insert(call->output);
  std::vector<int32_t> own = {loop.induction};
  std::set<int32_t> shared;
  for (int32_t b : written) {
    const Buffer& buffer = program.buffers[static_cast<size_t>(b)];
    if (b == loop.induction) return std::nullopt;  // a kernel writing the index: not ours
    if (buffer.role == BufferRole::Intermediate && !outside.count(b))
      own.push_back(b);
    else
      shared.insert(b);
  }

  for (const ExternCall* call : externs)  // (a sort reads and writes whole buffers)
    for (int32_t b : call->inputs)
      if (shared.count(b) || shared.count(call->output)) return std::nullopt;
  std::vector<Footprint> footprints(program.buffers.size());
  for (const Kernel* kernel : kernels) {
    AffineReader reader(*kernel, loop);
    auto touch = [&](int32_t buffer, ExprId index) {
      // (a buffer of no elements: its accesses never run)
      if (!shared.count(buffer) || buffer_bytes(program.buffers[static_cast<size_t>(buffer)]) == 0)
        return true;
      std::optional<Affine> access = reader.affine(index);
      return access && footprints[static_cast<size_t>(buffer)].add(*access);
    };
    for (const Expr& e : kernel->exprs)
      if (e.kind == ExprKind::Load && !touch(e.buffer, e.operands[0])) return std::nullopt;
    std::vector<const Stmt*> stores;
    collect_stores(kernel->body, stores);
    for (const Stmt* store : stores)
      if (!touch(store->buffer, store->index)) return std::nullopt;
  }
  // Iterations v and v + step touch [a*v + low, a*v + high] and that block moved by a * step.
  for (int32_t b : shared) {
    if (buffer_bytes(program.buffers[static_cast<size_t>(b)]) == 0) continue;
    const Footprint& footprint = footprints[static_cast<size_t>(b)];
    std::optional<int64_t> stride = checked_mul(footprint.coefficient, loop.step);
    if (!stride || footprint.high - footprint.low >= std::abs(*stride)) return std::nullopt;
  }
  return own;
}

}  // namespace kiln::sched
