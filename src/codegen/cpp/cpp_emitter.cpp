#include "codegen/cpp/cpp_emitter.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "codegen/cpp/kernel_emitter.h"
#include "codegen/cpp/loop_driver.h"
#include "ir/size_choices.h"
#include "ir/ops.h"
#include "kiln/error.h"
#include "prelude_text.h"
#include "sched/kernel_hash.h"
#include "sched/scatter_adds.h"

namespace kiln::codegen {
namespace {

using cpp_detail::KernelEmitter;

bool has_guarded_reduction(const std::vector<Stmt>& body) {
  for (const Stmt& s : body)
    if ((s.kind == sched::StmtKind::Reduce && s.guard >= 0) || has_guarded_reduction(s.body)) return true;
  return false;
}

}  // namespace

namespace cpp_detail {

bool KernelEmitter::before_loop(const Stmt& s) {
  // Very short loops gain nothing from `omp simd`, and g++ 12.2 miscompiles some of them
  // (nested 2-iteration copy loops at -O3 -march=native): leave those to the unroller. (Size-
  // generic code reads its extents at run time: no loop of it has a constant short count.)
  // (Asked of every loop, so that every size asks as often: ir/size_choices.h.)
  const bool long_enough = ir::size_choice(s.loop.extent >= 8);
  bool simd = s.vectorize && !in_simd_loop_ && long_enough;
  // Guarded reductions (sched/guard_reductions.h) do work on a run of iterations only (the rows
  // of a window): dealt out one by one, not in halves, so every thread gets a share of it.
  std::string schedule = has_guarded_reduction(s.body) ? "schedule(static, 1)" : "schedule(static)";
  const std::string reductions = s.parallel ? privatized_adds(s) : "";
  if (s.parallel && simd)
    line("#pragma omp parallel for simd " + schedule + parallel_clause() + reductions);
  else if (s.parallel)
    line("#pragma omp parallel for " + schedule + parallel_clause() + reductions);
  else if (simd) line("#pragma omp simd");
  return simd;
}

std::string KernelEmitter::privatized_adds(const Stmt& loop) {
  constexpr int64_t kMostPrivatizedElements = int64_t{1} << 14;
  privatized_.clear();
  adds_unshared_ = loop.disjoint_adds;
  if (adds_unshared_) return "";
  std::set<int32_t> added, read;
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Store && s.accumulate && !s.to_local_array) added.insert(s.buffer);
      walk(s.body);
    }
  };
  walk(loop.body);
  for (const Expr& e : kernel_.exprs)
    if (e.kind == ExprKind::Load) read.insert(e.buffer);  // read anywhere: not privatized
  std::string clause;
  for (int32_t buffer : added) {
    const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
    const int64_t elements = sched::buffer_bytes(b) / static_cast<int64_t>(dtype_size(b.dtype));
    if (read.count(buffer) || elements > kMostPrivatizedElements || !sched::has_atomic_add(b.dtype))
      continue;
    privatized_.insert(buffer);
    clause += " reduction(+ : " + buffer_name(buffer) + "[0:" + std::to_string(elements) + "])";
  }
  return clause;
}

void KernelEmitter::accumulate_store(int32_t buffer, const std::string& index,
                                     const std::string& value, DType from) {
  const DType dtype = program_.buffers[static_cast<size_t>(buffer)].dtype;
  if (!in_parallel_loop_ || adds_unshared_ || !sched::has_atomic_add(dtype) ||
      privatized_.count(buffer))
    return CLikePrinter::accumulate_store(buffer, index, value, from);
  line("#pragma omp atomic");
  line(buffer_name(buffer) + "[" + index + "] += " + convert(value, from, dtype) + ";");
}

// A lane reduction's result for the current lane, read inside the loop over the lanes (a
// loop of one lane is printed as a block, its variable folded to 0: CLikePrinter::loop).
std::string KernelEmitter::local_value(ExprId id) {
  const Expr& e = expr(id);
  auto lane = lane_locals_.find(e.variable);
  if (lane == lane_locals_.end() || is_emitted(id)) return local_name(e.variable);
  const int32_t variable = lane->second.lane_variable;
  const bool one_lane = kernel_.loop_extents[static_cast<size_t>(variable)] == 1;
  line("const " + compute_type(e.dtype) + " " + local_name(e.variable) + " = " +
       finalized(lane->second, one_lane ? "[0]" : "[" + loop_name(variable) + "]") + ";");
  emitted_.back().insert(id);
  return local_name(e.variable);
}

}  // namespace cpp_detail

namespace {

// Exported: a warm start reads the array back from the library (runtime/executable_image.h).
std::string constant_array_declaration(const sched::Buffer& buffer) {
  size_t count = constant_count(buffer);
  return "extern \"C\" alignas(64) const " + storage_type(buffer.dtype) + " " + buffer.name + "[" +
         std::to_string(count ? count : 1) + "]";
}

}  // namespace

std::string comment_text(const std::string& text) {
  std::string safe;
  safe.reserve(text.size());
  for (unsigned char character : text) {
    if (character >= 0x20 && character < 0x7f && character != '\\') {
      safe += static_cast<char>(character);
    } else {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\x%02x", character);
      safe += escaped;
    }
  }
  return safe;
}

CppSource emit_cpp(const Program& program, const Options& options, const target::Target& target) {
  CppSource source;
  std::ostringstream prefix;
  prefix << "// Generated by kiln for " << target.description() << ". One function per fused\n"
            "// kernel; the comments above each are the graph lines it implements. Kernels with the\n"
            "// same code (a Python loop's iterations) share one function, called with their own\n"
            "// buffers.\n";
  prefix << kCppPreludeText << "\n" << kScalarMathText << "\n" << kScalarRandomText << "\n";
  prefix << op_table_text() << "\n";
  std::vector<size_t> loops = sched::compiled_loops(program);
  // Declarations: a source split into several units (translation_units.h) defines each once.
  for (const sched::Buffer& buffer : program.buffers) {
    if (buffer.role != sched::BufferRole::Constant) continue;
    prefix << constant_array_declaration(buffer) << ";\n";
    source.pieces.push_back(constant_array_declaration(buffer) + constant_array_values(buffer));
  }
  // Distinct kernel codes: (key, symbol, the piece that defines it).
  std::unordered_map<uint64_t, std::vector<std::tuple<std::string, std::string, size_t>>>
      symbols_by_hash;
  std::vector<size_t> piece_of_kernel;  // by kernel index
  std::ostringstream shared;  // the kernels that reuse an earlier kernel's function
  for (const Kernel& kernel : program.kernels) {
    sched::KernelSignature signature = sched::kernel_signature(kernel, program);
    std::string arguments;
    for (size_t k = 0; k < signature.arguments.size(); ++k)
      arguments += (k ? ", a" : "a") + std::to_string(k) + " = " +
                   program.buffers[static_cast<size_t>(signature.arguments[k])].name;
    auto& same_hash = symbols_by_hash[signature.hash];
    auto found = std::find_if(same_hash.begin(), same_hash.end(),
                              [&](const auto& entry) { return std::get<0>(entry) == signature.key; });
    if (found != same_hash.end()) {
      source.kernels.push_back({std::get<1>(*found), signature.arguments});
      piece_of_kernel.push_back(std::get<2>(*found));
      shared << "// " << kernel.name << ": " << std::get<1>(*found) << "(" << arguments << ")\n";
      continue;
    }
    same_hash.emplace_back(signature.key, kernel.name, source.pieces.size());
    piece_of_kernel.push_back(source.pieces.size());
    source.kernels.push_back({kernel.name, signature.arguments});
    prefix << "extern \"C\" void " << kernel.name << "(char* const* kiln_args);\n";
    std::string code = KernelEmitter(program, kernel, options, target, signature.arguments).emit();
    source.largest_kernel = std::max(source.largest_kernel, code.size());
    std::ostringstream piece;
    for (const std::string& comment : kernel.comments) piece << "// " << comment_text(comment) << "\n";
    piece << "// arguments: " << arguments << "\n";
    code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), kernel.name);
    piece << code << "\n";
    source.pieces.push_back(piece.str());
  }
  if (!shared.str().empty())
    source.pieces.push_back("// Kernels that run an earlier kernel's code:\n" + shared.str());
  // Each loop driver right after the last kernel it calls: a source split into units
  // (translation_units.h) mostly keeps them in one unit, where g++ can inline them.
  std::vector<std::vector<std::string>> drivers_after(source.pieces.size() + 1);
  for (size_t begin : loops) {
    size_t last = source.pieces.size();  // a loop of no kernels: at the end
    for (size_t s = begin; s < static_cast<size_t>(program.steps[begin].loop.partner); ++s)
      if (program.steps[s].kind == sched::StepKind::Kernel) {
        size_t piece = piece_of_kernel[static_cast<size_t>(program.steps[s].kernel)];
        last = last == source.pieces.size() ? piece : std::max(last, piece);
      }
    drivers_after[last].push_back(loop_driver_text(program, source.kernels, begin));
  }
  std::vector<std::string> pieces;
  for (size_t k = 0; k <= source.pieces.size(); ++k) {
    if (k < source.pieces.size()) pieces.push_back(std::move(source.pieces[k]));
    for (std::string& driver : drivers_after[k]) pieces.push_back(std::move(driver));
  }
  source.pieces = std::move(pieces);
  source.prefix = prefix.str();
  return source;
}

std::string CppSource::text() const {
  std::string text = prefix;
  for (const std::string& piece : pieces) text += piece;
  return text;
}

}  // namespace kiln::codegen
