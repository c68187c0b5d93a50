// Every op of the op table, compiled (passes -> schedule -> C++ -> g++ -> run) and compared with
// the reference interpreter, on inputs full of special values: zeros of both signs, NaN,
// infinities, negative and huge numbers, integer limits, shift counts past the bit width.
//
// The op lists come from the table itself (ir::op_info over Op::op_count), so a new elementwise,
// reduction or scan op is compiled here without touching this file; the coverage test fails
// for a new structural op until a graph below uses it or kExcludedOps names it with a reason.
// Each graph below holds many ops as separate outputs: one g++ run checks them all.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "compile_test_util.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::OpKind;
using ir::ValueId;

// Ops no graph here has to use, each with its reason. Empty today: every op is compiled below.
const std::map<Op, const char*> kExcludedOps = {
    {Op::loop, "control flow: compiled by the graphs of test_loops.cpp"},
    {Op::loop_result, "control flow: compiled by the graphs of test_loops.cpp"},
    {Op::cond, "control flow: compiled by the graphs of test_conditionals.cpp"},
    {Op::placeholder, "exists only while a loop body is traced; the verifier refuses it"},
    {Op::complex, "complex numbers: lowered to real pairs first, compiled in test_complex.cpp"},
    {Op::real, "complex numbers: lowered to real pairs first, compiled in test_complex.cpp"},
    {Op::imag, "complex numbers: lowered to real pairs first, compiled in test_complex.cpp"},
    {Op::attention, "compiled against the interpreter by the graphs of test_attention.cpp"},
    {Op::solve, "compiled against the interpreter by the graphs of test_solve.cpp"},
    {Op::size, "a size symbol's value: specialising makes it a constant before anything "
               "compiles (test_size_symbols.cpp; compiled by test_torch_backend.py)"},
};

const std::vector<DType> kAllDTypes = {
    DType::Bool,    DType::Int8,    DType::Int16,   DType::Int32,    DType::Int64,
    DType::UInt8,   DType::UInt16,  DType::UInt32,  DType::UInt64,   DType::Float16,
    DType::BFloat16, DType::Float32, DType::Float64};
const std::vector<DType> kSignedDTypes = {DType::Int8, DType::Int16, DType::Int32, DType::Int64};
const std::vector<DType> kUnsignedDTypes = {DType::UInt8, DType::UInt16, DType::UInt32,
                                            DType::UInt64};
const std::vector<DType> kFloatDTypes = {DType::Float16, DType::BFloat16, DType::Float32,
                                         DType::Float64};

std::vector<Op> ops_of_kind(OpKind kind) {
  std::vector<Op> ops;
  for (int i = 0; i < static_cast<int>(Op::op_count); ++i) {
    Op op = static_cast<Op>(i);
    if (ir::op_info(op).kind == kind) ops.push_back(op);
  }
  return ops;
}

bool accepts(Op op, DType dtype) {
  return (ir::op_info(op).accepts & static_cast<uint8_t>(dtype_class(dtype))) != 0;
}

std::string label(Op op, DType dtype, const std::string& detail = "") {
  return std::string(ir::op_name(op)) + "(" + describe(dtype) + detail + ")";
}

// ---- elementwise ---------------------------------------------------------------------------

// One input per dtype holding its special values; every accepted unary op as an output.
std::unique_ptr<GraphCase> unary_case(const std::vector<DType>& dtypes) {
  auto graph = std::make_unique<GraphCase>();
  for (DType dtype : dtypes) {
    int64_t count = static_cast<int64_t>(special_count(dtype));
    ValueId x = graph->input(special_array(dtype, {count}));
    for (Op op : ops_of_kind(OpKind::Unary)) {
      if (accepts(op, dtype)) graph->output(graph->builder.unary(op, x), label(op, dtype));
    }
  }
  return graph;
}

// a and b enumerate every pair of special values; `where` picks between them.
std::unique_ptr<GraphCase> binary_case(const std::vector<DType>& dtypes) {
  auto graph = std::make_unique<GraphCase>();
  for (DType dtype : dtypes) {
    size_t count = special_count(dtype);
    int64_t pairs = static_cast<int64_t>(count * count);
    Array a = Array::empty(dtype, {pairs});
    Array b = Array::empty(dtype, {pairs});
    Array condition = Array::empty(DType::Bool, {pairs});
    for (int64_t i = 0; i < pairs; ++i) {
      size_t first = static_cast<size_t>(i) / count, second = static_cast<size_t>(i) % count;
      if (is_float(dtype)) {
        store_double(a, i, float_special_values()[first]);
        store_double(b, i, float_special_values()[second]);
      } else {
        store_bits(a, i, integer_special_values(dtype)[first]);
        store_bits(b, i, integer_special_values(dtype)[second]);
      }
      store_bits(condition, i, (i * 7) % 3 == 0);
    }
    ValueId left = graph->input(a), right = graph->input(b), pick = graph->input(condition);
    for (Op op : ops_of_kind(OpKind::Binary)) {
      if (accepts(op, dtype)) {
        graph->output(graph->builder.binary(op, left, right), label(op, dtype));
      }
    }
    for (Op op : ops_of_kind(OpKind::Ternary)) {
      if (op == Op::where && accepts(op, dtype)) {
        graph->output(graph->builder.where(pick, left, right), label(op, dtype));
      }
    }
  }
  return graph;
}

// Broadcasting binary operands: a column against a row, and a 0-d scalar against a matrix.
std::unique_ptr<GraphCase> broadcast_binary_case() {
  auto graph = std::make_unique<GraphCase>();
  ValueId column = graph->input(make_array(DType::Float32, {4, 1}, {1.5, -2, kNaN, 0}));
  ValueId row = graph->input(make_array(DType::Float32, {3}, {10, -0.5, kInf}));
  ValueId scalar = graph->input(make_array(DType::Int32, {}, {7}));
  ValueId matrix = graph->input(make_integer_array(DType::Int32, {2, 3}, {-9, -7, 0, 7, 9, 100}));
  graph->output(graph->builder.binary(Op::add, column, row), "add(column, row)");
  graph->output(graph->builder.binary(Op::mul, row, column), "mul(row, column)");
  graph->output(graph->builder.binary(Op::maximum, column, row), "maximum(column, row)");
  graph->output(graph->builder.binary(Op::floordiv, matrix, scalar), "floordiv(matrix, 0-d)");
  graph->output(graph->builder.binary(Op::mod, scalar, matrix), "mod(0-d, matrix)");
  graph->output(graph->builder.binary(Op::lt, scalar, matrix), "lt(0-d, matrix)");
  return graph;
}

// ---- casts ---------------------------------------------------------------------------------

// Float sources: NaN, infinities, halves, every integer limit and just past it, float16's
// overflow threshold, subnormals of float32 and float16.
std::vector<double> cast_float_values() {
  return {0.0,        -0.0,        kNaN,        kInf,         -kInf,        0.5,
          -0.5,       2.5,         -2.5,        1.5,          127.5,        128,
          -129,       255.9,       256,         300.7,        -1,           -1e30,
          1e30,       32768,       65535.9,     65536,        2147483647.5, 2147483648.0,
          -2147483649.0, 4294967296.5, 9.3e18,  9223372036854775808.0, -9.3e18, 1.8e19,
          1.9e19,     65504,       65520,       3.4e38,       1e-40,        6e-8};
}

// Every dtype to every dtype.
std::unique_ptr<GraphCase> cast_case() {
  auto graph = std::make_unique<GraphCase>();
  for (DType from : kAllDTypes) {
    Array values =
        is_float(from)
            ? make_array(from, {static_cast<int64_t>(cast_float_values().size())},
                         cast_float_values())
            : special_array(from, {static_cast<int64_t>(special_count(from))});
    ValueId x = graph->input(values);
    for (DType to : kAllDTypes) {
      graph->output(graph->builder.cast(x, to),
                    "cast(" + describe(from) + " -> " + describe(to) + ")");
    }
  }
  return graph;
}

// ---- reductions and scans ------------------------------------------------------------------

// Values for a (3, 4, 5) reduction input: floats in [-1.5, 1.5) with one NaN, an inf and a -inf
// (so some rows are NaN, some +-inf, most finite) and a row of ties; integers cycle the
// special values (ties, limits, wrap-around); bool has an all-false and an all-true row.
Array reduction_input(DType dtype) {
  std::vector<int64_t> shape = {3, 4, 5};
  if (is_float(dtype)) {
    std::vector<double> values = pseudo_random(60, -1.5, 1.5, 7);
    values[23] = kNaN;   // [1, 0, 3]
    values[41] = kInf;   // [2, 0, 1]
    values[47] = -kInf;  // [2, 1, 2]
    for (int i = 5; i < 10; ++i) values[static_cast<size_t>(i)] = 0.75;  // [0, 1, :] ties
    values[12] = -0.0;
    return make_array(dtype, shape, values);
  }
  if (dtype == DType::Bool) {
    std::vector<int64_t> values(60);
    for (size_t i = 0; i < 60; ++i) values[i] = (i * 7 + i / 11) % 3 == 0;
    for (size_t i = 0; i < 5; ++i) values[i] = 0;       // [0, 0, :] all false
    for (size_t i = 5; i < 10; ++i) values[i] = 1;      // [0, 1, :] all true
    return make_integer_array(dtype, shape, values);
  }
  std::vector<int64_t> specials = integer_special_values(dtype);
  std::vector<int64_t> values(60);
  for (size_t i = 0; i < 60; ++i) values[i] = specials[(i * 7) % specials.size()];
  return make_integer_array(dtype, shape, values);
}

// Reduction tolerances: accumulation order differs (vectorised partial sums vs the oracle's
// double accumulator), so allow absolute error on the scale of the summed magnitudes.
Tolerance reduction_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return {1e-12, 1e-12, 4};
    case DType::Float32: return {1e-5, 1e-5, 4};
    case DType::Float16:
    case DType::BFloat16: return {1e-2, 1e-2, 1};
    default: return {};
  }
}

// One place a reduction is taken: which input, over which axes.
struct ReductionSite {
  ValueId input;
  std::vector<int64_t> axes;  // empty: all axes
  bool keepdims;
  std::string text;
  bool identity_only;  // the reduced axis is empty: only ops with an identity are defined
};

// Every accepted reduction op at every site. The ops of one site are emitted next to each
// other: their outputs share a shape, so the scheduler fuses them into one kernel (sibling
// reductions in one pass), which keeps this graph's g++ time small.
void add_reductions(GraphCase& graph, DType dtype) {
  ir::Builder& builder = graph.builder;
  const Tolerance tolerance = reduction_tolerance(dtype);
  ValueId x = graph.input(reduction_input(dtype));
  ValueId empty = graph.input(special_array(dtype, {2, 0, 3}));
  ValueId ones = graph.input(make_array(dtype, {1, 4, 1}, {1.25, 2, 0, 3}));
  ValueId flat = builder.reshape(x, {60});
  const std::vector<ReductionSite> sites = {
      {x, {0}, false, " axis 0", false},
      {x, {1}, false, " axis 1", false},
      {x, {2}, false, " axis 2", false},
      {x, {-1}, true, " axis -1 keepdims", false},
      {x, {0, 2}, false, " axes 0,2", false},
      {x, {}, false, " all axes", false},
      {x, {0, 1, 2}, true, " all axes keepdims", false},
      {flat, {0}, false, " flattened", false},  // argmax/argmin over every element
      {empty, {0}, false, " (2,0,3) axis 0", false},  // an empty result
      {empty, {1}, false, " (2,0,3) axis 1", true},   // reduces an empty axis
      {empty, {}, true, " (2,0,3) all", true},
      {ones, {0}, false, " (1,4,1) axis 0", false},
      {ones, {1}, false, " (1,4,1) axis 1", false},
      {ones, {2}, false, " (1,4,1) axis 2", false},
      {ones, {0, 2}, true, " (1,4,1) axes 0,2 keepdims", false},
  };
  for (const ReductionSite& site : sites) {
    for (Op op : ops_of_kind(OpKind::Reduce)) {
      if (!accepts(op, dtype)) continue;
      bool is_arg = op == Op::argmax || op == Op::argmin;
      bool has_identity = !is_arg && op != Op::max && op != Op::min;
      size_t reduced = site.axes.empty() ? 3 : site.axes.size();
      if ((is_arg && reduced != 1) || (site.identity_only && !has_identity)) continue;
      graph.output(builder.reduce(op, site.input, site.axes, site.keepdims),
                   label(op, dtype, site.text), tolerance);
    }
  }
  if (accepts(Op::var, dtype)) {  // ddof 1, and ddof past the count (m2 / 0, as NumPy)
    graph.output(builder.reduce(Op::var, x, {2}, false, 1), label(Op::var, dtype, " ddof 1"),
                 tolerance);
    graph.output(builder.reduce(Op::var, x, {2}, false, 5), label(Op::var, dtype, " ddof 5"),
                 tolerance);
    graph.output(builder.reduce(Op::var, x, {}, false, 1), label(Op::var, dtype, " all ddof 1"),
                 tolerance);
  }
  for (Op op : ops_of_kind(OpKind::Scan)) {
    if (!accepts(op, dtype)) continue;
    for (int64_t axis : {0, 1, 2, -1}) {
      graph.output(builder.scan(op, x, axis), label(op, dtype, " axis " + std::to_string(axis)),
                   tolerance);
    }
    graph.output(builder.scan(op, empty, 1), label(op, dtype, " (2,0,3) axis 1"), tolerance);
    graph.output(builder.scan(op, ones, 1), label(op, dtype, " (1,4,1) axis 1"), tolerance);
  }
}

std::unique_ptr<GraphCase> reduction_case(const std::vector<DType>& dtypes) {
  auto graph = std::make_unique<GraphCase>();
  for (DType dtype : dtypes) add_reductions(*graph, dtype);
  return graph;
}

// ---- structural ops ------------------------------------------------------------------------

// Every structural op once, so the coverage test sees each compiled at least here; the
// thorough cases are in test_compile_structure.cpp.
std::unique_ptr<GraphCase> structural_case() {
  auto graph = std::make_unique<GraphCase>();
  ir::Builder& builder = graph->builder;
  ValueId x = graph->input(make_array(DType::Float32, {2, 3, 4}, pseudo_random(24, -3, 3, 11)));
  ValueId indices = graph->input(make_integer_array(DType::Int64, {5}, {0, -1, 2, 3, -4}));
  ValueId updates =
      graph->input(make_array(DType::Float32, {2, 3, 5}, pseudo_random(30, -1, 1, 12)));
  ValueId matrix = graph->input(make_array(DType::Float64, {3, 4}, pseudo_random(12, -1, 1, 13)));
  graph->output(builder.reshape(x, {6, 4}), "reshape");
  graph->output(builder.permute(x, {2, 0, 1}), "permute");
  graph->output(builder.broadcast(builder.reshape(x, {2, 1, 3, 4}), {2, 5, 3, 4}), "broadcast");
  graph->output(builder.slice(x, {1, 2, 3}, {2, -4, 0}, {1, -1, -2}), "slice");
  graph->output(builder.pad(x, {1, 0, 2}, {0, 1, 3}, ir::PadMode::Reflect), "pad reflect");
  graph->output(builder.concat({x, x}, 1), "concat");
  graph->output(builder.flip(x, {0, 2}), "flip");
  graph->output(builder.gather(x, indices, 2), "gather");
  graph->output(builder.scatter(x, indices, updates, 2, ir::ScatterMode::Add), "scatter add");
  graph->output(builder.matmul(matrix, builder.permute(matrix, {1, 0})), "matmul");
  ValueId image = builder.reshape(x, {1, 2, 3, 4});
  ValueId kernel = builder.slice(image, {0, 0, 0, 0}, {1, 2, 2, 2}, {1, 1, 1, 1});
  graph->output(builder.convolution(image, builder.reshape(kernel, {1, 2, 2, 2}), std::nullopt,
                                    {1}, {1}, {1}, 1),
                "convolution", {1e-5, 1e-5, 4});
  ValueId gradient = builder.broadcast(builder.slice(image, {0, 0, 0, 0}, {1, 1, 1, 1},
                                                     {1, 1, 1, 1}),
                                       ir::from_ints({1, 1, 4, 5}));
  graph->output(builder.convolution_backward_input(gradient, builder.reshape(kernel, {1, 2, 2, 2}),
                                                   {1, 2, 3, 4}, {1}, {1}, {1}, 1),
                "convolution_backward_input", {1e-5, 1e-5, 4});
  graph->output(
      builder.convolution_backward_weight(gradient, image, {1, 2, 2, 2}, {1}, {1}, {1}, 1),
      "convolution_backward_weight", {1e-5, 1e-5, 4});
  graph->output(builder.argsort(x, 2, true), "argsort");  // their own cases: test_sort.cpp
  graph->output(builder.sort(x, 0, false), "sort");
  graph->output(builder.iota(DType::Int32, {3, 4}, 1), "iota");
  graph->output(builder.random_uniform(DType::Float32, {10}, 42), "random_uniform");
  graph->output(builder.random_normal(DType::Float64, {10}, 43), "random_normal");
  ValueId key = graph->input(make_array(DType::Int64, {}, {-40}));  // read when the graph runs
  graph->output(builder.random_uniform(DType::Float32, {3, 4}, 42, key), "keyed random_uniform");
  std::vector<int32_t> data = {1, -2, 3, 2147483647};
  std::vector<uint8_t> bytes(sizeof(int32_t) * data.size());
  std::memcpy(bytes.data(), data.data(), bytes.size());
  graph->output(builder.constant_array(bytes, DType::Int32, {2, 2}), "constant_array");
  graph->output(builder.binary(Op::mul, x, builder.constant(ir::Scalar::of(-0.5),
                                                             DType::Float32, {})),
                "constant");
  return graph;
}

// ---- tests ---------------------------------------------------------------------------------

TEST(CompileOps, UnaryBool) { unary_case({DType::Bool})->check(); }
TEST(CompileOps, UnarySigned) { unary_case(kSignedDTypes)->check(); }
TEST(CompileOps, UnaryUnsigned) { unary_case(kUnsignedDTypes)->check(); }
TEST(CompileOps, UnaryFloat) { unary_case(kFloatDTypes)->check(); }

TEST(CompileOps, BinaryAndWhereBool) { binary_case({DType::Bool})->check(); }
TEST(CompileOps, BinaryAndWhereSigned) { binary_case(kSignedDTypes)->check(); }
TEST(CompileOps, BinaryAndWhereUnsigned) { binary_case(kUnsignedDTypes)->check(); }
TEST(CompileOps, BinaryAndWhereFloat) { binary_case(kFloatDTypes)->check(); }
TEST(CompileOps, BinaryBroadcasting) { broadcast_binary_case()->check(); }

TEST(CompileOps, CastEveryDTypePair) { cast_case()->check(); }

TEST(CompileOps, ReductionsAndScansBool) { reduction_case({DType::Bool})->check(); }
TEST(CompileOps, ReductionsAndScansSigned) { reduction_case({DType::Int8, DType::Int32})->check(); }
TEST(CompileOps, ReductionsAndScansUnsigned) {
  reduction_case({DType::UInt8, DType::UInt64})->check();
}
TEST(CompileOps, ReductionsAndScansFloat) { reduction_case(kFloatDTypes)->check(); }

TEST(CompileOps, StructuralOps) { structural_case()->check(); }

// Hand-checked spot values, so that a bug shared by the interpreter and the compiled code (both
// use the op table's expressions) cannot hide: NumPy's answers for the same calls.
TEST(CompileOps, SpotValuesAgreeWithNumPy) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  ValueId a = graph.input(make_integer_array(DType::Int32, {4}, {-7, 7, -2147483648LL, 5}));
  ValueId b = graph.input(make_integer_array(DType::Int32, {4}, {2, -2, -1, 0}));
  ValueId x = graph.input(make_array(DType::Float64, {4}, {kNaN, 2.5, -0.5, 1e30}));
  ValueId shift = graph.input(make_integer_array(DType::Int8, {4}, {-128, 1, 8, 9}));
  ValueId count = graph.input(make_integer_array(DType::Int8, {4}, {1, 7, 8, 9}));
  graph.output(builder.binary(Op::floordiv, a, b), "floordiv");
  graph.output(builder.binary(Op::mod, a, b), "mod");
  graph.output(builder.unary(Op::round, x), "round");
  graph.output(builder.cast(x, DType::Int16), "cast");
  graph.output(builder.binary(Op::shift_right, shift, count), "shift_right");
  graph.output(builder.binary(Op::shift_left, shift, count), "shift_left");
  CompiledRun run = graph.check();
  ASSERT_EQ(run.outputs.size(), 6u);
  // NumPy: [-7, 7, INT_MIN, 5] // [2, -2, -1, 0] -> [-4, -4, INT_MIN (wraps), 0]
  EXPECT_EQ(run.outputs[0].to_vector<int64_t>(), (std::vector<int64_t>{-4, -4, -2147483648LL, 0}));
  EXPECT_EQ(run.outputs[1].to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 0, 0}));
  std::vector<double> rounded = run.outputs[2].to_vector<double>();
  EXPECT_TRUE(std::isnan(rounded[0]));
  EXPECT_EQ(rounded[1], 2.0);  // half to even
  EXPECT_EQ(rounded[2], -0.0);
  EXPECT_TRUE(std::signbit(rounded[2]));
  // float -> int16 as NumPy on x86: through int32, whose out-of-range value INT_MIN truncates to 0.
  EXPECT_EQ(run.outputs[3].to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 0, 0}));
  // int8: -128 >> 1 = -64, 1 >> 7 = 0, 8 >> 8 = 0 (count == width), 9 >> 9 = 0.
  EXPECT_EQ(run.outputs[4].to_vector<int64_t>(), (std::vector<int64_t>{-64, 0, 0, 0}));
  // -128 << 1 wraps to 0, 1 << 7 = -128, counts >= 8 give 0.
  EXPECT_EQ(run.outputs[5].to_vector<int64_t>(), (std::vector<int64_t>{0, -128, 0, 0}));
}

// The logarithms compute their special lanes (0, negatives, -inf, NaN) apart from libmvec,
// whose slow path they took (C++ prelude): in SIMD loops, mixed with ordinary lanes, every
// value is <cmath>'s (the same infinity, zero or NaN; ordinary ones within libmvec's 4 ulp),
// in float32 and float64; exp and expm1 (libmvec's throughout) beside them.
TEST(CompileOps, MathFunctionsSpecialLanesAreCmathsValues) {
  const std::vector<double> values = {0.0, -0.0, -1.0, -1.5, kInf, -kInf, kNaN, 0.5, 1.0, 2.5,
                                      1e-310, -745.5, -746.5, -800, 709.5, 710.5, 1e5, -0.999,
                                      3.0, -20.0};
  std::vector<double> lanes;  // each value among ordinary lanes, twice over a SIMD loop's width
  for (int repeat = 0; repeat < 8; ++repeat)
    for (double v : values) lanes.push_back(repeat % 2 ? v : 0.25 + 0.5 * repeat);
  const std::vector<std::pair<Op, double (*)(double)>> functions = {
      {Op::log, [](double v) { return std::log(v); }},
      {Op::log2, [](double v) { return std::log2(v); }},
      {Op::log10, [](double v) { return std::log10(v); }},
      {Op::log1p, [](double v) { return std::log1p(v); }},
      {Op::exp, [](double v) { return std::exp(v); }},
      {Op::expm1, [](double v) { return std::expm1(v); }}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    GraphCase graph;
    const int64_t count = static_cast<int64_t>(lanes.size());
    ValueId x = graph.input(make_array(dtype, {count}, lanes));
    for (const auto& [op, reference] : functions)
      graph.output(graph.builder.unary(op, x), std::string(ir::op_name(op)));
    CompiledRun run = graph.check();
    for (size_t f = 0; f < functions.size(); ++f) {
      const std::vector<double> got = run.outputs[f].to_vector<double>();
      for (size_t i = 0; i < lanes.size(); ++i) {
        const double x_i = dtype == DType::Float32 ? double(float(lanes[i])) : lanes[i];
        double want = functions[f].second(x_i);
        if (dtype == DType::Float32) want = double(float(want));
        const std::string at = std::string(ir::op_name(functions[f].first)) + "(" +
                               std::to_string(x_i) + ") in " + std::string(dtype_name(dtype));
        if (std::isnan(want) || std::isinf(want) || want == 0 || std::isinf(x_i)) {
          EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want) << at << ": " << got[i];
          continue;
        }
        EXPECT_NEAR(got[i], want, std::abs(want) * (dtype == DType::Float32 ? 1e-6 : 1e-15)) << at;
      }
    }
  }
}

// Large reductions (>= 100k elements) take the parallel split path; argmin's first-occurrence
// rule must survive the split (the minimum appears twice, in different threads' ranges).
TEST(CompileOps, LargeReductionsUseTheSplitPathCorrectly) {
  GraphCase graph;
  ir::Builder& builder = graph.builder;
  const int64_t count = 250000;
  std::vector<double> values = pseudo_random(static_cast<size_t>(count), 0, 1, 21);
  values[190000] = -5;
  values[200000] = -5;
  values[30000] = 9;
  ValueId x32 = graph.input(make_array(DType::Float32, {count}, values));
  ValueId x64 = graph.input(make_array(DType::Float64, {500, 500}, values));
  std::vector<int64_t> integers(static_cast<size_t>(count));
  for (size_t i = 0; i < integers.size(); ++i) integers[i] = static_cast<int64_t>(i * 2654435761u);
  ValueId xi = graph.input(make_integer_array(DType::Int32, {count}, integers));
  // float32 sums of 250k elements: the oracle accumulates in double, kiln in float32 partials.
  const Tolerance sum32 = {1e-4, 0, 4};
  const Tolerance var32 = {1e-4, 0, 4};
  const Tolerance wide64 = {1e-10, 0, 4};
  graph.output(builder.reduce(Op::sum, x32, {}, false), "sum float32 all", sum32);
  graph.output(builder.reduce(Op::max, x32, {}, false), "max float32 all");
  graph.output(builder.reduce(Op::argmin, x32, {0}, false), "argmin float32");
  graph.output(builder.reduce(Op::argmax, x32, {0}, false), "argmax float32");
  graph.output(builder.reduce(Op::var, x32, {}, false), "var float32 all", var32);
  graph.output(builder.reduce(Op::sum, x64, {}, false), "sum float64 all", wide64);
  graph.output(builder.reduce(Op::var, x64, {}, false, 1), "var float64 all ddof 1", wide64);
  graph.output(builder.reduce(Op::min, x64, {0}, false), "min float64 axis 0");
  graph.output(builder.reduce(Op::argmin, x64, {1}, false), "argmin float64 axis 1");
  graph.output(builder.reduce(Op::sum, x64, {0}, true), "sum float64 axis 0", wide64);
  graph.output(builder.reduce(Op::sum, xi, {}, false), "sum int32 all (wraps)");
  graph.output(builder.reduce(Op::max, xi, {}, false), "max int32 all");
  CompiledRun run = graph.check();
  ASSERT_EQ(run.outputs.size(), 12u);
  EXPECT_EQ(run.outputs[2].to_vector<int64_t>(), std::vector<int64_t>{190000});
  EXPECT_EQ(run.outputs[3].to_vector<int64_t>(), std::vector<int64_t>{30000});
  EXPECT_EQ(run.outputs[1].to_vector<double>(), std::vector<double>{9});
}

// float32 variances of data far from 0 relative to its spread (mean 1e3, spread 1e-2): SIMD
// lanes' float32 Welford means near 1e3 rounded by 3e-5 an update, and the variances came out
// 2e-4 to 1e-3 off (eager torch's 2e-7). Whole arrays (blocked, and split over threads), rows
// (a layer norm's 768, passes of several loops) and a remainder past the last full step.
TEST(CompileOps, Float32VarianceOfDataFarFromZeroKeepsItsDigits) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  const Tolerance tight = {2e-6, 0, 0};
  auto data = [](int64_t count, uint64_t seed) {
    std::vector<double> values = pseudo_random(static_cast<size_t>(count), -1, 1, seed);
    for (double& v : values) v = 1e3 + 1e-2 * v;
    return values;
  };
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  for (const Case& c : {Case{{100000}, {}}, Case{{250000}, {}}, Case{{10, 10000}, {1}},
                        Case{{64, 768}, {1}}, Case{{4, 37, 129}, {1, 2}}, Case{{3, 4133}, {1}}}) {
    int64_t count = 1;
    for (int64_t n : c.shape) count *= n;
    ValueId x = graph.input(make_array(DType::Float32, c.shape, data(count, count)));
    const std::string at = " of " + std::to_string(count) + " over " + std::to_string(c.axes.size()) +
                           " axes";
    graph.output(b.reduce(Op::var, x, c.axes, false), "var" + at, tight);
    graph.output(b.reduce(Op::var, x, c.axes, false, 1), "var ddof 1" + at, tight);
  }
  graph.check();
}

// The elements after a lane split's last full step (64 float32 lanes with AVX-512, 32 float64;
// rows shorter than two such steps: 32 or 16, or 16 or 8) go into the lanes as one more partial
// SIMD step, and a blocked sum's tail likewise: every kind of reduction over rows on both sides
// of each split (2 x lanes) and of the block boundaries (64 steps of the lanes) agrees with the
// interpreter.
TEST(CompileOps, ReductionRemaindersAgreeWithTheInterpreter) {
  GraphCase graph;
  ir::Builder& b = graph.builder;
  const Tolerance sum32 = {1e-5, 1e-5, 4};  // sums of terms of both signs: absolute too
  for (int64_t length : {1, 5, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 127, 128, 129, 150,
                         191, 192, 193, 200, 4096, 4097, 4159, 4190}) {
    const std::string at = " of rows of " + std::to_string(length);
    std::vector<double> values = pseudo_random(static_cast<size_t>(3 * length), -3, 3, length);
    values[static_cast<size_t>(3 * length - 1)] = 4;  // argmax in the last row's last element
    ValueId x = graph.input(make_array(DType::Float32, {3, length}, values));
    ValueId shifted = b.binary(Op::sub, x, b.reduce(Op::max, x, {1}, true));
    ValueId e = b.unary(Op::exp, shifted);
    graph.output(b.binary(Op::div, e, b.reduce(Op::sum, e, {1}, true)), "softmax" + at, sum32);
    graph.output(b.reduce(Op::sum, b.unary(Op::tanh, x), {1}, false), "sum of tanh" + at, sum32);
    graph.output(b.reduce(Op::min, x, {1}, false), "min" + at);
    graph.output(b.reduce(Op::argmax, x, {1}, false), "argmax" + at);
    graph.output(b.reduce(Op::var, x, {1}, false), "var" + at, sum32);
    ValueId wide = graph.input(make_array(DType::Float64, {2, length}, values));
    graph.output(b.reduce(Op::sum, b.unary(Op::exp, wide), {1}, false), "float64 sum" + at);
    std::vector<int64_t> integers(static_cast<size_t>(2 * length));
    for (size_t i = 0; i < integers.size(); ++i)
      integers[i] = static_cast<int64_t>(i * 2654435761u);
    ValueId n = graph.input(make_integer_array(DType::Int32, {2, length}, integers));
    graph.output(b.reduce(Op::sum, n, {1}, false), "int32 sum" + at);
    graph.output(b.reduce(Op::argmin, n, {1}, false), "int32 argmin" + at);
  }
  graph.check();
}

// Every op of the table appears in some graph above, or in kExcludedOps with a reason.
TEST(CompileOps, EveryOpIsCompiledOrExcluded) {
  std::vector<std::function<std::unique_ptr<GraphCase>()>> builders = {
      [] { return unary_case(kAllDTypes); },
      [] { return binary_case(kAllDTypes); },
      [] { return cast_case(); },
      [] {
        return reduction_case({DType::Bool, DType::Int8, DType::UInt8, DType::Float32});
      },
      [] { return structural_case(); },
  };
  std::set<Op> used;
  for (const auto& build : builders) {
    std::unique_ptr<GraphCase> graph = build();
    for (const ir::Node& node : graph->graph.nodes()) used.insert(node.op);
  }
  for (int i = 0; i < static_cast<int>(Op::op_count); ++i) {
    Op op = static_cast<Op>(i);
    bool excluded = kExcludedOps.count(op) != 0;
    EXPECT_TRUE(used.count(op) != 0 || excluded)
        << ir::op_name(op) << " is neither compiled by a test graph nor listed in kExcludedOps";
    EXPECT_FALSE(used.count(op) != 0 && excluded)
        << ir::op_name(op) << " is tested now: remove it from kExcludedOps";
  }
}

}  // namespace
}  // namespace kiln::test
