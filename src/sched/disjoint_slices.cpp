#include "sched/disjoint_slices.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace kiln::sched {
namespace {

// Bounds of an unknown value, kept far from int64's ends so that sums saturate, not overflow.
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;

// An index as coefficient * v + r, r in [low, high] (r may vary with v: only its range counts).
struct Slice {
  int64_t coefficient = 0;
  int64_t low = -kUnbounded, high = kUnbounded;
};

int64_t saturate(__int128 value) {
  return static_cast<int64_t>(std::clamp<__int128>(value, -kUnbounded, kUnbounded));
}

class SliceReader {
 public:
  SliceReader(const Kernel& kernel, int32_t variable) : kernel_(kernel), variable_(variable) {}

  Slice read(ExprId id) {
    const Expr& e = kernel_.exprs[static_cast<size_t>(id)];
    const auto operand = [&](size_t k) { return read(e.operands[k]); };
    switch (e.kind) {
      case ExprKind::Constant:
        if (!e.constant.is_integer) return {};
        return {0, e.constant.i, e.constant.i};
      case ExprKind::LoopVar:
        if (e.variable == variable_) return {1, 0, 0};
        return {0, 0, kernel_.loop_extents[static_cast<size_t>(e.variable)] - 1};
      case ExprKind::Elementwise:  // int64 arithmetic of values: a scatter's iota + offset
        if (e.dtype != DType::Int64 || e.operands.size() != 2) return {};
        if (e.op == Op::sub) {
          const Slice a = operand(0), b = operand(1);
          return {saturate(__int128(a.coefficient) - b.coefficient),
                  saturate(__int128(a.low) - b.high), saturate(__int128(a.high) - b.low)};
        }
        if (e.op != Op::add) return {};
        [[fallthrough]];
      case ExprKind::IndexAdd: {
        const Slice a = operand(0), b = operand(1);
        return {saturate(__int128(a.coefficient) + b.coefficient),
                saturate(__int128(a.low) + b.low), saturate(__int128(a.high) + b.high)};
      }
      case ExprKind::IndexMul: {
        Slice a = operand(0), b = operand(1);
        if (a.coefficient == 0 && a.low == a.high) std::swap(a, b);
        if (b.coefficient != 0 || b.low != b.high || std::abs(b.low) >= kUnbounded) return {};
        const int64_t c = b.low;
        const int64_t low = saturate(__int128(a.low) * c), high = saturate(__int128(a.high) * c);
        return {saturate(__int128(a.coefficient) * c), std::min(low, high), std::max(low, high)};
      }
      case ExprKind::IndexMin:
      case ExprKind::IndexMax: {
        const Slice a = operand(0), b = operand(1);
        if (a.coefficient != 0 || b.coefficient != 0) return {};
        if (e.kind == ExprKind::IndexMin)
          return {0, std::min(a.low, b.low), std::min(a.high, b.high)};
        return {0, std::max(a.low, b.low), std::max(a.high, b.high)};
      }
      case ExprKind::Select: {
        const Slice a = operand(1), b = operand(2);
        if (a.coefficient != b.coefficient) return {};
        return {a.coefficient, std::min(a.low, b.low), std::max(a.high, b.high)};
      }
      default:
        return {};  // any value
    }
  }

 private:
  const Kernel& kernel_;
  int32_t variable_;
};

void collect_adds(const std::vector<Stmt>& body, std::vector<const Stmt*>& adds) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store && s.accumulate && !s.to_local_array) adds.push_back(&s);
    collect_adds(s.body, adds);
  }
}

}  // namespace

bool adds_into_disjoint_slices(const Kernel& kernel, const Stmt& loop) {
  if (loop.kind != StmtKind::Loop) return false;
  std::vector<const Stmt*> adds;
  collect_adds(loop.body, adds);
  SliceReader reader(kernel, loop.loop.variable);
  std::map<int32_t, Slice> slices;  // by buffer: the union of its stores' slices
  for (const Stmt* add : adds) {
    const Slice slice = reader.read(add->index);
    if (slice.coefficient == 0 || slice.low <= -kUnbounded || slice.high >= kUnbounded)
      return false;
    auto [known, fresh] = slices.try_emplace(add->buffer, slice);
    if (fresh) continue;
    if (known->second.coefficient != slice.coefficient) return false;
    known->second.low = std::min(known->second.low, slice.low);
    known->second.high = std::max(known->second.high, slice.high);
  }
  for (const Expr& e : kernel.exprs)
    if (e.kind == ExprKind::Load && slices.count(e.buffer)) return false;
  for (const auto& [buffer, slice] : slices)
    if (slice.high - slice.low >= std::abs(slice.coefficient)) return false;
  return !slices.empty();
}

std::optional<std::pair<int64_t, int64_t>> index_range(const Kernel& kernel, ExprId id) {
  const Slice slice = SliceReader(kernel, -1).read(id);
  if (slice.low <= -kUnbounded || slice.high >= kUnbounded) return std::nullopt;
  return std::make_pair(slice.low, slice.high);
}

}  // namespace kiln::sched
