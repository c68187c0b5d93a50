// Complex dtypes (ir/complex_lowering.h): NumPy's promotion, the no-copy views at the boundary,
// the lowering's contract (no complex value after it, the interleaved boundary), every op the
// table lets take complex operands checked against std::complex in the interpreter, and the
// compiled code (contiguous and strided complex inputs, complex outputs, loops carrying complex
// values) against the interpreter.
#include <complex>
#include <functional>

#include "compile_test_util.h"
#include "ir/complex_lowering.h"
#include "ir/verifier.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;
using Complex = std::complex<double>;

Array complex_array(const std::vector<Complex>& values, std::vector<int64_t> shape) {
  Array array = Array::empty(DType::Complex128, std::move(shape));
  std::memcpy(array.data(), values.data(), values.size() * sizeof(Complex));
  return array;
}

std::vector<Complex> complex_values(const Array& array) {
  Array contiguous = array.contiguous();
  std::vector<Complex> values(static_cast<size_t>(contiguous.size()));
  std::memcpy(values.data(), contiguous.data(), values.size() * sizeof(Complex));
  return values;
}

// Away from branch cuts and overflow, with zeros and both signs of each part.
const std::vector<Complex> kSamples = {{0.5, 0.25}, {-1.5, 2}, {0, 0},  {3, -0.5},
                                       {-0.25, -1}, {2, 0},    {0, -2}, {-3, 0.75}};

TEST(ComplexDtype, PromotionFollowsNumPy) {
  EXPECT_EQ(promote_types(DType::Complex64, DType::Float32), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Complex64, DType::Float64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Float16, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Int8, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Int16, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Int32, DType::Complex64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::UInt64, DType::Complex64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Bool, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Complex64, DType::Complex128), DType::Complex128);
  EXPECT_EQ(dtype_size(DType::Complex128), 16);
  EXPECT_EQ(dtype_from_name("complex64"), DType::Complex64);
}

TEST(ComplexDtype, ArrayViewsShareMemory) {
  Array z = complex_array(kSamples, {2, 4});
  Array pairs = z.view_as_real();
  EXPECT_EQ(pairs.dtype(), DType::Float64);
  EXPECT_EQ(pairs.shape(), (std::vector<int64_t>{2, 4, 2}));
  EXPECT_EQ(pairs.data(), z.data());
  EXPECT_EQ(pairs.get({1, 0, 1}), -1.0);  // imag of kSamples[4]
  Array back = pairs.view_as_complex();
  EXPECT_EQ(back.dtype(), DType::Complex128);
  EXPECT_EQ(back.shape(), z.shape());
  // A strided complex view (every other column) keeps its strides through the round trip.
  Array columns = Array::borrow(z.data(), DType::Complex128, {2, 2}, {4, 2});
  EXPECT_EQ(columns.view_as_real().strides(), (std::vector<int64_t>{8, 4, 1}));
  EXPECT_EQ(columns.view_as_real().view_as_complex().strides(), (std::vector<int64_t>{4, 2}));
  EXPECT_THROW(pairs.view_as_real(), Error);
  EXPECT_THROW(Array::zeros(DType::Float64, {3}).view_as_complex(), Error);
}

TEST(ComplexLowering, LeavesNoComplexValueAndKeepsTheBoundary) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId z = b.parameter(DType::Complex64, {3, 4});
  ValueId x = b.parameter(DType::Float32, {3, 4});
  ValueId product = b.binary(Op::mul, z, b.cast(x, DType::Complex64));
  graph.set_outputs({product, b.unary(Op::abs, product)});
  ir::verify(graph, "test");
  EXPECT_TRUE(ir::has_complex_values(graph));
  ir::Graph lowered = ir::lower_complex(graph);
  ir::verify(lowered, "lower_complex");
  EXPECT_FALSE(ir::has_complex_values(lowered));
  ASSERT_EQ(lowered.inputs().size(), 2u);
  EXPECT_EQ(lowered.node(lowered.inputs()[0]).shape, (ir::Shape{3, 4, 2}));
  EXPECT_EQ(lowered.node(lowered.inputs()[1]).shape, (ir::Shape{3, 4}));
  EXPECT_EQ(lowered.node(lowered.outputs()[0]).shape, (ir::Shape{3, 4, 2}));
  EXPECT_EQ(lowered.node(lowered.outputs()[1]).dtype, DType::Float32);
}

// One op of the table on complex operands, in the interpreter, against std::complex.
struct OpCase {
  Op op;
  std::function<Complex(Complex, Complex)> reference;
};

TEST(ComplexLowering, InterpreterMatchesStdComplex) {
  const std::vector<OpCase> cases = {
      {Op::add, [](Complex a, Complex b) { return a + b; }},
      {Op::sub, [](Complex a, Complex b) { return a - b; }},
      {Op::mul, [](Complex a, Complex b) { return a * b; }},
      {Op::div, [](Complex a, Complex b) { return a / b; }},
      {Op::pow,
       [](Complex a, Complex b) { return a == 0.0 ? Complex(b == 0.0 ? 1 : 0) : std::pow(a, b); }},
      {Op::neg, [](Complex a, Complex) { return -a; }},
      {Op::abs, [](Complex a, Complex) { return Complex(std::abs(a)); }},
      {Op::exp, [](Complex a, Complex) { return std::exp(a); }},
      {Op::log, [](Complex a, Complex) { return std::log(a); }},
      {Op::log10, [](Complex a, Complex) { return std::log10(a); }},
      {Op::sqrt, [](Complex a, Complex) { return std::sqrt(a); }},
      {Op::sin, [](Complex a, Complex) { return std::sin(a); }},
      {Op::cos, [](Complex a, Complex) { return std::cos(a); }},
      {Op::sinh, [](Complex a, Complex) { return std::sinh(a); }},
      {Op::cosh, [](Complex a, Complex) { return std::cosh(a); }},
      {Op::reciprocal, [](Complex a, Complex) { return 1.0 / a; }},
      {Op::eq, [](Complex a, Complex b) { return Complex(a == b); }},
      {Op::ne, [](Complex a, Complex b) { return Complex(a != b); }},
      {Op::logical_and, [](Complex a, Complex b) { return Complex(a != 0.0 && b != 0.0); }},
      {Op::logical_not, [](Complex a, Complex) { return Complex(a == 0.0); }},
      {Op::isfinite, [](Complex, Complex) { return Complex(1); }},
  };
  std::vector<Complex> right(kSamples.rbegin(), kSamples.rend());
  right[5] = {1.5, -0.5};  // no divisor is zero; left[2] = 0 meets right[2] = 2 (0 ** 2 = 0)
  for (const OpCase& c : cases) {
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId x = b.parameter(DType::Complex128, {8});
    ValueId y = b.parameter(DType::Complex128, {8});
    const ir::OpInfo& info = ir::op_info(c.op);
    ValueId result = info.kind == ir::OpKind::Binary ? b.binary(c.op, x, y) : b.unary(c.op, x);
    graph.set_outputs({result});
    std::vector<Complex> left = kSamples;
    if (c.op == Op::log || c.op == Op::log10 || c.op == Op::reciprocal) left[2] = {0.75, -2};
    std::vector<Array> out =
        ir::interpret(graph, {complex_array(left, {8}), complex_array(right, {8})});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t i = 0; i < 8; ++i) {
      Complex expected = c.reference(left[static_cast<size_t>(i)], right[static_cast<size_t>(i)]);
      Complex actual = is_complex(out[0].dtype()) ? complex_values(out[0])[static_cast<size_t>(i)]
                                                  : Complex(out[0].get({i}));
      EXPECT_NEAR(actual.real(), expected.real(), 1e-12 * (1 + std::abs(expected)))
          << ir::op_name(c.op) << " element " << i;
      EXPECT_NEAR(actual.imag(), expected.imag(), 1e-12 * (1 + std::abs(expected)))
          << ir::op_name(c.op) << " element " << i;
    }
  }
}

TEST(ComplexLowering, CompiledMatchesTheInterpreter) {
  GraphCase g;
  std::vector<Complex> values;
  for (int k = 0; k < 48; ++k) values.push_back({std::sin(k * 0.7) * 2, std::cos(k * 1.3) - 0.2});
  Array storage = complex_array(values, {6, 8});
  ValueId z = g.input(storage);
  // Every other column: a strided complex input, read in place.
  ValueId w = g.input(Array::borrow(storage.data(), DType::Complex128, {6, 4}, {8, 2}));
  ir::Builder& b = g.builder;
  ValueId left = b.slice(z, {0, 0}, {6, 4}, {1, 1});
  ValueId product = b.binary(Op::mul, left, w);
  ValueId quotient = b.binary(
      Op::div, product,
      b.binary(Op::add, w,
               b.cast(b.constant(Scalar::of(3), DType::Float64, {6, 4}), DType::Complex128)));
  ValueId root = b.unary(Op::sqrt, quotient);
  ValueId total = b.reduce(Op::sum, b.unary(Op::exp, root), {1}, false);
  ValueId gemm = b.matmul(b.permute(w, {1, 0}), left);
  ValueId each[] = {product, quotient, root, total, gemm};
  const char* names[] = {"product", "quotient", "sqrt", "sum of exp", "matmul"};
  for (size_t k = 0; k < 5; ++k) {
    g.output(b.real(each[k]), std::string(names[k]) + " real part");
    g.output(b.imag(each[k]), std::string(names[k]) + " imaginary part");
  }
  g.output(b.unary(Op::abs, root), "abs");
  g.output(root, "a complex output");
  CompiledRun run = g.check();
  // The complex output comes back complex, over the compiled program's real pairs.
  EXPECT_EQ(run.outputs.back().dtype(), DType::Complex128);
  EXPECT_EQ(run.outputs.back().shape(), (std::vector<int64_t>{6, 4}));
}

TEST(ComplexLowering, LoopsCarryComplexValues) {
  // z <- z * w + c, steps times: a complex carried value and complex invariants.
  auto body = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*body);
    b.parameter(DType::Int64, {});
    ValueId z = b.parameter(DType::Complex128, {8});
    ValueId w = b.parameter(DType::Complex128, {8});
    ValueId c = b.parameter(DType::Complex128, {8});
    body->set_outputs({b.binary(Op::add, b.binary(Op::mul, z, w), c)});
  }
  std::vector<Complex> scaled;
  for (const Complex& s : kSamples) scaled.push_back(s * 0.4);
  for (int64_t steps : {0, 5}) {
    GraphCase g;
    ValueId z0 = g.input(complex_array(kSamples, {8}));
    ValueId w = g.input(complex_array(scaled, {8}));
    ValueId c = g.input(complex_array(std::vector<Complex>(8, {0.1, -0.2}), {8}));
    ir::Builder& b = g.builder;
    ValueId loop = b.loop(b.constant(Scalar::of_int(0), DType::Int64),
                          b.constant(Scalar::of_int(steps), DType::Int64), 1, {z0}, {w, c}, body);
    ValueId z = b.loop_result(loop, 0);
    g.output(b.real(z), "real part after " + std::to_string(steps));
    g.output(b.imag(z), "imaginary part after " + std::to_string(steps));
    g.check();
    g.graph.set_outputs({z});
    std::vector<Complex> expected = kSamples;
    for (int64_t s = 0; s < steps; ++s)
      for (size_t i = 0; i < 8; ++i) expected[i] = expected[i] * scaled[i] + Complex(0.1, -0.2);
    std::vector<Complex> actual = complex_values(ir::interpret(g.graph, g.inputs)[0]);
    for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(std::abs(actual[i] - expected[i]), 0, 1e-12);
  }
}

TEST(ComplexLowering, OpsWithoutAComplexRuleAreUnsupported) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId z = b.parameter(DType::Complex64, {4});
  try {
    b.reduce(Op::max, z, {}, false);
    FAIL() << "max of complex values was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(error.what()).find("complex64"), std::string::npos) << error.what();
  }
  EXPECT_THROW(b.binary(Op::lt, z, z), Error);
  EXPECT_THROW(b.complex(b.parameter(DType::Int32, {4}), b.parameter(DType::Int32, {4})), Error);
}

}  // namespace
}  // namespace kiln::test
