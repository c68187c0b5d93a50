#include "codegen/cpp/cpp_emitter.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "codegen/cpp/kernel_emitter.h"
#include "ir/ops.h"
#include "kiln/error.h"
#include "prelude_text.h"
#include "sched/kernel_hash.h"

namespace kiln::codegen {
namespace cpp_detail {

std::string convert(const std::string& text, DType from, DType to) {
  if (from == to || compute_type(from) == compute_type(to)) return text;
  if (to == DType::Bool) return "(" + text + " != 0)";
  if (from == DType::Float16 && to == DType::UInt32) return "kiln_half_to_uint32(" + text + ")";
  if (is_float(from) && !is_float(to))
    return "kiln_float_to_int<" + compute_type(to) + ">(" + text + ")";
  return "(" + compute_type(to) + ")(" + text + ")";
}

}  // namespace cpp_detail

namespace {

using namespace cpp_detail;


std::string float_literal(double value, DType dtype) {
  if (value != value) return dtype == DType::Float64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")";
  if (value == __builtin_inf()) return dtype == DType::Float64 ? "__builtin_inf()" : "__builtin_inff()";
  if (value == -__builtin_inf()) return dtype == DType::Float64 ? "(-__builtin_inf())" : "(-__builtin_inff())";
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return dtype == DType::Float64 ? "(" + std::string(text) + ")" : "(" + std::string(text) + "f)";
}

std::string scalar_literal(const ir::Scalar& value, DType dtype) {
  if (is_float(dtype)) return float_literal(value.as_double(), dtype == DType::Float64 ? dtype : DType::Float32);
  if (dtype == DType::Bool) return (value.is_integer ? value.i != 0 : value.f != 0) ? "true" : "false";
  int64_t i = value.is_integer ? value.i : static_cast<int64_t>(value.f);
  // Cast to the storage type: `5ull` is unsigned long long, not uint64_t (unsigned long), and
  // the op helpers are templates that need both operands of one type.
  if (dtype == DType::UInt64) return "((uint64_t)" + std::to_string(static_cast<uint64_t>(i)) + "ull)";
  if (i == INT64_MIN) return "((int64_t)(-9223372036854775807ll - 1))";
  return "((" + storage_type(dtype) + ")" + std::to_string(i) + "ll)";
}

// The op-table glue: one small template per op, generated from the same expressions the
// interpreter compiles, so both agree by construction.
std::string op_wrappers() {
  std::ostringstream out;
  for (int k = 0; k < static_cast<int>(ir::Op::op_count); ++k) {
    const ir::OpInfo& info = ir::op_info(static_cast<ir::Op>(k));
    std::string name(info.name), expression(info.expression), identity(info.identity);
    switch (info.kind) {
      case ir::OpKind::Unary:
        out << "template <class A> static inline auto kiln_op_" << name << "(A a) { return "
            << expression << "; }\n";
        break;
      case ir::OpKind::Binary:
        out << "template <class A, class B> static inline auto kiln_op_" << name
            << "(A a, B b) { return " << expression << "; }\n";
        break;
      case ir::OpKind::Ternary:
        out << "template <class A, class B, class C> static inline auto kiln_op_" << name
            << "(A a, B b, C c) { return " << expression << "; }\n";
        break;
      case ir::OpKind::Reduce:
      case ir::OpKind::Scan:
        out << "template <class T> static inline T kiln_identity_" << name << "() { return "
            << identity << "; }\n";
        if (info.accumulator == ir::Accumulator::Plain || info.kind == ir::OpKind::Scan)
          out << "template <class T, class X> static inline T kiln_combine_" << name
              << "(T acc, X x) { return " << expression << "; }\n";
        break;
      default:
        break;
    }
  }
  return out.str();
}

}  // namespace

namespace cpp_detail {

std::string KernelEmitter::index_text(ExprId id) {
  const Expr& e = expr(id);
  auto operand = [&](int k) { return index_text(e.operands[static_cast<size_t>(k)]); };
  switch (e.kind) {
    case ExprKind::Constant:
      return std::to_string(e.constant.is_integer ? e.constant.i : int64_t(e.constant.f));
    case ExprKind::LoopVar:
      return loop_name(e.variable);
    case ExprKind::IndexAdd:
      return operand(0) + " + " + operand(1);
    case ExprKind::IndexMul:
      return "(" + operand(0) + ") * " + operand(1);
    case ExprKind::IndexFloorDiv:
      return "kiln_floordiv<int64_t>(" + operand(0) + ", " + operand(1) + ")";
    case ExprKind::IndexMod:
      return "kiln_mod<int64_t>(" + operand(0) + ", " + operand(1) + ")";
    case ExprKind::IndexMin:
      return "kiln_index_min(" + operand(0) + ", " + operand(1) + ")";
    case ExprKind::IndexMax:
      return "kiln_index_max(" + operand(0) + ", " + operand(1) + ")";
    default:
      return "(int64_t)(" + value(id) + ")";
  }
}

std::string KernelEmitter::load_text(const Expr& e) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(e.buffer)];
  std::string element = buffer_name(e.buffer) + "[" + index_text(e.operands[0]) + "]";
  if (b.dtype == DType::Float16) return "kiln_f16_to_f32(" + element + ")";
  if (b.dtype == DType::BFloat16) return "kiln_bf16_to_f32(" + element + ")";
  return element;
}

std::string KernelEmitter::store_text(int32_t buffer, const std::string& index,
                                      const std::string& value_text, DType from) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  std::string v = convert(value_text, from, b.dtype);
  if (b.dtype == DType::Float16) v = "kiln_f32_to_f16(" + v + ")";
  if (b.dtype == DType::BFloat16) v = "kiln_f32_to_bf16(" + v + ")";
  return buffer_name(buffer) + "[" + index + "] = " + v + ";";
}

std::string KernelEmitter::value(ExprId id) {
  const Expr& e = expr(id);
  switch (e.kind) {
    case ExprKind::Constant:
      return scalar_literal(e.constant, e.dtype);
    case ExprKind::LoopVar:
    case ExprKind::IndexAdd:
    case ExprKind::IndexMul:
    case ExprKind::IndexFloorDiv:
    case ExprKind::IndexMod:
    case ExprKind::IndexMin:
    case ExprKind::IndexMax:
      return "(" + index_text(id) + ")";
    case ExprKind::Local: {
      auto lane = lane_locals_.find(e.variable);
      if (lane == lane_locals_.end() || is_emitted(id)) return local_name(e.variable);
      // A lane reduction's result for the current lane, read inside the loop over the lanes.
      line("const " + compute_type(e.dtype) + " " + local_name(e.variable) + " = " +
           finalized(lane->second, "[" + loop_name(lane->second.lane_variable) + "]") + ";");
      emitted_.back().insert(id);
      return local_name(e.variable);
    }
    default:
      break;
  }
  std::string name = "t" + std::to_string(id);
  if (is_emitted(id)) return name;
  std::string text;
  auto operand = [&](int k) { return value(e.operands[static_cast<size_t>(k)]); };
  auto operand_dtype = [&](int k) { return expr(e.operands[static_cast<size_t>(k)]).dtype; };
  switch (e.kind) {
    case ExprKind::Load:
      text = load_text(e);
      break;
    case ExprKind::Elementwise: {
      text = "kiln_op_" + std::string(ir::op_name(e.op)) + "(";
      for (size_t k = 0; k < e.operands.size(); ++k)
        text += (k ? ", " : "") + operand(static_cast<int>(k));
      text += ")";
      break;
    }
    case ExprKind::Cast:
      text = convert(operand(0), operand_dtype(0), e.dtype);
      // A 16-bit float value lives in a float register, so convert() alone would not round;
      // but the cast IS the rounding (x.astype(float16)): round as the interpreter does.
      if (e.dtype == DType::Float16 && operand_dtype(0) != e.dtype) {
        text = compute_type(operand_dtype(0)) == "float"
                   ? "kiln_f16_to_f32(kiln_f32_to_f16(" + text + "))"
                   : "kiln_f16_to_f32(kiln_f64_to_f16((double)(" + operand(0) + ")))";
      } else if (e.dtype == DType::BFloat16 && operand_dtype(0) != e.dtype) {
        text = "kiln_bf16_to_f32(kiln_f32_to_bf16(" + text + "))";
      }
      break;
    case ExprKind::Select:
      text = "kiln_select(" + operand(0) + ", " + operand(1) + ", " + operand(2) + ")";
      break;
    case ExprKind::IndexLess:
      text = index_text(e.operands[0]) + " < " + index_text(e.operands[1]);
      break;
    case ExprKind::ArrayLoad:
      text = "h" + std::to_string(e.buffer) + "[" + index_text(e.operands[0]) + "]";
      break;
    case ExprKind::Random: {
      bool single = e.dtype != DType::Float64;
      std::string fn = e.op == ir::Op::random_uniform ? "kiln_philox_uniform_" : "kiln_philox_normal_";
      text = fn + (single ? "f32" : "f64") + "(" + std::to_string(e.seed) + "ull, (uint64_t)(" +
             index_text(e.operands[0]) + "))";
      break;
    }
    default:
      text = "0";
  }
  line("const " + compute_type(e.dtype) + " " + name + " = " + text + ";");
  emitted_.back().insert(id);
  return name;
}

void KernelEmitter::statements(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) {
    switch (s.kind) {
      case StmtKind::Loop:
        loop(s);
        break;
      case StmtKind::Reduce:
        reduce(s);
        break;
      case StmtKind::Scan:
        scan(s);
        break;
      case StmtKind::LocalArray: {
        const Kernel::LocalArray& array = kernel_.local_arrays[static_cast<size_t>(s.buffer)];
        line("alignas(64) " + compute_type(array.dtype) + " h" + std::to_string(s.buffer) + "[" +
             std::to_string(array.size) + "];");
        break;
      }
      case StmtKind::Store: {
        if (s.to_local_array) {
          line("h" + std::to_string(s.buffer) + "[" + index_text(s.index) + "] = " + value(s.value) + ";");
          break;
        }
        std::string v = value(s.value);
        std::string index = index_text(s.index);
        DType from = expr(s.value).dtype;
        if (s.accumulate) {
          const sched::Buffer& b = program_.buffers[static_cast<size_t>(s.buffer)];
          sched::Expr current;
          current.buffer = s.buffer;
          std::string old = buffer_name(s.buffer) + "[" + index + "]";
          if (b.dtype == DType::Float16) old = "kiln_f16_to_f32(" + old + ")";
          if (b.dtype == DType::BFloat16) old = "kiln_bf16_to_f32(" + old + ")";
          v = "(" + old + ") + (" + convert(v, from, b.dtype) + ")";
          from = b.dtype;
        }
        line(store_text(s.buffer, index, v, from));
        break;
      }
    }
  }
}

void KernelEmitter::loop(const Stmt& s) {
  if (s.loop.extent == 1) {  // its variable was folded to 0
    line("{");
    open_block();
    statements(s.body);
    close_block();
    return;
  }
  // Very short loops gain nothing from `omp simd`, and g++ 12.2 miscompiles some of them
  // (nested 2-iteration copy loops at -O3 -march=native): leave those to the unroller.
  bool simd = s.vectorize && !in_simd_loop_ && s.loop.extent >= 8;
  if (s.parallel && simd) line("#pragma omp parallel for simd schedule(static)" + parallel_clause());
  else if (s.parallel) line("#pragma omp parallel for schedule(static)" + parallel_clause());
  else if (simd) line("#pragma omp simd");
  std::string v = loop_name(s.loop.variable);
  line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(s.loop.extent) + "; ++" + v + ") {");
  open_block();
  bool was_simd = in_simd_loop_;
  in_simd_loop_ = in_simd_loop_ || simd;
  statements(s.body);
  in_simd_loop_ = was_simd;
  close_block();
}

std::string KernelEmitter::buffer_name(int32_t buffer) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  if (b.role == sched::BufferRole::Constant) return b.name;  // a static array in the file
  auto found = std::find(arguments_.begin(), arguments_.end(), buffer);
  if (found == arguments_.end())
    throw Error(ErrorKind::Internal, "kiln: C++ emitter: " + kernel_.name + " uses buffer " +
                                         b.name + ", which is not among its arguments");
  return "a" + std::to_string(found - arguments_.begin());
}

std::string KernelEmitter::emit() {
  statements(kernel_.body);
  std::set<int32_t> written(kernel_.buffers_written.begin(), kernel_.buffers_written.end());
  std::ostringstream code;
  code << "extern \"C\" void KILN_KERNEL_NAME(char* const* kiln_args) {\n";
  for (size_t k = 0; k < arguments_.size(); ++k) {
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(arguments_[k])];
    std::string t = storage_type(buffer.dtype);
    std::string qualifier = written.count(arguments_[k]) ? "" : "const ";
    code << "  " << qualifier << t << "* KILN_RESTRICT a" << k << " = (" << qualifier << t
         << "*)kiln_args[" << k << "];\n";
  }
  // After the buffers: the threads of this call's parallel regions (runtime/kernel_call.h).
  code << "  const int kiln_threads = (int)(long)kiln_args[" << arguments_.size() << "];\n";
  code << out_.str() << "}\n";
  return code.str();
}

}  // namespace cpp_detail

namespace {

std::string constant_array_text(const sched::Buffer& buffer) {
  std::ostringstream out;
  const std::vector<uint8_t>& bytes = *buffer.constant_data;
  int size = dtype_size(buffer.dtype);
  size_t count = bytes.size() / static_cast<size_t>(size);
  out << "alignas(64) static const " << storage_type(buffer.dtype) << " " << buffer.name << "["
      << (count ? count : 1) << "] = {";
  for (size_t k = 0; k < count; ++k) {
    const uint8_t* p = bytes.data() + k * static_cast<size_t>(size);
    if (k) out << ",";
    if (k % 8 == 0) out << "\n  ";
    switch (buffer.dtype) {
      case DType::Float64: { double v; std::memcpy(&v, p, 8); out << float_literal(v, DType::Float64); break; }
      case DType::Float32: { float v; std::memcpy(&v, p, 4); out << float_literal(v, DType::Float32); break; }
      default: {
        uint64_t raw = 0;
        std::memcpy(&raw, p, static_cast<size_t>(size));
        bool is_signed = is_signed_integer(buffer.dtype);
        if (is_signed && size < 8 && (raw >> (8 * size - 1)) & 1) raw |= ~uint64_t(0) << (8 * size);
        out << (is_signed ? std::to_string(static_cast<int64_t>(raw)) + "ll" : std::to_string(raw) + "ull");
      }
    }
  }
  out << "};\n";
  return out.str();
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
  std::ostringstream out;
  out << "// Generated by kiln for " << target.description() << ". One function per fused\n"
         "// kernel; the comments above each are the graph lines it implements. Kernels with the\n"
         "// same code (a Python loop's iterations) share one function, called with their own\n"
         "// buffers.\n";
  out << kCppPreludeText << "\n" << kScalarMathText << "\n";
  out << "static inline int64_t kiln_index_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
         "static inline int64_t kiln_index_max(int64_t a, int64_t b) { return a > b ? a : b; }\n";
  out << op_wrappers() << "\n";
  for (const sched::Buffer& buffer : program.buffers)
    if (buffer.role == sched::BufferRole::Constant) out << constant_array_text(buffer);
  CppSource source;
  std::unordered_map<uint64_t, std::vector<std::pair<std::string, std::string>>> symbols_by_hash;
  std::ostringstream shared;  // the kernels that reuse an earlier kernel's function
  for (const Kernel& kernel : program.kernels) {
    sched::KernelSignature signature = sched::kernel_signature(kernel, program);
    std::string arguments;
    for (size_t k = 0; k < signature.arguments.size(); ++k)
      arguments += (k ? ", a" : "a") + std::to_string(k) + " = " +
                   program.buffers[static_cast<size_t>(signature.arguments[k])].name;
    auto& same_hash = symbols_by_hash[signature.hash];
    auto found = std::find_if(same_hash.begin(), same_hash.end(),
                              [&](const auto& entry) { return entry.first == signature.key; });
    if (found != same_hash.end()) {
      source.kernels.push_back({found->second, signature.arguments});
      shared << "// " << kernel.name << ": " << found->second << "(" << arguments << ")\n";
      continue;
    }
    same_hash.emplace_back(signature.key, kernel.name);
    source.kernels.push_back({kernel.name, signature.arguments});
    std::string code = KernelEmitter(program, kernel, options, target, signature.arguments).emit();
    for (const std::string& comment : kernel.comments) out << "// " << comment_text(comment) << "\n";
    out << "// arguments: " << arguments << "\n";
    code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), kernel.name);
    out << code << "\n";
  }
  if (!shared.str().empty()) out << "// Kernels that run an earlier kernel's code:\n" << shared.str();
  source.text = out.str();
  return source;
}

std::string embedded_bytes_text(const std::string& name, const std::string& size_name,
                                const std::string& bytes) {
  std::string text = "extern \"C\" const unsigned long " + size_name + " = " +
                     std::to_string(bytes.size()) + "ul;\nextern \"C\" const unsigned char " + name +
                     "[" + std::to_string(bytes.empty() ? 1 : bytes.size()) + "] = {";
  static const char kDigits[] = "0123456789abcdef";
  for (size_t k = 0; k < bytes.size(); ++k) {
    unsigned char byte = static_cast<unsigned char>(bytes[k]);
    text += k % 24 == 0 ? "\n" : "";
    text += "0x";
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
    text += ",";
  }
  return text + "};\n";
}

}  // namespace kiln::codegen
