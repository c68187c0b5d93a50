#include "sched/kernel_builder.h"

#include <algorithm>
#include <limits>

namespace kiln::sched {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

size_t hash_expr(const Expr& e) {
  size_t h = static_cast<size_t>(e.kind) * 1000003u ^ static_cast<size_t>(e.dtype) * 7919u ^
             static_cast<size_t>(e.op) * 31u;
  for (ExprId operand : e.operands) h = h * 1315423911u + static_cast<size_t>(operand);
  h = h * 31 + static_cast<size_t>(e.buffer + 7) * 17 + static_cast<size_t>(e.variable + 3);
  h ^= std::hash<int64_t>()(e.constant.i) ^ (std::hash<double>()(e.constant.f) << 1) ^ e.seed;
  return h;
}

}  // namespace

bool Expr::operator==(const Expr& o) const {
  return kind == o.kind && dtype == o.dtype && op == o.op && operands == o.operands &&
         buffer == o.buffer && variable == o.variable && constant == o.constant && seed == o.seed;
}

bool Range::known() const { return low != kMin && high != kMax; }

KernelBuilder::KernelBuilder(Kernel& kernel) : kernel_(kernel) {
  for (size_t id = 0; id < kernel_.exprs.size(); ++id)
    interned_[hash_expr(kernel_.exprs[id])].push_back(static_cast<ExprId>(id));
}

ExprId KernelBuilder::intern(Expr e) {
  size_t h = hash_expr(e);
  auto& bucket = interned_[h];
  for (ExprId id : bucket)
    if (kernel_.exprs[static_cast<size_t>(id)] == e) return id;
  kernel_.exprs.push_back(std::move(e));
  ExprId id = static_cast<ExprId>(kernel_.exprs.size() - 1);
  bucket.push_back(id);
  return id;
}

int32_t KernelBuilder::new_loop(int64_t extent) {
  kernel_.loop_extents.push_back(extent);
  return static_cast<int32_t>(kernel_.loop_extents.size() - 1);
}

int32_t KernelBuilder::new_local(const std::set<int32_t>& dependencies) {
  kernel_.local_dependencies.emplace_back(dependencies.begin(), dependencies.end());
  return static_cast<int32_t>(kernel_.local_dependencies.size() - 1);
}

ExprId KernelBuilder::constant(Scalar value, DType dtype) {
  Expr e;
  e.kind = ExprKind::Constant;
  e.dtype = dtype;
  if (is_float(dtype) && value.is_integer) value = Scalar::of(static_cast<double>(value.i));
  if (!is_float(dtype) && !value.is_integer) value = Scalar::of_int(static_cast<int64_t>(value.f));
  e.constant = value;
  return intern(e);
}

ExprId KernelBuilder::loop_var(int32_t loop) {
  if (loop_extent(loop) == 1) return index_constant(0);
  Expr e;
  e.kind = ExprKind::LoopVar;
  e.variable = loop;
  return intern(e);
}

ExprId KernelBuilder::local(int32_t reduce_id, DType dtype) {
  Expr e;
  e.kind = ExprKind::Local;
  e.dtype = dtype;
  e.variable = reduce_id;
  return intern(e);
}

ExprId KernelBuilder::load(int32_t buffer, DType dtype, ExprId offset) {
  Expr e;
  e.kind = ExprKind::Load;
  e.dtype = dtype;
  e.buffer = buffer;
  e.operands = {offset};
  return intern(e);
}

ExprId KernelBuilder::elementwise(Op op, DType dtype, std::vector<ExprId> operands) {
  if (op == Op::logical_and && dtype == DType::Bool && operands.size() == 2) {
    // a pad's `inside` where the ranges decide one side (sched/cpu/peel_clamps.h)
    for (size_t k = 0; k < 2; ++k) {
      int64_t known;
      if (expr(operands[k]).dtype != DType::Bool || !is_constant(operands[k], &known)) continue;
      ExprId other = operands[1 - k];
      if (!known) return operands[k];
      if (expr(other).dtype == DType::Bool) return other;
    }
  }
  Expr e;
  e.kind = ExprKind::Elementwise;
  e.dtype = dtype;
  e.op = op;
  e.operands = std::move(operands);
  return intern(e);
}

ExprId KernelBuilder::cast(ExprId value, DType dtype) {
  if (expr(value).dtype == dtype) return value;
  Expr e;
  e.kind = ExprKind::Cast;
  e.dtype = dtype;
  e.operands = {value};
  return intern(e);
}

ExprId KernelBuilder::select(ExprId condition, ExprId if_true, ExprId if_false) {
  int64_t c;
  if (is_constant(condition, &c)) return c ? if_true : if_false;
  if (if_true == if_false) return if_true;
  Expr e;
  e.kind = ExprKind::Select;
  e.dtype = expr(if_true).dtype;
  e.operands = {condition, if_true, if_false};
  return intern(e);
}

ExprId KernelBuilder::random(Op op, DType dtype, uint64_t seed, ExprId flat_index, ExprId key) {
  Expr e;
  e.kind = ExprKind::Random;
  e.dtype = dtype;
  e.op = op;
  e.seed = seed;
  e.operands = {flat_index, key};
  return intern(e);
}

ExprId KernelBuilder::array_load(int32_t array, DType dtype, ExprId index) {
  Expr e;
  e.kind = ExprKind::ArrayLoad;
  e.dtype = dtype;
  e.buffer = array;
  e.operands = {index};
  return intern(e);
}

ExprId KernelBuilder::substitute(ExprId id, const std::map<int32_t, ExprId>& substitution,
                                 std::unordered_map<ExprId, ExprId>* memo) {
  std::unordered_map<ExprId, ExprId> own;
  if (memo == nullptr) memo = &own;
  if (auto found = memo->find(id); found != memo->end()) return found->second;
  Expr e = expr(id);
  ExprId result = id;
  if (e.kind == ExprKind::LoopVar) {
    auto found = substitution.find(e.variable);
    if (found != substitution.end()) result = found->second;
  } else if (!e.operands.empty()) {
    bool changed = false;
    for (ExprId& operand : e.operands) {
      ExprId replaced = substitute(operand, substitution, memo);
      changed |= replaced != operand;
      operand = replaced;
    }
    if (changed) {
      switch (e.kind) {  // re-simplify index arithmetic, clamps and the selects they decide
        case ExprKind::IndexAdd: result = add(e.operands[0], e.operands[1]); break;
        case ExprKind::IndexMul: result = mul_index(e.operands[0], e.operands[1]); break;
        case ExprKind::IndexMin: result = minimum(e.operands[0], e.operands[1]); break;
        case ExprKind::IndexMax: result = maximum(e.operands[0], e.operands[1]); break;
        case ExprKind::IndexFloorDiv:
          result = floordiv(e.operands[0], expr(e.operands[1]).constant.i);
          break;
        case ExprKind::IndexMod: result = mod(e.operands[0], expr(e.operands[1]).constant.i); break;
        case ExprKind::IndexLess: result = less(e.operands[0], e.operands[1]); break;
        case ExprKind::Select: result = select(e.operands[0], e.operands[1], e.operands[2]); break;
        case ExprKind::Elementwise: result = elementwise(e.op, e.dtype, e.operands); break;
        default: result = intern(e);
      }
    }
  }
  (*memo)[id] = result;
  return result;
}

bool KernelBuilder::is_constant(ExprId id, int64_t* value) const {
  const Expr& e = expr(id);
  if (e.kind != ExprKind::Constant || !e.constant.is_integer) return false;
  if (value) *value = e.constant.i;
  return true;
}

// ---- index arithmetic -------------------------------------------------------------------

KernelBuilder::Affine KernelBuilder::affine(ExprId id) const {
  Affine form;
  const Expr& e = expr(id);
  int64_t c;
  if (is_constant(id, &c)) {
    form.constant = c;
  } else if (e.kind == ExprKind::IndexAdd) {
    form = affine(e.operands[0]);
    Affine right = affine(e.operands[1]);
    for (auto [atom, coefficient] : right.terms) form.terms[atom] += coefficient;
    form.constant += right.constant;
  } else if (e.kind == ExprKind::IndexMul && is_constant(e.operands[1], &c)) {
    form = affine(e.operands[0]);
    for (auto& term : form.terms) term.second *= c;
    form.constant *= c;
  } else {
    form.terms[id] = 1;
  }
  std::erase_if(form.terms, [](const auto& term) { return term.second == 0; });
  return form;
}

ExprId KernelBuilder::from_affine(const Affine& form) {
  ExprId result = -1;
  for (auto [atom, coefficient] : form.terms) {
    if (coefficient == 0) continue;
    ExprId term = atom;
    if (coefficient != 1) {
      Expr e;
      e.kind = ExprKind::IndexMul;
      e.operands = {atom, index_constant(coefficient)};
      term = intern(e);
    }
    if (result < 0) {
      result = term;
    } else {
      Expr e;
      e.kind = ExprKind::IndexAdd;
      e.operands = {result, term};
      result = intern(e);
    }
  }
  if (result < 0) return index_constant(form.constant);
  if (form.constant == 0) return result;
  Expr e;
  e.kind = ExprKind::IndexAdd;
  e.operands = {result, index_constant(form.constant)};
  return intern(e);
}

ExprId KernelBuilder::add(ExprId a, ExprId b) {
  Affine left = affine(a), right = affine(b);
  for (auto [atom, coefficient] : right.terms) left.terms[atom] += coefficient;
  left.constant += right.constant;
  fold_division_pairs(left);
  return from_affine(left);
}

// d * (x // d) + x % d == x and d * ((x // d) % m) + x % d == x % (d * m), for any integer x
// (floor division): the div/mod pairs a reshape leaves over a merged axis fold back into its
// flat index where neither is exact on its own (NumPy's x.reshape(n, g, -1).mean(-1) of a
// (n, c, h, w) array reads x at c * h * w + h * w + w of one reduction index over c * h * w).
void KernelBuilder::fold_division_pairs(Affine& form) {
  // x when `id` is x // d (wrap 0) or (x // d) % m (wrap m); else -1.
  auto quotient_of = [&](ExprId id, int64_t d, int64_t* wrap) -> ExprId {
    int64_t divisor = 0;
    *wrap = 0;
    if (expr(id).kind == ExprKind::IndexMod && is_constant(expr(id).operands[1], wrap))
      id = expr(id).operands[0];
    if (expr(id).kind != ExprKind::IndexFloorDiv ||
        !is_constant(expr(id).operands[1], &divisor) || divisor != d)
      return -1;
    return expr(id).operands[0];
  };
  for (bool folded = true; folded;) {
    folded = false;
    for (auto [low, weight] : form.terms) {  // x % d, weighed `weight`
      int64_t d = 0, high_weight = 0;
      if (expr(low).kind != ExprKind::IndexMod || !is_constant(expr(low).operands[1], &d) ||
          __builtin_mul_overflow(weight, d, &high_weight))
        continue;
      const ExprId x = expr(low).operands[0];
      for (auto [high, other_weight] : form.terms) {
        int64_t wrap = 0, d_times_wrap = 0;
        if (other_weight != high_weight || quotient_of(high, d, &wrap) != x ||
            __builtin_mul_overflow(d, wrap, &d_times_wrap))
          continue;
        const Affine whole = affine(wrap == 0 ? x : mod(x, d_times_wrap));
        form.terms.erase(low);
        form.terms.erase(high);
        for (auto [atom, coefficient] : whole.terms) form.terms[atom] += coefficient * weight;
        form.constant += whole.constant * weight;
        std::erase_if(form.terms, [](const auto& term) { return term.second == 0; });
        folded = true;
        break;
      }
      if (folded) break;
    }
  }
}

ExprId KernelBuilder::mul(ExprId a, int64_t factor) {
  Affine form = affine(a);
  for (auto& term : form.terms) term.second *= factor;
  form.constant *= factor;
  return from_affine(form);
}

ExprId KernelBuilder::mul_index(ExprId a, ExprId b) {
  int64_t c;
  if (is_constant(b, &c)) return mul(a, c);
  if (is_constant(a, &c)) return mul(b, c);
  Expr e;
  e.kind = ExprKind::IndexMul;
  e.operands = {a, b};
  return intern(e);
}

namespace {
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }
}  // namespace

// x = divisor * quotient + remainder with every remainder coefficient in [0, divisor). When
// the remainder's range lies in [0, divisor) the division and modulo are exact: this is what
// makes the div/mod of a reshape over contiguous data vanish.
// A divisor <= 0 only arises from a size-0 dimension, whose loops never run: any value will do.
ExprId KernelBuilder::floordiv(ExprId a, int64_t divisor) {
  if (divisor <= 0) return index_constant(0);
  if (divisor == 1) return a;
  Affine form = affine(a), quotient, remainder;
  for (auto [atom, coefficient] : form.terms) {
    quotient.terms[atom] = floor_div(coefficient, divisor);
    remainder.terms[atom] = floor_mod(coefficient, divisor);
  }
  quotient.constant = floor_div(form.constant, divisor);
  remainder.constant = floor_mod(form.constant, divisor);
  std::erase_if(quotient.terms, [](const auto& t) { return t.second == 0; });
  std::erase_if(remainder.terms, [](const auto& t) { return t.second == 0; });
  Range r = range(from_affine(remainder));
  if (r.known() && r.low >= 0 && r.high < divisor) return from_affine(quotient);
  Range whole = range(a);
  if (whole.known() && whole.low >= 0 && whole.high < divisor) return index_constant(0);
  // Not exact, but the multiples of the divisor still come out: (d * q + r) // d == q + r // d.
  // What is left divides only the terms that need it, and pairs with the modulo of the same
  // remainder (fold_division_pairs). Only where no weight is negative: the ranges of the parts
  // then add up to the range of the whole, which bounds checks and clamps are decided by.
  const bool nonnegative = std::all_of(form.terms.begin(), form.terms.end(),
                                       [](const auto& term) { return term.second >= 0; });
  Expr e;
  e.kind = ExprKind::IndexFloorDiv;
  if (nonnegative && !quotient.terms.empty()) {
    e.operands = {from_affine(remainder), index_constant(divisor)};
    quotient.terms[intern(e)] += 1;
    return from_affine(quotient);
  }
  e.operands = {a, index_constant(divisor)};
  return intern(e);
}

ExprId KernelBuilder::mod(ExprId a, int64_t divisor) {
  if (divisor <= 1) return index_constant(0);
  Affine form = affine(a), remainder;
  for (auto [atom, coefficient] : form.terms) remainder.terms[atom] = floor_mod(coefficient, divisor);
  remainder.constant = floor_mod(form.constant, divisor);
  std::erase_if(remainder.terms, [](const auto& t) { return t.second == 0; });
  ExprId reduced = from_affine(remainder);
  Range r = range(reduced);
  if (r.known() && r.low >= 0 && r.high < divisor) return reduced;
  Expr e;
  e.kind = ExprKind::IndexMod;
  e.operands = {reduced, index_constant(divisor)};
  return intern(e);
}

ExprId KernelBuilder::minimum(ExprId a, ExprId b) {
  Range ra = range(a), rb = range(b);
  if (ra.known() && rb.known()) {
    if (ra.high <= rb.low) return a;
    if (rb.high <= ra.low) return b;
  }
  Expr e;
  e.kind = ExprKind::IndexMin;
  e.operands = {a, b};
  return intern(e);
}

ExprId KernelBuilder::maximum(ExprId a, ExprId b) {
  Range ra = range(a), rb = range(b);
  if (ra.known() && rb.known()) {
    if (ra.low >= rb.high) return a;
    if (rb.low >= ra.high) return b;
  }
  Expr e;
  e.kind = ExprKind::IndexMax;
  e.operands = {a, b};
  return intern(e);
}

ExprId KernelBuilder::less(ExprId a, ExprId b) {
  Range ra = range(a), rb = range(b);
  if (ra.known() && rb.known()) {
    if (ra.high < rb.low) return constant(Scalar::of_int(1), DType::Bool);
    if (ra.low >= rb.high) return constant(Scalar::of_int(0), DType::Bool);
  }
  Expr e;
  e.kind = ExprKind::IndexLess;
  e.dtype = DType::Bool;
  e.operands = {a, b};
  return intern(e);
}

bool KernelBuilder::aligned_unit_stride(ExprId id, int32_t loop, int64_t multiple) {
  const Affine form = affine(id);
  bool unit = false;
  for (auto [atom, factor] : form.terms) {
    if (expr(atom).kind == ExprKind::LoopVar && expr(atom).variable == loop)
      unit = factor == 1;
    else if (factor % multiple != 0 || dependencies(atom).count(loop))
      return false;
  }
  return unit && form.constant % multiple == 0;
}

int64_t KernelBuilder::coefficient(ExprId id, int32_t loop) const {
  for (auto [atom, factor] : affine(id).terms)
    if (expr(atom).kind == ExprKind::LoopVar && expr(atom).variable == loop) return factor;
  return 0;
}

Range KernelBuilder::range(ExprId id) const {
  const Expr& e = expr(id);
  auto saturating = [](__int128 v) {
    if (v < kMin) return kMin;
    if (v > kMax) return kMax;
    return static_cast<int64_t>(v);
  };
  switch (e.kind) {
    case ExprKind::Constant:
      if (e.constant.is_integer) return {e.constant.i, e.constant.i};
      break;
    case ExprKind::LoopVar:
      return {0, std::max<int64_t>(0, loop_extent(e.variable) - 1)};
    case ExprKind::IndexAdd: {
      Range a = range(e.operands[0]), b = range(e.operands[1]);
      if (!a.known() || !b.known()) break;
      return {saturating(__int128(a.low) + b.low), saturating(__int128(a.high) + b.high)};
    }
    case ExprKind::IndexMul: {
      Range a = range(e.operands[0]), b = range(e.operands[1]);
      if (!a.known() || !b.known()) break;
      __int128 p[4] = {__int128(a.low) * b.low, __int128(a.low) * b.high,
                       __int128(a.high) * b.low, __int128(a.high) * b.high};
      __int128 lo = p[0], hi = p[0];
      for (auto v : p) lo = v < lo ? v : lo, hi = v > hi ? v : hi;
      return {saturating(lo), saturating(hi)};
    }
    case ExprKind::IndexFloorDiv: {
      Range a = range(e.operands[0]);
      int64_t d = expr(e.operands[1]).constant.i;
      if (!a.known() || d <= 0) break;
      return {floor_div(a.low, d), floor_div(a.high, d)};
    }
    case ExprKind::IndexMod: {
      int64_t d = expr(e.operands[1]).constant.i;
      if (d > 0) return {0, d - 1};
      break;
    }
    case ExprKind::IndexMin: {
      Range a = range(e.operands[0]), b = range(e.operands[1]);
      return {std::min(a.low, b.low), std::min(a.high, b.high)};
    }
    case ExprKind::IndexMax: {
      Range a = range(e.operands[0]), b = range(e.operands[1]);
      return {std::max(a.low, b.low), std::max(a.high, b.high)};
    }
    case ExprKind::Select: {
      Range a = range(e.operands[1]), b = range(e.operands[2]);
      return {std::min(a.low, b.low), std::max(a.high, b.high)};
    }
    // Integer values computed by graph ops (iota + 1 as a scatter index): their range, when
    // it fits the dtype (beyond it they would wrap).
    case ExprKind::Cast:
    case ExprKind::Elementwise: {
      if (!is_integer(e.dtype) || dtype_size(e.dtype) > 8) break;
      Range a = range(e.operands[0]);
      if (!a.known()) break;
      __int128 low = a.low, high = a.high;
      if (e.kind == ExprKind::Elementwise) {
        if ((e.op != Op::add && e.op != Op::sub) || e.operands.size() != 2) break;
        Range b = range(e.operands[1]);
        if (!b.known()) break;
        low = e.op == Op::add ? low + b.low : low - b.high;
        high = e.op == Op::add ? high + b.high : high - b.low;
      }
      int bits = 8 * dtype_size(e.dtype);
      __int128 smallest = is_signed_integer(e.dtype) ? -(__int128(1) << (bits - 1)) : 0;
      __int128 largest = is_signed_integer(e.dtype) ? (__int128(1) << (bits - 1)) - 1
                                                    : (__int128(1) << bits) - 1;
      if (low < smallest || high > largest || high > kMax - 1 || low < kMin + 1) break;
      return {static_cast<int64_t>(low), static_cast<int64_t>(high)};
    }
    default:
      break;
  }
  return {kMin, kMax};
}

const std::set<int32_t>& KernelBuilder::dependencies(ExprId id) {
  auto found = dependency_cache_.find(id);
  if (found != dependency_cache_.end()) return found->second;
  std::set<int32_t> result;
  const Expr& e = expr(id);
  if (e.kind == ExprKind::LoopVar) result.insert(e.variable);
  if (e.kind == ExprKind::Local) {
    const auto& deps = kernel_.local_dependencies[static_cast<size_t>(e.variable)];
    result.insert(deps.begin(), deps.end());
  }
  std::vector<ExprId> operands = e.operands;  // copy: the arena may grow below
  for (ExprId operand : operands) {
    const std::set<int32_t>& inner = dependencies(operand);
    result.insert(inner.begin(), inner.end());
  }
  return dependency_cache_[id] = std::move(result);
}

}  // namespace kiln::sched
