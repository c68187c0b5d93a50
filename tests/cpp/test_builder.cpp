// The builder's type rules and its errors: result shapes and dtypes by hand, and every error
// kind with the op, the location and the offending shapes or dtypes in its message.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>

#include "ir/builder.h"

namespace kiln::ir {
namespace {

void expect_error(const std::function<void()>& build, ErrorKind kind,
                  std::initializer_list<std::string> fragments) {
  try {
    build();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    std::string message = error.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' missing from: " << message;
    }
  }
}

class BuilderTest : public ::testing::Test {
 protected:
  BuilderTest() : builder(graph) { builder.set_location("model.cpp:12"); }
  const Node& node(ValueId id) const { return graph.node(id); }
  Graph graph;
  Builder builder;
};

TEST_F(BuilderTest, ParametersAreNumberedInOrder) {
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  ValueId y = builder.parameter(DType::Int64, {});
  EXPECT_EQ(node(x).attrs.index, 0);
  EXPECT_EQ(node(y).attrs.index, 1);
  EXPECT_EQ(graph.inputs(), (std::vector<ValueId>{x, y}));
  EXPECT_EQ(node(x).location, "model.cpp:12");
}

// Decompositions pass a node's shape by reference to a builder call that adds nodes
// (b.broadcast(b.constant(...), b.node(x).shape): np.signbit crashed at some graph sizes), so
// adding nodes must leave earlier nodes where they are.
TEST_F(BuilderTest, AddingNodesKeepsEarlierNodesInPlace) {
  ValueId x = builder.parameter(DType::Float64, {6, 5});
  const Node* first = &node(x);
  const Shape* shape = &node(x).shape;
  ValueId last = x;
  for (int n = 0; n < 1000; ++n) last = builder.unary(Op::neg, last);
  EXPECT_EQ(&node(x), first);
  EXPECT_EQ(&node(x).shape, shape);
  ValueId one = builder.constant(Scalar::of(1.0), DType::Float64);
  EXPECT_EQ(node(builder.broadcast(one, node(last).shape)).shape, (Shape{6, 5}));
}

TEST_F(BuilderTest, BinaryBroadcastsExplicitly) {
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  ValueId y = builder.parameter(DType::Float32, {4});
  ValueId sum = builder.binary(Op::add, x, y);
  EXPECT_EQ(node(sum).shape, (Shape{3, 4}));
  EXPECT_EQ(node(sum).dtype, DType::Float32);
  ASSERT_EQ(node(sum).inputs.size(), 2u);
  EXPECT_EQ(node(sum).inputs[0], x);  // already the result shape: no broadcast node
  const Node& widened = node(node(sum).inputs[1]);
  EXPECT_EQ(widened.op, Op::broadcast);
  EXPECT_EQ(widened.shape, (Shape{3, 4}));
  EXPECT_EQ(widened.inputs, (std::vector<ValueId>{y}));
  EXPECT_EQ(graph.size(), 4);
}

TEST_F(BuilderTest, BothOperandsBroadcast) {
  ValueId x = builder.parameter(DType::Int32, {3, 1});
  ValueId y = builder.parameter(DType::Int32, {1, 5});
  ValueId less = builder.binary(Op::lt, x, y);
  EXPECT_EQ(node(less).shape, (Shape{3, 5}));
  EXPECT_EQ(node(less).dtype, DType::Bool);
  for (ValueId input : node(less).inputs) EXPECT_EQ(node(input).shape, (Shape{3, 5}));
}

TEST_F(BuilderTest, BroadcastErrorNamesOpLocationAndShapes) {
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  ValueId y = builder.parameter(DType::Float32, {5});
  expect_error([&] { builder.binary(Op::add, x, y); }, ErrorKind::Value,
               {"kiln: add at model.cpp:12: operands could not be broadcast together with shapes "
                "(3, 4) (5,)"});
}

TEST_F(BuilderTest, DtypeErrors) {
  ValueId f = builder.parameter(DType::Float32, {3});
  ValueId i = builder.parameter(DType::Int32, {3});
  ValueId b = builder.parameter(DType::Bool, {3});
  expect_error([&] { builder.binary(Op::mul, f, i); }, ErrorKind::Type,
               {"mul", "model.cpp:12", "float32", "int32"});
  expect_error([&] { builder.unary(Op::exp, i); }, ErrorKind::Type,
               {"exp", "model.cpp:12", "int32", "floating-point"});
  expect_error([&] { builder.binary(Op::add, b, b); }, ErrorKind::Type, {"add", "bool"});
  expect_error([&] { builder.binary(Op::bitwise_and, f, f); }, ErrorKind::Type,
               {"bitwise_and", "float32"});
  expect_error([&] { builder.binary(Op::shift_left, b, b); }, ErrorKind::Type, {"shift_left"});
  expect_error([&] { builder.where(f, f, f); }, ErrorKind::Type, {"where", "bool", "float32"});
  expect_error([&] { builder.reduce(Op::var, i, {}, false); }, ErrorKind::Type, {"var", "int32"});
  expect_error([&] { builder.unary(Op::add, f); }, ErrorKind::Value, {"add", "unary"});
  // Accepted combinations build.
  EXPECT_EQ(node(builder.binary(Op::bitwise_and, b, b)).dtype, DType::Bool);
  EXPECT_EQ(node(builder.unary(Op::isnan, i)).dtype, DType::Bool);
  EXPECT_EQ(node(builder.binary(Op::maximum, b, b)).dtype, DType::Bool);
}

TEST_F(BuilderTest, WhereBroadcastsAllThree) {
  ValueId condition = builder.parameter(DType::Bool, {2, 1, 1});
  ValueId a = builder.parameter(DType::Float64, {3, 1});
  ValueId b = builder.parameter(DType::Float64, {4});
  ValueId chosen = builder.where(condition, a, b);
  EXPECT_EQ(node(chosen).shape, (Shape{2, 3, 4}));
  EXPECT_EQ(node(chosen).dtype, DType::Float64);
  for (ValueId input : node(chosen).inputs) EXPECT_EQ(node(input).shape, (Shape{2, 3, 4}));
  ValueId wrong = builder.parameter(DType::Float64, {5, 3});
  expect_error([&] { builder.where(condition, a, wrong); }, ErrorKind::Value,
               {"where", "(2, 1, 1)", "(3, 1)", "(5, 3)"});
}

TEST_F(BuilderTest, Reductions) {
  ValueId x = builder.parameter(DType::Float32, {2, 3, 4});
  ValueId s = builder.reduce(Op::sum, x, {-1, 0}, false);
  EXPECT_EQ(node(s).attrs.axes, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(node(s).shape, (Shape{3}));
  ValueId k = builder.reduce(Op::max, x, {1}, true);
  EXPECT_EQ(node(k).shape, (Shape{2, 1, 4}));
  EXPECT_TRUE(node(k).attrs.keepdims);
  ValueId all = builder.reduce(Op::prod, x, {}, false);
  EXPECT_EQ(node(all).attrs.axes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(node(all).shape, (Shape{}));
  ValueId all_kept = builder.reduce(Op::sum, x, {}, true);
  EXPECT_EQ(node(all_kept).shape, (Shape{1, 1, 1}));
  ValueId any = builder.reduce(Op::any, x, {1}, false);
  EXPECT_EQ(node(any).dtype, DType::Bool);
  ValueId arg = builder.reduce(Op::argmax, x, {1}, false);
  EXPECT_EQ(node(arg).dtype, DType::Int64);
  EXPECT_EQ(node(arg).shape, (Shape{2, 4}));
  ValueId variance = builder.reduce(Op::var, x, {2}, false, 1);
  EXPECT_EQ(node(variance).attrs.ddof, 1);
  EXPECT_EQ(node(builder.reduce(Op::sum, x, {2}, false, 1)).attrs.ddof, 0);
}

TEST_F(BuilderTest, ReductionErrors) {
  ValueId x = builder.parameter(DType::Float32, {2, 3});
  expect_error([&] { builder.reduce(Op::sum, x, {2}, false); }, ErrorKind::Axis,
               {"sum", "model.cpp:12", "axis 2", "(2, 3)"});
  expect_error([&] { builder.reduce(Op::sum, x, {1, -1}, false); }, ErrorKind::Value,
               {"sum", "duplicate"});
  expect_error([&] { builder.reduce(Op::argmin, x, {0, 1}, false); }, ErrorKind::Value,
               {"argmin", "(2, 3)"});
  ValueId empty = builder.parameter(DType::Float32, {0, 3});
  expect_error([&] { builder.reduce(Op::max, empty, {0}, false); }, ErrorKind::Value,
               {"max", "(0, 3)", "identity"});
  EXPECT_EQ(node(builder.reduce(Op::sum, empty, {0}, false)).shape, (Shape{3}));
  expect_error([&] { builder.reduce(Op::add, x, {}, false); }, ErrorKind::Value, {"add"});
}

TEST_F(BuilderTest, Scan) {
  ValueId x = builder.parameter(DType::Int64, {2, 3});
  ValueId c = builder.scan(Op::cumsum, x, -1);
  EXPECT_EQ(node(c).attrs.axis, 1);
  EXPECT_EQ(node(c).shape, (Shape{2, 3}));
  expect_error([&] { builder.scan(Op::cumprod, x, 2); }, ErrorKind::Axis, {"cumprod", "(2, 3)"});
}

TEST_F(BuilderTest, Reshape) {
  ValueId x = builder.parameter(DType::Float32, {2, 3, 4});
  EXPECT_EQ(node(builder.reshape(x, {4, -1})).shape, (Shape{4, 6}));
  EXPECT_EQ(node(builder.reshape(x, {24})).shape, (Shape{24}));
  expect_error([&] { builder.reshape(x, {5, -1}); }, ErrorKind::Value,
               {"reshape", "model.cpp:12", "size 24", "(2, 3, 4)", "(5, -1)"});
  expect_error([&] { builder.reshape(x, {-1, -1}); }, ErrorKind::Value, {"reshape", "one unknown"});
  expect_error([&] { builder.reshape(x, {5, 5}); }, ErrorKind::Value, {"(5, 5)"});
  ValueId empty = builder.parameter(DType::Float32, {0, 3});
  EXPECT_EQ(node(builder.reshape(empty, {3, 0})).shape, (Shape{3, 0}));
  expect_error([&] { builder.reshape(empty, {0, -1}); }, ErrorKind::Value, {"reshape"});
}

TEST_F(BuilderTest, Permute) {
  ValueId x = builder.parameter(DType::Float32, {2, 3, 4});
  ValueId p = builder.permute(x, {2, 0, -2});
  EXPECT_EQ(node(p).shape, (Shape{4, 2, 3}));
  EXPECT_EQ(node(p).attrs.permutation, (std::vector<int64_t>{2, 0, 1}));
  expect_error([&] { builder.permute(x, {0, 1}); }, ErrorKind::Value, {"permute", "(2, 3, 4)"});
  expect_error([&] { builder.permute(x, {0, 1, 1}); }, ErrorKind::Value, {"repeated"});
  expect_error([&] { builder.permute(x, {0, 1, 3}); }, ErrorKind::Axis, {"permute"});
}

TEST_F(BuilderTest, BroadcastTo) {
  ValueId x = builder.parameter(DType::Float32, {3, 1});
  EXPECT_EQ(node(builder.broadcast(x, {2, 3, 5})).shape, (Shape{2, 3, 5}));
  expect_error([&] { builder.broadcast(x, {4, 5}); }, ErrorKind::Value,
               {"broadcast", "model.cpp:12", "(3, 1)", "(4, 5)"});
  expect_error([&] { builder.broadcast(x, {1}); }, ErrorKind::Value, {"(3, 1)", "(1,)"});
}

TEST_F(BuilderTest, SliceFollowsPython) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  ValueId x = builder.parameter(DType::Float32, {10, 5, 4});
  // x[1:8:3, ::-1, -100:100]
  ValueId s = builder.slice(x, {1, kMax, -100}, {8, kMin, 100}, {3, -1, 1});
  EXPECT_EQ(node(s).shape, (Shape{3, 5, 4}));  // 1, 4, 7 | 4..0 | 0..3
  EXPECT_EQ(node(s).attrs.starts, (std::vector<int64_t>{1, 4, 0}));
  EXPECT_EQ(node(s).attrs.steps, (std::vector<int64_t>{3, -1, 1}));
  // x[-2:, 3:1, 8:0:-3]
  ValueId t = builder.slice(x, {-2, 3, 8}, {kMax, 1, 0}, {1, 1, -3});
  EXPECT_EQ(node(t).shape, (Shape{2, 0, 1}));  // 8, 9 | empty | index 3 only
  EXPECT_EQ(node(t).attrs.starts, (std::vector<int64_t>{8, 0, 3}));
  EXPECT_EQ(node(t).attrs.steps, (std::vector<int64_t>{1, 1, 1}));
  // x[9:-11:-4]: 9, 5, 1
  ValueId u = builder.slice(x, {9, 0, 0}, {-11, 5, 4}, {-4, 1, 1});
  EXPECT_EQ(node(u).shape, (Shape{3, 5, 4}));
  EXPECT_EQ(node(u).attrs.starts[0], 9);
  expect_error([&] { builder.slice(x, {0, 0, 0}, {1, 1, 1}, {1, 0, 1}); }, ErrorKind::Value,
               {"slice", "model.cpp:12", "zero"});
  expect_error([&] { builder.slice(x, {0}, {1}, {1}); }, ErrorKind::Value,
               {"slice", "(10, 5, 4)"});
}

TEST_F(BuilderTest, Pad) {
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  ValueId p = builder.pad(x, {1, 0}, {2, 3}, PadMode::Constant, Scalar::of(1.5));
  EXPECT_EQ(node(p).shape, (Shape{6, 7}));
  EXPECT_EQ(node(p).attrs.scalar.f, 1.5);
  ValueId r = builder.pad(x, {2, 3}, {2, 0}, PadMode::Reflect);
  EXPECT_EQ(node(r).shape, (Shape{7, 7}));
  EXPECT_EQ(node(r).attrs.pad_mode, PadMode::Reflect);
  expect_error([&] { builder.pad(x, {3, 0}, {0, 0}, PadMode::Reflect); }, ErrorKind::Value,
               {"pad", "model.cpp:12", "reflect", "(3, 4)"});
  expect_error([&] { builder.pad(x, {-1, 0}, {0, 0}, PadMode::Constant); }, ErrorKind::Value,
               {"pad", "negative"});
  expect_error([&] { builder.pad(x, {1}, {1}, PadMode::Edge); }, ErrorKind::Value, {"(3, 4)"});
  ValueId empty = builder.parameter(DType::Float32, {0, 2});
  expect_error([&] { builder.pad(empty, {1, 0}, {0, 0}, PadMode::Edge); }, ErrorKind::Value,
               {"pad", "(0, 2)"});
}

TEST_F(BuilderTest, Concat) {
  ValueId a = builder.parameter(DType::Float32, {2, 3});
  ValueId b = builder.parameter(DType::Float32, {2, 5});
  ValueId c = builder.concat({a, b, a}, -1);
  EXPECT_EQ(node(c).shape, (Shape{2, 11}));
  EXPECT_EQ(node(c).attrs.axis, 1);
  EXPECT_EQ(node(c).inputs.size(), 3u);
  expect_error([&] { builder.concat({a, b}, 0); }, ErrorKind::Value,
               {"concat", "model.cpp:12", "(2, 3)", "(2, 5)"});
  ValueId i = builder.parameter(DType::Int32, {2, 3});
  expect_error([&] { builder.concat({a, i}, 0); }, ErrorKind::Type, {"concat", "float32", "int32"});
  expect_error([&] { builder.concat({}, 0); }, ErrorKind::Value, {"concat"});
  expect_error([&] { builder.concat({a, b}, 2); }, ErrorKind::Axis, {"concat"});
}

TEST_F(BuilderTest, Flip) {
  ValueId x = builder.parameter(DType::Float32, {2, 3});
  EXPECT_EQ(node(builder.flip(x, {})).attrs.axes, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(node(builder.flip(x, {-1, 1})).attrs.axes, (std::vector<int64_t>{1}));
  expect_error([&] { builder.flip(x, {2}); }, ErrorKind::Axis, {"flip", "(2, 3)"});
}

TEST_F(BuilderTest, GatherIsTake) {
  ValueId x = builder.parameter(DType::Float32, {5, 6, 7});
  ValueId index = builder.parameter(DType::Int32, {2, 3});
  ValueId g = builder.gather(x, index, 1);
  EXPECT_EQ(node(g).shape, (Shape{5, 2, 3, 7}));
  EXPECT_EQ(node(g).dtype, DType::Float32);
  ValueId scalar_index = builder.parameter(DType::Int64, {});
  EXPECT_EQ(node(builder.gather(x, scalar_index, -1)).shape, (Shape{5, 6}));
  ValueId float_index = builder.parameter(DType::Float32, {2});
  expect_error([&] { builder.gather(x, float_index, 0); }, ErrorKind::Type,
               {"gather", "model.cpp:12", "float32"});
  expect_error([&] { builder.gather(x, index, 3); }, ErrorKind::Axis, {"gather", "(5, 6, 7)"});
}

TEST_F(BuilderTest, Scatter) {
  ValueId x = builder.parameter(DType::Float32, {5, 6});
  ValueId index = builder.parameter(DType::Int64, {2});
  ValueId values = builder.parameter(DType::Float32, {5, 2});
  ValueId s = builder.scatter(x, index, values, 1, ScatterMode::Add);
  EXPECT_EQ(node(s).shape, (Shape{5, 6}));
  EXPECT_EQ(node(s).attrs.scatter_mode, ScatterMode::Add);
  expect_error([&] { builder.scatter(x, index, values, 0, ScatterMode::Set); }, ErrorKind::Value,
               {"scatter", "model.cpp:12", "(5, 2)", "(5, 6)", "(2, 6)"});
  ValueId index_2d = builder.parameter(DType::Int64, {2, 1});
  expect_error([&] { builder.scatter(x, index_2d, values, 1, ScatterMode::Set); },
               ErrorKind::Value, {"scatter", "(2, 1)"});
  ValueId int_values = builder.parameter(DType::Int32, {5, 2});
  expect_error([&] { builder.scatter(x, index, int_values, 1, ScatterMode::Set); },
               ErrorKind::Type, {"scatter", "float32", "int32"});
}

TEST_F(BuilderTest, MatmulShapes) {
  ValueId a = builder.parameter(DType::Float32, {2, 1, 3, 4});
  ValueId b = builder.parameter(DType::Float32, {5, 4, 6});
  ValueId product = builder.matmul(a, b);
  EXPECT_EQ(node(product).op, Op::matmul);
  EXPECT_EQ(node(product).shape, (Shape{2, 5, 3, 6}));
  ValueId v = builder.parameter(DType::Float32, {4});
  ValueId w = builder.parameter(DType::Float32, {4});
  ValueId matrix = builder.parameter(DType::Float32, {4, 6});
  EXPECT_EQ(node(builder.matmul(v, w)).shape, (Shape{}));
  ValueId row = builder.matmul(v, matrix);
  EXPECT_EQ(node(row).shape, (Shape{6}));
  EXPECT_EQ(node(row).op, Op::reshape);
  EXPECT_EQ(node(node(row).inputs[0]).shape, (Shape{1, 6}));
  EXPECT_EQ(node(builder.matmul(a, v)).shape, (Shape{2, 1, 3}));
}

TEST_F(BuilderTest, MatmulErrors) {
  ValueId a = builder.parameter(DType::Float32, {3, 4});
  ValueId b = builder.parameter(DType::Float32, {5, 6});
  expect_error([&] { builder.matmul(a, b); }, ErrorKind::Value,
               {"matmul", "model.cpp:12", "(3, 4)", "(5, 6)"});
  ValueId c = builder.parameter(DType::Float32, {2, 4, 6});
  ValueId d = builder.parameter(DType::Float32, {3, 3, 4});
  expect_error([&] { builder.matmul(d, c); }, ErrorKind::Value, {"(3, 3, 4)", "(2, 4, 6)"});
  ValueId i = builder.parameter(DType::Int32, {4, 6});
  expect_error([&] { builder.matmul(a, i); }, ErrorKind::Type, {"matmul", "float32", "int32"});
  ValueId flags = builder.parameter(DType::Bool, {4, 4});
  expect_error([&] { builder.matmul(flags, flags); }, ErrorKind::Type, {"matmul", "bool"});
  ValueId scalar = builder.parameter(DType::Float32, {});
  expect_error([&] { builder.matmul(scalar, a); }, ErrorKind::Value, {"matmul", "()"});
  EXPECT_EQ(node(builder.matmul(i, builder.parameter(DType::Int32, {6}))).dtype, DType::Int32);
}

TEST_F(BuilderTest, SourcesAndCast) {
  ValueId c = builder.constant(Scalar::of_int(2), DType::Float32, {3});
  EXPECT_FALSE(node(c).attrs.scalar.is_integer);  // stored as the dtype's kind of number
  EXPECT_EQ(node(c).attrs.scalar.f, 2.0);
  ValueId k = builder.constant(Scalar::of(2.7), DType::Int32);
  EXPECT_TRUE(node(k).attrs.scalar.is_integer);
  EXPECT_EQ(node(k).attrs.scalar.i, 2);
  ValueId iota = builder.iota(DType::Int64, {3, 4}, -1);
  EXPECT_EQ(node(iota).attrs.axis, 1);
  expect_error([&] { builder.iota(DType::Int64, {3}, 1); }, ErrorKind::Axis, {"iota"});
  ValueId r = builder.random_normal(DType::Float32, {2}, 7);
  EXPECT_EQ(node(r).attrs.seed, 7u);
  expect_error([&] { builder.random_uniform(DType::Int32, {2}, 7); }, ErrorKind::Type,
               {"random_uniform", "int32"});
  expect_error([&] { builder.random_normal(DType::Float32, {2}, 0, builder.parameter(DType::Int32, {})); },
               ErrorKind::Type, {"random_normal", "0-d int64"});
  ValueId data = builder.constant_array(std::vector<uint8_t>(12), DType::Int32, {3});
  EXPECT_EQ(node(data).attrs.data->size(), 12u);
  expect_error([&] { builder.constant_array(std::vector<uint8_t>(8), DType::Int32, {3}); },
               ErrorKind::Value, {"constant_array", "8 bytes"});
  expect_error([&] { builder.parameter(DType::Float32, {-1}); }, ErrorKind::Value, {"negative"});
  ValueId cast = builder.cast(iota, DType::Float16);
  EXPECT_EQ(node(cast).dtype, DType::Float16);
  EXPECT_EQ(node(cast).shape, (Shape{3, 4}));
  expect_error([&] { builder.cast(99, DType::Float16); }, ErrorKind::Value, {"cast", "%99"});
}

TEST_F(BuilderTest, CopyNodeKeepsEverythingButInputs) {
  ValueId x = builder.parameter(DType::Float32, {3});
  ValueId y = builder.parameter(DType::Float32, {3});
  ValueId sum = builder.binary(Op::add, x, y);
  Node original = node(sum);
  ValueId copy = builder.copy_node(original, {y, x});
  EXPECT_EQ(node(copy).op, Op::add);
  EXPECT_EQ(node(copy).inputs, (std::vector<ValueId>{y, x}));
  EXPECT_EQ(node(copy).location, "model.cpp:12");
  expect_error([&] { builder.copy_node(original, {x}); }, ErrorKind::Internal, {"add"});
}

TEST(Graph, InputsOrderedByIndexAndUsers) {
  Graph graph;
  Node second{Op::parameter, DType::Float32, {2}, {}, {}, ""};
  second.attrs.index = 1;
  Node first = second;
  first.attrs.index = 0;
  ValueId b = graph.append(second);
  ValueId a = graph.append(first);
  EXPECT_EQ(graph.inputs(), (std::vector<ValueId>{a, b}));
  Builder builder(graph);
  ValueId square = builder.binary(Op::mul, a, a);
  ValueId sum = builder.binary(Op::add, square, b);
  auto users = graph.users();
  EXPECT_EQ(users[static_cast<size_t>(a)], (std::vector<ValueId>{square}));
  EXPECT_EQ(users[static_cast<size_t>(b)], (std::vector<ValueId>{sum}));
  EXPECT_TRUE(users[static_cast<size_t>(sum)].empty());
}

TEST(Graph, AttrsEquality) {
  Attrs a;
  Attrs b;
  EXPECT_TRUE(a == b);
  b.axes = {1};
  EXPECT_FALSE(a == b);
  a.axes = {1};
  EXPECT_TRUE(a == b);
  a.scalar = Scalar::of(-0.0);
  b.scalar = Scalar::of(0.0);
  EXPECT_FALSE(a == b);  // 1/x tells them apart: CSE must not merge them
  a.scalar = Scalar::of(std::nan(""));
  b.scalar = Scalar::of(std::nan(""));
  EXPECT_TRUE(a == b);
  a.data = std::make_shared<const std::vector<uint8_t>>(std::vector<uint8_t>{1, 2});
  EXPECT_FALSE(a == b);
  b.data = std::make_shared<const std::vector<uint8_t>>(std::vector<uint8_t>{1, 2});
  EXPECT_TRUE(a == b);  // equal contents, different buffers
}

}  // namespace
}  // namespace kiln::ir
