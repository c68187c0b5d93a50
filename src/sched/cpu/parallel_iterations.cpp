#include "sched/cpu/parallel_iterations.h"

#include "sched/cpu/mark_parallel.h"
#include "sched/independent_iterations.h"
#include "sched/induction_ranges.h"

namespace kiln::sched::cpu {
namespace {

constexpr int64_t kMaxPrivateBytes = int64_t(64) << 10;

}  // namespace

bool parallel_iterations(Program& program, const target::Target& target) {
  if (target.threads <= 1) return false;
  bool marked = false;
  for (size_t begin = 0; begin < program.steps.size(); ++begin) {
    LoopControl& loop = program.steps[begin].loop;
    if (program.steps[begin].kind != StepKind::LoopBegin) continue;
    std::optional<std::vector<int32_t>> own = independent_iterations(program, begin);
    if (!own) continue;
    int64_t private_bytes = 0, work = 0;
    for (int32_t b : *own) private_bytes += buffer_bytes(program.buffers[static_cast<size_t>(b)]);
    for (size_t s = begin + 1; s < static_cast<size_t>(loop.partner); ++s) {
      const Kernel& kernel = program.kernels[static_cast<size_t>(program.steps[s].kernel)];
      for (const Stmt& statement : kernel.body) work += statement_work(kernel, statement);
    }
    int64_t total_work;
    bool big = __builtin_mul_overflow(work, constant_trip_count(loop), &total_work) ||
               total_work >= target.parallel_threshold;
    if (private_bytes > kMaxPrivateBytes || !big) continue;
    loop.parallel = true;
    loop.private_buffers = std::move(*own);
    marked = true;
  }
  return marked;
}

}  // namespace kiln::sched::cpu
