#include "codegen/cpp/loop_driver.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "codegen/c_like_printer.h"

namespace kiln::codegen {

namespace {

class DriverPrinter {
 public:
  DriverPrinter(const sched::Program& program, const std::vector<runtime::KernelCall>& kernels,
                const std::vector<int32_t>& buffers)
      : program_(program), kernels_(kernels) {
    for (size_t slot = 0; slot < buffers.size(); ++slot) {
      slot_[buffers[slot]] = slot;
      if (program.buffers[static_cast<size_t>(buffers[slot])].shape.empty())
        scalars_.insert(buffers[slot]);
    }
    for (const sched::Step& step : program.steps)
      for (const auto& [carried, next] : step.loop.swaps) swapped_.insert({carried, next});
  }

  // 0-d values (a loop's index, carried scalars, the body's scalar temporaries) live in locals
  // of the function, so that g++ keeps them in registers across iterations: each starts with
  // its buffer's value, and the buffers that the program reads after the loop get theirs back.
  void begin_scalars(size_t begin) {
    for (int32_t b : scalars_) {
      std::string type = storage_type(program_.buffers[static_cast<size_t>(b)].dtype);
      out_ << "  " << type << " " << scalar_name(b) << " = *(" << type << "*)" << buffer(b)
           << ";\n  " << buffer(b) << " = (char*)&" << scalar_name(b) << ";\n";
    }
    const std::set<int32_t> outside = sched::buffers_used_outside(program_, begin);
    const std::set<int32_t> written = sched::buffers_written_in_loop(program_, begin);
    for (int32_t b : scalars_)
      if (outside.count(b) && written.count(b))
        write_back_ << "  *(" << storage_type(program_.buffers[static_cast<size_t>(b)].dtype)
                    << "*)kiln_args[" << slot_.at(b) << "] = " << scalar_name(b) << ";\n";
  }

  // The pointers the loop swapped, back to the caller (runtime/executable.h reads them), and
  // the 0-d values it needs.
  std::string end_text() const {
    std::ostringstream out;
    for (const auto& [b, slot] : slot_)
      if (!scalars_.count(b) && swapped_.count(b))
        out << "  kiln_args[" << slot << "] = b[" << slot << "];\n";
    return out.str() + write_back_.str();
  }

  // Steps [begin, end] (a LoopBegin and its LoopEnd) as a C loop.
  void loop(size_t begin, int depth) {
    const sched::LoopControl& control = program_.steps[begin].loop;
    size_t end = static_cast<size_t>(control.partner);
    std::string pad(static_cast<size_t>(2 * depth), ' '), k = "k" + std::to_string(depth);
    out_ << pad << "{\n"
         << pad << "  const int64_t start = " << bound(control.start, control.start_value)
         << ", trips = kiln_trip_count(start, " << bound(control.stop, control.stop_value) << ", "
         << control.step << "ll);\n";
    if (control.parallel) {
      begin_parallel(control, pad);
      out_ << pad << "  #pragma omp for schedule(static)\n";
    }
    out_ << pad << "  for (int64_t " << k << " = 0; " << k << " < trips; ++" << k << ") {\n"
         << (control.condition >= 0
                 ? pad + "    if (!*(const bool*)" + buffer(control.condition) + ") break;\n"
                 : "")
         << pad << "    *(int64_t*)" << buffer(control.induction) << " = start + " << k << " * "
         << control.step << "ll;\n";
    for (size_t s = begin + 1; s < end; ++s) {
      const sched::Step& step = program_.steps[s];
      if (step.kind == sched::StepKind::LoopBegin) {
        loop(s, depth + 2);
        s = static_cast<size_t>(step.loop.partner);
        continue;
      }
      const runtime::KernelCall& call = kernels_[static_cast<size_t>(step.kernel)];
      out_ << pad << "    { char* const a[] = {";
      for (int32_t argument : call.arguments) out_ << buffer(argument) << ", ";
      out_ << threads_ << "}; " << call.symbol << "(a); }\n";
    }
    for (const auto& [carried, next] : program_.steps[end].loop.swaps) {
      if (scalars_.count(carried)) {  // the next value is always written before it is read
        out_ << pad << "    " << scalar_name(carried) << " = " << scalar_name(next) << ";\n";
        continue;
      }
      out_ << pad << "    { char* t = " << buffer(carried) << "; " << buffer(carried) << " = "
           << buffer(next) << "; " << buffer(next) << " = t; }\n";
    }
    out_ << pad << "  }\n";
    if (control.parallel) {
      out_ << pad << "  }\n";
      array_ = "b";
      threads_ = "kiln_threads";
    }
    out_ << pad << "}\n";
  }

  std::string text() const { return out_.str(); }

 private:
  // Opens the parallel region of a loop whose iterations are independent: each thread points
  // `p` (its copy of `b`) at its own copies of the iteration's temporaries, on its stack, and
  // the kernels it calls run on that one thread.
  void begin_parallel(const sched::LoopControl& control, const std::string& pad) {
    std::vector<std::pair<int32_t, int64_t>> offsets;
    int64_t bytes = 0;
    for (int32_t b : control.private_buffers) {
      int64_t size = sched::buffer_bytes(program_.buffers[static_cast<size_t>(b)]);
      offsets.emplace_back(b, bytes);
      bytes += (size + 63) / 64 * 64 + (size == 0 ? 64 : 0);
    }
    out_ << pad << "  #pragma omp parallel num_threads((int)(long)kiln_threads)\n"
         << pad << "  {\n"
         << pad << "  alignas(64) char own[" << std::max<int64_t>(bytes, 64) << "];\n"
         << pad << "  char* p[" << std::max<size_t>(slot_.size(), 1) << "];\n"
         << pad << "  for (int j = 0; j < " << slot_.size() << "; ++j) p[j] = b[j];\n";
    array_ = "p";
    for (const auto& [b, offset] : offsets)
      out_ << pad << "  " << buffer(b) << " = own + " << offset << ";\n";
    threads_ = "(char*)1";
  }

  std::string buffer(int32_t b) { return array_ + "[" + std::to_string(slot_.at(b)) + "]"; }
  std::string scalar_name(int32_t b) const { return "s" + std::to_string(slot_.at(b)); }
  std::string bound(int32_t b, int64_t value) {
    return b < 0 ? std::to_string(value) + "ll" : "*(const int64_t*)" + buffer(b);
  }

  const sched::Program& program_;
  const std::vector<runtime::KernelCall>& kernels_;
  std::map<int32_t, size_t> slot_;
  std::set<int32_t> scalars_;  // the 0-d buffers, kept in locals
  std::set<int32_t> swapped_;  // buffers whose pointers a loop swaps
  std::ostringstream write_back_;
  std::string array_ = "b";               // the buffer pointers: `p` inside a parallel region
  std::string threads_ = "kiln_threads";  // what the kernels called get as their thread count
  std::ostringstream out_;
};

}  // namespace

std::string loop_driver_text(const sched::Program& program,
                             const std::vector<runtime::KernelCall>& kernels, size_t begin) {
  std::vector<std::vector<int32_t>> arguments;
  for (const runtime::KernelCall& call : kernels) arguments.push_back(call.arguments);
  std::vector<int32_t> buffers = sched::compiled_loop_buffers(program, arguments, begin);
  DriverPrinter printer(program, kernels, buffers);
  printer.begin_scalars(begin);
  printer.loop(begin, 1);
  std::ostringstream out;
  size_t count = buffers.size();
  out << "// The loop of steps " << begin << ".." << program.steps[begin].loop.partner
      << ", whole (codegen/cpp/loop_driver.h).\n"
      << "extern \"C\" __attribute__((flatten)) void kiln_loop" << begin
      << "(char** kiln_args) {\n"
      << "  char* const kiln_threads = kiln_args[" << count << "];\n"
      << "  char* b[" << (count ? count : 1) << "];\n"
      << "  for (int j = 0; j < " << count << "; ++j) b[j] = kiln_args[j];\n"
      << printer.text() << printer.end_text() << "}\n";
  return out.str();
}

}  // namespace kiln::codegen
