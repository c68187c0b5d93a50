// The attention op (op_list.h): the library kernel (src/extern/attention.h: blocks of query
// rows and of 512 keys) against the reference interpreter, and the interpreter against the same
// attention written with matmul, max, exp and sum, over the shapes that exercise the kernel's
// edges: several query and key blocks, causal masks, float and bool masks, rows that see no
// key, grouped heads, operands read through strided views, float64.
#include <gtest/gtest.h>

#include "compile_test_util.h"
#include "ir/interpreter.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

struct AttentionCase {
  int64_t batch, heads, key_heads, length, keys, features, width;
  enum class Mask { None, Float, Bool } mask = Mask::None;
  bool causal = false;
  bool strided = false;  // q, k and v as permuted views of (batch, length, heads, features)
  DType dtype = DType::Float32;
  bool columns = false;  // k stored (batch, heads, features, keys): packed before its products
};

// q, k, v (and the mask) as graph inputs; the attention op's result and the decomposition's.
std::pair<ValueId, ValueId> build(GraphCase& graph, const AttentionCase& c) {
  ir::Builder& b = graph.builder;
  uint64_t seed = 40;
  auto operand = [&](int64_t heads, int64_t rows, int64_t columns) {
    const std::vector<int64_t> stored =
        c.strided ? std::vector<int64_t>{c.batch, rows, heads, columns}
                  : std::vector<int64_t>{c.batch, heads, rows, columns};
    ValueId x = graph.input(make_array(c.dtype, stored, pseudo_random(
        static_cast<size_t>(c.batch * rows * heads * columns), -1.5, 1.5, seed++)));
    return c.strided ? b.permute(x, {0, 2, 1, 3}) : x;
  };
  ValueId q = operand(c.heads, c.length, c.features);
  ValueId k = c.columns ? b.permute(operand(c.key_heads, c.features, c.keys), {0, 1, 3, 2})
                        : operand(c.key_heads, c.keys, c.features);
  ValueId v = operand(c.key_heads, c.keys, c.width);
  const ir::Shape scores = ir::from_ints({c.batch, c.heads, c.length, c.keys});
  std::optional<ValueId> mask;
  if (c.mask != AttentionCase::Mask::None) {
    // One (length, keys) mask broadcast over batch and heads; every third row sees no key.
    std::vector<double> values(static_cast<size_t>(c.length * c.keys));
    for (int64_t i = 0; i < c.length; ++i)
      for (int64_t j = 0; j < c.keys; ++j) {
        const bool keep = i % 3 != 1 && (i + 2 * j) % 5 != 0;
        values[static_cast<size_t>(i * c.keys + j)] =
            c.mask == AttentionCase::Mask::Bool ? keep : keep ? 0.25 * ((i + j) % 4) : -INFINITY;
      }
    const DType dtype = c.mask == AttentionCase::Mask::Bool ? DType::Bool : c.dtype;
    mask = b.broadcast(graph.input(make_array(dtype, {1, 1, c.length, c.keys}, values)), scores);
  }
  ValueId fused = b.attention(q, k, v, mask, c.causal);
  // The decomposition: scores, masked; softmax with 0 for rows without a key; product with v.
  const int64_t group = c.heads / c.key_heads;
  auto by_query_head = [&](ValueId x, int64_t columns) {  // (b, hk, s, n) -> (b, h, s, n)
    ValueId wide = b.broadcast(
        b.reshape(x, ir::from_ints({c.batch, c.key_heads, 1, c.keys, columns})),
                               ir::from_ints({c.batch, c.key_heads, group, c.keys, columns}));
    return b.reshape(wide, ir::from_ints({c.batch, c.heads, c.keys, columns}));
  };
  ValueId s = b.matmul(q, b.permute(by_query_head(k, c.features), {0, 1, 3, 2}));
  ValueId minus_infinity = b.constant(ir::Scalar::of(-INFINITY), c.dtype);
  if (c.mask == AttentionCase::Mask::Bool) s = b.where(*mask, s, minus_infinity);
  if (c.mask == AttentionCase::Mask::Float) s = b.binary(Op::add, s, *mask);
  if (c.causal) {
    ValueId rows = b.iota(DType::Int64, scores, 2), columns = b.iota(DType::Int64, scores, 3);
    s = b.where(b.binary(Op::le, columns, rows), s, minus_infinity);
  }
  ValueId zero = b.constant(ir::Scalar::of(0), c.dtype);
  ValueId top = b.reduce(Op::max, s, {3}, true);
  ValueId shift = b.where(b.unary(Op::isfinite, top), top, zero);
  ValueId weights = b.unary(Op::exp, b.binary(Op::sub, s, shift));
  ValueId total = b.reduce(Op::sum, weights, {3}, true);
  ValueId one = b.constant(ir::Scalar::of(1), c.dtype);
  ValueId divisor = b.where(b.binary(Op::eq, total, zero), one, total);
  ValueId decomposed = b.binary(Op::div, b.matmul(weights, by_query_head(v, c.width)), divisor);
  return {fused, decomposed};
}

void check(const AttentionCase& c) {
  GraphCase graph;
  auto [fused, decomposed] = build(graph, c);
  const Tolerance tolerance = c.dtype == DType::Float64 ? Tolerance{1e-12, 1e-12, 0}
                                                        : Tolerance{2e-5, 2e-6, 0};
  graph.output(fused, "attention", tolerance);
  graph.output(decomposed, "decomposition", tolerance);
  graph.check();  // each against the interpreter
  std::vector<Array> reference = ir::interpret(graph.graph, graph.inputs);
  expect_array_matches(reference[0], reference[1], tolerance, "interpreter's attention",
                       graph.inputs);
}

TEST(Attention, BlocksOfQueriesAndKeys) { check({1, 2, 2, 130, 1100, 8, 8}); }
TEST(Attention, FloatMaskWithRowsThatSeeNoKey) {
  check({2, 2, 2, 70, 600, 4, 6, AttentionCase::Mask::Float});
}
TEST(Attention, BoolMask) { check({1, 3, 3, 66, 520, 5, 3, AttentionCase::Mask::Bool}); }
TEST(Attention, CausalSkipsTheBlocksAboveTheDiagonal) {
  check({1, 2, 2, 600, 600, 8, 8, AttentionCase::Mask::None, true});
  check({1, 1, 1, 40, 700, 4, 4, AttentionCase::Mask::Float, true});  // fewer queries than keys
}
TEST(Attention, GroupedHeadsStridedOperandsAndFloat64) {
  check({2, 4, 2, 65, 513, 8, 8, AttentionCase::Mask::None, false, true});
  check({1, 6, 3, 20, 30, 7, 5, AttentionCase::Mask::Bool, true, true, DType::Float64});
  check({3, 2, 1, 1, 90, 16, 16, AttentionCase::Mask::Float, false, true});  // one query row
  check({1, 2, 2, 70, 600, 8, 4, AttentionCase::Mask::Bool, false, false, DType::Float32, true});
}

TEST(Attention, OperandsThatDoNotFitAreUserErrors) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId q = b.parameter(DType::Float32, ir::from_ints({1, 4, 8, 16}));
  ValueId k = b.parameter(DType::Float32, ir::from_ints({1, 3, 8, 16}));  // 3 does not divide 4
  ValueId v = b.parameter(DType::Float32, ir::from_ints({1, 3, 8, 16}));
  ValueId integers = b.parameter(DType::Int32, ir::from_ints({1, 4, 8, 16}));
  EXPECT_THROW(b.attention(q, k, v, std::nullopt, false), Error);
  EXPECT_THROW(b.attention(integers, integers, integers, std::nullopt, false), Error);
  ValueId k4 = b.parameter(DType::Float32, ir::from_ints({1, 4, 8, 16}));
  ValueId wrong_mask = b.parameter(DType::Int8, ir::from_ints({1, 4, 8, 8}));
  EXPECT_THROW(b.attention(q, k4, k4, wrong_mask, false), Error);
  try {
    b.attention(q, k, v, std::nullopt, false);
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("attention"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kiln::test
