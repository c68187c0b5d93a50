// Serialised graphs and programs: round trips of everything they hold, damaged bytes rejected
// with an error (never a crash), and the structural kernel key that finds identical kernels.
#include <gtest/gtest.h>

#include <random>

#include "compile_test_util.h"
#include "ir/printer.h"
#include "ir/serializer.h"
#include "runtime/executable_image.h"
#include "sched/kernel_hash.h"
#include "sched/program_serializer.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;

// A graph that uses most attribute fields: reductions with axes and keepdims, var's ddof, a
// slice, a pad, a permute, a gather, a scatter-add, random numbers, a constant array, a grouped
// channels-last convolution.
struct RichGraph : GraphCase {
  RichGraph() {
    ir::ValueId x = input(make_array(DType::Float32, {6, 5}, pseudo_random(30, -2, 2, 3)));
    ir::ValueId index = input(make_integer_array(DType::Int64, {4}, {0, 5, -1, 2}));
    std::vector<uint8_t> bytes(5 * sizeof(float));
    float values[5] = {1.5f, -2, 0.25f, 8, -0.5f};
    std::memcpy(bytes.data(), values, sizeof values);
    ir::ValueId table = builder.constant_array(bytes, DType::Float32, {5});
    output(builder.reduce(Op::var, x, {0}, true, 1), "var");
    output(builder.reduce(Op::argmax, x, {1}, false), "argmax");
    output(builder.slice(x, {1, 0}, {2, 2}, {3, 2}), "slice");
    output(builder.pad(x, {1, 0}, {0, 2}, ir::PadMode::Reflect, ir::Scalar::of(0.0)), "pad");
    output(builder.permute(x, {1, 0}), "permute");
    output(builder.binary(Op::mul, builder.broadcast(table, {6, 5}), x), "table * x");
    output(builder.gather(x, index, 0), "gather");
    output(builder.random_uniform(DType::Float32, {3}, 1234), "random");
    ir::ValueId image = input(make_array(DType::Float32, {1, 5, 6, 2}, pseudo_random(60, -1, 1, 4)));
    ir::ValueId kernel = input(make_array(DType::Float32, {4, 1, 3, 3}, pseudo_random(36, -1, 1, 5)));
    output(builder.convolution(image, kernel, std::nullopt, {2}, {1}, {1}, 2, /*channels_last=*/true),
           "channels-last convolution");
  }
};

TEST(GraphSerializer, RoundTripsEveryField) {
  RichGraph rich;
  rich.graph.set_outputs(rich.outputs);
  std::string bytes = ir::serialize_graph(rich.graph);
  ir::Graph back = ir::deserialize_graph(bytes);
  EXPECT_EQ(ir::print_graph(back, true), ir::print_graph(rich.graph, true));
  ASSERT_EQ(back.size(), rich.graph.size());
  for (int id = 0; id < back.size(); ++id)
    EXPECT_TRUE(back.node(id).attrs == rich.graph.node(id).attrs) << "node " << id;
  EXPECT_EQ(ir::serialize_graph(back), bytes);
}

// Every truncation and many single-byte changes: an error or a verified graph, never a crash.
template <class Read>
void expect_damage_is_caught(const std::string& bytes, Read read) {
  for (size_t length = 0; length < bytes.size(); ++length)
    EXPECT_THROW(read(bytes.substr(0, length)), Error) << "truncated to " << length;
  std::mt19937 random(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = bytes;
    damaged[random() % damaged.size()] ^= static_cast<char>(1 + random() % 255);
    try {
      read(damaged);
    } catch (const Error& error) {
      EXPECT_TRUE(error.kind() == ErrorKind::Value) << error.what();
    }
  }
}

TEST(GraphSerializer, DamagedBytesAreAnError) {
  RichGraph rich;
  rich.graph.set_outputs(rich.outputs);
  expect_damage_is_caught(ir::serialize_graph(rich.graph),
                          [](const std::string& b) { ir::deserialize_graph(b); });
}

TEST(ProgramSerializer, RoundTripsAScheduledProgram) {
  RichGraph rich;
  rich.graph.set_outputs(rich.outputs);
  sched::Program program = sched::schedule(rich.graph, {});
  std::string bytes = sched::serialize_program(program);
  sched::Program back = sched::deserialize_program(bytes);
  EXPECT_EQ(sched::print_program(back), sched::print_program(program));
  EXPECT_EQ(sched::serialize_program(back), bytes);
}

TEST(ProgramSerializer, DamagedImagesAreAnError) {
  RichGraph rich;
  rich.graph.set_outputs(rich.outputs);
  sched::Program program = sched::schedule(rich.graph, {});
  std::vector<runtime::KernelCall> calls;
  for (const sched::Kernel& kernel : program.kernels)
    calls.push_back({kernel.name, sched::kernel_signature(kernel, program).arguments});
  std::string bytes = runtime::serialize_image(program, calls);
  // The constant array travels in the library, found by its buffer name.
  std::vector<std::string> looked_up;
  auto lookup = [&](const std::string& name, int64_t bytes) -> const void* {
    looked_up.push_back(name);
    for (const sched::Buffer& buffer : program.buffers)
      if (buffer.name == name && static_cast<int64_t>(buffer.constant_data->size()) == bytes)
        return buffer.constant_data->data();
    throw Error(ErrorKind::Value, "no symbol " + name + " of that size");
  };
  runtime::ExecutableImage back = runtime::deserialize_image(bytes, lookup);
  EXPECT_EQ(back.kernels.size(), calls.size());
  EXPECT_EQ(looked_up, (std::vector<std::string>{"kiln_const2"}));
  EXPECT_EQ(sched::print_program(back.program), sched::print_program(program));
  for (size_t b = 0; b < program.buffers.size(); ++b)
    if (program.buffers[b].constant_data)
      EXPECT_EQ(*back.program.buffers[b].constant_data, *program.buffers[b].constant_data);
  expect_damage_is_caught(bytes,
                          [&](const std::string& b) { runtime::deserialize_image(b, lookup); });
}

// The only kernel of a program computing `op`(input `which`) of `dtype` inputs.
sched::KernelSignature single_kernel_signature(Op op, int which, DType dtype, double scale = 1) {
  ir::Graph graph;
  ir::Builder builder(graph);
  std::vector<ir::ValueId> inputs;
  for (int k = 0; k <= which; ++k) inputs.push_back(builder.parameter(dtype, {100}));
  ir::ValueId result = builder.unary(op, inputs.back());
  if (scale != 1)
    result = builder.binary(Op::mul, result, builder.constant(ir::Scalar::of(scale), dtype, {100}));
  graph.set_outputs({result});
  sched::Program program = sched::schedule(graph, {});
  EXPECT_EQ(program.kernels.size(), 1u);
  return sched::kernel_signature(program.kernels[0], program);
}

TEST(KernelSignature, SameCodeOnOtherBuffersIsOneKey) {
  sched::KernelSignature first = single_kernel_signature(Op::exp, 0, DType::Float64);
  sched::KernelSignature second = single_kernel_signature(Op::exp, 2, DType::Float64);
  EXPECT_EQ(first.key, second.key);
  EXPECT_EQ(first.hash, second.hash);
  EXPECT_NE(first.arguments, second.arguments);  // each kernel is called with its own buffers
  EXPECT_NE(first.key, single_kernel_signature(Op::exp, 0, DType::Float64, 2).key);
  EXPECT_NE(first.key, single_kernel_signature(Op::log, 0, DType::Float64).key);
  EXPECT_NE(first.key, single_kernel_signature(Op::exp, 0, DType::Float32).key);
}

}  // namespace
}  // namespace kiln::test
