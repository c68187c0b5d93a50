// Builds one Kernel's expression arena: hash-consed expressions (equal expressions get the same
// id, so common subexpressions are shared), integer index arithmetic that simplifies as it is
// built (index_simplify.cpp), and the set of loop variables each expression depends on.
#pragma once
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

struct Range {
  int64_t low, high;  // inclusive; the full int64 range when unknown
  bool known() const;
};

class KernelBuilder {
 public:
  // Works on a new or an existing kernel (later passes add expressions to a scheduled one).
  explicit KernelBuilder(Kernel& kernel);
  Kernel& kernel() { return kernel_; }
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }

  int32_t new_loop(int64_t extent);
  int64_t loop_extent(int32_t loop) const { return kernel_.loop_extents[static_cast<size_t>(loop)]; }
  int32_t new_local(const std::set<int32_t>& dependencies);

  ExprId constant(Scalar value, DType dtype);
  ExprId index_constant(int64_t value) { return constant(Scalar::of_int(value), DType::Int64); }
  ExprId loop_var(int32_t loop);
  ExprId local(int32_t reduce_id, DType dtype);
  ExprId load(int32_t buffer, DType dtype, ExprId offset);
  ExprId elementwise(Op op, DType dtype, std::vector<ExprId> operands);
  ExprId cast(ExprId value, DType dtype);
  ExprId select(ExprId condition, ExprId if_true, ExprId if_false);
  ExprId random(Op op, DType dtype, uint64_t seed, ExprId flat_index, ExprId key);
  ExprId array_load(int32_t array, DType dtype, ExprId index);
  // A copy of `id` with loop variables replaced as `substitution` says (`memo`: results of
  // earlier calls with the same substitution, shared subexpressions rewritten once); index
  // arithmetic, clamps, comparisons and selects are simplified again on the new ranges.
  ExprId substitute(ExprId id, const std::map<int32_t, ExprId>& substitution,
                    std::unordered_map<ExprId, ExprId>* memo = nullptr);

  // Index arithmetic (int64), simplified on construction (index_simplify.cpp).
  ExprId add(ExprId a, ExprId b);
  ExprId mul(ExprId a, int64_t factor);
  ExprId mul_index(ExprId a, ExprId b);  // both operands index expressions
  ExprId floordiv(ExprId a, int64_t divisor);
  ExprId mod(ExprId a, int64_t divisor);
  ExprId minimum(ExprId a, ExprId b);
  ExprId maximum(ExprId a, ExprId b);
  ExprId less(ExprId a, ExprId b);

  Range range(ExprId id) const;
  // The coefficient of loop variable `loop` in an index expression (0 when absent or when the
  // expression is not affine in it).
  int64_t coefficient(ExprId id, int32_t loop) const;
  // Whether index `id` steps by 1 with loop `loop` and is a multiple of `multiple` where that
  // loop's variable is: `multiple` consecutive iterations from a multiple of it read one
  // aligned run of `multiple` elements (a 16-byte vector access on the GPU).
  bool aligned_unit_stride(ExprId id, int32_t loop, int64_t multiple);
  // Loop variables an expression depends on (through Locals too).
  const std::set<int32_t>& dependencies(ExprId id);
  bool is_constant(ExprId id, int64_t* value = nullptr) const;

 private:
  ExprId intern(Expr expr);
  // An index expression as sum(coefficient * atom) + constant; atoms are non-affine ids.
  struct Affine {
    std::map<ExprId, int64_t> terms;
    int64_t constant = 0;
  };
  Affine affine(ExprId id) const;
  ExprId from_affine(const Affine& form);
  void fold_division_pairs(Affine& form);

  Kernel& kernel_;
  std::unordered_map<size_t, std::vector<ExprId>> interned_;
  std::unordered_map<ExprId, std::set<int32_t>> dependency_cache_;
};

}  // namespace kiln::sched
