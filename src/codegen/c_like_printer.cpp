#include "codegen/c_like_printer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ir/ops.h"
#include "kiln/error.h"

namespace kiln::codegen {
namespace {

// Infinities and NaN through the prelude's primitives, which every target defines.
std::string float_literal(double value, DType dtype) {
  std::string cast = dtype == DType::Float64 ? "" : "(float)";
  if (value != value) return "(" + cast + "kiln_quiet_nan())";
  if (value == __builtin_inf()) return "(" + cast + "kiln_infinity())";
  if (value == -__builtin_inf()) return "(-" + cast + "kiln_infinity())";
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return dtype == DType::Float64 ? "(" + std::string(text) + ")" : "(" + std::string(text) + "f)";
}

}  // namespace

std::string scalar_literal(const ir::Scalar& value, DType dtype) {
  // A 16-bit float constant is the one nearest the value, rounded once (the interpreter's).
  if (dtype == DType::Float16)
    return "kiln_f16_to_f32(kiln_f64_to_f16(" + float_literal(value.as_double(), DType::Float64) +
           "))";
  if (dtype == DType::BFloat16)
    return rounded_to(dtype, float_literal(value.as_double(), DType::Float32));
  if (is_float(dtype))
    return float_literal(value.as_double(), dtype == DType::Float64 ? dtype : DType::Float32);
  if (dtype == DType::Bool)
    return (value.is_integer ? value.i != 0 : value.f != 0) ? "true" : "false";
  int64_t i = value.is_integer ? value.i : static_cast<int64_t>(value.f);
  // Cast to the storage type: `5ull` is unsigned long long, not uint64_t (unsigned long), and
  // the op helpers are templates that need both operands of one type.
  if (dtype == DType::UInt64)
    return "((uint64_t)" + std::to_string(static_cast<uint64_t>(i)) + "ull)";
  if (i == INT64_MIN) return "((int64_t)(-9223372036854775807ll - 1))";
  return "((" + storage_type(dtype) + ")" + std::to_string(i) + "ll)";
}

std::string rounded_to(DType dtype, const std::string& text) {
  if (dtype == DType::Float16) return "kiln_round_f16(" + text + ")";
  if (dtype == DType::BFloat16) return "kiln_round_bf16(" + text + ")";
  return text;
}

std::string convert(const std::string& text, DType from, DType to) {
  if (from == to || compute_type(from) == compute_type(to)) return text;
  if (to == DType::Bool) return "(" + text + " != 0)";
  if (from == DType::Float16 && to == DType::UInt32) return "kiln_half_to_uint32(" + text + ")";
  if (is_float(from) && !is_float(to))
    return "kiln_float_to_int<" + compute_type(to) + ">(" + text + ")";
  // GCC 12 leaves (double)(bool) scalar inside `omp simd` loops and vectorises a select: the
  // fraction np.mean(x > 0.5) of 1M floats summed 0.48 ms that way, 0.08 as a select
  if (from == DType::Bool && is_float(to)) {
    const std::string one = compute_type(to) == "double" ? "1.0" : "1.0f";
    return "(" + text + " ? " + one + " : " + (one == "1.0" ? "0.0" : "0.0f") + ")";
  }
  return "(" + compute_type(to) + ")(" + text + ")";
}

std::string op_table_text() {
  std::ostringstream out;
  out << "static KILN_FN int64_t kiln_index_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
         "static KILN_FN int64_t kiln_index_max(int64_t a, int64_t b) { return a > b ? a : b; }\n";
  for (int k = 0; k < static_cast<int>(ir::Op::op_count); ++k) {
    const ir::OpInfo& info = ir::op_info(static_cast<ir::Op>(k));
    std::string name(info.name), expression(info.expression), identity(info.identity);
    switch (info.kind) {
      case ir::OpKind::Unary:
        out << "template <class A> static KILN_FN auto kiln_op_" << name << "(A a) { return "
            << expression << "; }\n";
        break;
      case ir::OpKind::Binary:
        out << "template <class A, class B> static KILN_FN auto kiln_op_" << name
            << "(A a, B b) { return " << expression << "; }\n";
        break;
      case ir::OpKind::Ternary:
        out << "template <class A, class B, class C> static KILN_FN auto kiln_op_" << name
            << "(A a, B b, C c) { return " << expression << "; }\n";
        break;
      case ir::OpKind::Reduce:
      case ir::OpKind::Scan:
        out << "template <class T> static KILN_FN T kiln_identity_" << name << "() { return "
            << identity << "; }\n";
        if (info.accumulator == ir::Accumulator::Plain || info.kind == ir::OpKind::Scan)
          out << "template <class T, class X> static KILN_FN T kiln_combine_" << name
              << "(T acc, X x) { return " << expression << "; }\n";
        break;
      default:
        break;
    }
  }
  return out.str();
}

size_t constant_count(const sched::Buffer& buffer) {
  return buffer.constant_data->size() / static_cast<size_t>(dtype_size(buffer.dtype));
}

std::string constant_array_values(const sched::Buffer& buffer) {
  std::ostringstream out;
  const std::vector<uint8_t>& bytes = *buffer.constant_data;
  int size = dtype_size(buffer.dtype);
  size_t count = constant_count(buffer);
  out << " = {";
  for (size_t k = 0; k < count; ++k) {
    const uint8_t* p = bytes.data() + k * static_cast<size_t>(size);
    if (k) out << ",";
    if (k % 8 == 0) out << "\n  ";
    switch (buffer.dtype) {
      case DType::Float64: { double v; std::memcpy(&v, p, 8); out << scalar_literal(ir::Scalar::of(v), DType::Float64); break; }
      case DType::Float32: { float v; std::memcpy(&v, p, 4); out << scalar_literal(ir::Scalar::of(v), DType::Float32); break; }
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

std::string CLikePrinter::index_text(ExprId id) {
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

std::string CLikePrinter::load_text(const Expr& e) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(e.buffer)];
  std::string element = loaded_element(e.buffer, index_text(e.operands[0]));
  if (b.dtype == DType::Float16) return "kiln_f16_to_f32(" + element + ")";
  if (b.dtype == DType::BFloat16) return "kiln_bf16_to_f32(" + element + ")";
  return element;
}

std::string CLikePrinter::store_text(int32_t buffer, const std::string& index,
                                     const std::string& value_text, DType from) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  std::string v = convert(value_text, from, b.dtype);
  if (b.dtype == DType::Float16) v = "kiln_f32_to_f16(" + v + ")";
  if (b.dtype == DType::BFloat16) v = "kiln_f32_to_bf16(" + v + ")";
  return buffer_name(buffer) + "[" + index + "] = " + v + ";";
}

std::string CLikePrinter::elementwise_text(ExprId id, const std::vector<std::string>& operands) {
  const Expr& e = expr(id);
  const std::string type = compute_type(e.dtype);
  if (e.op == ir::Op::pow && (type == "float" || type == "double") &&
      expr(e.operands[0]).dtype == e.dtype) {
    const Expr& exponent = expr(e.operands[1]);
    if (exponent.kind == ExprKind::Constant && exponent.constant.as_double() == 3)
      return "kiln_cube((" + type + ")" + operands[0] + ")";
  }
  std::string text = "kiln_op_" + std::string(ir::op_name(expr(id).op)) + "(";
  for (size_t k = 0; k < operands.size(); ++k) text += (k ? ", " : "") + operands[k];
  return text + ")";
}

std::string CLikePrinter::value(ExprId id) {
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
    case ExprKind::Local:
      return local_value(id);
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
      text = load_value(id);
      break;
    case ExprKind::Elementwise: {
      std::vector<std::string> operands;
      for (size_t k = 0; k < e.operands.size(); ++k) operands.push_back(operand(static_cast<int>(k)));
      text = rounded_to(e.dtype, elementwise_text(id, operands));
      break;
    }
    case ExprKind::Cast:
      text = convert(operand(0), operand_dtype(0), e.dtype);
      // A 16-bit float value lives in a float register, so convert() alone would not round;
      // but the cast IS the rounding (x.astype(float16)): round as the interpreter does.
      if (e.dtype == DType::Float16 && operand_dtype(0) != e.dtype) {
        text = compute_type(operand_dtype(0)) == "float"
                   ? rounded_to(e.dtype, text)
                   : "kiln_f16_to_f32(kiln_f64_to_f16((double)(" + operand(0) + ")))";
      } else if (e.dtype == DType::BFloat16 && operand_dtype(0) != e.dtype) {
        text = rounded_to(e.dtype, text);
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
      std::string fn =
          e.op == ir::Op::random_uniform ? "kiln_philox_uniform_" : "kiln_philox_normal_";
      // key = seed + the key operand (wrapping): a literal where the operand is a constant
      // (NumPy's draws), else a value read when the kernel runs (torch.compile's per call)
      const Expr& key = expr(e.operands[1]);
      std::string seed =
          key.kind == ExprKind::Constant
              ? std::to_string(e.seed + static_cast<uint64_t>(key.constant.i)) + "ull"
              : "(" + std::to_string(e.seed) + "ull + (uint64_t)" + operand(1) + ")";
      text = fn + (single ? "f32" : "f64") + "(" + seed + ", (uint64_t)(" +
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

void CLikePrinter::statements(const std::vector<Stmt>& body) {
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
          line("h" + std::to_string(s.buffer) + "[" + index_text(s.index) +
               "] = " + value(s.value) + ";");
          break;
        }
        const std::string v = value(s.value), index = index_text(s.index);
        if (s.accumulate)
          accumulate_store(s.buffer, index, v, expr(s.value).dtype);
        else
          plain_store(s, index, v);
        break;
      }
    }
  }
}

void CLikePrinter::accumulate_store(int32_t buffer, const std::string& index,
                                    const std::string& value, DType from) {
  const DType dtype = program_.buffers[static_cast<size_t>(buffer)].dtype;
  std::string old = buffer_name(buffer) + "[" + index + "]";
  if (dtype == DType::Float16) old = "kiln_f16_to_f32(" + old + ")";
  if (dtype == DType::BFloat16) old = "kiln_bf16_to_f32(" + old + ")";
  line(store_text(buffer, index, "(" + old + ") + (" + convert(value, from, dtype) + ")", dtype));
}

std::pair<std::string, std::string> CLikePrinter::bounds_text(const sched::Loop& loop) {
  std::string extent = "(int64_t)" + std::to_string(loop.extent);
  return {loop.begin >= 0 ? "kiln_index_max(" + index_text(loop.begin) + ", (int64_t)0)" : "(int64_t)0",
          loop.end >= 0 ? "kiln_index_min(" + index_text(loop.end) + ", " + extent + ")" : extent};
}

void CLikePrinter::loop(const Stmt& s) {
  if (s.loop.extent == 1) {  // its variable was folded to 0
    line("{");
    open_block();
    statements(s.body);
    close_block();
    return;
  }
  bool was_simd = in_simd_loop_, was_parallel = in_parallel_loop_;
  // Run-time bounds (sched/trim_loops.h), clamped; their text comes before the loop's pragma.
  auto [begin, end] = bounds_text(s.loop);
  bool simd = before_loop(s);
  std::string v = loop_name(s.loop.variable);
  line("for (int64_t " + v + " = " + begin + "; " + v + " < " + end + "; ++" + v + ") {");
  open_block();
  in_simd_loop_ = in_simd_loop_ || simd;
  in_parallel_loop_ = in_parallel_loop_ || s.parallel;
  statements(s.body);
  in_simd_loop_ = was_simd;
  in_parallel_loop_ = was_parallel;
  close_block();
}

void CLikePrinter::scan(const Stmt& s) {
  const sched::Accumulation& a = s.accumulations[0];
  std::string t = compute_type(a.dtype), acc = "acc" + std::to_string(a.local);
  std::string name(ir::op_info(a.op).name);
  line(t + " " + acc + " = kiln_identity_" + name + "<" + t + ">();");
  std::string v = loop_name(s.reduce_loops[0].variable);
  line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(s.reduce_loops[0].extent) +
       "; ++" + v + ") {");
  open_block();
  statements(s.body);
  std::string x = convert(value(a.value), expr(a.value).dtype, a.dtype);
  line(acc + " = kiln_combine_" + name + "(" + acc + ", " + x + ");");
  line(store_text(s.buffer, index_text(s.index), acc, a.dtype));
  close_block();
}

std::string CLikePrinter::buffer_name(int32_t buffer) {
  const sched::Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  if (b.role == sched::BufferRole::Constant) return constant_name(b);  // a static array
  auto found = std::find(arguments_.begin(), arguments_.end(), buffer);
  if (found == arguments_.end())
    throw Error(ErrorKind::Internal, "kiln: emitter: " + kernel_.name + " uses buffer " + b.name +
                                         ", which is not among its arguments");
  const size_t k = static_cast<size_t>(found - arguments_.begin());
  used_arguments_.insert(k);
  return "a" + std::to_string(k);
}

std::string CLikePrinter::argument_declarations(const std::set<size_t>& which) const {
  std::set<int32_t> written(kernel_.buffers_written.begin(), kernel_.buffers_written.end());
  std::ostringstream code;
  for (size_t k : which) {
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(arguments_[k])];
    std::string t = storage_type(buffer.dtype);
    std::string qualifier = written.count(arguments_[k]) ? "" : "const ";
    code << indent() << qualifier << t << "* KILN_RESTRICT a" << k << " = (" << qualifier << t
         << "*)kiln_args[" << k << "];\n";
  }
  return code.str();
}

std::string CLikePrinter::emit() {
  body();
  std::ostringstream code;
  code << function_header() << " {\n" << argument_declarations(used_arguments_)
       << extra_arguments() << out_.str() << "}\n";
  return code.str();
}

}  // namespace kiln::codegen
