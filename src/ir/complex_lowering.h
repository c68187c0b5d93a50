// Complex numbers as pairs of real ones.
//
// complex64/complex128 values exist in traced graphs (the builder types them, the verifier and
// printer know them), but nothing after this lowering sees them: every complex value becomes a
// (real part, imaginary part) pair of float32/float64 values, and each op that accepts complex
// operands (op_list.h, the "...OrComplex" sets) has its rule on pairs here. The scheduler, the
// emitters and the library calls stay real; the C++ and CUDA targets get complex for free, and
// the rules are vectorised like any other real arithmetic (Inductor does the same for most
// complex ops, through view_as_real).
//
// The boundary keeps memory as NumPy lays it out: a complex graph input of shape S becomes a
// real input of shape S + [2] (interleaved real and imaginary parts), and a complex output a
// real output of shape S + [2]; runtime/complex_views.h reinterprets the caller's arrays, with
// no copy. In loop bodies a complex parameter or result becomes two, next to each other.
#pragma once
#include "ir/graph.h"

namespace kiln::ir {

bool has_complex_values(const Graph& graph);  // loop bodies included

// The same computation without complex values (the graph itself when it has none). Complex rules
// follow NumPy: Smith's division, sqrt and log on the principal branch, 0 ** w = 0 for Re w > 0.
Graph lower_complex(const Graph& graph);

}  // namespace kiln::ir
