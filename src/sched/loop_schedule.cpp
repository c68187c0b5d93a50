#include "sched/loop_schedule.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::sched {
namespace {

void remap_statements(std::vector<Stmt>& body, const std::vector<int32_t>& buffer_map) {
  for (Stmt& s : body) {
    bool writes_buffer =
        (s.kind == StmtKind::Store && !s.to_local_array) || s.kind == StmtKind::Scan;
    if (writes_buffer) s.buffer = buffer_map[static_cast<size_t>(s.buffer)];
    remap_statements(s.body, buffer_map);
  }
}

// "kernel3_add_mul" numbered `number`: symbols of one library must not collide.
std::string renumbered(const std::string& name, size_t number) {
  size_t ops = name.find('_');
  return "kernel" + std::to_string(number) + (ops == std::string::npos ? "" : name.substr(ops));
}

}  // namespace

void append_loop(Program& program, const Program& body, const LoopBinding& binding,
                 const std::string& constant_prefix) {
  std::vector<int32_t> buffer_map;
  for (const Buffer& buffer : body.buffers) {
    int32_t mapped = -1;
    switch (buffer.role) {
      case BufferRole::Input:
        mapped = binding.inputs.at(static_cast<size_t>(buffer.number));
        break;
      case BufferRole::Output:
        mapped = binding.outputs.at(static_cast<size_t>(buffer.number));
        break;
      case BufferRole::Intermediate:
      case BufferRole::Constant: {
        Buffer copy = buffer;
        copy.arena_offset = -1;
        if (buffer.role == BufferRole::Constant)
          copy.name = constant_prefix + buffer.name.substr(std::string("kiln_const").size());
        else
          copy.name = "buf" + std::to_string(program.buffers.size());
        program.buffers.push_back(std::move(copy));
        mapped = static_cast<int32_t>(program.buffers.size() - 1);
        break;
      }
    }
    buffer_map.push_back(mapped);
  }
  auto map = [&](int32_t b) { return b < 0 ? b : buffer_map[static_cast<size_t>(b)]; };

  size_t first_kernel = program.kernels.size();
  for (const Kernel& kernel : body.kernels) {
    Kernel copy = kernel;
    copy.name = renumbered(kernel.name, program.kernels.size());
    for (Expr& e : copy.exprs)
      if (e.kind == ExprKind::Load) e.buffer = map(e.buffer);
    remap_statements(copy.body, buffer_map);
    for (int32_t& b : copy.buffers_read) b = map(b);
    for (int32_t& b : copy.buffers_written) b = map(b);
    program.kernels.push_back(std::move(copy));
  }

  Step begin;
  begin.kind = StepKind::LoopBegin;
  begin.loop.start = binding.start;
  begin.loop.stop = binding.stop;
  begin.loop.start_value = binding.start_value;
  begin.loop.stop_value = binding.stop_value;
  begin.loop.step = binding.step;
  begin.loop.induction = binding.induction;
  begin.loop.condition = binding.condition;
  int32_t begin_index = static_cast<int32_t>(program.steps.size());
  program.steps.push_back(begin);
  for (const Step& step : body.steps) {
    Step copy = step;
    switch (step.kind) {
      case StepKind::Kernel:
        copy.kernel = static_cast<int32_t>(first_kernel) + step.kernel;
        break;
      case StepKind::Extern:
        for (int32_t& b : copy.call.inputs) b = map(b);
        copy.call.output = map(copy.call.output);
        break;
      case StepKind::LoopBegin:
      case StepKind::LoopEnd:
        copy.loop.start = map(copy.loop.start);
        copy.loop.stop = map(copy.loop.stop);
        copy.loop.induction = map(copy.loop.induction);
        copy.loop.condition = map(copy.loop.condition);
        copy.loop.partner += begin_index + 1;
        for (auto& [carried, next] : copy.loop.swaps) carried = map(carried), next = map(next);
        break;
    }
    program.steps.push_back(std::move(copy));
  }
  Step end;
  end.kind = StepKind::LoopEnd;
  end.loop.induction = binding.induction;
  end.loop.condition = binding.condition;
  end.loop.partner = begin_index;
  end.loop.swaps = binding.swaps;
  Step& first = program.steps[static_cast<size_t>(begin_index)];
  first.loop.partner = static_cast<int32_t>(program.steps.size());
  first.loop.compiled = std::none_of(body.steps.begin(), body.steps.end(), [](const Step& step) {
    return step.kind == StepKind::Extern;
  });
  program.steps.push_back(std::move(end));
}

}  // namespace kiln::sched
