// The op table generated from op_list.h: names, kinds, arities, type rules and expression text.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/ops.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

TEST(Ops, EveryOpHasAUniqueNameThatRoundTrips) {
  std::set<std::string_view> names;
  for (int i = 0; i < static_cast<int>(Op::op_count); ++i) {
    Op op = static_cast<Op>(i);
    EXPECT_FALSE(op_name(op).empty());
    EXPECT_TRUE(names.insert(op_name(op)).second) << op_name(op);
    EXPECT_EQ(op_from_name(op_name(op)), op);
  }
  EXPECT_THROW(op_from_name("softmax"), Error);
}

TEST(Ops, ElementwiseEntries) {
  const OpInfo& add = op_info(Op::add);
  EXPECT_EQ(add.name, "add");
  EXPECT_EQ(add.kind, OpKind::Binary);
  EXPECT_EQ(add.arity, 2);
  EXPECT_EQ(add.accepts, Accepts::NumericOrComplex);
  EXPECT_EQ(add.expression, "kiln_add(a, b)");  // wraps signed overflow on every target
  EXPECT_EQ(op_info(Op::floordiv).expression, "kiln_floordiv(a, b)");
  EXPECT_EQ(op_info(Op::exp).arity, 1);
  EXPECT_EQ(op_info(Op::exp).accepts, Accepts::FloatOrComplex);
  EXPECT_EQ(op_info(Op::exp2).accepts, Accepts::Float);
  EXPECT_EQ(op_info(Op::isinf).expression, "(a == a) && (a - a != a - a)");
  EXPECT_EQ(op_info(Op::lt).result, ResultType::Bool);
  EXPECT_EQ(op_info(Op::where).kind, OpKind::Ternary);
  EXPECT_EQ(op_info(Op::where).arity, 3);
  EXPECT_EQ(op_info(Op::where).expression, "kiln_select(a, b, c)");
  EXPECT_TRUE(is_elementwise(Op::where));
  EXPECT_FALSE(is_elementwise(Op::sum));
}

TEST(Ops, ReductionScanAndStructuralEntries) {
  const OpInfo& sum = op_info(Op::sum);
  EXPECT_EQ(sum.kind, OpKind::Reduce);
  EXPECT_EQ(sum.arity, 1);
  EXPECT_EQ(sum.accumulator, Accumulator::Plain);
  EXPECT_EQ(sum.identity, "kiln_zero<T>()");
  EXPECT_EQ(sum.expression, "kiln_add(acc, x)");
  EXPECT_EQ(op_info(Op::argmax).result, ResultType::Int64);
  EXPECT_EQ(op_info(Op::argmax).accumulator, Accumulator::ArgIndex);
  EXPECT_EQ(op_info(Op::var).accumulator, Accumulator::Welford);
  EXPECT_EQ(op_info(Op::all).identity, "true");
  EXPECT_TRUE(is_reduction(Op::argmin));
  EXPECT_TRUE(is_scan(Op::cumprod));
  EXPECT_EQ(op_info(Op::cumsum).identity, "kiln_zero<T>()");
  EXPECT_EQ(op_info(Op::concat).arity, -1);
  EXPECT_EQ(op_info(Op::scatter).arity, 3);
  EXPECT_EQ(op_info(Op::parameter).arity, 0);
  EXPECT_EQ(op_info(Op::matmul).kind, OpKind::Structural);
}

}  // namespace
}  // namespace kiln::ir

namespace kiln::ir {
namespace {

TEST(Ops, ElementwiseColumnsAreComplete) {
  std::set<std::string_view> public_names;
  for (int i = 0; i < static_cast<int>(Op::op_count); ++i) {
    const OpInfo& info = op_info(static_cast<Op>(i));
    EXPECT_FALSE(info.public_name.empty()) << info.name;
    EXPECT_TRUE(info.derivative.empty()) << info.name << ": autodiff is not built yet";
    if (!is_elementwise(static_cast<Op>(i))) continue;
    EXPECT_TRUE(public_names.insert(info.public_name).second) << info.public_name;
    // Float-only math promotes integers; what keeps dtypes accepts integers.
    if (info.accepts == Accepts::Float && info.promotion == Promotion::Keep)
      ADD_FAILURE() << info.name << " accepts only floats but does not promote";
  }
  EXPECT_EQ(op_info(Op::asin).public_name, "arcsin");
  EXPECT_EQ(op_info(Op::div).promotion, Promotion::Float64);
  EXPECT_EQ(op_info(Op::floor).promotion, Promotion::BoolToFloat);
  EXPECT_EQ(op_info(Op::add).cost, Cost::Cheap);
  EXPECT_EQ(op_info(Op::div).cost, Cost::Costly);
  EXPECT_EQ(op_info(Op::exp).cost, Cost::Call);
  EXPECT_EQ(op_info(Op::log).domain, FuzzDomain::Positive);
  EXPECT_EQ(op_info(Op::acosh).domain, FuzzDomain::AboveOne);
}

}  // namespace
}  // namespace kiln::ir
