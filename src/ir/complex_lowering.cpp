#include "ir/complex_lowering.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "ir/builder.h"
#include "ir/cond.h"
#include "ir/loop.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

// A value of the lowered graph: `re` alone for a real value, (re, im) for a complex one.
struct Pair {
  ValueId re = -1;
  ValueId im = -1;
  bool is_complex() const { return im >= 0; }
};

// Where a lowered loop keeps each original carried value: its first new index.
struct LoweredLoop {
  ValueId loop;
  std::vector<int64_t> first_index;
};

class ComplexLowering {
 public:
  // interleaved: graph inputs and outputs keep NumPy's memory (a trailing axis of 2); else
  // (loop bodies) each complex parameter and result becomes two.
  // known: the constant numbers (re, im) of parameters, by index (a loop body's invariants).
  ComplexLowering(const Graph& graph, bool interleaved,
                  std::map<int64_t, std::pair<double, double>> known = {})
      : in_(graph), b_(out_), interleaved_(interleaved), known_parameters_(std::move(known)) {}

  Graph run() {
    values_.resize(static_cast<size_t>(in_.size()));
    for (ValueId parameter : in_.inputs()) lower_parameter(parameter);
    for (ValueId id = 0; id < in_.size(); ++id) {
      const Node& node = in_.node(id);
      if (node.op == Op::parameter) continue;
      b_.set_location(node.location);
      values_[static_cast<size_t>(id)] = lower(id, node);
    }
    std::vector<ValueId> outputs;
    for (ValueId output : in_.outputs()) {
      b_.set_location(in_.node(output).location);
      append_output(value(output), outputs);
    }
    out_.set_outputs(std::move(outputs));
    return std::move(out_);
  }

 private:
  const Pair& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  const Pair& operand(const Node& node, size_t k) const { return value(node.inputs[k]); }

  void lower_parameter(ValueId id) {
    const Node& node = in_.node(id);
    b_.set_location(node.location);
    Pair& lowered = values_[static_cast<size_t>(id)];
    if (!is_complex(node.dtype)) {
      lowered = {b_.parameter(node.dtype, node.shape)};
    } else if (!interleaved_) {
      DType part = component_dtype(node.dtype);
      ValueId re = b_.parameter(part, node.shape);
      lowered = {re, b_.parameter(part, node.shape)};
    } else {
      Shape pairs = node.shape;
      pairs.push_back(2);
      ValueId storage = b_.parameter(component_dtype(node.dtype), pairs);
      lowered = {part_of(storage, node.shape, 0), part_of(storage, node.shape, 1)};
    }
    auto known = known_parameters_.find(node.attrs.index);
    if (known == known_parameters_.end()) return;
    known_numbers_[lowered.re] = known->second.first;
    if (lowered.is_complex()) known_numbers_[lowered.im] = known->second.second;
  }

  // storage[..., k] as a value of `shape`.
  ValueId part_of(ValueId storage, const Shape& shape, int64_t k) {
    std::vector<int64_t> starts(shape.size() + 1, 0), stops = to_ints(shape),
                                                      steps(shape.size() + 1, 1);
    starts.back() = k;
    stops.push_back(k + 1);
    return b_.reshape(b_.slice(storage, starts, stops, steps), shape);
  }

  void append_output(const Pair& lowered, std::vector<ValueId>& outputs) {
    if (!lowered.is_complex()) {
      outputs.push_back(lowered.re);
    } else if (!interleaved_) {
      outputs.push_back(lowered.re);
      outputs.push_back(lowered.im);
    } else {
      Shape shape = out_.node(lowered.re).shape, column = shape;
      column.push_back(1);
      outputs.push_back(b_.concat({b_.reshape(lowered.re, column), b_.reshape(lowered.im, column)},
                                  static_cast<int64_t>(shape.size())));
    }
  }

  std::vector<ValueId> plain_inputs(const Node& node) const {
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(value(input).re);
    return inputs;
  }

  // `node` rebuilt on new inputs with another dtype (the parts' dtype).
  ValueId copy_as(const Node& node, std::vector<ValueId> inputs, DType dtype) {
    Node copy = node;
    copy.dtype = dtype;
    return b_.copy_node(copy, std::move(inputs));
  }

  // The op applied to the real parts and to the imaginary parts; real operands (indices) are
  // passed to both.
  Pair each_part(const Node& node, DType part) {
    std::vector<ValueId> re, im;
    for (ValueId input : node.inputs) {
      const Pair& lowered = value(input);
      re.push_back(lowered.re);
      im.push_back(lowered.is_complex() ? lowered.im : lowered.re);
    }
    Node imaginary = node;
    if (node.op == Op::pad) imaginary.attrs.scalar = Scalar::of(0);  // a real fill value
    return {copy_as(node, std::move(re), part), copy_as(imaginary, std::move(im), part)};
  }

  Pair lower(ValueId id, const Node& node) {
    if (node.op == Op::loop) return lower_loop(id, node);
    if (node.op == Op::loop_result) return lower_loop_result(node);
    bool complex_operand = false;
    for (ValueId input : node.inputs)
      complex_operand = complex_operand || value(input).is_complex();
    if (!complex_operand && !is_complex(node.dtype))
      return {b_.copy_node(node, plain_inputs(node))};
    // The parts' dtype: the result's, or a complex operand's where the result is real (abs, eq).
    DType part = component_dtype(node.dtype);
    if (!is_complex(node.dtype))
      for (ValueId input : node.inputs)
        if (is_complex(in_.node(input).dtype)) part = component_dtype(in_.node(input).dtype);
    switch (node.op) {
      case Op::constant:
        return {b_.constant(node.attrs.scalar, part, node.shape),
                b_.constant(Scalar::of(0), part, node.shape)};
      case Op::constant_array:
        return split_constant(node, part);
      case Op::complex:
        return {operand(node, 0).re, operand(node, 1).re};
      case Op::real:
        return {operand(node, 0).re};
      case Op::imag:
        return {operand(node, 0).im};
      case Op::cast:
        return cast(node, operand(node, 0));
      case Op::reshape:
      case Op::permute:
      case Op::broadcast:
      case Op::slice:
      case Op::pad:
      case Op::flip:
      case Op::concat:
      case Op::gather:
      case Op::scatter:
      case Op::sum:
      case Op::cumsum:
      case Op::add:
      case Op::sub:
      case Op::neg:
        return each_part(node, part);
      case Op::where: {
        ValueId condition = operand(node, 0).re;
        const Pair &a = operand(node, 1), &c = operand(node, 2);
        return {b_.where(condition, a.re, c.re), b_.where(condition, a.im, c.im)};
      }
      case Op::any:
      case Op::all:
        return {b_.copy_node(node, {nonzero(operand(node, 0))})};
      case Op::matmul:
        return matmul(operand(node, 0), operand(node, 1));
      default:
        break;
    }
    if (is_elementwise(node.op)) return elementwise(node);
    throw Error(ErrorKind::Unsupported,
                error_message(std::string(op_name(node.op)), node.location,
                              "complex operands are not supported by kiln for this op"));
  }

  Pair split_constant(const Node& node, DType part) {
    size_t size = static_cast<size_t>(dtype_size(part)), count = node.attrs.data->size() / size / 2;
    std::vector<uint8_t> re(count * size), im(count * size);
    for (size_t k = 0; k < count; ++k) {
      std::memcpy(&re[k * size], &(*node.attrs.data)[2 * k * size], size);
      std::memcpy(&im[k * size], &(*node.attrs.data)[(2 * k + 1) * size], size);
    }
    return {b_.constant_array(std::move(re), part, node.shape),
            b_.constant_array(std::move(im), part, node.shape)};
  }

  Pair cast(const Node& node, const Pair& x) {
    DType target = node.dtype;
    if (is_complex(target)) {
      DType part = component_dtype(target);
      ValueId re = b_.cast(x.re, part);
      return {re, x.is_complex() ? b_.cast(x.im, part) : zero_like(re)};
    }
    // NumPy's astype from complex drops the imaginary part; to bool it asks "non-zero?".
    return {target == DType::Bool ? nonzero(x) : b_.cast(x.re, target)};
  }

  // ---- arithmetic on pairs ----
  ValueId un(Op op, ValueId a) { return b_.unary(op, a); }
  ValueId bin(Op op, ValueId a, ValueId b) { return b_.binary(op, a, b); }
  ValueId scalar(double value, ValueId like) {
    return b_.constant(Scalar::of(value), out_.node(like).dtype);
  }
  ValueId zero_like(ValueId like) {
    return b_.constant(Scalar::of(0), out_.node(like).dtype, out_.node(like).shape);
  }
  ValueId nonzero(const Pair& x) {
    ValueId re = bin(Op::ne, x.re, scalar(0, x.re));
    return x.is_complex() ? bin(Op::logical_or, re, bin(Op::ne, x.im, scalar(0, x.im))) : re;
  }
  Pair multiply(const Pair& x, const Pair& y) {
    return {bin(Op::sub, bin(Op::mul, x.re, y.re), bin(Op::mul, x.im, y.im)),
            bin(Op::add, bin(Op::mul, x.re, y.im), bin(Op::mul, x.im, y.re))};
  }
  Pair matmul(const Pair& x, const Pair& y) {
    return {bin(Op::sub, b_.matmul(x.re, y.re), b_.matmul(x.im, y.im)),
            bin(Op::add, b_.matmul(x.re, y.im), b_.matmul(x.im, y.re))};
  }
  // Smith's algorithm (NumPy's too): divide by the larger part of the divisor first, so that
  // |c|, |d| near the float range's ends neither overflow nor underflow.
  Pair divide(const Pair& x, const Pair& y) {
    const ValueId a = x.re, b = x.im, c = y.re, d = y.im;
    ValueId c_larger = bin(Op::ge, un(Op::abs, c), un(Op::abs, d));
    ValueId ratio = b_.where(c_larger, bin(Op::div, d, c), bin(Op::div, c, d));
    ValueId denominator = b_.where(c_larger, bin(Op::add, c, bin(Op::mul, d, ratio)),
                                   bin(Op::add, bin(Op::mul, c, ratio), d));
    ValueId re = b_.where(c_larger, bin(Op::add, a, bin(Op::mul, b, ratio)),
                          bin(Op::add, bin(Op::mul, a, ratio), b));
    ValueId im = b_.where(c_larger, bin(Op::sub, b, bin(Op::mul, a, ratio)),
                          bin(Op::sub, bin(Op::mul, b, ratio), a));
    // A zero divisor: each part divided by |c| = 0 (inf, or nan for a zero part), as NumPy's
    // division gives, where the ratio above would be nan throughout.
    ValueId zero = bin(Op::logical_and, bin(Op::eq, c, scalar(0, c)), bin(Op::eq, d, scalar(0, d)));
    ValueId magnitude = un(Op::abs, c);
    return {b_.where(zero, bin(Op::div, a, magnitude), bin(Op::div, re, denominator)),
            b_.where(zero, bin(Op::div, b, magnitude), bin(Op::div, im, denominator))};
  }
  Pair exp(const Pair& x) {
    ValueId magnitude = un(Op::exp, x.re);
    return {bin(Op::mul, magnitude, un(Op::cos, x.im)), bin(Op::mul, magnitude, un(Op::sin, x.im))};
  }
  Pair log(const Pair& x) {
    return {un(Op::log, bin(Op::hypot, x.re, x.im)), bin(Op::atan2, x.im, x.re)};
  }
  // The principal root: t = sqrt((|z| + |a|) / 2); a >= 0: (t, b / 2t), else (|b| / 2t, ±t).
  Pair sqrt(const Pair& x) {
    const ValueId a = x.re, b = x.im;
    ValueId t = un(
        Op::sqrt, bin(Op::mul, bin(Op::add, bin(Op::hypot, a, b), un(Op::abs, a)), scalar(0.5, a)));
    ValueId t_zero = bin(Op::eq, t, scalar(0, t));
    ValueId q = b_.where(t_zero, b, bin(Op::div, b, bin(Op::add, t, t)));
    ValueId right_half = bin(Op::ge, a, scalar(0, a));
    return {b_.where(right_half, t, un(Op::abs, q)),
            b_.where(right_half, q, bin(Op::copysign, t, b))};
  }
  // The number `id` holds everywhere where it is one constant (through broadcasts, reshapes;
  // a loop body's parameter for a constant invariant: `z ** 3` in a loop).
  std::optional<double> constant_number(ValueId id) const {
    while (out_.node(id).op == Op::broadcast || out_.node(id).op == Op::reshape)
      id = out_.node(id).inputs[0];
    if (auto known = known_numbers_.find(id); known != known_numbers_.end()) return known->second;
    if (out_.node(id).op != Op::constant) return std::nullopt;
    return out_.node(id).attrs.scalar.as_double();
  }
  // NumPy's z ** n for a constant integer n, 0 < |n| < 100 (umath's nc_pow): products by
  // binary exponentiation from 1, the reciprocal of that for n < 0, where exp(n log z) took six
  // library calls an element (z ** 3 of 160,000 numbers: 98 ms, NumPy 0.65) and was not exact
  // where the products are ((1 + 1j) ** 3 is -2 + 2j).
  std::optional<Pair> integer_power(const Pair& z, const Pair& w) {
    std::optional<double> re = constant_number(w.re);
    std::optional<double> im = w.is_complex() ? constant_number(w.im) : 0.0;
    if (!re || !im || *im != 0 || *re != std::trunc(*re) || *re == 0 || std::abs(*re) >= 100)
      return std::nullopt;
    int64_t n = static_cast<int64_t>(std::abs(*re));
    Pair product;
    if (n == 1) {
      product = z;
    } else if (n == 2) {
      product = multiply(z, z);
    } else if (n == 3) {
      product = multiply(z, multiply(z, z));
    } else {
      product = {scalar(1, z.re), zero_like(z.re)};
      Pair base = z;
      for (int64_t mask = 1;; mask <<= 1) {
        if (n & mask) product = multiply(product, base);
        if (n < (mask << 1)) break;
        base = multiply(base, base);
      }
    }
    if (*re > 0) return product;
    // 0 ** -n: NaN in both parts, as NumPy's (a zero base is no product's business)
    ValueId zero_base = un(Op::logical_not, nonzero(z));
    Pair reciprocal = divide({scalar(1, z.re), zero_like(z.re)}, product);
    ValueId nan = scalar(NAN, z.re);
    return Pair{b_.where(zero_base, nan, reciprocal.re), b_.where(zero_base, nan, reciprocal.im)};
  }
  // z ** w = exp(w log z); z ** 0 is 1 for every z, NaN too (NumPy's first test); 0 ** w is
  // 0 for Re w > 0, NaN otherwise.
  Pair power(const Pair& z, const Pair& w) {
    if (std::optional<Pair> integer = integer_power(z, w)) return *integer;
    Pair general = exp(multiply(w, log(z)));
    ValueId zero_base = un(Op::logical_not, nonzero(z));
    ValueId zero_exponent = un(Op::logical_not, nonzero(w));
    ValueId at_zero =
        b_.where(bin(Op::gt, w.re, scalar(0, w.re)), scalar(0, z.re), scalar(NAN, z.re));
    return {b_.where(zero_exponent, scalar(1, z.re), b_.where(zero_base, at_zero, general.re)),
            b_.where(bin(Op::logical_or, zero_exponent, zero_base), zero_like(general.im),
                     general.im)};
  }

  Pair elementwise(const Node& node) {
    const Pair& x = operand(node, 0);
    const Pair y = node.inputs.size() > 1 ? operand(node, 1) : Pair{};
    auto both = [&](Op op, Op combine) {
      return Pair{bin(combine, bin(op, x.re, y.re), bin(op, x.im, y.im))};
    };
    auto either = [&](Op test, Op combine) {
      return Pair{bin(combine, un(test, x.re), un(test, x.im))};
    };
    auto scaled = [&](const Pair& v, double factor) {
      return Pair{bin(Op::mul, v.re, scalar(factor, v.re)),
                  bin(Op::mul, v.im, scalar(factor, v.im))};
    };
    ValueId sin_a = -1, cos_a = -1, sinh_b = -1, cosh_b = -1;
    auto trig = [&](ValueId angle, ValueId hyperbolic) {
      sin_a = un(Op::sin, angle), cos_a = un(Op::cos, angle);
      sinh_b = un(Op::sinh, hyperbolic), cosh_b = un(Op::cosh, hyperbolic);
    };
    switch (node.op) {
      case Op::mul:
        return multiply(x, y);
      case Op::div:
        return divide(x, y);
      case Op::reciprocal:
        return divide({scalar(1, x.re), zero_like(x.re)}, x);
      case Op::pow:
        return power(x, y);
      case Op::abs:
        return {bin(Op::hypot, x.re, x.im)};
      case Op::exp:
        return exp(x);
      case Op::log:
        return log(x);
      case Op::log2:
        return scaled(log(x), 1 / std::log(2.0));
      case Op::log10:
        return scaled(log(x), 1 / std::log(10.0));
      case Op::sqrt:
        return sqrt(x);
      case Op::sin:  // sin(a + ib) = sin a cosh b + i cos a sinh b
        trig(x.re, x.im);
        return {bin(Op::mul, sin_a, cosh_b), bin(Op::mul, cos_a, sinh_b)};
      case Op::cos:  // cos(a + ib) = cos a cosh b - i sin a sinh b
        trig(x.re, x.im);
        return {bin(Op::mul, cos_a, cosh_b), un(Op::neg, bin(Op::mul, sin_a, sinh_b))};
      case Op::sinh:  // sinh(a + ib) = sinh a cos b + i cosh a sin b
        trig(x.im, x.re);
        return {bin(Op::mul, sinh_b, cos_a), bin(Op::mul, cosh_b, sin_a)};
      case Op::cosh:  // cosh(a + ib) = cosh a cos b + i sinh a sin b
        trig(x.im, x.re);
        return {bin(Op::mul, cosh_b, cos_a), bin(Op::mul, sinh_b, sin_a)};
      case Op::eq:
        return both(Op::eq, Op::logical_and);
      case Op::ne:
        return both(Op::ne, Op::logical_or);
      case Op::isnan:
        return either(Op::isnan, Op::logical_or);
      case Op::isinf:
        return either(Op::isinf, Op::logical_or);
      case Op::isfinite:
        return either(Op::isfinite, Op::logical_and);
      case Op::logical_not:
        return {un(Op::logical_not, nonzero(x))};
      case Op::logical_and:
      case Op::logical_or:
      case Op::logical_xor:
        return {bin(node.op, nonzero(x), nonzero(y))};
      default:
        break;
    }
    throw Error(
        ErrorKind::Internal,
        error_message(std::string(op_name(node.op)), node.location,
                      "the op table accepts complex operands but the lowering has no rule"));
  }

  // ---- loops: complex carried values and invariants become pairs ----
  static void append(const Pair& lowered, std::vector<ValueId>& values) {
    values.push_back(lowered.re);
    if (lowered.is_complex()) values.push_back(lowered.im);
  }

  Pair lower_loop(ValueId id, const Node& node) {
    bool complex_operand = false;
    for (ValueId input : node.inputs)
      complex_operand = complex_operand || value(input).is_complex();
    if (!complex_operand && !has_complex_values(*node.attrs.body))
      return {b_.copy_node(node, plain_inputs(node))};
    const size_t carried = static_cast<size_t>(node.attrs.index);
    // The body's parameter of operand k >= 2 is its (k - 1)th (0: the induction variable).
    std::map<int64_t, std::pair<double, double>> known;
    for (size_t k = 2 + carried; k < node.inputs.size(); ++k) {
      const Pair& invariant = operand(node, k);
      std::optional<double> re = constant_number(invariant.re);
      std::optional<double> im = invariant.is_complex() ? constant_number(invariant.im) : 0.0;
      if (re && im) known[static_cast<int64_t>(k - 1)] = {*re, *im};
    }
    auto body = std::make_shared<const Graph>(
        ComplexLowering(*node.attrs.body, false, std::move(known)).run());
    LoweredLoop lowered;
    std::vector<ValueId> init, invariants;
    for (size_t k = 0; k < carried; ++k) {
      lowered.first_index.push_back(static_cast<int64_t>(init.size()));
      append(operand(node, 2 + k), init);
    }
    for (size_t k = 2 + carried; k < node.inputs.size(); ++k) append(operand(node, k), invariants);
    lowered.loop = b_.loop(operand(node, 0).re, operand(node, 1).re, node.attrs.steps.at(0), init,
                           invariants, std::move(body), is_while_loop(node));
    loops_[id] = lowered;
    return {lowered.loop};
  }

  Pair lower_loop_result(const Node& node) {
    auto found = loops_.find(node.inputs[0]);
    if (found == loops_.end()) return {b_.copy_node(node, plain_inputs(node))};
    const Node& loop = in_.node(node.inputs[0]);
    int64_t first = found->second.first_index.at(static_cast<size_t>(node.attrs.index));
    ValueId re = b_.loop_result(found->second.loop, first);
    if (!is_complex(in_.node(loop.inputs[2 + static_cast<size_t>(node.attrs.index)]).dtype))
      return {re};
    return {re, b_.loop_result(found->second.loop, first + 1)};
  }

  const Graph& in_;
  Graph out_;
  Builder b_;
  bool interleaved_;
  std::vector<Pair> values_;
  std::map<ValueId, LoweredLoop> loops_;
  std::map<int64_t, std::pair<double, double>> known_parameters_;
  std::map<ValueId, double> known_numbers_;  // by lowered value: known_parameters_' parts
};

}  // namespace

bool has_complex_values(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (is_complex(node.dtype)) return true;
    for (const Graph* region : {node.attrs.body.get(), node.attrs.else_body.get()})
      if (region != nullptr && has_complex_values(*region)) return true;
  }
  return false;
}

Graph lower_complex(const Graph& graph) {
  if (!has_complex_values(graph)) return graph;
  // Pairs are carried through loops; a cond is lowered to its loops first (ir/cond.h).
  if (has_conditionals(graph)) return ComplexLowering(lower_conditionals(graph), true).run();
  return ComplexLowering(graph, true).run();
}

}  // namespace kiln::ir
