// max-autotune's library-or-generated choice for matrix products (DESIGN §2): each float
// matmul that canonicalize_matmul left to BLAS, small enough for a generated reduction to
// compete (at most kMostTunedProducts multiply-adds: attention's per-head products, a few
// tokens through a small layer), is timed alone both ways on random operands of its shapes, and
// the faster form stays. The choice is made while a graph is compiled on a disk-cache miss, so
// it is part of the cached program: later compiles of the graph read it back.
#pragma once
#include "ir/graph.h"
#include "kiln/compile.h"
#include "target/target.h"

namespace kiln::detail {

ir::Graph choose_matmul_kernels(const ir::Graph& graph, const Options& options,
                                const target::Target& target);

}  // namespace kiln::detail
