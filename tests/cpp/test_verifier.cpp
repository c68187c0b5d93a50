// The verifier accepts what the builder builds and names the stage for each broken invariant.
#include <gtest/gtest.h>

#include <string>

#include "ir/builder.h"
#include "ir/verifier.h"

namespace kiln::ir {
namespace {

void expect_internal_error(const Graph& graph, const std::string& fragment) {
  try {
    verify(graph, "simplify");
    ADD_FAILURE() << "expected a kiln::Error mentioning " << fragment;
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_EQ(error.kind(), ErrorKind::Internal) << message;
    EXPECT_NE(message.find("simplify"), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(Verifier, AcceptsBuiltGraphs) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {2, 3, 4});
  ValueId y = builder.parameter(DType::Float32, {4});
  ValueId index = builder.parameter(DType::Int64, {2});
  ValueId sum = builder.binary(Op::add, x, y);
  ValueId condition = builder.binary(Op::gt, sum, x);
  ValueId chosen = builder.where(condition, sum, x);
  ValueId reduced = builder.reduce(Op::argmax, chosen, {1}, true);
  ValueId scanned = builder.scan(Op::cumsum, chosen, 2);
  ValueId sliced = builder.slice(scanned, {1, -1, 0}, {2, -100, 4}, {1, -2, 3});
  ValueId padded = builder.pad(sliced, {0, 1, 2}, {1, 0, 0}, PadMode::Constant, Scalar::of(2));
  ValueId joined = builder.concat({padded, padded}, 1);
  ValueId flipped = builder.flip(joined, {0});
  ValueId permuted = builder.permute(flipped, {2, 0, 1});
  ValueId taken = builder.gather(permuted, index, 1);
  ValueId values = builder.parameter(DType::Float32, {2, 3, 4});
  ValueId updated = builder.scatter(x, index, values, 0, ScatterMode::Add);
  ValueId product = builder.matmul(updated, builder.permute(x, {0, 2, 1}));
  ValueId vector_product = builder.matmul(x, y);
  ValueId reshaped = builder.reshape(product, {-1});
  ValueId data = builder.constant_array(std::vector<uint8_t>(8), DType::Float32, {2});
  ValueId counting = builder.iota(DType::Int32, {3}, 0);
  graph.set_outputs({reduced, taken, reshaped, vector_product, data, counting});
  EXPECT_NO_THROW(verify(graph, "builder"));
}

TEST(Verifier, MissingBroadcast) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  ValueId y = builder.parameter(DType::Float32, {4});
  graph.append(Node{Op::add, DType::Float32, {3, 4}, {x, y}, {}, ""});
  expect_internal_error(graph, "missing broadcast");
}

TEST(Verifier, UseBeforeDefinition) {
  Graph graph;
  graph.append(Node{Op::neg, DType::Float32, {3}, {1}, {}, ""});
  Builder(graph).parameter(DType::Float32, {3});
  expect_internal_error(graph, "%1 is not defined before its use");
}

TEST(Verifier, WrongResultTypes) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {3, 4});
  graph.append(Node{Op::lt, DType::Float32, {3, 4}, {x, x}, {}, ""});
  expect_internal_error(graph, "bool");

  Graph reduce_graph;
  Builder reduce_builder(reduce_graph);
  ValueId z = reduce_builder.parameter(DType::Float32, {3, 4});
  Attrs attrs;
  attrs.axes = {1};
  reduce_graph.append(Node{Op::sum, DType::Float32, {4}, {z}, attrs, ""});
  expect_internal_error(reduce_graph, "(3,)");
}

TEST(Verifier, SliceOutOfRange) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {5});
  Attrs attrs;
  attrs.starts = {3};
  attrs.steps = {2};
  graph.append(Node{Op::slice, DType::Float32, {2}, {x}, attrs, ""});  // reads 3 and 5
  expect_internal_error(graph, "outside");
}

TEST(Verifier, BadOutputAndArity) {
  Graph graph;
  Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {5});
  graph.set_outputs({x, 7});
  expect_internal_error(graph, "%7");
  Graph arity;
  ValueId p = Builder(arity).parameter(DType::Float32, {5});
  arity.append(Node{Op::add, DType::Float32, {5}, {p}, {}, ""});
  expect_internal_error(arity, "arity");
}

}  // namespace
}  // namespace kiln::ir
