// max-autotune's library-or-generated choice for matrix products (DESIGN §2): each float
// matmul that canonicalize_matmul left to BLAS, small enough for a generated reduction to
// compete (at most kMostTunedProducts multiply-adds: attention's per-head products, a few
// tokens through a small layer), is timed alone both ways on random operands of its shapes, and
// the faster form stays. On the CPU the choice is made while a graph is compiled on a disk-cache
// miss, so it is part of the cached program: later compiles of the graph read it back. On a GPU
// (where the program is scheduled on every compile) the choices are a record in the disk cache
// under the graph's key, and part of the cubins' key.
#pragma once
#include <map>
#include <string>

#include "ir/graph.h"
#include "kiln/compile.h"

namespace kiln::detail {

// By problem (dtype and operand shapes): whether the generated reduction won. A caller's map
// is a memo: problems in it are not timed again (a record read back), new ones are added.
using MatmulChoices = std::map<std::string, bool>;

// `graph` with the products max-autotune times faster as generated reductions inlined; on the
// device options.device names (a GPU: the operands on it, each timing until it has finished).
ir::Graph choose_matmul_kernels(const ir::Graph& graph, const Options& options,
                                MatmulChoices& decided);

// The choices as a record's text, and back (false, `choices` untouched: not such a record).
std::string matmul_choices_text(const MatmulChoices& choices);
bool read_matmul_choices(const std::string& text, MatmulChoices& choices);

}  // namespace kiln::detail
