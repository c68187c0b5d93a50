// The OpInfo table, generated from the X-macros of op_list.h so that the table cannot drift
// from the enum: each entry is written at the enum position of its op, in the same order.
#include "ir/ops.h"

#include <array>
#include <string>

#include "kiln/error.h"

namespace kiln::ir {
namespace {

// Stringising keeps the expression text identical to what the interpreter compiles.
#define KILN_DERIVATIVE_TEXT(derivative) (#derivative == std::string_view("none") ? "" : #derivative)
#define KILN_ELEMENTWISE_INFO(kind, name, accepts, result, expression, public_name, promotion, \
                              cost, domain, derivative)                                      \
  OpInfo{#name, OpKind::kind, 0, Accepts::accepts, ResultType::result, Accumulator::None,      \
         #expression, "", #public_name, Promotion::promotion, Cost::cost, FuzzDomain::domain,  \
         KILN_DERIVATIVE_TEXT(derivative)},
#define KILN_UNARY_INFO(...) KILN_ELEMENTWISE_INFO(Unary, __VA_ARGS__)
#define KILN_BINARY_INFO(...) KILN_ELEMENTWISE_INFO(Binary, __VA_ARGS__)
#define KILN_TERNARY_INFO(...) KILN_ELEMENTWISE_INFO(Ternary, __VA_ARGS__)
#define KILN_REDUCE_INFO(name, accepts, result, accumulator, identity, combine, derivative)  \
  OpInfo{#name, OpKind::Reduce, 1, Accepts::accepts, ResultType::result,                  \
         Accumulator::accumulator, #combine, #identity, #name, Promotion::Keep, Cost::Costly, \
         FuzzDomain::Real, KILN_DERIVATIVE_TEXT(derivative)},
#define KILN_SCAN_INFO(name, accepts, identity, combine, derivative)                        \
  OpInfo{#name, OpKind::Scan, 1, Accepts::accepts, ResultType::Same, Accumulator::Plain,     \
         #combine, #identity, #name, Promotion::Keep, Cost::Costly, FuzzDomain::Real,        \
         KILN_DERIVATIVE_TEXT(derivative)},
#define KILN_STRUCTURAL_INFO(name, arity)                                                   \
  OpInfo{#name, OpKind::Structural, arity, Accepts::Any, ResultType::Same, Accumulator::None, \
         "", "", #name, Promotion::Keep, Cost::Costly, FuzzDomain::Real, ""},

std::array<OpInfo, static_cast<size_t>(Op::op_count)> make_table() {
  std::array<OpInfo, static_cast<size_t>(Op::op_count)> table = {
      KILN_UNARY_OPS(KILN_UNARY_INFO) KILN_BINARY_OPS(KILN_BINARY_INFO)
          KILN_TERNARY_OPS(KILN_TERNARY_INFO) KILN_REDUCE_OPS(KILN_REDUCE_INFO)
              KILN_SCAN_OPS(KILN_SCAN_INFO) KILN_STRUCTURAL_OPS(KILN_STRUCTURAL_INFO)};
  // Arity of elementwise ops follows from their kind; the X-macros do not repeat it.
  for (OpInfo& info : table) {
    if (info.kind == OpKind::Unary) info.arity = 1;
    if (info.kind == OpKind::Binary) info.arity = 2;
    if (info.kind == OpKind::Ternary) info.arity = 3;
  }
  return table;
}

#undef KILN_DERIVATIVE_TEXT
#undef KILN_ELEMENTWISE_INFO
#undef KILN_UNARY_INFO
#undef KILN_BINARY_INFO
#undef KILN_TERNARY_INFO
#undef KILN_REDUCE_INFO
#undef KILN_SCAN_INFO
#undef KILN_STRUCTURAL_INFO

const std::array<OpInfo, static_cast<size_t>(Op::op_count)>& table() {
  static const auto kTable = make_table();
  return kTable;
}

}  // namespace

const OpInfo& op_info(Op op) { return table()[static_cast<size_t>(op)]; }

std::string_view op_name(Op op) { return op_info(op).name; }

Op op_from_name(std::string_view name) {
  const auto& infos = table();
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<Op>(i);
  }
  throw Error(ErrorKind::Unsupported,
              error_message(std::string(name), "", "unknown op '" + std::string(name) + "'"));
}

}  // namespace kiln::ir
