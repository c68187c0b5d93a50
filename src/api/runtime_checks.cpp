#include "api/runtime_checks.h"

#include "api/loop_trace.h"

namespace kiln::detail {
namespace {

// Records the check "any(bad)", reporting the first element of `values` where `bad` holds.
void add_check(Trace& trace, ir::ValueId bad, ir::ValueId values, ErrorKind kind,
               std::string before, std::string after) {
  ir::Builder& builder = trace.builder;
  ir::Dim count = ir::element_count_dim(builder.node(bad).shape);  // symbolic: never 0
  if (count == ir::Dim(0)) return;
  ir::ValueId flat_bad = builder.reshape(bad, {count});
  ir::ValueId flat_values = builder.reshape(values, {count});
  ir::ValueId flag = builder.reduce(ir::Op::any, flat_bad, {0}, false);
  ir::ValueId first = builder.reshape(builder.reduce(ir::Op::argmax, flat_bad, {0}, false), {1});
  ir::ValueId value = builder.reshape(builder.gather(flat_values, first, 0), {});
  trace.checks.push_back({flag, value, kind, std::move(before), std::move(after)});
}

std::string prefix(const Trace& trace, const std::string& op) {
  const std::string& location = trace.builder.location();
  return "kiln: " + op + (location.empty() ? "" : " at " + location) + ": ";
}

// A check that fails where `value` (an integer, compared as int64) stands against 0 as
// `comparison` says; the message names the offending value between `before` and `after`.
void check_against_zero(Trace& trace, ir::ValueId value, ir::Op comparison,
                        const std::string& before, const std::string& after,
                        ErrorKind kind = ErrorKind::Value) {
  ir::Builder& builder = trace.builder;
  ir::ValueId wide = builder.cast(value, DType::Int64);
  ir::ValueId zero = builder.constant(ir::Scalar::of_int(0), DType::Int64);
  add_check(trace, builder.binary(comparison, wide, zero), wide, kind, before, after);
}

}  // namespace

void check_index_bounds(Trace& trace, ir::ValueId index, const ir::Dim& size, int64_t axis,
                        const std::string& op, bool negative, ErrorKind kind) {
  // An index made from a loop's index and constants, inside the axis whatever the iteration:
  // nothing to check (x[i] in `for i in range(len(x))`).
  std::optional<std::pair<int64_t, int64_t>> range = integer_range(trace, index);
  if (size.is_constant() && range && range->first >= (negative ? -size.constant() : 0) &&
      range->second < size.constant()) {
    return;
  }
  ir::Builder& builder = trace.builder;
  ir::ValueId wide = builder.cast(index, DType::Int64);
  ir::ValueId high = builder.size(size);
  ir::ValueId low = negative ? builder.unary(ir::Op::neg, high)
                             : builder.constant(ir::Scalar::of_int(0), DType::Int64);
  ir::ValueId bad = builder.binary(ir::Op::logical_or, builder.binary(ir::Op::lt, wide, low),
                                   builder.binary(ir::Op::ge, wide, high));
  add_check(trace, bad, wide, kind, prefix(trace, op) + "index ",
            " is out of bounds for axis " + std::to_string(axis) + " with size " +
                size.to_string());
  if (negative && size.is_constant() &&
      ir::element_count_dim(builder.node(index).shape) != ir::Dim(0)) {
    trace.checks.back().index = index;  // add_check recorded it
    trace.checks.back().size = size.constant();
  }
}

void check_nonnegative_exponent(Trace& trace, ir::ValueId exponent, const std::string& op) {
  check_against_zero(
      trace, exponent, ir::Op::lt,
      prefix(trace, op) + "Integers to negative integer powers are not allowed (exponent ", ")");
}

void check_nonzero_divisor(Trace& trace, ir::ValueId divisor, const std::string& op) {
  check_against_zero(
      trace, divisor, ir::Op::eq,
      prefix(trace, op) + "ZeroDivisionError: integer division by zero (a divisor is ", ")",
      ErrorKind::Runtime);  // torch's RuntimeError (NumPy divides by zero without raising)
}

void check_python_int_fits(Trace& trace, ir::ValueId value, int64_t low, int64_t high,
                           const std::string& dtype_name, const std::string& op) {
  ir::Builder& builder = trace.builder;
  ir::ValueId wide = builder.cast(value, DType::Int64);
  ir::ValueId below = builder.binary(ir::Op::lt, wide,
                                     builder.constant(ir::Scalar::of_int(low), DType::Int64));
  ir::ValueId above = builder.binary(ir::Op::gt, wide,
                                     builder.constant(ir::Scalar::of_int(high), DType::Int64));
  add_check(trace, builder.binary(ir::Op::logical_or, below, above), wide, ErrorKind::Overflow,
            prefix(trace, op) + "Python integer ", " out of bounds for " + dtype_name);
}

void check_flag(Trace& trace, ir::ValueId flag, ir::ValueId values, ErrorKind kind,
                const std::string& op, const std::string& before, const std::string& after) {
  ir::Builder& builder = trace.builder;
  const ir::Node& flag_node = builder.node(flag);
  const ir::Node& values_node = builder.node(values);
  if (flag_node.dtype != DType::Bool || !flag_node.shape.empty() || values_node.shape.size() > 1 ||
      !ir::element_count_dim(values_node.shape).is_constant() || is_complex(values_node.dtype))
    throw Error(ErrorKind::Value, prefix(trace, op) + "a check takes a bool 0-d flag and real "
                                                      "values of constant shape, 0-d or 1-d");
  values = builder.cast(values, is_float(values_node.dtype) ? DType::Float64 : DType::Int64);
  trace.checks.push_back({flag, values, kind, prefix(trace, op) + before, after});
}

void condition_checks(Trace& trace, size_t first, ir::ValueId condition) {
  const ir::Node& node = trace.builder.node(condition);
  if (node.op == ir::Op::constant && node.attrs.scalar.as_double() == 0) {
    // Never: the checks go, and with them the only use of what they read (a branch side
    // traced for a select and then run as a loop left its whole trace in the graph, doubling
    // the code at each nesting level: a flood fill's labels compiled for 11 s).
    if (first < trace.checks.size()) trace.checks.resize(first);
    return;
  }
  for (size_t c = first; c < trace.checks.size(); ++c)
    trace.checks[c].flag = trace.builder.binary(ir::Op::logical_and, trace.checks[c].flag, condition);
}

bool well_formed_check(const ir::Graph& graph, ir::ValueId flag, ir::ValueId values) {
  if (flag < 0 || flag >= graph.size() || values < 0 || values >= graph.size()) return false;
  const ir::Node& flag_node = graph.node(flag);
  const ir::Node& values_node = graph.node(values);
  return flag_node.dtype == DType::Bool && flag_node.shape.empty() &&
         values_node.shape.size() <= 1 && ir::element_count_dim(values_node.shape).is_constant() &&
         (values_node.dtype == DType::Int64 || values_node.dtype == DType::Float64);
}

std::vector<runtime::RuntimeCheck> append_check_outputs(const Trace& trace,
                                                        std::vector<ir::ValueId>& outputs) {
  std::vector<runtime::RuntimeCheck> checks;
  for (const Trace::Check& check : trace.checks) {
    runtime::RuntimeCheck described;
    described.flag_output = static_cast<int32_t>(outputs.size());
    outputs.push_back(check.flag);
    described.value_output = static_cast<int32_t>(outputs.size());
    outputs.push_back(check.value);
    const ir::Node& value = trace.graph.node(check.value);
    described.value_dtype = value.dtype;
    described.value_count = ir::element_count_dim(value.shape).constant();
    described.kind = check.kind;
    described.before = check.before;
    described.after = check.after;
    checks.push_back(std::move(described));
  }
  return checks;
}

}  // namespace kiln::detail
