// Tracing a loop body into a Trace (for frontends that capture loops: the NumPy tracer).
//
// The body is recorded into the trace's own graph, between begin_loop_body and end_loop, on
// placeholders for the induction variable and the carried values; it may use any value traced
// before (implicit capture). end_loop cuts the body out: nodes that depend on a placeholder
// become the body graph, every other value it reads (values from before the loop, and
// loop-invariant work traced inside it, which is thereby hoisted; work on carried values the
// body leaves unchanged is rebuilt after it on their initial values) becomes an invariant operand,
// and values made from scalar constants and iotas by cheap ops are copied in. The cut nodes stay
// in the trace's graph, dead (dead-code elimination drops them); a value of the body used after
// the loop is an error that names it. Runtime checks recorded inside the body (an index out of
// bounds) are carried through the loop: a flag and the first offending value.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "api/trace.h"

namespace kiln::detail {

// Opens a body; returns its induction variable (int64 0-d). A loop's bounds, when given, bound
// the values it takes (integer_range), so that a check of an index made from it that can never
// fail is not recorded.
Tensor begin_loop_body(Trace& trace, const std::optional<Tensor>& start = std::nullopt,
                       const std::optional<Tensor>& stop = std::nullopt, int64_t step = 1);
// The values an int64 0-d value of the trace can take: [low, high] for constants, the induction
// variables of open bodies, and sums, differences and products of those; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> integer_range(const Trace& trace, ir::ValueId id);
// A carried value's stand-in inside the open body.
Tensor loop_placeholder(Trace& trace, DType dtype, const std::vector<int64_t>& shape);
// Closes the open body: results[k] is carried value k after an iteration (same dtype and shape
// as its placeholder); init[k] its value before the first. Returns the values after the loop.
// A while loop: carried value 0 is its bool 0-d condition (ir/loop.h).
std::vector<Tensor> end_loop(Trace& trace, const Tensor& start, const Tensor& stop, int64_t step,
                             const std::vector<Tensor>& init, const std::vector<Tensor>& results,
                             bool while_loop = false);
// A branch (ir/cond.h): each side is traced as a body (begin_loop_body; its induction variable
// is not used) on placeholders for the same carried values, and closed by end_cond_side;
// end_cond then makes one cond node of the last two sides and returns the values after it.
// A side that records run-time checks is refused (kiln::Error Unsupported).
void end_cond_side(Trace& trace, const std::vector<Tensor>& init,
                   const std::vector<Tensor>& results);
std::vector<Tensor> end_cond(Trace& trace, const Tensor& predicate);
// Closes the open body without a loop (the frontend gave up capturing it).
void abandon_loop_body(Trace& trace);

}  // namespace kiln::detail
