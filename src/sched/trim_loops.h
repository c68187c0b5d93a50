// trim_loops: reductions that only count positions inside run-time bounds run over those bounds.
//
// A sum whose every element is `where(lo <= i && i < hi, x, 0)` along its innermost reduction
// loop i (lo and hi computed outside the loop: a loop index, a value read from a buffer) adds
// zeros outside [lo, hi): the loop is trimmed to run over [lo, hi) clamped to [0, extent), the
// guard kept. This is how the slices whose bounds move with a captured Python loop's index
// (kiln/_windows.py: A[j+1:, :j] @ A[j, :j]) do the work of the slice, not of the whole axis: the
// loop's extent is read at run time, as TVM's loop partitioning and Halide's bounds inference
// shrink loops to where their guards hold. Target-neutral: every target runs it first.
//
// Likewise a loop nest around one store x[i] = where(c, new, x[i]) (a masked update made in
// place, sched/in_place.h: LU's a[k+1:, k+1:] -= ...): outside c the store writes back what is
// there, so each loop runs over the bounds c puts on it, and the update touches the window only.
// When every conjunct of c became a bound, c holds wherever the nest runs: the store is then
// x[i] = new, with no mask left to compute (nor to keep the loop from vectorising).
//
// Rules: sums (identity 0), products (1), any (false), all (true), float maxima (-inf) and
// minima (+inf); a value is guarded when it is where(condition, x, identity) (x guarded itself when the condition is about other loops)
// or a cast of one, or, for sums, a product of two values
// guarded by the same bounds (then both are 0 outside, so the product is 0 even where x is not
// finite). Every accumulation of the statement must be guarded by the same bounds.
#pragma once
#include <optional>
#include <set>
#include <vector>

#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

bool trim_loops(Kernel& kernel, const target::Target& target);

// A loop nest around one store x[i] = where(c, new, x[i]) (a masked update in place,
// sched/in_place.h): its loops, outermost first, the store, and c. Also read by
// sched/pin_masked_elements.h.
struct MaskedStore {
  std::vector<Loop*> nest;
  Stmt* store = nullptr;
  ExprId condition = -1;
};
std::optional<MaskedStore> masked_store(const Kernel& kernel, Stmt& top);

// Whether `id` is loop `variable`'s index, or a cast of it.
bool is_loop_variable(const Kernel& kernel, ExprId id, int32_t variable);

// Whether `id` reads one of `loops` or a value that may differ between their iterations (a
// reduction's local, a local array's element, a random draw).
bool reads_loops(const Kernel& kernel, ExprId id, const std::set<int32_t>& loops);

}  // namespace kiln::sched
