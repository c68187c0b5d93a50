// argsort and sort (extern ops: src/extern/sort.h): the reference interpreter against
// hand-checked orders (NaN, -0.0, ties, descending), then the compiled CPU kernel against the
// interpreter on every real dtype's special values, every axis, strided operands, top-k, long
// rows (vqsort or the radix passes; a row sorted in chunks and merged) and many short rows,
// sort's values bit for bit (zeros' signs and NaNs' payloads in a stable sort's order), the
// share_sorts pass, selections of single positions (the sort_picks pass and the kernel's picks),
// the builder's errors and the serializer's descending flag.
#include <gtest/gtest.h>

#include "compile_test_util.h"
#include "extern/sort.h"
#include "ir/serializer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

std::vector<int64_t> int64_values(const Array& array) {
  std::vector<int64_t> values;
  Array contiguous = array.contiguous();
  for (int64_t i = 0; i < contiguous.size(); ++i)
    values.push_back(static_cast<const int64_t*>(contiguous.data())[i]);
  return values;
}

std::vector<int64_t> interpreted_argsort(const Array& x, int64_t axis, bool descending,
                                         int64_t k = -1) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId input = b.parameter(x.dtype(), ir::from_ints(x.shape()));
  graph.set_outputs({b.argsort(input, axis, descending, k)});
  ir::verify(graph, "test");
  return int64_values(ir::interpret(graph, {x})[0]);
}

TEST(Sort, InterpreterOrdersNaNLastAndKeepsTiesInOrder) {
  const Array x = make_array(DType::Float64, {7}, {2.0, kNaN, -0.0, 1.0, 0.0, kNaN, -kInf});
  EXPECT_EQ(interpreted_argsort(x, 0, false), (std::vector<int64_t>{6, 2, 4, 3, 0, 1, 5}));
  // descending: NaN first (torch), equal elements (-0.0 and 0.0, the NaNs) still in order
  EXPECT_EQ(interpreted_argsort(x, 0, true), (std::vector<int64_t>{1, 5, 0, 3, 2, 4, 6}));
  EXPECT_EQ(interpreted_argsort(x, 0, true, 3), (std::vector<int64_t>{1, 5, 0}));
  const Array ints = make_integer_array(DType::Int32, {2, 3}, {5, -1, 5, 0, 0, -7});
  EXPECT_EQ(interpreted_argsort(ints, 1, false), (std::vector<int64_t>{1, 0, 2, 2, 0, 1}));
  EXPECT_EQ(interpreted_argsort(ints, 0, true), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  const Array big = make_integer_array(DType::UInt64, {3}, {-1, 1, -2});  // 2**64-1, 1, 2**64-2
  EXPECT_EQ(interpreted_argsort(big, 0, false), (std::vector<int64_t>{1, 2, 0}));
}

TEST(Sort, BuilderRefusesWhatItCannotSort) {
  ir::Graph graph;
  ir::Builder b(graph);
  b.set_location("sorting.py:3");
  ValueId scalar = b.parameter(DType::Float32, {});
  ValueId matrix = b.parameter(DType::Float32, ir::from_ints({3, 4}));
  ValueId complex_values = b.parameter(DType::Complex64, ir::from_ints({4}));
  EXPECT_THROW(b.argsort(scalar, 0, false), Error);
  EXPECT_THROW(b.argsort(matrix, 2, false), Error);
  EXPECT_THROW(b.argsort(complex_values, 0, false), Error);
  try {
    b.argsort(matrix, 1, false, 5);
    ADD_FAILURE() << "k past the axis";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("argsort at sorting.py:3"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(graph.node(b.argsort(matrix, 0, true, 2)).shape, ir::from_ints({2, 4}));
}

TEST(Sort, SerializedGraphKeepsDescending) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float32, ir::from_ints({3, 4}));
  graph.set_outputs({b.argsort(x, 1, true, 2), b.argsort(x, 0, false)});
  ir::Graph read = ir::deserialize_graph(ir::serialize_graph(graph));
  EXPECT_TRUE(read.node(read.outputs()[0]).attrs.descending);
  EXPECT_FALSE(read.node(read.outputs()[1]).attrs.descending);
  EXPECT_EQ(read.node(read.outputs()[0]).shape, ir::from_ints({3, 2}));
}

// Every real dtype's special values (NaN, both zeros, limits, repeats), sorted along each axis
// both ways, a top-k, and the values read back through take_along_axis: one compile.
TEST(Sort, CompiledMatchesInterpreterOnEveryDType) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  for (DType dtype : {DType::Bool, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                      DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64, DType::Float16,
                      DType::BFloat16, DType::Float32, DType::Float64}) {
    const std::string name(dtype_name(dtype));
    ValueId x = graph.input(special_array(dtype, {4, 9}));
    for (int64_t axis : {0, 1})
      for (bool descending : {false, true}) {
        const std::string label = name + " axis " + std::to_string(axis) +
                                  (descending ? " descending" : "");
        ValueId positions = b.argsort(x, axis, descending);
        graph.output(positions, label);
        graph.output(b.take_along_axis(x, positions, axis), label + " gathered");
        graph.output(b.sort(x, axis, descending), label + " values");
      }
    graph.output(b.argsort(x, 1, true, 3), name + " top 3");
    graph.output(b.sort(x, 0, false, 2), name + " values top 2");
    // a strided operand: the transpose, read in place
    graph.output(b.argsort(b.permute(x, {1, 0}), 1, false), name + " of the transpose");
  }
  graph.check();
}

// Rows long enough for the radix passes (and their skipped bytes: small integers), many short
// rows (the parallel loop), a row of one element, top-k of a long row (the heap) and of a
// larger part of one (nth_element), a middle axis.
TEST(Sort, CompiledMatchesInterpreterOnLongAndShortRows) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  ValueId floats = graph.input(make_array(DType::Float32, {3, 5000},
                                          pseudo_random(15000, -1e3, 1e3, 5)));
  std::vector<double> small = pseudo_random(6000, -4, 4, 6);
  for (double& value : small) value = std::floor(value);  // many ties
  ValueId ints = graph.input(make_array(DType::Int64, {6000}, small));
  ValueId doubles = graph.input(make_array(DType::Float64, {2000, 3, 7},
                                           pseudo_random(42000, -1, 1, 7)));
  ValueId halves = graph.input(make_array(DType::Float16, {2, 700}, pseudo_random(1400, -9, 9, 8)));
  ValueId one = graph.input(make_array(DType::Int16, {5, 1}, {3, 1, 2}));
  graph.output(b.argsort(floats, 1, false), "float32 rows of 5000");
  graph.output(b.argsort(floats, 1, true, 10), "float32 top 10 of 5000");
  graph.output(b.argsort(ints, 0, false), "int64 ties");
  graph.output(b.argsort(ints, 0, true), "int64 ties descending");
  graph.output(b.argsort(doubles, 2, false), "float64 many rows");
  graph.output(b.argsort(doubles, 1, true), "float64 middle axis");
  graph.output(b.argsort(halves, 1, false), "float16 rows of 700");
  graph.output(b.argsort(one, 1, false), "rows of one");
  graph.output(b.argsort(one, 0, false, 0), "k = 0");
  graph.output(b.sort(floats, 1, true), "float32 values of rows of 5000");
  graph.output(b.sort(ints, 0, false), "int64 values");
  graph.output(b.sort(doubles, 0, false, 100), "float64 values, top 100 of 2000");
  graph.output(b.sort(halves, 1, true), "float16 values");
  graph.output(b.argsort(halves, 1, false, 100), "float16 top 100 of 700 (nth_element)");
  graph.output(b.sort(halves, 1, true, 300), "float16 values, top 300 of 700");
  graph.check();
}

// Rows of more than a million elements, alone: sorted in one chunk per thread, then merged.
TEST(Sort, CompiledLongRowsMatchTheInterpreter) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  std::vector<double> values = pseudo_random(1500000, -100, 100, 9);
  for (size_t i = 0; i < values.size(); i += 7) values[i] = std::floor(values[i]);  // ties
  ValueId floats = graph.input(make_array(DType::Float32, {1500000}, values));
  ValueId doubles = graph.input(make_array(DType::Float64, {1, 1200000}, values));
  graph.output(b.argsort(floats, 0, false), "float32 positions");
  graph.output(b.sort(floats, 0, true), "float32 values, descending");
  graph.output(b.argsort(doubles, 1, true), "float64 positions, descending");
  graph.output(b.sort(doubles, 1, false), "float64 values");
  graph.check();
}

// The kernel itself on a row sorted in chunks by three threads (the odd chunk merged a level
// later; built with vqsort, the row is sorted whole), positions and values both ways, against
// the interpreter.
TEST(Sort, ChunkedLongRowMatchesTheInterpreter) {
  std::vector<double> values = pseudo_random(1100000, -50, 50, 10);
  for (size_t i = 0; i < values.size(); i += 3) values[i] = std::round(values[i]);  // ties
  values[5] = kNaN, values[700000] = -0.0, values[900000] = kNaN;
  const Array x = make_array(DType::Float32, {1100000}, values);
  for (bool descending : {false, true})
    for (Op op : {Op::argsort, Op::sort}) {
      ir::Graph graph;
      ir::Builder b(graph);
      ValueId input = b.parameter(DType::Float32, ir::from_ints({1100000}));
      graph.set_outputs({op == Op::argsort ? b.argsort(input, 0, descending)
                                           : b.sort(input, 0, descending)});
      const Array expected = ir::interpret(graph, {x})[0];
      Array got = Array::empty(expected.dtype(), {1100000});
      externs::sort({x.data(), DType::Float32, {1100000}, {1}}, 0, descending,
                    op == Op::argsort, got.data(), {1100000}, {1}, 3);
      EXPECT_EQ(std::memcmp(got.data(), expected.data(),
                            static_cast<size_t>(1100000 * dtype_size(expected.dtype()))), 0)
          << ir::op_name(op) << (descending ? " descending" : "");
    }
}

// sort's values are the operand's elements, bit for bit: zeros of both signs and NaNs of any
// sign and payload (equal to each other, as keys) in a stable sort's order.
TEST(Sort, ValuesKeepZerosAndNaNsInStableOrder) {
  std::vector<uint32_t> bits = {0x80000000u, 0x7fc00001u, 0x00000000u, 0xffc00002u, 0x3f800000u,
                                0x80000000u, 0x7f800000u, 0x7fa00003u, 0x00000000u, 0xbf800000u};
  for (int copy = 0; copy < 60; ++copy)  // 600 elements: the radix passes too
    bits.insert(bits.end(), bits.begin(), bits.begin() + 10);
  Array x = Array::empty(DType::Float32, {static_cast<int64_t>(bits.size())});
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  for (int64_t n : {int64_t{10}, x.size()})
    for (bool descending : {false, true}) {
      GraphCase graph;
      ValueId input = graph.input(n == x.size() ? x : make_array(DType::Float32, {10}, {}));
      if (n != x.size()) std::memcpy(graph.inputs.back().data(), bits.data(), 40);
      graph.output(graph.builder.sort(input, 0, descending), "values");
      CompiledRun run = graph.check();
      const Array expected = ir::interpret(graph.graph, graph.inputs)[0];
      EXPECT_EQ(std::memcmp(run.outputs[0].data(), expected.data(), static_cast<size_t>(n) * 4), 0)
          << n << (descending ? " descending" : "");
      // ascending: -1, the zeros in order (-0, 0, -0, 0), 1, inf, the NaNs in order
      if (n == 10 && !descending) {
        std::vector<uint32_t> got(10);
        std::memcpy(got.data(), run.outputs[0].data(), 40);
        EXPECT_EQ(got, (std::vector<uint32_t>{0xbf800000u, 0x80000000u, 0x00000000u, 0x80000000u,
                                              0x00000000u, 0x3f800000u, 0x7f800000u, 0x7fc00001u,
                                              0xffc00002u, 0x7fa00003u}));
      }
    }
}

// One sort where both results are used: the values are read at argsort's positions; a sort
// alone keeps the values-only kernel.
TEST(Sort, ShareSortsReadsValuesThroughAnArgsortOfTheSameOperand) {
  auto count = [](const ir::Graph& graph, Op op) {
    return std::count_if(graph.nodes().begin(), graph.nodes().end(),
                         [&](const ir::Node& node) { return node.op == op; });
  };
  ir::Graph both;
  ir::Builder b(both);
  ValueId x = b.parameter(DType::Float32, ir::from_ints({4, 9}));
  both.set_outputs({b.sort(x, 1, true), b.argsort(x, 1, true), b.sort(x, 0, false)});
  ir::Graph shared = passes::run_graph_passes(both, {});
  EXPECT_EQ(count(shared, Op::argsort), 1);
  EXPECT_EQ(count(shared, Op::sort), 1);  // the other axis has no argsort to share
  EXPECT_EQ(count(shared, Op::gather), 1);
  ir::Graph alone;
  ir::Builder a(alone);
  ValueId y = a.parameter(DType::Float32, ir::from_ints({4, 9}));
  ValueId unused = a.argsort(y, 1, false);
  (void)unused;  // dead: removed before share_sorts looks
  alone.set_outputs({a.sort(y, 1, false)});
  ir::Graph kept = passes::run_graph_passes(alone, {});
  EXPECT_EQ(count(kept, Op::sort), 1);
  EXPECT_EQ(count(kept, Op::argsort), 0);
}

// Picked positions (passes/sort_picks.cpp): the kernel selects each row's elements at a few
// positions of its sorted order, bit for bit what the full sort puts there (ties by position,
// zeros' signs and NaNs' payloads in stable order), positions and values, both ways, one long
// row and many short ones, adjacent picks and the last one (median's).
TEST(Sort, PickedPositionsMatchTheFullSortBitForBit) {
  std::vector<double> values = pseudo_random(60000, -20, 20, 11);
  for (size_t i = 0; i < values.size(); i += 2) values[i] = std::round(values[i]);  // ties
  for (size_t i = 0; i < values.size(); i += 97) values[i] = kNaN;
  for (size_t i = 0; i < values.size(); i += 13) values[i] = i % 2 ? -0.0 : 0.0;
  const std::vector<int64_t> picks_long = {0, 4000, 29999, 30000, 31234, 59999};
  const std::vector<int64_t> picks_short = {1, 24, 25, 59};
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16})
    for (const auto& [shape, axis, picks] :
         {std::tuple{std::vector<int64_t>{60000}, int64_t{0}, picks_long},
          std::tuple{std::vector<int64_t>{60, 1000}, int64_t{0}, picks_short}})
      for (bool descending : {false, true})
        for (Op op : {Op::argsort, Op::sort}) {
          const Array x = make_array(dtype, shape, values);
          ir::Graph graph;
          ir::Builder b(graph);
          ValueId input = b.parameter(dtype, ir::from_ints(shape));
          graph.set_outputs({op == Op::argsort ? b.argsort(input, axis, descending)
                                               : b.sort(input, axis, descending)});
          const Array sorted = ir::interpret(graph, {x})[0].contiguous();
          std::vector<int64_t> out_shape = shape;
          out_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(picks.size());
          Array got = Array::empty(sorted.dtype(), out_shape);
          const std::vector<int64_t> strides = shape.size() == 1 ? std::vector<int64_t>{1}
                                                                 : std::vector<int64_t>{1000, 1};
          const std::vector<int64_t> out_strides =
              shape.size() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{1000, 1};
          externs::sort({x.data(), dtype, shape, strides}, axis, descending, op == Op::argsort,
                        got.data(), out_shape, out_strides, 0, picks);
          const int64_t element = dtype_size(sorted.dtype());
          const int64_t columns = shape.size() == 1 ? 1 : 1000;
          for (size_t j = 0; j < picks.size(); ++j)
            for (int64_t c = 0; c < columns; ++c) {
              const char* want = static_cast<const char*>(sorted.data()) +
                                 (picks[j] * columns + c) * element;
              const char* have = static_cast<const char*>(got.data()) +
                                 (static_cast<int64_t>(j) * columns + c) * element;
              ASSERT_EQ(std::memcmp(want, have, static_cast<size_t>(element)), 0)
                  << dtype_name(dtype) << " " << ir::op_name(op) << " pick " << picks[j]
                  << " column " << c << (descending ? " descending" : "");
            }
        }
}

// A sort read only at single positions (median's middle and last) becomes one sort picking
// them; one read of a range keeps the full sort; results match the interpreter's full sort.
TEST(Sort, SortPicksSelectsWhatIsReadAtSinglePositions) {
  auto sorts = [](const ir::Graph& graph) {
    std::vector<ir::Node> nodes;
    for (const ir::Node& node : graph.nodes())
      if (ir::is_sort(node.op)) nodes.push_back(node);
    return nodes;
  };
  GraphCase graph;
  ir::Builder& b = graph.builder;
  std::vector<double> values = pseudo_random(8 * 3000, -9, 9, 12);
  for (double& value : values) value = std::floor(value);  // ties
  ValueId x = graph.input(make_array(DType::Float64, {8, 3000}, values));
  ValueId sorted = b.sort(x, 1, false);
  auto column = [&](ValueId of, int64_t i) { return b.slice(of, {0, i}, {8, i + 1}, {1, 1}); };
  graph.output(b.binary(Op::add, column(sorted, 1499), column(sorted, 1500)), "middle two");
  graph.output(column(sorted, 2999), "last");
  ValueId order = b.argsort(x, 1, false);
  graph.output(column(order, 5), "argsort column 5");
  ValueId kept = b.sort(x, 1, true);
  graph.output(column(kept, 7), "a single position");
  graph.output(b.slice(kept, {0, 10}, {8, 12}, {1, 1}), "a range keeps the sort");
  graph.check();
  const std::vector<ir::Node> after = sorts(passes::run_graph_passes(graph.graph, {}));
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].attrs.starts, (std::vector<int64_t>{1499, 1500, 2999}));
  EXPECT_EQ(after[0].shape, ir::from_ints({8, 3}));
  EXPECT_EQ(after[1].attrs.starts, (std::vector<int64_t>{5}));
  EXPECT_EQ(after[1].shape, ir::from_ints({8, 1}));
  EXPECT_TRUE(after[2].attrs.starts.empty());
  EXPECT_EQ(after[2].shape, ir::from_ints({8, 3000}));
}

}  // namespace
}  // namespace kiln::test
