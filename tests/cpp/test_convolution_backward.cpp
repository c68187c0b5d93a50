// The convolution gradient extern ops (convolution_backward_input, convolution_backward_weight):
// the builder's shape rule and errors, the reference interpreter against hand-computed results,
// against a naive reference written the other way round (each gradient element gathered from
// the output positions that read it, where the interpreter scatters) and against the forward
// convolution through the adjoint identity, and the compiled ops (oneDNN for float32, OpenBLAS
// for float64) against the interpreter: strides, padding, dilation, groups, depthwise, 1x1,
// odd sizes, 1-d and 3-d, strided and broadcast operands, empty batches, repeated calls.
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "compile_test_util.h"
#include "extern/convolution.h"
#include "ir/convolution_shape.h"
#include "ir/printer.h"
#include "ir/serializer.h"
#include "ir/verifier.h"
#include "api/pipeline.h"
#include "passes/pipeline.h"
#include "sched/strided_views.h"
#include "target/target.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

// float32 sums of a few hundred products, oneDNN's order against the interpreter's double.
const Tolerance kSingle = {2e-4, 1e-4, 4};
const Tolerance kWide = {1e-11, 1e-11, 4};

// The forward's attributes of one test problem.
struct Attributes {
  std::vector<int64_t> strides, padding, dilation;
  int64_t groups;
};

ValueId gradient_of_input(ir::Builder& builder, ValueId grad_output, ValueId weight,
                          const std::vector<int64_t>& input_shape, const Attributes& a) {
  return builder.convolution_backward_input(grad_output, weight, ir::from_ints(input_shape),
                                            a.strides, a.padding, a.dilation, a.groups);
}

ValueId gradient_of_weight(ir::Builder& builder, ValueId grad_output, ValueId input,
                           const std::vector<int64_t>& weight_shape, const Attributes& a) {
  return builder.convolution_backward_weight(grad_output, input, weight_shape, a.strides, a.padding,
                                             a.dilation, a.groups);
}

std::vector<int64_t> shape_of(const ir::Graph& graph, ValueId id) {
  return ir::to_ints(graph.node(id).shape);
}

void expect_error(const std::function<void()>& build, ErrorKind kind,
                  std::initializer_list<std::string> fragments) {
  try {
    build();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    std::string message = error.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' missing from: " << message;
  }
}

// ---- the builder: shapes and errors ------------------------------------------------------------

class ConvolutionBackwardBuilder : public ::testing::Test {
 protected:
  ConvolutionBackwardBuilder() : builder(graph) { builder.set_location("model.py:7"); }
  ir::Graph graph;
  ir::Builder builder;
};

TEST_F(ConvolutionBackwardBuilder, ResultsHaveTheForwardOperandShapes) {
  // The forward: input (2, 4, 9, 10), weight (6, 2, 3, 3), stride 2, padding 1, dilation 2,
  // groups 2 gives (2, 6, 4, 4); 10 and 9 both give 4 output columns, so the input's size is
  // the caller's to say.
  ValueId dy = builder.parameter(DType::Float32, {2, 6, 4, 4});
  ValueId w = builder.parameter(DType::Float32, {6, 2, 3, 3});
  ValueId x = builder.parameter(DType::Float32, {2, 4, 9, 10});
  ValueId dx = builder.convolution_backward_input(dy, w, {2, 4, 9, 10}, {2}, {1}, {2}, 2);
  EXPECT_EQ(shape_of(graph, dx), (std::vector<int64_t>{2, 4, 9, 10}));
  EXPECT_EQ(graph.node(dx).attrs.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(graph.node(dx).attrs.groups, 2);
  ValueId dx_narrow = builder.convolution_backward_input(dy, w, {2, 4, 9, 9}, {2}, {1}, {2}, 2);
  EXPECT_EQ(shape_of(graph, dx_narrow), (std::vector<int64_t>{2, 4, 9, 9}));
  ValueId dw = builder.convolution_backward_weight(dy, x, {6, 2, 3, 3}, {2}, {1}, {2}, 2);
  EXPECT_EQ(shape_of(graph, dw), (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_EQ(graph.node(dw).dtype, DType::Float32);
}

TEST_F(ConvolutionBackwardBuilder, UserErrorsNameTheOpAndLine) {
  ValueId dy = builder.parameter(DType::Float32, {2, 6, 6, 6});
  ValueId w = builder.parameter(DType::Float32, {6, 4, 3, 3});
  ValueId x = builder.parameter(DType::Float32, {2, 4, 8, 8});
  ValueId ints = builder.parameter(DType::Int32, {2, 6, 6, 6});
  ValueId doubles = builder.parameter(DType::Float64, {6, 4, 3, 3});
  expect_error([&] { builder.convolution_backward_input(dy, w, {2, 4, 9, 9}, {1}, {0}, {1}, 1); },
               ErrorKind::Value,
               {"convolution_backward_input", "model.py:7", "grad_output", "(2, 6, 7, 7)"});
  expect_error([&] { builder.convolution_backward_weight(dy, x, {6, 4, 5, 5}, {1}, {0}, {1}, 1); },
               ErrorKind::Value, {"convolution_backward_weight", "grad_output"});
  expect_error([&] { builder.convolution_backward_input(ints, w, {2, 4, 8, 8}, {1}, {0}, {1}, 1); },
               ErrorKind::Type, {"convolution_backward_input", "int32", "float32 or float64"});
  expect_error(
      [&] { builder.convolution_backward_input(dy, doubles, {2, 4, 8, 8}, {1}, {0}, {1}, 1); },
      ErrorKind::Type, {"float64", "float32"});
  expect_error([&] { builder.convolution_backward_weight(dy, x, {6, 4, 3, 3}, {1}, {0}, {1}, 2); },
               ErrorKind::Value, {"convolution_backward_weight", "groups"});
  expect_error([&] { builder.convolution_backward_weight(dy, x, {6, 4, 3, 3}, {0}, {0}, {1}, 1); },
               ErrorKind::Value, {"strides"});
}

TEST_F(ConvolutionBackwardBuilder, ASymbolicBatchPassesThrough) {
  // A dynamic batch (torch.compile(dynamic=True)) compiles once; the other sizes are numbers.
  const ir::Dim batch = graph.add_symbol(3);
  ValueId dy = builder.parameter(DType::Float32, {batch, 6, 4, 4});
  ValueId w = builder.parameter(DType::Float32, {6, 2, 3, 3});
  ValueId x = builder.parameter(DType::Float32, {batch, 4, 9, 10});
  ValueId dx = builder.convolution_backward_input(dy, w, {batch, 4, 9, 10}, {2}, {1}, {2}, 2);
  EXPECT_EQ(graph.node(dx).shape, (ir::Shape{batch, 4, 9, 10}));
  ValueId dw = builder.convolution_backward_weight(dy, x, {6, 2, 3, 3}, {2}, {1}, {2}, 2);
  EXPECT_EQ(shape_of(graph, dw), (std::vector<int64_t>{6, 2, 3, 3}));
  graph.set_outputs({dx, dw});
  EXPECT_NO_THROW(ir::verify(graph, "a test"));
  expect_error([&] { builder.convolution_backward_input(dy, w, {2, 4, 9, 10}, {2}, {1}, {2}, 2); },
               ErrorKind::Value, {"convolution_backward_input", "batch s0", "input's 2"});
  ValueId wide = builder.parameter(DType::Float32, {batch, 4, batch, 10});
  expect_error(
      [&] { builder.convolution_backward_weight(dy, wide, {6, 2, 3, 3}, {2}, {1}, {2}, 2); },
      ErrorKind::Unsupported, {"convolution_backward_weight", "fixed sizes"});
}

TEST(ConvolutionBackwardApi, ErrorsThroughTheTensorApiRaiseNotCrash) {
  Function function = compile(
      [](Tensor dy, Tensor w) {
        return kiln::convolution_backward_input(dy, w, {1, 3, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1);
      },
      test_options());
  try {
    function({make_array(DType::Float32, {1, 2, 4, 4}, {1}),
              make_array(DType::Float32, {2, 3, 3, 3}, {1})});
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value) << error.what();
    EXPECT_NE(std::string(error.what()).find("convolution_backward_input"), std::string::npos)
        << error.what();
  }
}

// ---- printing, serialising, verifying ----------------------------------------------------------

TEST(ConvolutionBackwardGraph, PrintsAndRoundTripsThroughTheSerializer) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId dy = builder.parameter(DType::Float32, {2, 6, 4, 4});
  ValueId w = builder.parameter(DType::Float32, {6, 2, 3, 3});
  ValueId x = builder.parameter(DType::Float32, {2, 4, 9, 10});
  graph.set_outputs({builder.convolution_backward_input(dy, w, {2, 4, 9, 10}, {2}, {1}, {2}, 2),
                     builder.convolution_backward_weight(dy, x, {6, 2, 3, 3}, {2}, {1}, {2}, 2)});
  std::string text = ir::print_graph(graph);
  for (const char* fragment : {"convolution_backward_input", "convolution_backward_weight",
                               "strides=", "dilation=", "groups=2"})
    EXPECT_NE(text.find(fragment), std::string::npos) << fragment << " missing from:\n" << text;
  ir::Graph back = ir::deserialize_graph(ir::serialize_graph(graph));
  EXPECT_EQ(ir::print_graph(back), text);
  for (ValueId id = 0; id < back.size(); ++id)
    EXPECT_TRUE(back.node(id).attrs == graph.node(id).attrs) << "node " << id;
}

TEST(ConvolutionBackwardGraph, TheVerifierRefusesAWrongShape) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId dy = builder.parameter(DType::Float32, {1, 2, 4, 4});
  ValueId w = builder.parameter(DType::Float32, {2, 3, 3, 3});
  ir::Node node =
      graph.node(builder.convolution_backward_input(dy, w, {1, 3, 6, 6}, {1}, {0}, {1}, 1));
  node.shape = ir::from_ints({1, 3, 7, 7});  // a kiln bug: no longer the forward's input shape
  graph.set_outputs({graph.append(node)});
  expect_error([&] { ir::verify(graph, "a test"); }, ErrorKind::Internal,
               {"convolution_backward_input", "grad_output"});
}

// ---- the reference interpreter -----------------------------------------------------------------

TEST(ConvolutionBackwardInterpreter, HandComputedCases) {
  ir::Graph graph;
  ir::Builder builder(graph);
  // Forward: x (1, 1, 3, 3) by w (1, 1, 2, 2), stride 1, no padding: a 2x2 result.
  ValueId dy = builder.parameter(DType::Float64, {1, 1, 2, 2});
  ValueId w = builder.parameter(DType::Float64, {1, 1, 2, 2});
  ValueId x = builder.parameter(DType::Float64, {1, 1, 3, 3});
  graph.set_outputs({builder.convolution_backward_input(dy, w, {1, 1, 3, 3}, {1}, {0}, {1}, 1),
                     builder.convolution_backward_weight(dy, x, {1, 1, 2, 2}, {1}, {0}, {1}, 1)});
  // dy = [[1 0] [0 2]], w = [[1 2] [3 4]], x = [[1 2 3] [4 5 6] [7 8 9]]:
  // dx = 1 * w placed at (0, 0) + 2 * w placed at (1, 1);
  // dw[i][j] = x[i][j] * 1 + x[i + 1][j + 1] * 2.
  std::vector<Array> results =
      ir::interpret(graph, {make_array(DType::Float64, {1, 1, 2, 2}, {1, 0, 0, 2}),
                            make_array(DType::Float64, {1, 1, 2, 2}, {1, 2, 3, 4}),
                            make_array(DType::Float64, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  EXPECT_EQ(results[0].to_vector<double>(), (std::vector<double>{1, 2, 0, 3, 6, 4, 0, 6, 8}));
  EXPECT_EQ(results[1].to_vector<double>(), (std::vector<double>{11, 14, 20, 23}));
}

// The gradients written the other way round from the interpreter: each element gathers the
// output positions that read it (2-d, contiguous row-major operands).
struct Problem {
  std::vector<int64_t> input, weight, output;
  Attributes a;
};

std::vector<double> naive_input_gradient(const Problem& p, const std::vector<double>& dy,
                                         const std::vector<double>& w) {
  const int64_t N = p.input[0], C = p.input[1], H = p.input[2], W = p.input[3];
  const int64_t O = p.weight[0], group_in = p.weight[1], KH = p.weight[2], KW = p.weight[3];
  const int64_t OH = p.output[2], OW = p.output[3], group_out = O / p.a.groups;
  std::vector<double> dx(static_cast<size_t>(N * C * H * W), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t x = 0; x < W; ++x) {
          double sum = 0;
          const int64_t group = c / group_in;
          for (int64_t o = group * group_out; o < (group + 1) * group_out; ++o)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                int64_t rows = h + p.a.padding[0] - i * p.a.dilation[0];
                int64_t columns = x + p.a.padding[1] - j * p.a.dilation[1];
                if (rows % p.a.strides[0] != 0 || columns % p.a.strides[1] != 0) continue;
                int64_t oh = rows / p.a.strides[0], ow = columns / p.a.strides[1];
                if (rows < 0 || columns < 0 || oh >= OH || ow >= OW) continue;
                sum += dy[static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow)] *
                       w[static_cast<size_t>(((o * group_in + c % group_in) * KH + i) * KW + j)];
              }
          dx[static_cast<size_t>(((n * C + c) * H + h) * W + x)] = sum;
        }
  return dx;
}

std::vector<double> naive_weight_gradient(const Problem& p, const std::vector<double>& dy,
                                          const std::vector<double>& input) {
  const int64_t N = p.input[0], C = p.input[1], H = p.input[2], W = p.input[3];
  const int64_t O = p.weight[0], group_in = p.weight[1], KH = p.weight[2], KW = p.weight[3];
  const int64_t OH = p.output[2], OW = p.output[3], group_out = O / p.a.groups;
  std::vector<double> dw;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < group_in; ++c)
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j) {
          double sum = 0;
          const int64_t channel = (o / group_out) * group_in + c;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                int64_t h = oh * p.a.strides[0] - p.a.padding[0] + i * p.a.dilation[0];
                int64_t x = ow * p.a.strides[1] - p.a.padding[1] + j * p.a.dilation[1];
                if (h < 0 || h >= H || x < 0 || x >= W) continue;
                sum += dy[static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow)] *
                       input[static_cast<size_t>(((n * C + channel) * H + h) * W + x)];
              }
          dw.push_back(sum);
        }
  return dw;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

TEST(ConvolutionBackwardInterpreter, MatchesTheNaiveReference) {
  const std::vector<Problem> problems = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {{1, 4, 9, 10}, {6, 2, 3, 3}, {}, {{2, 2}, {1, 1}, {2, 2}, 2}},
      {{2, 2, 5, 8}, {2, 1, 3, 2}, {}, {{2, 1}, {0, 2}, {1, 3}, 2}},
      {{1, 3, 5, 5}, {2, 3, 1, 1}, {}, {{2, 2}, {0, 0}, {1, 1}, 1}},
  };
  for (Problem p : problems) {
    ir::Graph graph;
    ir::Builder builder(graph);
    ValueId x = builder.parameter(DType::Float64, ir::from_ints(p.input));
    ValueId w = builder.parameter(DType::Float64, ir::from_ints(p.weight));
    ValueId y =
        builder.convolution(x, w, std::nullopt, p.a.strides, p.a.padding, p.a.dilation, p.a.groups);
    p.output = shape_of(graph, y);
    ValueId dy = builder.parameter(DType::Float64, ir::from_ints(p.output));
    graph.set_outputs({gradient_of_input(builder, dy, w, p.input, p.a),
                       gradient_of_weight(builder, dy, x, p.weight, p.a)});
    std::vector<double> input = pseudo_random(size_t(count_of(p.input)), -1, 1, 1);
    std::vector<double> weight = pseudo_random(size_t(count_of(p.weight)), -1, 1, 2);
    std::vector<double> gradient = pseudo_random(size_t(count_of(p.output)), -1, 1, 3);
    std::vector<Array> results =
        ir::interpret(graph, {make_array(DType::Float64, p.input, input),
                              make_array(DType::Float64, p.weight, weight),
                              make_array(DType::Float64, p.output, gradient)});
    std::vector<double> dx = naive_input_gradient(p, gradient, weight);
    std::vector<double> dw = naive_weight_gradient(p, gradient, input);
    std::vector<double> got_dx = results[0].to_vector<double>();
    std::vector<double> got_dw = results[1].to_vector<double>();
    ASSERT_EQ(got_dx.size(), dx.size());
    ASSERT_EQ(got_dw.size(), dw.size());
    for (size_t k = 0; k < dx.size(); ++k) EXPECT_NEAR(got_dx[k], dx[k], 1e-12) << k;
    for (size_t k = 0; k < dw.size(); ++k) EXPECT_NEAR(got_dw[k], dw[k], 1e-12) << k;
  }
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t k = 0; k < a.size(); ++k) sum += a[k] * b[k];
  return sum;
}

// For any rank: <dy, conv(x, w)> = <dx(dy, w), x> = <dw(dy, x), w>, all through the
// interpreter (the gradients are the forward's adjoints).
TEST(ConvolutionBackwardInterpreter, AdjointsOfTheForwardIn1dAnd3d) {
  const std::vector<Problem> problems = {
      {{2, 3, 12}, {5, 3, 4}, {}, {{3}, {2}, {1}, 1}},
      {{1, 4, 11}, {4, 1, 3}, {}, {{1}, {1}, {2}, 4}},
      {{1, 2, 5, 6, 4}, {4, 1, 2, 3, 2}, {}, {{1, 2, 1}, {1, 1, 1}, {1, 1, 1}, 2}},
  };
  for (Problem p : problems) {
    ir::Graph graph;
    ir::Builder builder(graph);
    ValueId x = builder.parameter(DType::Float64, ir::from_ints(p.input));
    ValueId w = builder.parameter(DType::Float64, ir::from_ints(p.weight));
    ValueId y =
        builder.convolution(x, w, std::nullopt, p.a.strides, p.a.padding, p.a.dilation, p.a.groups);
    p.output = shape_of(graph, y);
    ValueId dy = builder.parameter(DType::Float64, ir::from_ints(p.output));
    graph.set_outputs({y, gradient_of_input(builder, dy, w, p.input, p.a),
                       gradient_of_weight(builder, dy, x, p.weight, p.a)});
    std::vector<double> input = pseudo_random(size_t(count_of(p.input)), -1, 1, 4);
    std::vector<double> weight = pseudo_random(size_t(count_of(p.weight)), -1, 1, 5);
    std::vector<double> gradient = pseudo_random(size_t(count_of(p.output)), -1, 1, 6);
    std::vector<Array> results =
        ir::interpret(graph, {make_array(DType::Float64, p.input, input),
                              make_array(DType::Float64, p.weight, weight),
                              make_array(DType::Float64, p.output, gradient)});
    double forward = dot(gradient, results[0].to_vector<double>());
    EXPECT_NEAR(dot(results[1].to_vector<double>(), input), forward, 1e-10);
    EXPECT_NEAR(dot(results[2].to_vector<double>(), weight), forward, 1e-10);
  }
}

// ---- compiled against the interpreter -----------------------------------------------------------

ValueId random_input(GraphCase& graph, DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  return graph.input(make_array(dtype, shape, pseudo_random(size_t(count_of(shape)), -1, 1, seed)));
}

// Both gradients of one problem, with grad_output, input and weight drawn at random.
void add_problem(GraphCase& graph, DType dtype, const std::vector<int64_t>& input_shape,
                 const std::vector<int64_t>& weight_shape, const Attributes& a,
                 const std::string& label, uint64_t seed) {
  ir::ConvolutionGeometry geometry;
  ASSERT_EQ(ir::convolution_geometry(input_shape, weight_shape, std::nullopt, a.strides, a.padding,
                                     a.dilation, a.groups, geometry),
            "");
  const Tolerance tolerance = dtype == DType::Float32 ? kSingle : kWide;
  ValueId dy = random_input(graph, dtype, geometry.output_shape(), seed);
  ValueId x = random_input(graph, dtype, input_shape, seed + 1);
  ValueId w = random_input(graph, dtype, weight_shape, seed + 2);
  graph.output(gradient_of_input(graph.builder, dy, w, input_shape, a), label + ": input",
               tolerance);
  graph.output(gradient_of_weight(graph.builder, dy, x, weight_shape, a), label + ": weight",
               tolerance);
}

void add_two_dimensional_variants(GraphCase& graph, DType dtype) {
  add_problem(graph, dtype, {2, 4, 9, 10}, {6, 4, 3, 3}, {{1}, {1}, {1}, 1}, "3x3 same", 10);
  add_problem(graph, dtype, {2, 4, 9, 10}, {6, 4, 3, 3}, {{2}, {1}, {2}, 1},
              "stride 2 padding 1 dilation 2", 20);
  add_problem(graph, dtype, {2, 4, 11, 8}, {6, 2, 3, 2}, {{1, 2}, {2, 0}, {1, 3}, 2},
              "per-axis parameters, groups 2", 30);
  add_problem(graph, dtype, {2, 4, 7, 7}, {4, 1, 3, 3}, {{1}, {1}, {1}, 4}, "depthwise", 40);
  add_problem(graph, dtype, {3, 5, 7, 9}, {8, 5, 1, 1}, {{2}, {0}, {1}, 1}, "1x1 stride 2", 50);
  add_problem(graph, dtype, {1, 3, 13, 11}, {5, 3, 7, 7}, {{2}, {3}, {1}, 1},
              "7x7 stride 2 (a stem), odd sizes", 60);
  // The last input row and column are read by no window (stride 2 skips them): zero there.
  add_problem(graph, dtype, {2, 2, 8, 8}, {3, 2, 3, 3}, {{2}, {0}, {1}, 1}, "unread edge", 70);
}

// 3x3 stride-1 gradients of 64 channels run Winograd's algorithm (extern/convolution.h:
// winograd_suits; where oneDNN has no Winograd kernels, kiln's runs both where the
// activations outweigh the weights: 2 x 28 x 28 positions over 64 channels), within
// float32 rounding of the interpreter's double sums relative to the largest gradient (its
// transform spreads each tile's rounding over the tile).
TEST(ConvolutionBackwardCompiled, WinogradGradientsMatchTheInterpreter) {
  GraphCase graph;
  const Attributes same = {{1}, {1}, {1}, 1};
  const std::vector<int64_t> input_shape{2, 64, 28, 28}, weight_shape{64, 64, 3, 3};
  ValueId dy = random_input(graph, DType::Float32, {2, 64, 28, 28}, 90);
  ValueId x = random_input(graph, DType::Float32, input_shape, 91);
  ValueId w = random_input(graph, DType::Float32, weight_shape, 92);
  const Tolerance loose = {1e-4, 2e-4, 4};  // the gradients reach 40
  graph.output(gradient_of_input(graph.builder, dy, w, input_shape, same), "input", loose);
  graph.output(gradient_of_weight(graph.builder, dy, x, weight_shape, same), "weight", loose);
  const int64_t before = externs::convolution_counters().winograd_gradients;
  graph.check();
  EXPECT_GE(externs::convolution_counters().winograd_gradients - before, 2);
}

TEST(ConvolutionBackwardCompiled, TwoDimensionalVariantsFloat32) {
  GraphCase graph;
  add_two_dimensional_variants(graph, DType::Float32);
  graph.check();
}

TEST(ConvolutionBackwardCompiled, TwoDimensionalVariantsFloat64) {
  GraphCase graph;
  add_two_dimensional_variants(graph, DType::Float64);
  graph.check();
}

TEST(ConvolutionBackwardCompiled, OneAndThreeDimensional) {
  GraphCase graph;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::string name = dtype == DType::Float32 ? "float32 " : "float64 ";
    add_problem(graph, dtype, {2, 3, 12}, {5, 3, 4}, {{3}, {2}, {1}, 1}, name + "1-d", 80);
    add_problem(graph, dtype, {1, 4, 11}, {4, 1, 3}, {{1}, {1}, {2}, 4},
                name + "1-d dilated depthwise", 90);
    add_problem(graph, dtype, {1, 2, 5, 6, 4}, {4, 1, 2, 3, 2}, {{1, 2, 1}, {1}, {1}, 2},
                name + "3-d groups 2", 100);
  }
  graph.check();
}

// Operands that reach the library kernels as strided buffers: channels-last grad_output and
// input, a weight stored (kH, kW, C, O), a sliced input, and a grad_output broadcast from one
// value per channel (stride 0, what the gradient of a sum or mean is), which oneDNN cannot
// describe and gets copied.
// `storage` owns the strided operands' memory; it must outlive the graph's run.
void add_strided_operands(GraphCase& graph, DType dtype, std::vector<Array>& storage) {
  const Tolerance tolerance = dtype == DType::Float32 ? kSingle : kWide;
  auto borrowed = [&](std::vector<int64_t> shape, std::vector<int64_t> strides, uint64_t seed) {
    // Random values laid out by `strides` over a buffer of the same size.
    std::vector<double> values = pseudo_random(size_t(count_of(shape)), -1, 1, seed);
    storage.push_back(Array::empty(dtype, {count_of(shape)}));
    std::vector<int64_t> index(shape.size(), 0);
    for (size_t k = 0; k < values.size(); ++k) {
      int64_t offset = 0;
      for (size_t d = 0; d < shape.size(); ++d) offset += index[d] * strides[d];
      store_double(storage.back(), offset, values[k]);
      for (size_t d = shape.size(); d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
    return graph.input(Array::borrow(storage.back().data(), dtype, shape, strides));
  };
  ir::Builder& builder = graph.builder;
  const Attributes same{{1}, {1}, {1}, 1};
  // Forward: x (2, 3, 6, 5) by w (4, 3, 3, 3), padding 1: (2, 4, 6, 5).
  ValueId dy_channels_last = borrowed({2, 4, 6, 5}, {120, 1, 20, 4}, 110);
  ValueId x_channels_last = borrowed({2, 3, 6, 5}, {90, 1, 15, 3}, 111);
  ValueId w_permuted = borrowed({4, 3, 3, 3}, {1, 4, 36, 12}, 112);
  graph.output(gradient_of_input(builder, dy_channels_last, w_permuted, {2, 3, 6, 5}, same),
               "channels-last grad_output, permuted weight: input", tolerance);
  graph.output(gradient_of_weight(builder, dy_channels_last, x_channels_last, {4, 3, 3, 3}, same),
               "channels-last grad_output and input: weight", tolerance);
  // Mixed layouts: a channels-last grad_output with a channels-first input, and the reverse
  // (oneDNN takes the activations in the grad_output's layout; the other is reordered).
  ValueId x_channels_first = random_input(graph, dtype, {2, 3, 6, 5}, 117);
  graph.output(gradient_of_weight(builder, dy_channels_last, x_channels_first, {4, 3, 3, 3}, same),
               "channels-last grad_output, channels-first input: weight", tolerance);
  ValueId dy_channels_first = random_input(graph, dtype, {2, 4, 6, 5}, 118);
  graph.output(gradient_of_weight(builder, dy_channels_first, x_channels_last, {4, 3, 3, 3}, same),
               "channels-first grad_output, channels-last input: weight", tolerance);
  // Channels-last in one and three spatial dimensions, grouped.
  const Attributes grouped{{1}, {1}, {1}, 2};
  ValueId dy_nwc = borrowed({2, 4, 7}, {28, 1, 4}, 119);
  ValueId x_nwc = borrowed({2, 6, 7}, {42, 1, 6}, 120);
  ValueId w_1d = random_input(graph, dtype, {4, 3, 3}, 121);
  graph.output(gradient_of_input(builder, dy_nwc, w_1d, {2, 6, 7}, grouped),
               "channels-last 1-d, groups 2: input", tolerance);
  graph.output(gradient_of_weight(builder, dy_nwc, x_nwc, {4, 3, 3}, grouped),
               "channels-last 1-d, groups 2: weight", tolerance);
  ValueId dy_ndhwc = borrowed({1, 4, 3, 4, 5}, {240, 1, 80, 20, 4}, 122);
  ValueId x_ndhwc = borrowed({1, 2, 3, 4, 5}, {120, 1, 40, 10, 2}, 123);
  ValueId w_3d = random_input(graph, dtype, {4, 2, 3, 3, 3}, 124);
  graph.output(gradient_of_input(builder, dy_ndhwc, w_3d, {1, 2, 3, 4, 5}, same),
               "channels-last 3-d: input", tolerance);
  graph.output(gradient_of_weight(builder, dy_ndhwc, x_ndhwc, {4, 2, 3, 3, 3}, same),
               "channels-last 3-d: weight", tolerance);
  ValueId big = random_input(graph, dtype, {2, 3, 12, 10}, 113);
  ValueId every_other = builder.slice(big, {0, 0, 0, 0}, {2, 3, 12, 10}, {1, 1, 2, 2});
  ValueId dy = random_input(graph, dtype, {2, 4, 6, 5}, 114);
  graph.output(gradient_of_weight(builder, dy, every_other, {4, 3, 3, 3}, same),
               "sliced input: weight", tolerance);
  ValueId per_channel = random_input(graph, dtype, {1, 4, 1, 1}, 115);
  ValueId broadcast = builder.broadcast(per_channel, ir::from_ints({2, 4, 6, 5}));
  ValueId w = random_input(graph, dtype, {4, 3, 3, 3}, 116);
  graph.output(gradient_of_input(builder, broadcast, w, {2, 3, 6, 5}, same),
               "broadcast grad_output: input", tolerance);
  graph.output(gradient_of_weight(builder, broadcast, every_other, {4, 3, 3, 3}, same),
               "broadcast grad_output: weight", tolerance);
}

TEST(ConvolutionBackwardCompiled, StridedAndBroadcastOperands) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    GraphCase graph;
    std::vector<Array> storage;
    add_strided_operands(graph, dtype, storage);
    graph.check();
  }
}

// A convolution layer's training step in one graph: the forward, relu, and the gradients of
// the sum of its result (the gradient flows through relu's mask; the bias gradient is a sum).
TEST(ConvolutionBackwardCompiled, ForwardAndBackwardInOneGraph) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const DType f32 = DType::Float32;
  ValueId x = random_input(graph, f32, {2, 3, 8, 8}, 120);
  ValueId w = random_input(graph, f32, {4, 3, 3, 3}, 121);
  ValueId y = builder.convolution(x, w, std::nullopt, {1}, {1}, {1}, 1);
  ValueId zero = builder.constant(ir::Scalar::of(0), f32);
  ValueId one = builder.constant(ir::Scalar::of(1), f32);
  ValueId positive = builder.binary(Op::gt, y, zero);
  ValueId dy = builder.where(positive, builder.broadcast(one, ir::from_ints({2, 4, 8, 8})),
                             builder.broadcast(zero, ir::from_ints({2, 4, 8, 8})));
  const Attributes same{{1}, {1}, {1}, 1};
  graph.output(builder.binary(Op::maximum, y, zero), "relu(conv)", kSingle);
  graph.output(gradient_of_input(builder, dy, w, {2, 3, 8, 8}, same), "input gradient", kSingle);
  graph.output(gradient_of_weight(builder, dy, x, {4, 3, 3, 3}, same), "weight gradient", kSingle);
  graph.output(builder.reduce(Op::sum, dy, {0, 2, 3}, false), "bias gradient", kSingle);
  graph.check();
}

// A training graph's gradients channels-last (passes/channels_last.cpp): the input gradient of
// one convolution, masked by a ReLU, feeds the next one's with no activation permuted between
// them; the interpreter's channels-last gradients are the channels-first ones permuted.
TEST(ConvolutionBackwardCompiled, GradientsStayChannelsLastBetweenConvolutions) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const DType f32 = DType::Float32;
  const Attributes same{{1}, {1}, {1}, 1};
  ValueId dy = random_input(graph, f32, {2, 6, 8, 8}, 130);
  ValueId w2 = random_input(graph, f32, {6, 5, 3, 3}, 131);
  ValueId w1 = random_input(graph, f32, {5, 3, 3, 3}, 132);
  ValueId saved = random_input(graph, f32, {2, 5, 8, 8}, 133);  // the ReLU's output
  ValueId x = random_input(graph, f32, {2, 3, 8, 8}, 134);
  ValueId zero = builder.broadcast(builder.constant(ir::Scalar::of(0), f32), ir::from_ints({2, 5, 8, 8}));
  ValueId d2 = gradient_of_input(builder, dy, w2, {2, 5, 8, 8}, same);
  ValueId masked = builder.where(builder.binary(Op::gt, saved, zero), d2, zero);
  graph.output(gradient_of_input(builder, masked, w1, {2, 3, 8, 8}, same), "input gradient", kSingle);
  graph.output(gradient_of_weight(builder, masked, x, {5, 3, 3, 3}, same), "weight gradient", kSingle);
  graph.output(gradient_of_weight(builder, dy, saved, {6, 5, 3, 3}, same), "second weight", kSingle);
  graph.check();
  ir::Graph optimized = passes::run_graph_passes(graph.graph, {"channels_last_filters"});  // CPU's
  int gradients = 0, activation_permutes = 0;
  for (const ir::Node& node : optimized.nodes()) {
    if (node.op == Op::convolution_backward_input || node.op == Op::convolution_backward_weight) {
      ++gradients;
      EXPECT_TRUE(node.attrs.channels_last) << ir::print_graph(optimized);
    }
    // Permutes of graph inputs and of pointwise work are read in place; a gradient computed
    // by the library is permuted only where it leaves the graph.
    if (node.op == Op::permute &&
        optimized.node(node.inputs[0]).op == Op::convolution_backward_input)
      ++activation_permutes;
  }
  EXPECT_EQ(gradients, 4);
  EXPECT_EQ(activation_permutes, 1) << ir::print_graph(optimized);
}

// cuDNN's filters channels-last (passes/channels_last.cpp: channels_last_filters, CUDA's
// pipeline): a weight the graph computes (here scaled) is permuted once, in the kernel that
// computes it, for the forward and the input gradient; a weight given to the graph is permuted
// by a kernel of its own; weight gradients are permuted back where they are used. The
// rewritten graph runs on the CPU's library calls too (the weight's gradient stored in the
// filter's order), against the interpreter of the original.
TEST(ConvolutionBackwardCompiled, ChannelsLastFiltersArePermutedOncePerWeight) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  const DType f32 = DType::Float32;
  const Attributes a{{2}, {1}, {1}, 2};
  ValueId x = random_input(graph, f32, {2, 4, 9, 8}, 140);
  ValueId given = random_input(graph, f32, {6, 2, 3, 3}, 141);
  ValueId bias = random_input(graph, f32, {6}, 142);
  auto scaled = [&](ValueId v, double factor) {
    return b.binary(Op::mul, v, b.broadcast(b.constant(ir::Scalar::of(factor), f32),
                                            graph.graph.node(v).shape));
  };
  ValueId w = scaled(given, 0.5);
  ValueId y = b.convolution(x, w, bias, a.strides, a.padding, a.dilation, a.groups);
  ValueId dy = random_input(graph, f32, ir::to_ints(graph.graph.node(y).shape), 143);
  graph.output(b.binary(Op::mul, y, dy), "forward", kSingle);
  graph.output(gradient_of_input(b, dy, w, {2, 4, 9, 8}, a), "input gradient", kSingle);
  graph.output(scaled(gradient_of_weight(b, dy, x, {6, 2, 3, 3}, a), 3.0), "weight gradient",
               kSingle);
  graph.output(gradient_of_weight(b, scaled(dy, 2.0), x, {6, 2, 3, 3}, a),
               "weight gradient returned", kSingle);
  graph.output(gradient_of_input(b, dy, given, {2, 4, 9, 8}, a), "given weight", kSingle);
  graph.graph.set_outputs(graph.outputs);
  const ir::Graph optimized = passes::run_graph_passes(graph.graph, {});
  int filters_last = 0, channels_last = 0, weight_permutes = 0;
  for (const ir::Node& node : optimized.nodes()) {
    if (node.op == Op::convolution || node.op == Op::convolution_backward_input ||
        node.op == Op::convolution_backward_weight) {
      EXPECT_TRUE(node.attrs.channels_last) << ir::print_graph(optimized);
      ++channels_last;
      filters_last += node.attrs.filters_last;
    }
    weight_permutes += node.op == Op::permute && node.shape == ir::from_ints({6, 3, 3, 2});
  }
  EXPECT_EQ(channels_last, 5);
  EXPECT_EQ(filters_last, 5) << ir::print_graph(optimized);
  EXPECT_EQ(weight_permutes, 2) << ir::print_graph(optimized);  // the scaled and the given one
  EXPECT_EQ(ir::print_graph(ir::deserialize_graph(ir::serialize_graph(optimized))),
            ir::print_graph(optimized));  // the layout survives a cache record
  const std::vector<Array> expected = ir::interpret(graph.graph, graph.inputs);
  CompiledRun run = compile_and_run(optimized, graph.inputs);
  ASSERT_EQ(run.outputs.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k)
    expect_array_matches(run.outputs[k], expected[k], kSingle, graph.labels[k]);
  // The filter lies packed (O, *kernel, C) for the library (cuDNN takes no filter strides): a
  // kernel permuted it into a buffer of its own, not a strided view of the weight. So do the
  // activations and gradients: the channels-first input x, permuted once by a kernel (cuDNN
  // would reorder a strided view of it in every call that reads it).
  const sched::Program program = detail::schedule_program(
      optimized, std::vector<std::vector<int64_t>>(graph.inputs.size()), target::host_cpu(2), {});
  int filters = 0;
  for (const sched::Step& step : program.steps) {
    if (step.kind != sched::StepKind::Extern || step.call.parameters.back() != 2) continue;
    for (size_t k = 0; k < 2; ++k)
      EXPECT_TRUE(!step.call.views.at(k) || sched::packed_view(*step.call.views.at(k)))
          << ir::op_name(step.call.op) << " operand " << k;
    if (step.call.op == Op::convolution_backward_weight) continue;
    ++filters;
    EXPECT_FALSE(step.call.views.at(1).has_value());
    EXPECT_EQ(program.buffers.at(static_cast<size_t>(step.call.inputs.at(1))).shape,
              (std::vector<int64_t>{6, 3, 3, 2}));
  }
  EXPECT_EQ(filters, 3);
}

TEST(ConvolutionBackwardInterpreter, ChannelsLastIsThePermutedGradient) {
  ir::Graph graph;
  ir::Builder builder(graph);
  const ir::Shape cf{2, 3, 6, 5};
  const std::vector<int64_t> cl{2, 6, 5, 3}, dy_cl{2, 2, 2, 4};
  ValueId dy = builder.parameter(DType::Float64, ir::from_ints(dy_cl));  // (N, H, W, O)
  ValueId w = builder.parameter(DType::Float64, ir::from_ints({4, 3, 3, 2}));
  ValueId x = builder.parameter(DType::Float64, ir::from_ints(cl));
  const std::vector<int64_t> first = ir::channels_first_order(4);
  ValueId input_last = builder.convolution_backward_input(dy, w, cf, {2}, {0}, {1}, 1, true);
  ValueId weight_last = builder.convolution_backward_weight(dy, x, {4, 3, 3, 2}, {2}, {0}, {1}, 1, true);
  ValueId input_first = builder.permute(builder.convolution_backward_input(
      builder.permute(dy, first), w, cf, {2}, {0}, {1}, 1), ir::channels_last_order(4));
  ValueId weight_first = builder.convolution_backward_weight(
      builder.permute(dy, first), builder.permute(x, first), {4, 3, 3, 2}, {2}, {0}, {1}, 1);
  // Channels-last filters too: the weight (4, 3, 3, 2) given and returned as (4, 3, 2, 3).
  ValueId w_last = builder.permute(w, ir::channels_last_order(4));
  ValueId input_filters =
      builder.convolution_backward_input(dy, w_last, cf, {2}, {0}, {1}, 1, true, true);
  ValueId weight_filters = builder.permute(
      builder.convolution_backward_weight(dy, x, {4, 3, 3, 2}, {2}, {0}, {1}, 1, true, true),
      first);
  graph.set_outputs({input_last, input_first, weight_last, weight_first, input_filters,
                     weight_filters});
  ir::verify(graph, "test");
  std::vector<Array> inputs = {make_array(DType::Float64, dy_cl, pseudo_random(32, -1, 1, 1)),
                               make_array(DType::Float64, {4, 3, 3, 2}, pseudo_random(72, -1, 1, 2)),
                               make_array(DType::Float64, cl, pseudo_random(180, -1, 1, 3))};
  std::vector<Array> results = ir::interpret(graph, inputs);
  EXPECT_EQ(results[0].shape(), cl);
  EXPECT_EQ(results[0].to_vector<double>(), results[1].to_vector<double>());
  EXPECT_EQ(results[2].to_vector<double>(), results[3].to_vector<double>());
  EXPECT_EQ(results[4].to_vector<double>(), results[1].to_vector<double>());
  EXPECT_EQ(results[5].contiguous().to_vector<double>(), results[3].to_vector<double>());
}

TEST(ConvolutionBackwardCompiled, RepeatedCallsReuseThePrimitives) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId dy = builder.parameter(DType::Float32, {2, 8, 7, 7});
  ValueId w = builder.parameter(DType::Float32, {8, 3, 3, 3});
  ValueId x = builder.parameter(DType::Float32, {2, 3, 7, 7});
  const Attributes same{{1}, {1}, {1}, 1};
  graph.set_outputs({gradient_of_input(builder, dy, w, {2, 3, 7, 7}, same),
                     gradient_of_weight(builder, dy, x, {8, 3, 3, 3}, same)});
  CompileStats stats;
  std::unique_ptr<detail::CompiledGraph> compiled =
      detail::compile_graph(graph, {{}, {}, {}}, test_options(), stats);
  for (uint64_t seed = 130; seed < 133; ++seed) {
    std::vector<Array> inputs = {
        make_array(DType::Float32, {2, 8, 7, 7}, pseudo_random(784, -1, 1, seed)),
        make_array(DType::Float32, {8, 3, 3, 3}, pseudo_random(216, -1, 1, seed + 10)),
        make_array(DType::Float32, {2, 3, 7, 7}, pseudo_random(294, -1, 1, seed + 20))};
    std::vector<Array> outputs;
    compiled->executable->run(inputs, outputs);
    std::vector<Array> expected = ir::interpret(graph, inputs);
    for (size_t k = 0; k < 2; ++k)
      expect_array_matches(outputs.at(k), expected.at(k), kSingle,
                           "call with seed " + std::to_string(seed));
  }
}

TEST(ConvolutionBackwardCompiled, EmptyBatchGivesZeroWeightGradients) {
  GraphCase graph;
  const Attributes same{{1}, {0}, {1}, 1};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    ValueId dy = graph.input(Array::zeros(dtype, {0, 3, 3, 3}));
    ValueId x = graph.input(Array::zeros(dtype, {0, 2, 5, 5}));
    ValueId w = random_input(graph, dtype, {3, 2, 3, 3}, 140);
    graph.output(gradient_of_weight(graph.builder, dy, x, {3, 2, 3, 3}, same), "weight", kWide);
    graph.output(gradient_of_input(graph.builder, dy, w, {0, 2, 5, 5}, same), "input", kWide);
  }
  CompiledRun run = graph.check();
  EXPECT_EQ(run.outputs.at(0).to_vector<double>(), std::vector<double>(54, 0.0));
}

TEST(ConvolutionBackwardCompiled, TensorApiMatchesTheInterpreter) {
  auto function = [](Tensor dy, Tensor w, Tensor x) {
    Tensor dx = kiln::convolution_backward_input(dy, w, {2, 3, 6, 6}, {2, 2}, {1, 1}, {1, 1}, 1);
    Tensor dw = kiln::convolution_backward_weight(dy, x, {5, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1);
    return kiln::sum(dx) + kiln::sum(dw);
  };
  Function compiled = compile(function, test_options());
  std::vector<Array> inputs = {
      make_array(DType::Float32, {2, 5, 3, 3}, pseudo_random(90, -1, 1, 150)),
      make_array(DType::Float32, {5, 3, 3, 3}, pseudo_random(135, -1, 1, 151)),
      make_array(DType::Float32, {2, 3, 6, 6}, pseudo_random(216, -1, 1, 152))};
  expect_function_matches(compiled, function, inputs, kSingle, "sum of both gradients");
}

}  // namespace
}  // namespace kiln::test
