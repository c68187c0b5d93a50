// The canonical text: exact lines for known graphs, stability, and that different graphs (down
// to a float's last bit or one byte of constant data) print differently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/builder.h"
#include "ir/printer.h"

namespace kiln::ir {
namespace {

TEST(Printer, ExactText) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {1024, 640});
  ValueId y = builder.parameter(DType::Float32, {640});
  ValueId sum = builder.binary(Op::add, x, y);
  ValueId reduced = builder.reduce(Op::sum, sum, {1}, true);
  graph.set_outputs({reduced, sum});
  EXPECT_EQ(print_graph(graph),
            "%0 = parameter() : float32(1024, 640)\n"
            "%1 = parameter() {index=1} : float32(640,)\n"
            "%2 = broadcast(%1) : float32(1024, 640)\n"
            "%3 = add(%0, %2) : float32(1024, 640)\n"
            "%4 = sum(%3) {axes=[1], keepdims=true} : float32(1024, 1)\n"
            "return %4, %3\n");
}

TEST(Printer, AttributesAndLocations) {
  Graph graph;
  Builder builder(graph);
  builder.set_location("model.py:7");
  ValueId x = builder.parameter(DType::Int64, {4, 3});
  ValueId p = builder.pad(x, {1, 0}, {0, 2}, PadMode::Edge);
  ValueId s = builder.slice(p, {4, 0}, {0, 5}, {-2, 1});
  ValueId t = builder.permute(s, {1, 0});
  ValueId c = builder.constant(Scalar::of_int(-3), DType::Int64, {});
  ValueId r = builder.random_uniform(DType::Float64, {2}, 42);
  ValueId v = builder.reduce(Op::var, builder.cast(x, DType::Float32), {0}, false, 1);
  EXPECT_EQ(print_attrs(graph.node(p)), "{pad_low=[1, 0], pad_high=[0, 2], pad_mode=edge}");
  EXPECT_EQ(print_attrs(graph.node(s)), "{starts=[4, 0], steps=[-2, 1]}");
  EXPECT_EQ(print_node(graph, t), "%3 = permute(%2) {permutation=[1, 0]} : int64(5, 2)");
  EXPECT_EQ(print_node(graph, c), "%4 = constant() {scalar=-3} : int64()");
  EXPECT_EQ(print_attrs(graph.node(r)), "{seed=42}");
  EXPECT_EQ(print_attrs(graph.node(v)), "{axes=[0], ddof=1}");
  EXPECT_EQ(print_node(graph, x, true), "%0 = parameter() : int64(4, 3)  # model.py:7");
  EXPECT_EQ(print_graph(graph).find("model.py"), std::string::npos);
  EXPECT_NE(print_graph(graph, true).find("  # model.py:7"), std::string::npos);
}

std::string constant_text(Scalar value, DType dtype) {
  Graph graph;
  Builder builder(graph);
  return print_node(graph, builder.constant(value, dtype));
}

TEST(Printer, ScalarsAreExact) {
  EXPECT_EQ(constant_text(Scalar::of(0.1), DType::Float64),
            "%0 = constant() {scalar=0.1} : float64()");
  EXPECT_EQ(constant_text(Scalar::of(3.0), DType::Float64),
            "%0 = constant() {scalar=3.0} : float64()");
  EXPECT_EQ(constant_text(Scalar::of(1e300), DType::Float64),
            "%0 = constant() {scalar=1e+300} : float64()");
  EXPECT_EQ(constant_text(Scalar::of(-INFINITY), DType::Float32),
            "%0 = constant() {scalar=-inf} : float32()");
  EXPECT_EQ(constant_text(Scalar::of(NAN), DType::Float32),
            "%0 = constant() {scalar=nan} : float32()");
  EXPECT_EQ(constant_text(Scalar::of(-0.0), DType::Float32),
            "%0 = constant() {scalar=-0.0} : float32()");
  EXPECT_EQ(constant_text(Scalar::of(0.0), DType::Float32), "%0 = constant() : float32()");
  EXPECT_EQ(constant_text(Scalar::of_int(0), DType::Int32),
            "%0 = constant() {scalar=0} : int32()");
  // Neighbouring doubles differ in the text.
  double next = std::nextafter(0.1, 1.0);
  EXPECT_NE(constant_text(Scalar::of(next), DType::Float64),
            constant_text(Scalar::of(0.1), DType::Float64));
  EXPECT_EQ(constant_text(Scalar::of_int(std::numeric_limits<int64_t>::min()), DType::Int64),
            "%0 = constant() {scalar=-9223372036854775808} : int64()");
}

std::string array_text(std::vector<uint8_t> bytes) {
  Graph graph;
  Builder builder(graph);
  return print_node(graph, builder.constant_array(std::move(bytes), DType::UInt8, {4}));
}

TEST(Printer, ConstantArraysAsHash) {
  std::string text = array_text({1, 2, 3, 4});
  EXPECT_EQ(text.rfind("%0 = constant_array() {data=<4 bytes, fnv1a ", 0), 0u) << text;
  EXPECT_EQ(text, array_text({1, 2, 3, 4}));
  EXPECT_NE(text, array_text({1, 2, 3, 5}));
  EXPECT_NE(text, array_text({4, 3, 2, 1}));
  EXPECT_LT(array_text(std::vector<uint8_t>(4, 7)).size(), 100u);
}

TEST(Printer, DistinctGraphsPrintDifferently) {
  auto text_of = [](Op op, DType dtype, Shape shape, bool keepdims) {
    Graph graph;
    Builder builder(graph);
    ValueId x = builder.parameter(dtype, shape);
    ValueId y = builder.unary(op, x);
    graph.set_outputs({builder.reduce(Op::sum, y, {0}, keepdims)});
    return print_graph(graph);
  };
  std::string base = text_of(Op::exp, DType::Float32, {3, 4}, false);
  EXPECT_EQ(base, text_of(Op::exp, DType::Float32, {3, 4}, false));  // stable
  EXPECT_NE(base, text_of(Op::log, DType::Float32, {3, 4}, false));
  EXPECT_NE(base, text_of(Op::exp, DType::Float64, {3, 4}, false));
  EXPECT_NE(base, text_of(Op::exp, DType::Float32, {3, 5}, false));
  EXPECT_NE(base, text_of(Op::exp, DType::Float32, {3, 4}, true));
  Graph a;
  Builder builder_a(a);
  ValueId p = builder_a.parameter(DType::Float32, {2});
  ValueId q = builder_a.parameter(DType::Float32, {2});
  builder_a.binary(Op::sub, p, q);
  Graph b;
  Builder builder_b(b);
  ValueId r = builder_b.parameter(DType::Float32, {2});
  ValueId s = builder_b.parameter(DType::Float32, {2});
  builder_b.binary(Op::sub, s, r);
  EXPECT_NE(print_graph(a), print_graph(b));  // operand order matters
  a.set_outputs({2});
  EXPECT_NE(print_graph(a), print_graph(b));  // outputs are part of the graph
}

}  // namespace
}  // namespace kiln::ir
