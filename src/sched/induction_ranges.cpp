#include "sched/induction_ranges.h"

#include <algorithm>
#include <climits>
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

void AffineReader::set_inner(const LoopControl& inner) {
  if (inner.start >= 0 || inner.stop != induction_ || inner.step != 1) return;
  // Only the iterations of v where the inner loop runs: v >= start + 1.
  int64_t v_low = std::max(v_low_, inner.start_value + 1);
  if (v_low > v_high_) return;
  v_low_ = v_low;
  inner_ = inner.induction;
  w_low_ = inner.start_value;
  known_.clear();
}

std::vector<std::pair<int64_t, int64_t>> AffineReader::corners() const {
  return {{v_low_, w_low_}, {v_high_, w_low_}, {v_high_, v_high_ - 1}, {v_low_, v_low_ - 1}};
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
  // where(k - j < 0, k - j + n, k - j): NumPy's wrap of a negative index, written by the user.
  if (e.kind == ExprKind::Select || (e.kind == ExprKind::Elementwise && e.op == Op::where)) {
    std::optional<bool> taken = decide(e.operands[0]);
    if (!taken) return -1;
    ExprId chosen = e.operands[*taken ? 1 : 2];
    return kernel_.exprs[static_cast<size_t>(chosen)].dtype == e.dtype ? chosen : -1;
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
      return Affine{0, e.constant.i, e.constant.i, 0};
    case ExprKind::LoopVar: {
      int64_t extent = kernel_.loop_extents[static_cast<size_t>(e.variable)];
      return Affine{0, 0, std::max<int64_t>(extent - 1, 0), 0};
    }
    case ExprKind::Load:
      if (e.buffer == induction_) return Affine{1, 0, 0, 0};
      if (e.buffer == inner_) return Affine{0, 0, 0, 1};
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
      if (e.op == Op::where) {
        ExprId chosen = decided_operand(id);
        return chosen < 0 ? std::nullopt : affine(chosen);
      }
      if (e.op == Op::add) return add(operand(0), operand(1), 1);
      if (e.op == Op::sub) return add(operand(0), operand(1), -1);
      if (e.op == Op::mul) return multiply(operand(0), operand(1));
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// The values `a` takes: coefficient * v + inner * w over the corners, + [low, high].
std::pair<int64_t, int64_t> AffineReader::range(const Affine& a) const {
  int64_t smallest = INT64_MAX, largest = INT64_MIN;
  for (auto [v, w] : corners()) {  // checked by bounded()
    int64_t value = a.coefficient * v + a.inner * w;
    smallest = std::min(smallest, value);
    largest = std::max(largest, value);
  }
  return {smallest + a.low, largest + a.high};
}

std::optional<Affine> AffineReader::bounded(const Affine& a) const {
  // Every value in range(a) fits an int64 with room: later comparisons cannot overflow.
  constexpr int64_t kLimit = int64_t(1) << 60;
  if (a.low < -kLimit || a.high > kLimit || (a.inner != 0 && inner_ < 0)) return std::nullopt;
  for (auto [v, w] : corners()) {
    std::optional<int64_t> first = checked_mul(a.coefficient, v), second = checked_mul(a.inner, w);
    if (!first || !second || std::abs(*first) > kLimit || std::abs(*second) > kLimit)
      return std::nullopt;
  }
  return a;
}

std::optional<Affine> AffineReader::add(std::optional<Affine> a, std::optional<Affine> b,
                                        int64_t sign) const {
  if (!a || !b) return std::nullopt;
  std::optional<int64_t> coefficient = checked_add(a->coefficient, sign * b->coefficient);
  std::optional<int64_t> inner = checked_add(a->inner, sign * b->inner);
  std::optional<int64_t> low = checked_add(a->low, sign > 0 ? b->low : -b->high);
  std::optional<int64_t> high = checked_add(a->high, sign > 0 ? b->high : -b->low);
  if (!coefficient || !inner || !low || !high) return std::nullopt;
  return bounded({*coefficient, *low, *high, *inner});
}

std::optional<Affine> AffineReader::multiply(std::optional<Affine> a,
                                             std::optional<Affine> b) const {
  if (!a || !b) return std::nullopt;
  auto indexed = [](const Affine& x) { return x.coefficient != 0 || x.inner != 0; };
  if (indexed(*a)) std::swap(a, b);
  if (indexed(*a)) return std::nullopt;                           // v * v, v * w
  if (indexed(*b) && a->low != a->high) return std::nullopt;  // v * loop variable
  int64_t factor = a->low;
  if (indexed(*b) || a->low == a->high) {
    std::optional<int64_t> coefficient = checked_mul(b->coefficient, factor);
    std::optional<int64_t> inner = checked_mul(b->inner, factor);
    std::optional<int64_t> first = checked_mul(b->low, factor), last = checked_mul(b->high, factor);
    if (!coefficient || !inner || !first || !last) return std::nullopt;
    return bounded({*coefficient, std::min(*first, *last), std::max(*first, *last), *inner});
  }
  int64_t products[4];
  int k = 0;
  for (int64_t x : {a->low, a->high})
    for (int64_t y : {b->low, b->high}) {
      std::optional<int64_t> product = checked_mul(x, y);
      if (!product) return std::nullopt;
      products[k++] = *product;
    }
  return bounded({0, *std::min_element(products, products + 4),
                  *std::max_element(products, products + 4), 0});
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

namespace {

// The LoopBegin of the innermost loop inside loop `begin` that holds step `s`, or -1.
int64_t innermost_loop(const Program& program, size_t begin, size_t s) {
  int64_t found = -1;
  for (size_t b = begin + 1; b < s; ++b) {
    const Step& step = program.steps[b];
    if (step.kind != StepKind::LoopBegin) continue;
    if (static_cast<size_t>(step.loop.partner) > s) found = static_cast<int64_t>(b);
    else b = static_cast<size_t>(step.loop.partner);  // ends before s: skip its body
  }
  return found;
}

}  // namespace

bool fold_induction_clamps(Program& program, const target::Target&) {
  bool changed = false;
  for (size_t begin = 0; begin < program.steps.size(); ++begin) {
    const Step& step = program.steps[begin];
    if (step.kind != StepKind::LoopBegin || constant_trip_count(step.loop) < 1) continue;
    for (size_t s = begin + 1; s < static_cast<size_t>(step.loop.partner); ++s) {
      if (program.steps[s].kind != StepKind::Kernel) continue;
      Kernel& kernel = program.kernels[static_cast<size_t>(program.steps[s].kernel)];
      AffineReader reader(kernel, step.loop);
      if (int64_t inner = innermost_loop(program, begin, s); inner >= 0)
        reader.set_inner(program.steps[static_cast<size_t>(inner)].loop);
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
