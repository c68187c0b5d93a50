// The graph a kiln::Tensor records into while a function is traced, and the helpers every
// Tensor API function uses to find it and to stamp the user's source line on the nodes it adds.
#pragma once
#include <source_location>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::detail {

// One traced function: its graph and the builder that appends to it. Not copyable or movable:
// the builder and every Tensor point into it.
struct Trace {
  ir::Graph graph;
  ir::Builder builder{graph};
  // Conditions checked when the graph runs (see runtime::RuntimeCheck; api/runtime_checks.h):
  // a bool flag and the offending value, built into the graph by the ops that need them.
  struct Check {
    ir::ValueId flag = -1, value = -1;
    ErrorKind kind = ErrorKind::Index;
    std::string before, after;
    ir::ValueId index = -1;  // an index bounds check: the index, to lie in [-size, size)
    int64_t size = 0;
  };
  std::vector<Check> checks;
  // The location used for nodes and errors when an API call passes none (a default-constructed
  // source_location): the Python frontend sets the user's file:line here before each op.
  std::string default_location;
  // Loop bodies being traced into `graph`, innermost last (api/loop_trace.h).
  struct Region {
    ir::ValueId mark;                     // the first node of the body
    std::vector<ir::ValueId> placeholders;  // the induction variable, then the carried values
    // The values the induction variable takes, when the bounds say (api/loop_trace.h).
    std::optional<std::pair<int64_t, int64_t>> induction_range;
    // Carried placeholders the body leaves as they are, and their initial values: known when
    // the body closes.
    std::map<ir::ValueId, ir::ValueId> unchanged;
  };
  std::vector<Region> regions;
  // A closed region cut out of the graph (api/loop_trace.h): its body takes the induction
  // variable, the changed carried values, the unchanged ones, then the invariants.
  struct CutRegion {
    std::shared_ptr<ir::Graph> body;
    std::vector<ir::ValueId> result_ids;  // carried values after the body (checks' pairs too)
    std::vector<ir::ValueId> init_ids;
    std::vector<size_t> changed, unchanged;  // carried positions, in the body's parameter order
    std::vector<ir::ValueId> invariants;     // values passed in after the carried ones
    std::vector<size_t> carried_checks;      // `checks` the body records, carried as pairs
  };
  std::vector<CutRegion> cond_sides;  // closed sides of the branch being captured

  Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // A new graph input (a parameter node, numbered in call order) as a Tensor.
  Tensor input(DType dtype, const std::vector<int64_t>& shape) {
    return Tensor(this, builder.parameter(dtype, ir::from_ints(shape)));
  }
};

// "model.cpp:12" from a source location: the file's basename keeps messages and generated
// comments short and independent of where the project was built. Empty when unknown (the
// default-constructed location that operators, which cannot take a location, pass).
inline std::string location_string(const std::source_location& where) {
  std::string_view file = where.file_name() ? where.file_name() : "";
  if (file.empty() || where.line() == 0) return "";
  size_t slash = file.find_last_of("/\\");
  if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(where.line());
}

// The trace a tensor belongs to, with the builder's location set to `where` for the nodes the
// caller is about to add. Throws a Value error naming `op` for a tensor that was never traced.
inline Trace& trace_for(const Tensor& x, const std::string& op, const std::source_location& where) {
  std::string location = location_string(where);
  if (location.empty() && x.trace() != nullptr) location = x.trace()->default_location;
  if (x.trace() == nullptr || x.id() < 0) {
    throw Error(ErrorKind::Value,
                error_message(op, location, "the tensor is not part of a traced function"));
  }
  x.trace()->builder.set_location(location);
  return *x.trace();
}

// As above for two operands, which must come from the same trace.
inline Trace& trace_for(const Tensor& a, const Tensor& b, const std::string& op,
                        const std::source_location& where) {
  Trace& trace = trace_for(a, op, where);
  trace_for(b, op, where);
  if (a.trace() != b.trace()) {
    throw Error(ErrorKind::Value,
                error_message(op, location_string(where),
                              "the operands come from different traced functions"));
  }
  return trace;
}

// As above for any number of operands (concatenate, einsum); at least one is required.
inline Trace& trace_for(const std::vector<Tensor>& operands, const std::string& op,
                        const std::source_location& where) {
  if (operands.empty()) {
    throw Error(ErrorKind::Value,
                error_message(op, location_string(where), "needs at least one tensor"));
  }
  for (const Tensor& operand : operands) trace_for(operands[0], operand, op, where);
  return *operands[0].trace();
}

// The Tensor for a value just added to `trace`.
inline Tensor wrap(Trace& trace, ir::ValueId id) { return Tensor(&trace, id); }

}  // namespace kiln::detail
