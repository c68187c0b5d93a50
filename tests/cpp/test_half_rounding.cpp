// float16 and bfloat16 values round to their dtype after every operation, as the interpreter
// (and NumPy, and eager PyTorch) computes them, even inside one fused kernel: the compiled
// results must equal the interpreter's bit for bit. Kept in float from load to store, a chain
// rounds once at the end (about half of these elements differed by an ulp or more).
#include <gtest/gtest.h>

#include "compile_test_util.h"

namespace kiln::test {
namespace {

using ir::Op;

const Tolerance kExact = {0, 0, 0};

void check_chains_round_each_step(DType dtype) {
  GraphCase c;
  auto x = c.input(make_array(dtype, {64, 33}, pseudo_random(64 * 33, -4, 4, 1)));
  auto y = c.input(make_array(dtype, {64, 33}, pseudo_random(64 * 33, -4, 4, 2)));
  ir::Builder& b = c.builder;
  auto third = b.constant(ir::Scalar::of(1.0 / 3.0), dtype);  // no float16 is 1/3
  auto chain = b.binary(Op::sub, b.binary(Op::mul, b.binary(Op::add, b.binary(Op::mul, x, y), x), y),
                        b.binary(Op::mul, x, third));
  c.output(chain, "x * y + x, times y, minus x / 3", kExact);
  c.output(b.unary(Op::exp, b.binary(Op::mul, x, y)), "exp(x * y)", kExact);
  // a reduction's result is a value of the dtype too, read in the same kernel
  auto row_max = b.reduce(Op::max, b.binary(Op::mul, x, y), {1}, true);
  c.output(b.binary(Op::sub, b.binary(Op::mul, x, y), row_max), "x * y - its row max", kExact);
  c.check();
}

TEST(HalfRounding, Float16OperationsRoundOneByOne) { check_chains_round_each_step(DType::Float16); }

TEST(HalfRounding, BFloat16OperationsRoundOneByOne) {
  check_chains_round_each_step(DType::BFloat16);
}

}  // namespace
}  // namespace kiln::test
