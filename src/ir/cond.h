// Conditionals in the graph IR.
//
//   %C = cond(%predicate, %carried_0 .. %carried_{K-1}, %then_0 .. %then_{A-1},
//             %else_0 .. %else_{B-1}) {index=K, axis=A, body={...}, else_body={...}} : bool[]
//   %r = loop_result(%C) {index=k}   (carried value k after the region that ran)
//
// The predicate is a bool 0-d value. When it holds, `body` (the then region) runs, otherwise
// `else_body`; each is a graph whose parameters are the K carried values followed by its own
// invariants (A for then, B for else), and whose K outputs are the carried values after it, each
// of its parameter's dtype and shape. Only the region taken runs. The node itself is a token
// (bool, 0-d) that only loop_result reads, as for a loop (ir/loop.h).
//
// The scheduler runs loops only: lower_conditionals (below) turns a cond
// into the then region as a loop of `predicate` iterations followed by the else region as a
// loop of `not predicate` iterations, which the code generators print as two `if`s.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::ir {

// Why `node` (a cond) does not fit its regions' signatures or its operands; empty when it fits.
std::string cond_signature_error(const Graph& graph, const Node& node);

// The invariant operands of each region: [begin, end) positions in node.inputs.
struct CondOperands {
  size_t carried_begin, then_begin, else_begin, end;
};
CondOperands cond_operands(const Node& node);

// Runs a cond node on its operands' values with the reference interpreter: one Array per
// carried value.
std::vector<Array> interpret_cond(const Node& node, const std::vector<Array>& operands);

// `graph` with every cond (in regions too) replaced by its two regions as loops: the then region
// runs `predicate` times (0 or 1), then the else region `not predicate` times on its results.
// Returns the graph itself when it has no cond.
Graph lower_conditionals(const Graph& graph);
bool has_conditionals(const Graph& graph);

}  // namespace kiln::ir
