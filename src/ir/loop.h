// Structured loops in the graph IR.
//
//   %L = loop(%start, %stop, %init_0 .. %init_{K-1}, %inv_0 .. %inv_{J-1})
//            {index=K, steps=[step], body={...}} : bool[]
//   %r = loop_result(%L) {index=k}   (the carried value k after the last iteration)
//
// The body runs for i = start, start + step, ... while i < stop (step > 0) or i > stop
// (step < 0): Python's range. start and stop are int64 0-d values (so an inner loop's bounds
// may depend on an outer induction variable); step is a non-zero constant. The body is a graph
// of its own with parameters (induction variable: int64 0-d, carried values 1..K, invariants
// K+1..K+J) and K outputs, the carried values of the next iteration, each of its parameter's
// dtype and shape. The loop node itself is a token (bool, 0-d) that only loop_result reads.
// Zero iterations give the initial values.
//
// A while loop ({axis=1}) has a condition: carried value 0 is a bool 0-d, and the loop stops
// before the first iteration at which it is false (the body computes the next one from the
// next state: `while c(s): s = f(s)` carries (c(s), s)). Its bounds only limit the count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::ir {

// Python's len(range(start, stop, step)), step != 0; never overflows.
int64_t loop_trip_count(int64_t start, int64_t stop, int64_t step);

inline bool is_while_loop(const Node& node) { return node.attrs.axis == 1; }

// Why `node` (a loop) does not fit its body's signature or its operands; empty when it fits.
std::string loop_signature_error(const Graph& graph, const Node& node);

// Runs a loop node on its operands' values with the reference interpreter; one Array per
// carried value.
std::vector<Array> interpret_loop(const Node& node, const std::vector<Array>& operands);

// Applies `pass` to every region of `graph` (loop bodies, both sides of a cond; innermost
// first), keeping the rest.
Graph map_loop_bodies(const Graph& graph, Graph (*pass)(const Graph&));

}  // namespace kiln::ir
