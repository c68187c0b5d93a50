// The convolution extern op: the builder's shape rule and errors, the reference interpreter
// against hand-computed results, and the compiled op (oneDNN for float32, the loop fallback for
// float64) against the interpreter: strides, padding, dilation, groups, depthwise, 1-d and 3-d,
// with and without bias, strided inputs, pointwise prologue and epilogue around it, and repeated
// calls that reuse the cached primitives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <random>
#include <initializer_list>
#include <string>

#include "compile_test_util.h"
#include "extern/convolution.h"
#include "extern/winograd_convolution.h"
#include "ir/convolution_shape.h"
#include "ir/printer.h"
#include "passes/passes.h"
#include "passes/pipeline.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

// float32 sums of a few hundred products, reaching 30, in the order of oneDNN's kernel for the
// CPU (AVX2's direct kernel: 1.1e-5 off on a 3x3x64 sum)
const Tolerance kSingle = {1e-4, 5e-5, 4};
// Winograd's F(4x4, 3x3) in float32: its transforms spread each tile's rounding over the tile
// (2.5e-5 on outputs of 30), more so on one thread than on two (oneDNN's blocking follows the
// team kiln gives it, the free cores). kiln's own Winograd (CPUs without AVX-512, where oneDNN
// has none) sums 576 products of [-1, 1] operands (outputs of about 8) to within 3e-4.
const Tolerance kWinograd = {1e-4, 1e-3, 4};
const Tolerance kWide = {1e-12, 1e-12, 4};

std::vector<int64_t> shape_of(const ir::Graph& graph, ValueId id) {
  return ir::to_ints(graph.node(id).shape);
}

// ---- the builder: shapes and errors ------------------------------------------------------------

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

class ConvolutionBuilder : public ::testing::Test {
 protected:
  ConvolutionBuilder() : builder(graph) { builder.set_location("model.py:12"); }
  ir::Graph graph;
  ir::Builder builder;
};

TEST_F(ConvolutionBuilder, OutputShapeFollowsTorch) {
  ValueId x = builder.parameter(DType::Float32, {2, 4, 9, 10});
  ValueId w = builder.parameter(DType::Float32, {6, 2, 3, 3});
  ValueId b = builder.parameter(DType::Float32, {6});
  // floor((9 + 2 - 2 * 2 - 1) / 2) + 1 = 4, floor((10 + 2 - 4 - 1) / 2) + 1 = 4
  ValueId y = builder.convolution(x, w, b, {2}, {1}, {2}, 2);
  EXPECT_EQ(shape_of(graph, y), (std::vector<int64_t>{2, 6, 4, 4}));
  // One entry per spatial dimension is stored, expanded from the single one given.
  EXPECT_EQ(graph.node(y).attrs.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(graph.node(y).attrs.groups, 2);
  ValueId line = builder.parameter(DType::Float64, {1, 3, 12});
  ValueId taps = builder.parameter(DType::Float64, {5, 3, 4});
  EXPECT_EQ(shape_of(graph, builder.convolution(line, taps, std::nullopt, {3}, {2}, {1}, 1)),
            (std::vector<int64_t>{1, 5, 5}));
}

TEST_F(ConvolutionBuilder, UserErrorsNameTheOpAndLine) {
  ValueId x = builder.parameter(DType::Float32, {2, 4, 8, 8});
  ValueId w = builder.parameter(DType::Float32, {6, 4, 3, 3});
  ValueId matrix = builder.parameter(DType::Float32, {4, 8});
  ValueId ints = builder.parameter(DType::Int32, {2, 4, 8, 8});
  ValueId doubles = builder.parameter(DType::Float64, {6, 4, 3, 3});
  ValueId bias = builder.parameter(DType::Float32, {5});
  ValueId big = builder.parameter(DType::Float32, {6, 4, 11, 11});
  expect_error([&] { builder.convolution(matrix, w, std::nullopt, {1}, {0}, {1}, 1); },
               ErrorKind::Value, {"convolution", "model.py:12", "rank"});
  expect_error([&] { builder.convolution(x, matrix, std::nullopt, {1}, {0}, {1}, 1); },
               ErrorKind::Value, {"convolution", "rank"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {1}, {0}, {1}, 2); }, ErrorKind::Value,
               {"convolution", "channels", "groups"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {1}, {0}, {1}, 4); }, ErrorKind::Value,
               {"channels"});
  expect_error([&] { builder.convolution(ints, w, std::nullopt, {1}, {0}, {1}, 1); },
               ErrorKind::Type, {"convolution", "int32", "float32 or float64"});
  expect_error([&] { builder.convolution(x, doubles, std::nullopt, {1}, {0}, {1}, 1); },
               ErrorKind::Type, {"float64", "float32"});
  expect_error([&] { builder.convolution(x, w, bias, {1}, {0}, {1}, 1); }, ErrorKind::Value,
               {"bias", "(6,)"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {0}, {0}, {1}, 1); }, ErrorKind::Value,
               {"strides"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {1, 1, 1}, {0}, {1}, 1); },
               ErrorKind::Value, {"spatial"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {1}, {-1}, {1}, 1); },
               ErrorKind::Value, {"padding"});
  expect_error([&] { builder.convolution(x, w, std::nullopt, {1}, {0}, {1}, 0); }, ErrorKind::Value,
               {"groups"});
  expect_error([&] { builder.convolution(x, big, std::nullopt, {1}, {1}, {1}, 1); },
               ErrorKind::Value, {"smaller than the dilated kernel"});
}

TEST(ConvolutionApi, ErrorsThroughTheTensorApiRaiseNotCrash) {
  Function function = compile(
      [](Tensor x, Tensor w) {
        return kiln::convolution(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, 1);
      },
      test_options());
  try {
    function({make_array(DType::Float32, {1, 3, 5, 5}, {1}),
              make_array(DType::Float32, {2, 4, 3, 3}, {1})});
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value) << error.what();
    EXPECT_NE(std::string(error.what()).find("convolution"), std::string::npos) << error.what();
  }
}

// ---- the reference interpreter -----------------------------------------------------------------

TEST(ConvolutionInterpreter, HandComputedCases) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {1, 1, 3, 3});
  ValueId w = builder.parameter(DType::Float32, {1, 1, 2, 2});
  ValueId b = builder.parameter(DType::Float32, {1});
  graph.set_outputs({builder.convolution(x, w, b, {1}, {0}, {1}, 1),
                     builder.convolution(x, w, std::nullopt, {2}, {1}, {1}, 1),
                     builder.convolution(x, w, std::nullopt, {1}, {0}, {2}, 1)});
  // x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 0] [0 1]]: each output adds a pixel and the one
  // below-right of it (a dilation of 2 skips one between them).
  std::vector<Array> results =
      ir::interpret(graph, {make_array(DType::Float32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                            make_array(DType::Float32, {1, 1, 2, 2}, {1, 0, 0, 1}),
                            make_array(DType::Float32, {1}, {0.5})});
  EXPECT_EQ(results[0].shape(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(results[0].to_vector<double>(), (std::vector<double>{6.5, 8.5, 12.5, 14.5}));
  // Padding 1, stride 2: windows start at -1 and 1; only the lower-right tap is inside at -1.
  EXPECT_EQ(results[1].to_vector<double>(), (std::vector<double>{1, 3, 7, 14}));
  EXPECT_EQ(results[2].to_vector<double>(), (std::vector<double>{10}));
}

TEST(ConvolutionInterpreter, GroupsKeepChannelsApart) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId x = builder.parameter(DType::Float64, {1, 2, 1, 2});
  ValueId w = builder.parameter(DType::Float64, {2, 1, 1, 1});
  graph.set_outputs({builder.convolution(x, w, std::nullopt, {1}, {0}, {1}, 2)});
  std::vector<Array> results =
      ir::interpret(graph, {make_array(DType::Float64, {1, 2, 1, 2}, {1, 2, 3, 4}),
                            make_array(DType::Float64, {2, 1, 1, 1}, {10, 100})});
  EXPECT_EQ(results[0].to_vector<double>(), (std::vector<double>{10, 20, 300, 400}));
}

// The GPU's depthwise 3-d convolutions (passes/depthwise_convolutions.cpp): the taps' sums the
// pass builds against the interpreter's convolutions (strided, padded, dilated, with a bias and
// without); a 2-d depthwise convolution and a grouped 3-d one of two channels a group stay
// convolutions, the library's.
TEST(DepthwiseConvolutions, ThreeDimensionalOnesBecomeTapSumsEqualToTheConvolution) {
  ir::Graph graph;
  ir::Builder b(graph);
  const DType f64 = DType::Float64;
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 4, 5, 6, 7}, {4, 1, 3, 3, 3}, {4}, {2, 4, 6, 7}, {4, 1, 3, 3}, {4, 2, 3, 2, 3}};
  std::vector<ValueId> p;
  for (const auto& shape : shapes) p.push_back(b.parameter(f64, ir::Shape(shape.begin(), shape.end())));
  graph.set_outputs({
      b.convolution(p[0], p[1], p[2], {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, 4),
      b.convolution(p[0], p[1], std::nullopt, {2, 1, 3}, {0, 2, 1}, {1, 2, 1}, 4),
      b.convolution(p[3], p[4], std::nullopt, {1, 1}, {1, 1}, {1, 1}, 4),
      b.convolution(p[0], p[5], std::nullopt, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, 2)});
  const ir::Graph rewritten = passes::depthwise_convolutions(graph);
  int convolutions = 0;
  for (const ir::Node& node : rewritten.nodes()) convolutions += node.op == Op::convolution;
  EXPECT_EQ(convolutions, 2) << ir::print_graph(rewritten);
  std::vector<Array> inputs;
  for (size_t k = 0; k < shapes.size(); ++k) {
    size_t count = 1;
    for (int64_t extent : shapes[k]) count *= static_cast<size_t>(extent);
    inputs.push_back(make_array(f64, shapes[k], pseudo_random(count, -1, 1, 30 + k)));
  }
  const std::vector<Array> want = ir::interpret(graph, inputs);
  const std::vector<Array> got = ir::interpret(rewritten, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k)
    expect_array_matches(got[k], want[k], {1e-12, 1e-12}, "output " + std::to_string(k));
}

// ---- compiled against the interpreter -----------------------------------------------------------

ValueId random_input(GraphCase& graph, DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return graph.input(make_array(dtype, shape, pseudo_random(size_t(count), -1, 1, seed)));
}

TEST(ConvolutionCompiled, TwoDimensionalVariantsFloat32) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const DType f32 = DType::Float32;
  ValueId x = random_input(graph, f32, {2, 4, 9, 10}, 1);
  ValueId w = random_input(graph, f32, {6, 4, 3, 3}, 2);
  ValueId grouped = random_input(graph, f32, {6, 2, 3, 3}, 3);
  ValueId depthwise = random_input(graph, f32, {4, 1, 3, 3}, 4);
  ValueId bias = random_input(graph, f32, {6}, 5);
  graph.output(builder.convolution(x, w, bias, {2}, {1}, {2}, 1), "stride 2 padding 1 dilation 2",
               kSingle);
  graph.output(builder.convolution(x, w, std::nullopt, {1}, {0}, {1}, 1), "plain, no bias",
               kSingle);
  graph.output(builder.convolution(x, w, bias, {1, 2}, {2, 0}, {1, 3}, 1), "per-axis parameters",
               kSingle);
  graph.output(builder.convolution(x, grouped, bias, {1}, {1}, {1}, 2), "groups 2", kSingle);
  graph.output(builder.convolution(x, depthwise, std::nullopt, {1}, {1}, {1}, 4), "depthwise",
               kSingle);
  graph.check();
}

TEST(ConvolutionCompiled, OneAndThreeDimensional) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId line = random_input(graph, DType::Float32, {2, 3, 12}, 6);
  ValueId taps = random_input(graph, DType::Float32, {5, 3, 4}, 7);
  ValueId bias = random_input(graph, DType::Float32, {5}, 8);
  ValueId volume = random_input(graph, DType::Float32, {1, 2, 5, 6, 4}, 9);
  ValueId cube = random_input(graph, DType::Float32, {4, 1, 2, 3, 2}, 10);
  graph.output(builder.convolution(line, taps, bias, {3}, {2}, {1}, 1), "1-d", kSingle);
  graph.output(builder.convolution(line, taps, std::nullopt, {1}, {0}, {2}, 1), "1-d dilated",
               kSingle);
  graph.output(builder.convolution(volume, cube, std::nullopt, {1, 2, 1}, {1}, {1}, 2),
               "3-d groups 2", kSingle);
  graph.check();
}

ValueId bias_of_two(GraphCase& graph) { return random_input(graph, DType::Float64, {2}, 28); }

TEST(ConvolutionCompiled, Float64RunsOnBlas) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const DType f64 = DType::Float64;
  ValueId x = random_input(graph, f64, {2, 4, 7, 6}, 11);
  ValueId w = random_input(graph, f64, {6, 2, 3, 2}, 12);
  ValueId bias = random_input(graph, f64, {6}, 13);
  ValueId line = random_input(graph, f64, {1, 2, 9}, 14);
  ValueId taps = random_input(graph, f64, {2, 1, 3}, 15);
  graph.output(builder.convolution(x, w, bias, {2, 1}, {1}, {2, 1}, 2), "float64 2-d", kWide);
  // Channels-last storage (N, H, W, C) seen as (N, C, H, W): the windows are gathered through
  // the strides.
  std::vector<double> storage = pseudo_random(2 * 5 * 4 * 3, -1, 1, 26);
  ValueId channels_last =
      graph.input(Array::borrow(storage.data(), DType::Float64, {2, 3, 5, 4}, {60, 1, 12, 3}));
  ValueId square = random_input(graph, f64, {2, 3, 2, 2}, 27);
  graph.output(builder.convolution(channels_last, square, bias_of_two(graph), {1}, {1}, {1}, 1),
               "float64 channels-last", kWide);
  graph.output(builder.convolution(line, taps, std::nullopt, {1}, {1}, {1}, 2),
               "float64 1-d depthwise", kWide);
  graph.check();
}

TEST(ConvolutionCompiled, StridedAndSlicedOperands) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  // The input in channels-last storage (N, H, W, C) seen as (N, C, H, W), and a weight stored
  // as (kH, kW, C, O): both reach the library kernel as strided buffers.
  std::vector<float> input_storage(2 * 6 * 5 * 3), weight_storage(3 * 3 * 3 * 4);
  std::vector<double> random = pseudo_random(input_storage.size(), -1, 1, 16);
  for (size_t k = 0; k < input_storage.size(); ++k) input_storage[k] = float(random[k]);
  random = pseudo_random(weight_storage.size(), -1, 1, 17);
  for (size_t k = 0; k < weight_storage.size(); ++k) weight_storage[k] = float(random[k]);
  ValueId channels_last = graph.input(
      Array::borrow(input_storage.data(), DType::Float32, {2, 3, 6, 5}, {90, 1, 15, 3}));
  ValueId weight = graph.input(
      Array::borrow(weight_storage.data(), DType::Float32, {4, 3, 3, 3}, {1, 4, 36, 12}));
  ValueId x = random_input(graph, DType::Float32, {2, 3, 12, 11}, 18);
  graph.output(builder.convolution(channels_last, weight, std::nullopt, {1}, {1}, {1}, 1),
               "channels-last input, permuted weight", kSingle);
  ValueId every_other = builder.slice(x, {0, 0, 0, 0}, {2, 3, 12, 11}, {1, 1, 2, 2});
  graph.output(builder.convolution(every_other, weight, std::nullopt, {1}, {0}, {1}, 1),
               "sliced input", kSingle);
  ValueId permuted = builder.permute(builder.reshape(x, {2, 3, 11, 12}), {0, 1, 3, 2});
  graph.output(builder.convolution(permuted, weight, std::nullopt, {2}, {1}, {1}, 1),
               "permuted input", kSingle);
  graph.check();
}

TEST(ConvolutionCompiled, PointwiseAroundTheConvolution) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId x = random_input(graph, DType::Float32, {2, 4, 8, 8}, 19);
  ValueId w = random_input(graph, DType::Float32, {4, 4, 3, 3}, 20);
  ValueId bias = random_input(graph, DType::Float32, {4}, 21);
  ValueId residual = random_input(graph, DType::Float32, {2, 4, 8, 8}, 22);
  // Prologue: the operand is computed by a kernel; epilogue: relu(conv) + residual, then a
  // second convolution of that (a residual block's shape).
  ValueId scaled = builder.binary(Op::mul, x, builder.constant(ir::Scalar::of(2), DType::Float32));
  ValueId conv = builder.convolution(scaled, w, bias, {1}, {1}, {1}, 1);
  ValueId zero = builder.constant(ir::Scalar::of(0), DType::Float32);
  ValueId block = builder.binary(Op::add, builder.binary(Op::maximum, conv, zero), residual);
  graph.output(block, "relu(conv(2x)) + residual", kSingle);
  graph.output(builder.convolution(block, w, std::nullopt, {1}, {1}, {1}, 1), "second conv",
               kSingle);
  graph.check();
}

TEST(ConvolutionCompiled, RepeatedCallsReuseThePrimitives) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId x = builder.parameter(DType::Float32, {1, 3, 7, 7});
  ValueId w = builder.parameter(DType::Float32, {8, 3, 3, 3});
  graph.set_outputs({builder.convolution(x, w, std::nullopt, {1}, {1}, {1}, 1)});
  Options options = test_options();
  CompileStats stats;
  std::unique_ptr<detail::CompiledGraph> compiled =
      detail::compile_graph(graph, {{}, {}}, options, stats);
  for (uint64_t seed = 30; seed < 33; ++seed) {
    std::vector<Array> inputs = {
        make_array(DType::Float32, {1, 3, 7, 7}, pseudo_random(147, -1, 1, seed)),
        make_array(DType::Float32, {8, 3, 3, 3}, pseudo_random(216, -1, 1, seed + 10))};
    std::vector<Array> outputs;
    compiled->executable->run(inputs, outputs);
    std::vector<Array> expected = ir::interpret(graph, inputs);
    expect_array_matches(outputs.at(0), expected.at(0), kSingle,
                         "call with seed " + std::to_string(seed));
  }
}

// A compiled 3x3 stride-1 convolution of 64 channels (with a bias), called on the images of
// `seed` and the given weights, checked against the interpreter within `tolerance`.
struct SameConvolution {
  SameConvolution(std::vector<int64_t> input, bool with_bias) : input_shape(std::move(input)) {
    ir::Builder builder(graph);
    ValueId x = builder.parameter(DType::Float32, ir::from_ints(input_shape));
    ValueId w = builder.parameter(DType::Float32, ir::from_ints(weight_shape));
    std::optional<ValueId> bias;
    if (with_bias) bias = builder.parameter(DType::Float32, {64});
    graph.set_outputs({builder.convolution(x, w, bias, {1}, {1}, {1}, 1)});
    CompileStats stats;
    compiled = detail::compile_graph(graph, std::vector<std::vector<int64_t>>(with_bias ? 3 : 2),
                                     test_options(), stats);
  }
  void call(uint64_t seed, std::vector<Array> operands, const Tolerance& tolerance,
            const std::string& what) {
    int64_t count = 1;
    for (int64_t size : input_shape) count *= size;
    operands.insert(operands.begin(),
                    make_array(DType::Float32, input_shape, pseudo_random(size_t(count), -1, 1, seed)));
    std::vector<Array> outputs;
    compiled->executable->run(operands, outputs);
    expect_array_matches(outputs.at(0), ir::interpret(graph, operands).at(0), tolerance, what);
  }
  void set_weights(Array& weights, uint64_t seed) {
    std::vector<double> next = pseudo_random(64 * 64 * 9, -1, 1, seed);
    for (size_t k = 0; k < next.size(); ++k) weights.data_as<float>()[k] = float(next[k]);
  }
  const std::vector<int64_t> input_shape, weight_shape{64, 64, 3, 3};
  ir::Graph graph;
  std::unique_ptr<detail::CompiledGraph> compiled;
};

// Few output positions per channel (2 x 14 x 14 over 64): Winograd's algorithm from the third
// call on the same weights (kept from the second, their transform from the third); weights
// changed in place, and weights that change on every call (a training loop's), are read
// afresh: every call matches the interpreter.
TEST(ConvolutionCompiled, KeptWeightsFollowTheirContents) {
  SameConvolution conv({2, 64, 14, 14}, true);
  Array weights = make_array(DType::Float32, conv.weight_shape, pseudo_random(64 * 64 * 9, -1, 1, 40));
  Array biases = make_array(DType::Float32, {64}, pseudo_random(64, -1, 1, 41));
  const externs::ConvolutionCounters start = externs::convolution_counters();
  conv.call(42, {weights, biases}, kSingle, "first call");
  conv.call(43, {weights, biases}, kSingle, "second call, same weights");
  conv.call(44, {weights, biases}, kWinograd, "third call, same weights");
  conv.call(41, {weights, biases}, kWinograd, "fourth call, same weights");
  const externs::ConvolutionCounters repeated = externs::convolution_counters();
  // (oneDNN's Winograd where the CPU has AVX-512, kiln's own elsewhere.)
  EXPECT_EQ(repeated.winograd_calls - start.winograd_calls, 2);
  EXPECT_EQ(repeated.kept_weight_hits - start.kept_weight_hits, 2);
  weights.data_as<float>()[5 * 64 * 9 + 4] += 0.5f;  // one tap of output channel 5
  conv.call(45, {weights, biases}, kSingle, "a weight changed in place");
  for (uint64_t step = 0; step < 4; ++step) {
    conv.set_weights(weights, 50 + step);
    conv.call(46 + step, {weights, biases}, kSingle, "weights changed on call " + std::to_string(step));
  }
  EXPECT_EQ(externs::convolution_counters().kept_weight_hits, repeated.kept_weight_hits);
}

// Where the activations outweigh the weights (2 x 28 x 28 positions over 64 channels),
// weights that change on every call run Winograd's training form, whose kernels transform them:
// every call is Winograd's and matches the interpreter within float32 rounding of the largest
// outputs (its transform spreads each tile's rounding over the tile: 2.5e-5 on outputs of 30).
TEST(ConvolutionCompiled, ChangingWeightsRunWinogradsTrainingForm) {
  SameConvolution conv({2, 64, 28, 28}, false);
  Array weights = make_array(DType::Float32, conv.weight_shape, pseudo_random(64 * 64 * 9, -1, 1, 60));
  const int64_t start = externs::convolution_counters().winograd_calls;
  for (uint64_t step = 0; step < 4; ++step) {
    conv.set_weights(weights, 61 + step);
    conv.call(70 + step, {weights}, kWinograd, "call " + std::to_string(step));
  }
  EXPECT_EQ(externs::convolution_counters().winograd_calls - start, 4);
}

// kiln's own Winograd (extern/winograd_convolution.h), which CPUs without oneDNN's kernels run,
// against the definition in double: channel counts that are no multiple of its 8 lanes,
// images that are no multiple of its 4x4 tiles, both paddings, channels-first and -last
// operands, a strided bias and a result at wider strides.
TEST(ConvolutionWinograd, MatchesTheDefinitionAtAnyLayout) {
  struct Case { int64_t batch, in, out, height, width, padding; bool channels_last; };
  for (const Case& c : {Case{2, 5, 7, 9, 11, 1, true}, Case{1, 13, 9, 6, 7, 0, false},
                        Case{3, 16, 24, 8, 8, 1, false}, Case{2, 17, 33, 13, 5, 1, true},
                        Case{1, 64, 64, 14, 14, 1, true}, Case{2, 3, 8, 4, 4, 0, true}}) {
    const int64_t oh = c.height + 2 * c.padding - 2, ow = c.width + 2 * c.padding - 2;
    std::vector<double> x = pseudo_random(size_t(c.batch * c.in * c.height * c.width), -1, 1, 80);
    std::vector<double> w = pseudo_random(size_t(c.out * c.in * 9), -1, 1, 81);
    std::vector<double> b = pseudo_random(size_t(2 * c.out), -1, 1, 82);
    std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end()), bf(b.begin(), b.end());
    auto strides = [&](int64_t channels, int64_t h, int64_t width, int64_t pixel_gap) {
      return c.channels_last ? std::vector<int64_t>{h * width * pixel_gap, 1, width * pixel_gap, pixel_gap}
                             : std::vector<int64_t>{channels * h * width, h * width, width, 1};
    };
    const std::vector<int64_t> xs = strides(c.in, c.height, c.width, c.in);
    // the result channels-last with a gap of 3 after each pixel's channels
    const std::vector<int64_t> os = strides(c.out, oh, ow, c.out + 3);
    externs::StridedOperand input{xf.data(), DType::Float32, {c.batch, c.in, c.height, c.width}, xs};
    externs::StridedOperand weight{wf.data(), DType::Float32, {c.out, c.in, 3, 3}, {c.in * 9, 9, 3, 1}};
    ir::ConvolutionGeometry g;
    ASSERT_EQ(ir::convolution_geometry(input.shape, weight.shape, std::vector<int64_t>{c.out},
                                       {1, 1}, {c.padding, c.padding}, {1, 1}, 1, g), "");
    std::vector<float> transformed(size_t(externs::winograd_weight_size(g))), scratch;
    std::vector<float> out(size_t(c.batch * os[0] + 1), -7.0f);
    externs::winograd_transform_weights(weight, transformed.data());
    externs::winograd_convolution(g, input, transformed.data(), bf.data(), 2, out.data(), os,
                                  scratch);
    double worst = 0;
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t o = 0; o < c.out; ++o)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t z = 0; z < ow; ++z) {
            double sum = b[size_t(2 * o)];
            for (int64_t i = 0; i < c.in; ++i)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t iy = y - c.padding + ky, ix = z - c.padding + kx;
                  if (iy >= 0 && iy < c.height && ix >= 0 && ix < c.width)
                    sum += x[size_t(n * xs[0] + i * xs[1] + iy * xs[2] + ix * xs[3])] *
                           w[size_t(((o * c.in + i) * 3 + ky) * 3 + kx)];
                }
            const float got = out[size_t(n * os[0] + o * os[1] + y * os[2] + z * os[3])];
            worst = std::max(worst, std::abs(double(got) - sum));
          }
    // float32 transforms of sums of up to 576 products of values in [-1, 1]
    EXPECT_LT(worst, 2e-6 * double(c.in * 9) + 1e-5) << c.in << " channels " << c.height << "x" << c.width;
    if (c.channels_last) {  // the gaps between pixels keep what they held
      EXPECT_EQ(out[size_t(c.out)], -7.0f);
    }
  }
}

TEST(ConvolutionCompiled, EmptyBatch) {
  GraphCase graph;
  ValueId x = graph.input(Array::zeros(DType::Float32, {0, 2, 5, 5}));
  ValueId w = random_input(graph, DType::Float32, {3, 2, 3, 3}, 23);
  ValueId bias = random_input(graph, DType::Float32, {3}, 24);
  graph.output(graph.builder.convolution(x, w, bias, {1}, {0}, {1}, 1), "empty batch", kSingle);
  ValueId wide = graph.input(Array::zeros(DType::Float64, {0, 2, 5, 5}));
  ValueId wide_weight = random_input(graph, DType::Float64, {3, 2, 3, 3}, 25);
  graph.output(graph.builder.convolution(wide, wide_weight, std::nullopt, {1}, {0}, {1}, 1),
               "empty batch float64", kWide);
  CompiledRun run = graph.check();
  EXPECT_EQ(run.outputs.at(0).shape(), (std::vector<int64_t>{0, 3, 3, 3}));
}

TEST(ConvolutionCompiled, TensorApiMatchesTheInterpreter) {
  auto function = [](Tensor x, Tensor w, Tensor b) {
    return kiln::relu(kiln::convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1));
  };
  Function compiled = compile(function, test_options());
  std::vector<Array> inputs = {
      make_array(DType::Float32, {1, 3, 6, 6}, pseudo_random(108, -1, 1, 40)),
      make_array(DType::Float32, {5, 3, 3, 3}, pseudo_random(135, -1, 1, 41)),
      make_array(DType::Float32, {5}, pseudo_random(5, -1, 1, 42))};
  expect_function_matches(compiled, function, inputs, kSingle, "conv + relu");
}

// kiln's Winograd weight gradient (extern/winograd_convolution.h) against the definition in
// double, over the same kinds of shapes and layouts as the forward's.
TEST(ConvolutionWinograd, WeightGradientMatchesTheDefinition) {
  struct Case { int64_t batch, in, out, height, width, padding; bool channels_last; };
  for (const Case& c : {Case{2, 5, 7, 9, 11, 1, true}, Case{1, 13, 9, 6, 7, 0, false},
                        Case{3, 16, 24, 8, 8, 1, false}, Case{2, 17, 33, 13, 5, 1, true},
                        Case{4, 64, 64, 14, 14, 1, true}}) {
    const int64_t oh = c.height + 2 * c.padding - 2, ow = c.width + 2 * c.padding - 2;
    auto strides = [&](int64_t channels, int64_t h, int64_t w) {
      return c.channels_last ? std::vector<int64_t>{h * w * channels, 1, w * channels, channels}
                             : std::vector<int64_t>{channels * h * w, h * w, w, 1};
    };
    const std::vector<int64_t> xs = strides(c.in, c.height, c.width), ys = strides(c.out, oh, ow);
    std::vector<double> x = pseudo_random(size_t(c.batch * c.in * c.height * c.width), -1, 1, 83);
    std::vector<double> dy = pseudo_random(size_t(c.batch * c.out * oh * ow), -1, 1, 84);
    std::vector<float> xf(x.begin(), x.end()), dyf(dy.begin(), dy.end());
    externs::StridedOperand input{xf.data(), DType::Float32, {c.batch, c.in, c.height, c.width}, xs};
    externs::StridedOperand grad{dyf.data(), DType::Float32, {c.batch, c.out, oh, ow}, ys};
    ir::ConvolutionGeometry g;
    ASSERT_EQ(ir::convolution_geometry(input.shape, {c.out, c.in, 3, 3}, std::nullopt, {1, 1},
                                       {c.padding, c.padding}, {1, 1}, 1, g), "");
    std::vector<float> out(size_t(c.out * c.in * 9), -7.0f), scratch;
    externs::winograd_weight_gradient(g, input, grad, out.data(), scratch);
    double worst = 0, largest = 0;
    for (int64_t o = 0; o < c.out; ++o)
      for (int64_t i = 0; i < c.in; ++i)
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            double sum = 0;
            for (int64_t n = 0; n < c.batch; ++n)
              for (int64_t y = 0; y < oh; ++y)
                for (int64_t z = 0; z < ow; ++z) {
                  const int64_t iy = y - c.padding + ky, ix = z - c.padding + kx;
                  if (iy >= 0 && iy < c.height && ix >= 0 && ix < c.width)
                    sum += dy[size_t(n * ys[0] + o * ys[1] + y * ys[2] + z * ys[3])] *
                           x[size_t(n * xs[0] + i * xs[1] + iy * xs[2] + ix * xs[3])];
                }
            worst = std::max(worst, std::abs(double(out[size_t(((o * c.in + i) * 3 + ky) * 3 + kx)]) - sum));
            largest = std::max(largest, std::abs(sum));
          }
    // float32 transforms of sums over up to 4 x 14 x 14 positions of values in [-1, 1]
    EXPECT_LT(worst, 2e-6 * double(c.batch * oh * ow) + 1e-5)
        << c.in << " channels " << c.height << "x" << c.width << " (largest " << largest << ")";
  }
}

// ---- channels-last convolutions (passes/channels_last.cpp) -------------------------------------

TEST(ConvolutionInterpreter, ChannelsLastIsThePermutedConvolution) {
  ir::Graph graph;
  ir::Builder builder(graph);
  ValueId x = builder.parameter(DType::Float64, {2, 6, 5, 4});  // (N, H, W, C)
  ValueId w = builder.parameter(DType::Float64, {6, 2, 3, 2});
  ValueId b = builder.parameter(DType::Float64, {6});
  ValueId last = builder.convolution(x, w, b, {2, 1}, {1}, {1, 2}, 2, /*channels_last=*/true);
  EXPECT_EQ(shape_of(graph, last), (std::vector<int64_t>{2, 3, 5, 6}));
  ValueId first = builder.convolution(builder.permute(x, ir::channels_first_order(4)), w, b,
                                      {2, 1}, {1}, {1, 2}, 2);
  ValueId filters = builder.convolution(x, builder.permute(w, ir::channels_last_order(4)), b,
                                        {2, 1}, {1}, {1, 2}, 2, true, /*filters_last=*/true);
  graph.set_outputs({last, builder.permute(first, ir::channels_last_order(4)), filters});
  std::vector<Array> results =
      ir::interpret(graph, {make_array(DType::Float64, {2, 6, 5, 4}, pseudo_random(240, -1, 1, 50)),
                            make_array(DType::Float64, {6, 2, 3, 2}, pseudo_random(72, -1, 1, 51)),
                            make_array(DType::Float64, {6}, pseudo_random(6, -1, 1, 52))});
  expect_array_matches(results.at(0), results.at(1), kWide, "channels-last convolution");
  expect_array_matches(results.at(2), results.at(1), kWide, "channels-last filters");
}

// A residual network's stem and block: convolution, batch norm, ReLU, a 3x3/2 max pool (pad and
// strided slices), convolution, residual add, global sum pool, flatten.
struct ResidualBlock {
  GraphCase graph;
  ValueId output = -1;
  ResidualBlock() {
    ir::Builder& b = graph.builder;
    const DType f32 = DType::Float32;
    ValueId x = random_input(graph, f32, {2, 3, 16, 16}, 60);
    ValueId stem = random_input(graph, f32, {8, 3, 3, 3}, 61);
    ValueId scale = random_input(graph, f32, {8}, 62), shift = random_input(graph, f32, {8}, 63);
    ValueId w = random_input(graph, f32, {8, 8, 3, 3}, 64);
    ValueId zero = b.constant(ir::Scalar::of(0), f32);
    auto per_channel = [&](ValueId v, const ir::Shape& shape) {
      return b.broadcast(b.reshape(v, {1, 8, 1, 1}), shape);
    };
    ValueId conv = b.convolution(x, stem, std::nullopt, {1}, {1}, {1}, 1);
    const ir::Shape shape = graph.graph.node(conv).shape;
    ValueId normed = b.binary(Op::add, b.binary(Op::mul, conv, per_channel(scale, shape)),
                              per_channel(shift, shape));
    ValueId relu = b.binary(Op::maximum, normed, b.broadcast(zero, shape));
    ValueId padded = b.pad(relu, {0, 0, 1, 1}, {0, 0, 1, 1}, ir::PadMode::Constant,
                           ir::Scalar::of(-1e30));
    ValueId pooled = -1;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        ValueId window = b.slice(padded, {0, 0, i, j}, {2, 8, i + 15, j + 15}, {1, 1, 2, 2});
        pooled = pooled < 0 ? window : b.binary(Op::maximum, pooled, window);
      }
    ValueId block = b.convolution(pooled, w, std::nullopt, {1}, {1}, {1}, 1);
    const ir::Shape pooled_shape = graph.graph.node(block).shape;
    ValueId sum = b.binary(Op::maximum, b.binary(Op::add, block, pooled),
                           b.broadcast(zero, pooled_shape));
    output = b.reshape(b.reduce(Op::sum, sum, {2, 3}, true), {2, 8});
    graph.output(output, "residual block", kSingle);
    // Computed channels-last, stored channels-first (as a training graph saves it).
    graph.output(pooled, "max pool", kSingle);
  }
};

TEST(ChannelsLast, ActivationsStayChannelsLastBetweenConvolutions) {
  ResidualBlock block;
  block.graph.graph.set_outputs({block.output});
  ir::Graph optimized = passes::run_graph_passes(block.graph.graph, {"channels_last_filters"});
  int convolutions = 0, permutes = 0;
  for (const ir::Node& node : optimized.nodes()) {
    if (node.op == Op::convolution) {
      ++convolutions;
      EXPECT_TRUE(node.attrs.channels_last) << ir::print_graph(optimized);
    }
    // Batch norm's per-channel parameters are permuted where they are (8 elements each).
    permutes += node.op == Op::permute && ir::element_count(node.shape) > 8;
  }
  EXPECT_EQ(convolutions, 2);
  // The graph input into the first convolution and the pooled (N, 1, 1, C) sum out of the
  // layout: no activation is permuted between the convolutions.
  EXPECT_EQ(permutes, 2) << ir::print_graph(optimized);
}

// Random chains after a convolution, through every kind of op the layout passes (pointwise with
// per-channel and full operands, pads, strided slices, reductions keeping their dimensions) and
// ops it stops at (a reduction dropping dimensions, a permute, a reshape, a second
// convolution), several chains in one graph: compiled (with the pass) against the interpreter.
TEST(ChannelsLast, RandomChainsMatchTheInterpreter) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  const DType f32 = DType::Float32;
  const char* seed = std::getenv("KILN_TEST_SEED");  // other chains, when asked
  std::mt19937 random(seed ? static_cast<unsigned>(std::atoi(seed)) : 7);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  for (int chain = 0; chain < 8; ++chain) {
    const int64_t channels = 2 + pick(3), size = 5 + pick(4);
    ValueId x = random_input(graph, f32, {2, 3, size, size + 1}, 100 + chain);
    ValueId w = random_input(graph, f32, {channels, 3, 3, 3}, 200 + chain);
    ValueId v = b.convolution(x, w, std::nullopt, {1 + pick(2)}, {pick(2)}, {1}, 1);
    for (int step = 0; step < 6; ++step) {
      const ir::Shape shape = graph.graph.node(v).shape;
      if (shape.size() != 4) break;
      const int64_t c = shape[1].constant();
      const bool room = c >= 2 && shape[2].constant() >= 2 && shape[3].constant() >= 2;
      switch (pick(9)) {
        case 0: {  // per-channel scale and shift (batch norm)
          ValueId scale = random_input(graph, f32, {c}, 300 + 10 * chain + step);
          v = b.binary(Op::mul, v, b.broadcast(b.reshape(scale, {1, c, 1, 1}), shape));
          break;
        }
        case 1:  // ReLU
          v = b.binary(Op::maximum, v, b.broadcast(b.constant(ir::Scalar::of(0), f32), shape));
          break;
        case 2: {  // a residual from outside the layout
          ValueId other = random_input(graph, f32, ir::to_ints(shape), 400 + 10 * chain + step);
          v = b.binary(Op::add, v, other);
          break;
        }
        case 3:
          v = b.pad(v, {0, 0, 1, pick(2)}, {0, 0, pick(2), 1}, ir::PadMode::Constant,
                    ir::Scalar::of(0.0));
          break;
        case 4:
          if (room) v = b.slice(v, {0, pick(2), 1, 0}, ir::to_ints(shape), {1, 1, 2, 1 + pick(2)});
          break;
        case 5:
          v = b.unary(Op::tanh, b.reduce(Op::sum, v, {pick(2) ? 2 : 1, 3}, true));
          break;
        case 6:
          graph.output(b.reduce(Op::max, v, {0, 2}, false), "reduction dropping dimensions",
                       kSingle);
          break;
        case 7:
          v = b.reshape(b.permute(v, {0, 2, 1, 3}),
                        {shape[0], shape[2], c * shape[3].constant(), 1});
          break;
        default: {
          ValueId next = random_input(graph, f32, {c, c, 1, 2}, 500 + 10 * chain + step);
          v = b.convolution(b.unary(Op::tanh, v), next, std::nullopt, {1}, {0, 1}, {1}, 1);
        }
      }
    }
    graph.output(v, "chain " + std::to_string(chain), kSingle);
  }
  graph.graph.set_outputs(graph.outputs);
  int rewritten = 0;
  const ir::Graph optimized = passes::run_graph_passes(graph.graph, {});
  for (const ir::Node& node : optimized.nodes())
    rewritten += node.op == Op::convolution && node.attrs.channels_last;
  EXPECT_GE(rewritten, 8);
  graph.check();
}

// Indices along an axis (argmax/argmin reduce over one axis only) mean the same in either layout.
TEST(ChannelsLast, ArgmaxAlongAnAxisKeepsItsMeaning) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId x = random_input(graph, DType::Float32, {2, 3, 6, 5}, 70);
  ValueId w = random_input(graph, DType::Float32, {4, 3, 3, 3}, 71);
  ValueId conv = b.convolution(x, w, std::nullopt, {1}, {1}, {1}, 1);
  graph.output(b.reduce(Op::argmax, conv, {1}, true), "argmax over channels",
               default_tolerance(DType::Int64));
  graph.output(b.reduce(Op::argmin, conv, {3}, true), "argmin over columns",
               default_tolerance(DType::Int64));
  graph.check();
}

TEST(ChannelsLast, CompiledMatchesTheInterpreter) {
  ResidualBlock block;
  block.graph.check();
  setenv("KILN_DISABLE_PASSES", "channels_last", 1);  // the same graph without the pass
  ResidualBlock unchanged;
  unchanged.graph.check();
  unsetenv("KILN_DISABLE_PASSES");
}

}  // namespace
}  // namespace kiln::test
