// What a graph loop's body kernels can know about its induction variable v when the loop's
// bounds are constants: v lies in [first, last]. An index expression is then read as
// coefficient * v + r, with r in a known range (AffineReader), and the clamps and wraps of NumPy
// indexing around v (`min(max(v < 0 ? v + n : v, 0), n - 1)`) are decided and folded away
// (fold_induction_clamps): the body's kernels then index with v itself, which the C++ compiler
// vectorises across iterations once a loop driver inlines them, and which
// sched/independent_iterations.h reads to prove iterations independent.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

// Trips of a loop whose bounds are constants, else -1.
int64_t constant_trip_count(const LoopControl& loop);

// An integer expression as coefficient * v + inner * w + r, r somewhere in [low, high]; w is
// the index of a loop nested in v's that runs from a constant up to v (a triangular loop nest:
// `for j in range(1, k)`), else inner is 0.
struct Affine {
  int64_t coefficient = 0;
  int64_t low = 0, high = 0;
  int64_t inner = 0;
};

std::optional<int64_t> checked_mul(int64_t a, int64_t b);

// Reads the index expressions of one kernel of the body of `loop` (constant bounds, at least one
// trip). Loads of other buffers, floats, and products of v with itself or with a loop variable
// are not affine (nullopt).
class AffineReader {
 public:
  AffineReader(const Kernel& kernel, const LoopControl& loop);
  // The kernel also sits in `inner`, a loop in v's loop with a constant start, step 1 and v as
  // its stop: its index w is read too, with start <= w < v (v's values where it runs none are
  // left out: the kernel does not run then).
  void set_inner(const LoopControl& inner);

  std::optional<Affine> affine(ExprId id);
  // The operand of Select, where, IndexMin or IndexMax expression `id` that it always equals,
  // or -1.
  ExprId decided_operand(ExprId id);

 private:
  std::optional<Affine> compute(ExprId id);
  std::pair<int64_t, int64_t> range(const Affine& a) const;
  std::optional<Affine> bounded(const Affine& a) const;
  std::optional<Affine> add(std::optional<Affine> a, std::optional<Affine> b, int64_t sign) const;
  std::optional<Affine> multiply(std::optional<Affine> a, std::optional<Affine> b) const;
  std::optional<bool> decide(ExprId id);
  // The (v, w) corners of the values the two indices take together: the extremes of any
  // affine function are among them.
  std::vector<std::pair<int64_t, int64_t>> corners() const;

  const Kernel& kernel_;
  int32_t induction_;
  int64_t v_low_, v_high_;
  int32_t inner_ = -1;  // w's buffer, or -1
  int64_t w_low_ = 0;
  std::unordered_map<ExprId, std::optional<Affine>> known_;
};

// The loop-IR pass: in every kernel of a graph loop with constant bounds, each Select, IndexMin
// and IndexMax that v's range decides becomes the operand it always equals.
bool fold_induction_clamps(Program& program, const target::Target& target);

}  // namespace kiln::sched
