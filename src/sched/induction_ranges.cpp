#include "sched/induction_ranges.h"

#include <algorithm>
#include <cstdlib>

#include "ir/loop.h"
#include "kiln/dtype.h"

namespace kiln::sched {
namespace {

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

int64_t constant_trip_count(const LoopControl& loop) {
  if (loop.start >= 0 || loop.stop >= 0) return -1;
  return ir::loop_trip_count(loop.start_value, loop.stop_value, loop.step);
}

AffineReader::AffineReader(const Kernel& kernel, const LoopControl& loop)
    : kernel_(kernel), induction_(loop.induction) {
  int64_t last = loop.start_value + (constant_trip_count(loop) - 1) * loop.step;
  v_low_ = std::min(loop.start_value, last);
  v_high_ = std::max(loop.start_value, last);
}

std::optional<Affine> AffineReader::affine(ExprId id) {
  auto found = known_.find(id);
  if (found != known_.end()) return found->second;
  std::optional<Affine> result = compute(id);
  known_[id] = result;
  return result;
}

ExprId AffineReader::decided_operand(ExprId id) {
  const Expr& e = kernel_.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Select) {
    std::optional<bool> taken = decide(e.operands[0]);
    return taken ? e.operands[*taken ? 1 : 2] : -1;
  }
  if (e.kind != ExprKind::IndexMin && e.kind != ExprKind::IndexMax) return -1;
  std::optional<Affine> a = affine(e.operands[0]), b = affine(e.operands[1]);
  if (!a || !b) return -1;
  auto [a_low, a_high] = range(*a);
  auto [b_low, b_high] = range(*b);
  bool a_smaller = a_high <= b_low, b_smaller = b_high <= a_low;
  if (a_smaller || b_smaller)
    return (e.kind == ExprKind::IndexMin) == a_smaller ? e.operands[0] : e.operands[1];
  return -1;
}

std::optional<Affine> AffineReader::compute(ExprId id) {
  const Expr& e = kernel_.exprs[static_cast<size_t>(id)];
  auto operand = [&](size_t k) { return affine(e.operands[k]); };
  switch (e.kind) {
    case ExprKind::Constant:
      if (!is_integer(e.dtype) || !e.constant.is_integer) return std::nullopt;
      return Affine{0, e.constant.i, e.constant.i};
    case ExprKind::LoopVar: {
      int64_t extent = kernel_.loop_extents[static_cast<size_t>(e.variable)];
      return Affine{0, 0, std::max<int64_t>(extent - 1, 0)};
    }
    case ExprKind::Load:
      if (e.buffer == induction_) return Affine{1, 0, 0};
      return std::nullopt;
    case ExprKind::Cast:  // to int64 from an integer: a value of the range read
      if (e.dtype != DType::Int64) return std::nullopt;
      return operand(0);
    case ExprKind::IndexAdd:
      return add(operand(0), operand(1), 1);
    case ExprKind::IndexMul:
      return multiply(operand(0), operand(1));
    case ExprKind::Select:
    case ExprKind::IndexMin:
    case ExprKind::IndexMax: {
      ExprId chosen = decided_operand(id);
      if (chosen < 0) return std::nullopt;
      return affine(chosen);
    }
    case ExprKind::Elementwise:
      if (!is_integer(e.dtype)) return std::nullopt;
      if (e.op == Op::add) return add(operand(0), operand(1), 1);
      if (e.op == Op::sub) return add(operand(0), operand(1), -1);
      if (e.op == Op::mul) return multiply(operand(0), operand(1));
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// The values `a` takes: coefficient * [v_low, v_high] + [low, high].
std::pair<int64_t, int64_t> AffineReader::range(const Affine& a) const {
  int64_t first = a.coefficient * v_low_, last = a.coefficient * v_high_;  // checked by add()
  return {std::min(first, last) + a.low, std::max(first, last) + a.high};
}

std::optional<Affine> AffineReader::bounded(const Affine& a) const {
  // Every value in range(a) fits an int64 with room: later comparisons cannot overflow.
  constexpr int64_t kLimit = int64_t(1) << 60;
  std::optional<int64_t> first = checked_mul(a.coefficient, v_low_);
  std::optional<int64_t> last = checked_mul(a.coefficient, v_high_);
  if (!first || !last || a.low < -kLimit || a.high > kLimit) return std::nullopt;
  if (std::max(std::abs(*first), std::abs(*last)) > kLimit) return std::nullopt;
  return a;
}

std::optional<Affine> AffineReader::add(std::optional<Affine> a, std::optional<Affine> b,
                                        int64_t sign) const {
  if (!a || !b) return std::nullopt;
  std::optional<int64_t> coefficient = checked_add(a->coefficient, sign * b->coefficient);
  std::optional<int64_t> low = checked_add(a->low, sign > 0 ? b->low : -b->high);
  std::optional<int64_t> high = checked_add(a->high, sign > 0 ? b->high : -b->low);
  if (!coefficient || !low || !high) return std::nullopt;
  return bounded({*coefficient, *low, *high});
}

std::optional<Affine> AffineReader::multiply(std::optional<Affine> a,
                                             std::optional<Affine> b) const {
  if (!a || !b) return std::nullopt;
  if (a->coefficient != 0) std::swap(a, b);
  if (a->coefficient != 0) return std::nullopt;                       // v * v
  if (b->coefficient != 0 && a->low != a->high) return std::nullopt;  // v * loop variable
  int64_t factor = a->low;
  if (b->coefficient != 0 || a->low == a->high) {
    std::optional<int64_t> coefficient = checked_mul(b->coefficient, factor);
    std::optional<int64_t> first = checked_mul(b->low, factor), last = checked_mul(b->high, factor);
    if (!coefficient || !first || !last) return std::nullopt;
    return bounded({*coefficient, std::min(*first, *last), std::max(*first, *last)});
  }
  int64_t corners[4];
  int k = 0;
  for (int64_t x : {a->low, a->high})
    for (int64_t y : {b->low, b->high}) {
      std::optional<int64_t> product = checked_mul(x, y);
      if (!product) return std::nullopt;
      corners[k++] = *product;
    }
  return bounded(
      {0, *std::min_element(corners, corners + 4), *std::max_element(corners, corners + 4)});
}

// A comparison's value when the ranges of its sides settle it.
std::optional<bool> AffineReader::decide(ExprId id) {
  const Expr& e = kernel_.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Constant && e.dtype == DType::Bool) return e.constant.as_double() != 0;
  bool less = e.kind == ExprKind::IndexLess || (e.kind == ExprKind::Elementwise && e.op == Op::lt);
  bool greater_equal = e.kind == ExprKind::Elementwise && e.op == Op::ge;
  if (!less && !greater_equal) return std::nullopt;
  std::optional<Affine> a = affine(e.operands[0]), b = affine(e.operands[1]);
  if (!a || !b) return std::nullopt;
  auto [a_low, a_high] = range(*a);
  auto [b_low, b_high] = range(*b);
  std::optional<bool> is_less;
  if (a_high < b_low) is_less = true;
  if (a_low >= b_high) is_less = false;
  if (!is_less) return std::nullopt;
  return less ? *is_less : !*is_less;
}

bool fold_induction_clamps(Program& program, const target::Target&) {
  bool changed = false;
  for (size_t begin = 0; begin < program.steps.size(); ++begin) {
    const Step& step = program.steps[begin];
    if (step.kind != StepKind::LoopBegin || constant_trip_count(step.loop) < 1) continue;
    for (size_t s = begin + 1; s < static_cast<size_t>(step.loop.partner); ++s) {
      if (program.steps[s].kind != StepKind::Kernel) continue;
      Kernel& kernel = program.kernels[static_cast<size_t>(program.steps[s].kernel)];
      AffineReader reader(kernel, step.loop);
      // Operands come before their users, so a clamp of a folded wrap is decided next.
      for (size_t id = 0; id < kernel.exprs.size(); ++id) {
        ExprId operand = reader.decided_operand(static_cast<ExprId>(id));
        if (operand < 0) continue;
        kernel.exprs[id] = Expr(kernel.exprs[static_cast<size_t>(operand)]);
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace kiln::sched
