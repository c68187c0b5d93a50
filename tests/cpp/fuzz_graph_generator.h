// Random well-typed graphs for the differential fuzzer (test_fuzz.cpp).
//
// A fuzz case is a "multi-graph": several independent random subgraphs built into ONE ir::Graph,
// so that one g++ invocation checks all of them. Subgraph k of a case is generated from
// (seed, k) alone, so a failing subgraph can be regenerated on its own and printed small.
//
// Floats are kept in ranges where tolerances mean something: every generated value carries a
// bound on its magnitude and an estimate of the absolute error a correct compiler may add
// (libmvec's 4 ulp, FMA contraction, float16 intermediates kept in float32, reassociated
// reductions). Ops that would blow up an error (log near 0, tan near pi/2, division by small
// values) get domain guards (abs(x) + c, tanh(x) * 0.9); discontinuous ops (floor, comparisons,
// casts to integers, argmax) only see "exact" values, which every correct compiler must
// reproduce bit for bit. Unguarded ops on exact values (log of negatives, division by zero)
// produce NaN and Inf on purpose; such "wild" values become outputs and are not reused.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::fuzz {

// How one graph output may differ from the interpreter's result.
struct OutputCheck {
  int subgraph = 0;
  bool exact = false;     // bit for bit (floats: equal, or both NaN)
  double absolute = 0;    // floats: |compiled - reference| <= absolute + relative * |reference|
  double relative = 0;
};

struct FuzzCase {
  ir::Graph graph;
  std::vector<Array> inputs;  // borrowed views into `storage`, possibly strided or reversed
  std::vector<std::vector<int64_t>> input_strides;  // empty: contiguous
  std::vector<std::shared_ptr<std::vector<uint8_t>>> storage;
  std::vector<OutputCheck> checks;  // one per graph output
  // Node id range [first, last) of each subgraph, for printing just the failing one.
  std::vector<std::pair<ir::ValueId, ir::ValueId>> subgraph_nodes;
  std::vector<int> subgraph_numbers;  // the k each subgraph was generated from
};

// Builds subgraphs first_subgraph .. first_subgraph + subgraph_count - 1 of the given seed.
FuzzCase generate_case(uint64_t seed, int first_subgraph, int subgraph_count);

// Machine epsilon of a float dtype (0 for the others).
double dtype_epsilon(DType dtype);

}  // namespace kiln::fuzz
