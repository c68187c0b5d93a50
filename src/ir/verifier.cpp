// The verifier re-derives each node's invariants from the op table and its operands. A failure
// here is kiln's own bug (a pass built something the builder would have refused), so the error
// is Internal and names the stage that produced the graph.
#include "ir/verifier.h"

#include <algorithm>
#include <optional>

#include "ir/cond.h"
#include "ir/attention_shape.h"
#include "ir/convolution_shape.h"
#include "ir/loop.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

class NodeVerifier {
 public:
  NodeVerifier(const Graph& graph, ValueId id, const std::string& stage, int32_t symbol_count)
      : graph_(graph), id_(id), node_(graph.node(id)), stage_(stage),
        symbol_count_(symbol_count) {}

  void verify() {
    verify_operands();
    for (const Dim& dim : node_.shape) {
      expect(!dim.is_constant() || dim.constant() >= 0, "negative dimension");
      expect(dim.symbol_bound() <= symbol_count_, "a size symbol the graph does not have");
    }
    switch (op_info(node_.op).kind) {
      case OpKind::Unary:
      case OpKind::Binary:
      case OpKind::Ternary: verify_elementwise(); break;
      case OpKind::Reduce: verify_reduction(); break;
      case OpKind::Scan:
        expect_accepted(input(0).dtype);
        expect(input(0).shape == node_.shape && input(0).dtype == node_.dtype,
               "a scan keeps its operand's dtype and shape");
        expect_axis(node_.attrs.axis, input(0).shape.size());
        break;
      case OpKind::Structural: verify_structural(); break;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorKind::Internal,
                error_message(std::string(op_name(node_.op)), "",
                              "internal error after stage '" + stage_ + "' at %" +
                                  std::to_string(id_) + " : " +
                                  std::string(dtype_name(node_.dtype)) +
                                  shape_string(node_.shape) + ": " + message));
  }
  void expect(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }
  const Node& input(size_t i) const { return graph_.node(node_.inputs[i]); }

  void expect_accepted(DType dtype) const {
    expect((op_info(node_.op).accepts & static_cast<uint8_t>(dtype_class(dtype))) != 0,
           "operand dtype " + std::string(dtype_name(dtype)) + " is not accepted");
  }
  void expect_axis(int64_t axis, size_t rank) const {
    expect(axis >= 0 && axis < static_cast<int64_t>(rank),
           "axis " + std::to_string(axis) + " is not a normalised axis of rank " +
               std::to_string(rank));
  }
  void expect_axes(const std::vector<int64_t>& axes, size_t rank) const {
    for (int64_t axis : axes) expect_axis(axis, rank);
    expect(std::adjacent_find(axes.begin(), axes.end(), std::greater_equal<int64_t>()) ==
               axes.end(),
           "axes are not sorted and unique");
  }

  void verify_operands() const {
    int arity = op_info(node_.op).arity;
    bool arity_fits =
        arity < 0 ? !node_.inputs.empty() : static_cast<int>(node_.inputs.size()) == arity;
    expect(arity_fits, "has " + std::to_string(node_.inputs.size()) + " operands, arity is " +
                           std::to_string(arity));
    for (ValueId operand : node_.inputs) {
      expect(operand >= 0 && operand < id_,
             "operand %" + std::to_string(operand) + " is not defined before its use");
    }
  }

  void verify_elementwise() const {
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      expect(input(i).shape == node_.shape,
             "elementwise operand %" + std::to_string(node_.inputs[i]) + " has shape " +
                 shape_string(input(i).shape) + ", not the result shape (missing broadcast)");
    }
    size_t first_value = node_.op == Op::where ? 1 : 0;
    if (node_.op == Op::where) expect(input(0).dtype == DType::Bool, "condition is not bool");
    DType dtype = input(first_value).dtype;
    for (size_t i = first_value; i < node_.inputs.size(); ++i) {
      expect(input(i).dtype == dtype, "operands have different dtypes");
    }
    expect_accepted(dtype);
    DType result = result_dtype(node_.op, dtype);
    expect(node_.dtype == result, "result dtype should be " + std::string(dtype_name(result)));
  }

  void verify_reduction() const {
    const Node& operand = input(0);
    expect_accepted(operand.dtype);
    expect_axes(node_.attrs.axes, operand.shape.size());
    Shape shape;
    for (size_t d = 0; d < operand.shape.size(); ++d) {
      bool reduced = std::binary_search(node_.attrs.axes.begin(), node_.attrs.axes.end(),
                                        static_cast<int64_t>(d));
      if (!reduced) shape.push_back(operand.shape[d]);
      if (reduced && node_.attrs.keepdims) shape.push_back(1);
    }
    expect(shape == node_.shape, "reduced shape should be " + shape_string(shape));
    DType result = result_dtype(node_.op, operand.dtype);
    expect(node_.dtype == result, "result dtype should be " + std::string(dtype_name(result)));
  }

  void verify_structural() const {
    const Attrs& attrs = node_.attrs;
    bool same_dtype = node_.inputs.empty() || node_.op == Op::cast || node_.op == Op::loop || node_.op == Op::cond ||
                      node_.op == Op::loop_result || node_.op == Op::complex ||
                      node_.op == Op::real || node_.op == Op::imag || node_.op == Op::argsort ||
                      node_.op == Op::random_uniform || node_.op == Op::random_normal ||
                      node_.dtype == input(0).dtype;
    expect(same_dtype, "result dtype differs from the operand's");
    switch (node_.op) {
      case Op::parameter: expect(attrs.index >= 0, "negative parameter index"); break;
      case Op::constant_array:
        expect(is_static(node_.shape) && attrs.data != nullptr &&
                   static_cast<int64_t>(attrs.data->size()) ==
                       element_count(node_.shape) * dtype_size(node_.dtype),
               "constant data does not match the shape");
        break;
      case Op::iota: expect_axis(attrs.axis, node_.shape.size()); break;
      case Op::size:
        expect(node_.shape.empty() && is_integer(node_.dtype), "a size is a 0-d integer");
        expect(attrs.extent.symbol_bound() <= symbol_count_, "a size's symbol is not the graph's");
        break;
      case Op::random_uniform:
      case Op::random_normal:
        expect(is_float(node_.dtype), "random values must be floats");
        expect(input(0).dtype == DType::Int64 && input(0).shape.empty(),
               "a random key is a 0-d int64");
        break;
      case Op::cast: expect(input(0).shape == node_.shape, "cast changes the shape"); break;
      case Op::reshape:
        expect(element_count_dim(input(0).shape) == element_count_dim(node_.shape),
               "reshape changes the element count of " + shape_string(input(0).shape));
        break;
      case Op::permute: verify_permute(); break;
      case Op::broadcast: verify_broadcast(); break;
      case Op::slice: verify_slice(); break;
      case Op::pad: verify_pad(); break;
      case Op::concat: verify_concat(); break;
      case Op::flip:
        expect_axes(attrs.axes, node_.shape.size());
        expect(input(0).shape == node_.shape, "flip changes the shape");
        break;
      case Op::gather: verify_gather(); break;
      case Op::argsort:
      case Op::sort: verify_sort(); break;
      case Op::scatter: verify_scatter(); break;
      case Op::matmul: verify_matmul(); break;
      case Op::attention: verify_attention(); break;
      case Op::solve: verify_solve(); break;
      case Op::convolution: verify_convolution(); break;
      case Op::convolution_backward_input:
      case Op::convolution_backward_weight: verify_convolution_backward(); break;
      case Op::loop: verify_loop(); break;
      case Op::cond: verify_cond(); break;
      case Op::loop_result: verify_loop_result(); break;
      case Op::complex:
        expect(input(0).dtype == input(1).dtype && node_.dtype == complex_of(input(0).dtype) &&
                   is_float(input(0).dtype) && input(0).shape == node_.shape &&
                   input(1).shape == node_.shape,
               "complex takes two float parts of its shape");
        break;
      case Op::real:
      case Op::imag:
        expect(is_complex(input(0).dtype) && node_.dtype == component_dtype(input(0).dtype) &&
                   input(0).shape == node_.shape,
               "takes a complex operand of its shape");
        break;
      case Op::placeholder:
        fail("a value computed inside a loop body is used outside the loop");
      default: break;
    }
  }

  void verify_loop() const {
    std::string error = loop_signature_error(graph_, node_);
    expect(error.empty(), error);
    ir::verify(*node_.attrs.body, stage_ + " (loop body)", symbol_count_);
  }

  void verify_cond() const {
    std::string error = cond_signature_error(graph_, node_);
    expect(error.empty(), error);
    ir::verify(*node_.attrs.body, stage_ + " (then region)", symbol_count_);
    ir::verify(*node_.attrs.else_body, stage_ + " (else region)", symbol_count_);
  }

  void verify_loop_result() const {
    const Node& loop = input(0);
    expect(loop.op == Op::loop || loop.op == Op::cond,
           "reads a " + std::string(op_name(loop.op)) + ", not a loop or cond");
    expect(node_.attrs.index >= 0 && node_.attrs.index < loop.attrs.index,
           "carried value " + std::to_string(node_.attrs.index) + " does not exist");
    const Graph& body = *loop.attrs.body;
    const Node& result = body.node(body.outputs()[static_cast<size_t>(node_.attrs.index)]);
    expect(result.dtype == node_.dtype && result.shape == node_.shape,
           "type differs from the carried value's");
  }

  void verify_permute() const {
    const Shape& source = input(0).shape;
    const std::vector<int64_t>& permutation = node_.attrs.permutation;
    expect(permutation.size() == source.size(), "permutation length differs from the rank");
    std::vector<int64_t> sorted = permutation;
    std::sort(sorted.begin(), sorted.end());
    for (size_t d = 0; d < sorted.size(); ++d) {
      expect(sorted[d] == static_cast<int64_t>(d), "not a permutation");
    }
    for (size_t d = 0; d < permutation.size(); ++d) {
      expect(node_.shape.size() == source.size() &&
                 node_.shape[d] == source[static_cast<size_t>(permutation[d])],
             "permuted shape is wrong");
    }
  }

  void verify_broadcast() const {
    const Shape& source = input(0).shape;
    expect(source.size() <= node_.shape.size(), "broadcast lowers the rank");
    size_t offset = node_.shape.size() - source.size();
    for (size_t d = 0; d < source.size(); ++d) {
      expect(source[d] == node_.shape[offset + d] || source[d] == Dim(1),
             "cannot broadcast " + shape_string(source));
    }
  }

  void verify_slice() const {
    const Shape& source = input(0).shape;
    const Attrs& attrs = node_.attrs;
    expect(attrs.starts.size() == source.size() && attrs.steps.size() == source.size() &&
               node_.shape.size() == source.size(),
           "slice attributes do not match the rank");
    for (size_t d = 0; d < source.size(); ++d) {
      if (!source[d].is_constant() || !node_.shape[d].is_constant()) {  // builder.h
        expect(attrs.steps[d] == 1 && attrs.starts[d] >= 0,
               "slice of symbolic dimension " + std::to_string(d) + " is not start:stop");
        continue;
      }
      int64_t count = node_.shape[d].constant();
      int64_t size = source[d].constant();
      int64_t first = attrs.starts[d];
      int64_t step = attrs.steps[d];
      expect(step != 0, "zero slice step");
      if (count == 0) continue;
      // Divide instead of multiplying: the last index must not overflow while checking it.
      bool first_fits = first >= 0 && first < size;
      int64_t room = step > 0 ? size - 1 - first : first;
      int64_t magnitude = step > 0 ? step : -step;
      expect(first_fits && (count - 1) <= room / magnitude,
             "slice reads outside dimension " + std::to_string(d) + " of " +
                 shape_string(source));
    }
  }

  void verify_pad() const {
    const Shape& source = input(0).shape;
    const Attrs& attrs = node_.attrs;
    expect(attrs.pad_low.size() == source.size() && attrs.pad_high.size() == source.size() &&
               node_.shape.size() == source.size(),
           "pad widths do not match the rank");
    for (size_t d = 0; d < source.size(); ++d) {
      expect(attrs.pad_low[d] >= 0 && attrs.pad_high[d] >= 0, "negative pad width");
      expect(node_.shape[d] == source[d] + attrs.pad_low[d] + attrs.pad_high[d],
             "padded shape is wrong");
    }
  }

  void verify_concat() const {
    const Shape& first = input(0).shape;
    expect_axis(node_.attrs.axis, first.size());
    size_t axis = static_cast<size_t>(node_.attrs.axis);
    Dim total = 0;
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      const Shape& shape = input(i).shape;
      expect(input(i).dtype == node_.dtype, "concat operands have different dtypes");
      expect(shape.size() == first.size(), "concat operands have different ranks");
      for (size_t d = 0; d < shape.size(); ++d) {
        expect(d == axis || shape[d] == first[d], "concat operand shapes differ off the axis");
      }
      total = total + shape[axis];
    }
    Shape expected = first;
    expected[axis] = total;
    expect(node_.shape == expected, "concatenated shape should be " + shape_string(expected));
  }

  void verify_gather() const {
    const Shape& source = input(0).shape;
    const Shape& index = input(1).shape;
    expect(is_integer(input(1).dtype), "gather index is not an integer");
    expect_axis(node_.attrs.axis, source.size());
    auto axis = static_cast<ptrdiff_t>(node_.attrs.axis);
    Shape expected(source.begin(), source.begin() + axis);
    expected.insert(expected.end(), index.begin(), index.end());
    expected.insert(expected.end(), source.begin() + axis + 1, source.end());
    expect(node_.shape == expected, "gathered shape should be " + shape_string(expected));
  }

  void verify_sort() const {
    const Shape& source = input(0).shape;
    expect(!is_complex(input(0).dtype) &&
               node_.dtype == (node_.op == Op::argsort ? DType::Int64 : input(0).dtype),
           "a sort takes a real operand to int64 positions (argsort) or its values (sort)");
    expect_axis(node_.attrs.axis, source.size());
    const auto axis = static_cast<size_t>(node_.attrs.axis);
    bool fits = node_.shape.size() == source.size();
    for (size_t d = 0; fits && d < source.size(); ++d)
      fits = d == axis ? node_.shape[d] == source[d] ||
                             (node_.shape[d].is_constant() && source[d].is_constant() &&
                              node_.shape[d].constant() <= source[d].constant())
                       : node_.shape[d] == source[d];
    expect(fits, "the sort's shape " + shape_string(node_.shape) + " does not fit its operand's " +
                     shape_string(source));
    // picked positions (passes/sort_picks.cpp): ascending, inside the row, one per element
    const std::vector<int64_t>& picks = node_.attrs.starts;
    bool picks_fit = picks.empty() || (node_.shape[axis].is_constant() &&
                                       node_.shape[axis].constant() ==
                                           static_cast<int64_t>(picks.size()) &&
                                       source[axis].is_constant());
    for (size_t j = 0; picks_fit && j < picks.size(); ++j)
      picks_fit = picks[j] >= (j == 0 ? 0 : picks[j - 1] + 1) &&
                  picks[j] < source[axis].constant();
    expect(picks_fit, "the sort's picked positions " + std::to_string(picks.size()) +
                          " do not fit its row");
  }

  void verify_scatter() const {
    const Shape& source = input(0).shape;
    expect(is_integer(input(1).dtype) && input(1).shape.size() == 1,
           "scatter index is not a 1-D integer array");
    expect(input(2).dtype == node_.dtype, "scatter values have another dtype");
    expect_axis(node_.attrs.axis, source.size());
    Shape expected = source;
    expected[static_cast<size_t>(node_.attrs.axis)] = input(1).shape[0];
    expect(input(2).shape == expected && node_.shape == source, "scatter shapes do not fit");
  }

  void verify_attention() const {
    expect(node_.inputs.size() == 3 || node_.inputs.size() == 4,
           "attention takes q, k, v and an optional bias");
    const std::string mismatch =
        attention_mismatch(input(0), input(1), input(2), node_.inputs.size() == 4 ? &input(3) : nullptr);
    expect(mismatch.empty(), "attention " + mismatch);
    expect(node_.shape == attention_shape(input(0), input(2)), "attention's shape is wrong");
  }

  void verify_solve() const {
    const Shape& a = input(0).shape;
    const Shape& b = input(1).shape;
    expect((node_.dtype == DType::Float32 || node_.dtype == DType::Float64) &&
               input(0).dtype == node_.dtype && input(1).dtype == node_.dtype,
           "solve takes float32 or float64 operands of its dtype");
    expect(a.size() >= 2 && a[a.size() - 1] == a[a.size() - 2] && b.size() == a.size() &&
               b[b.size() - 2] == a.back() && std::equal(a.begin(), a.end() - 2, b.begin()) &&
               node_.shape == b,
           "solve takes a (.., n, n) and a (.., n, k) of one batch shape, to b's shape");
  }

  void verify_matmul() const {
    expect(node_.inputs.size() == 2 || node_.inputs.size() == 3,
           "matmul takes two operands and an optional bias");
    const Shape& left = input(0).shape;
    const Shape& right = input(1).shape;
    if (node_.inputs.size() == 3)  // a bias along the rows (passes/matmul_epilogues.cpp)
      expect(input(2).dtype == node_.dtype && input(2).shape == Shape{right.back()},
             "a matmul's bias must be a vector of the result's columns and dtype");
    expect(!node_.attrs.relu || node_.inputs.size() == 3, "a matmul's ReLU comes with a bias");
    expect(left.size() >= 2 && right.size() >= 2, "matmul operands must have rank >= 2");
    expect(input(0).dtype == input(1).dtype && node_.dtype != DType::Bool,
           "matmul dtypes are wrong");
    expect(left.back() == right[right.size() - 2], "matmul inner dimensions differ");
    Shape batch;
    bool fits = broadcast_shapes(Shape(left.begin(), left.end() - 2),
                                 Shape(right.begin(), right.end() - 2), batch);
    batch.push_back(left[left.size() - 2]);
    batch.push_back(right.back());
    expect(fits && batch == node_.shape, "matmul shape should be " + shape_string(batch));
  }

  void verify_convolution() const {
    expect(node_.inputs.size() == 2 || node_.inputs.size() == 3,
           "convolution takes an input, a weight and an optional bias");
    for (size_t k = 0; k < node_.inputs.size(); ++k) {
      expect(input(k).dtype == node_.dtype &&
                 (node_.dtype == DType::Float32 || node_.dtype == DType::Float64),
             "convolution operands must share the result's float32 or float64 dtype");
    }
    std::optional<std::vector<int64_t>> bias_shape;
    if (node_.inputs.size() == 3) bias_shape = to_ints(input(2).shape);
    ConvolutionGeometry geometry;
    const Attrs& attrs = node_.attrs;
    // A symbolic batch passes through (builder.h); the geometry is checked for a batch of 1.
    Shape batchless_input = input(0).shape, batchless = node_.shape;
    expect(!batchless_input.empty() && !batchless.empty() && batchless_input[0] == batchless[0],
           "convolution changes the batch");
    batchless_input[0] = 1;
    batchless[0] = 1;
    expect(is_static(batchless_input) && is_static(batchless),
           "convolution sizes other than the batch are symbolic");
    std::vector<int64_t> input_shape = to_ints(batchless_input), shape = to_ints(batchless);
    if (attrs.channels_last) {
      input_shape = permuted(input_shape, channels_first_order(input_shape.size()));
      shape = permuted(shape, channels_first_order(shape.size()));
    }
    expect(!attrs.filters_last || attrs.channels_last,
           "channels-last filters need channels-last activations");
    std::vector<int64_t> weight_shape = to_ints(input(1).shape);
    if (attrs.filters_last)
      weight_shape = permuted(weight_shape, channels_first_order(weight_shape.size()));
    std::string problem =
        convolution_geometry(input_shape, weight_shape, bias_shape, attrs.strides,
                             attrs.padding, attrs.dilation, attrs.groups, geometry);
    expect(problem.empty(), "convolution: " + problem);
    // The builder stores one entry per spatial dimension: later stages index them directly.
    size_t rank = geometry.spatial_rank();
    expect(attrs.strides.size() == rank && attrs.padding.size() == rank &&
               attrs.dilation.size() == rank,
           "convolution attributes need one entry per spatial dimension");
    expect(shape == geometry.output_shape(),
           "convolution shape should be " + shape_string(from_ints(geometry.output_shape())) +
               (attrs.channels_last ? " (channels-first)" : ""));
  }

  // Operands (grad_output, weight) or (grad_output, input); the node has the other's shape.
  void verify_convolution_backward() const {
    const bool for_input = node_.op == Op::convolution_backward_input;
    for (size_t k = 0; k < 2; ++k) {
      expect(input(k).dtype == node_.dtype &&
                 (node_.dtype == DType::Float32 || node_.dtype == DType::Float64),
             "convolution gradient operands must share the result's float32 or float64 dtype");
    }
    const Attrs& attrs = node_.attrs;
    // The activations (grad_output, the input or its gradient) share a batch, which may be
    // symbolic (builder.h); the geometry is checked for a batch of 1.
    const Shape& grad_output = input(0).shape;
    const Shape& other_activation = for_input ? node_.shape : input(1).shape;
    expect(!grad_output.empty() && !other_activation.empty() &&
               grad_output[0] == other_activation[0],
           "convolution gradient activations of different batches");
    // Channels-last: grad_output and the activation (the input or its gradient) are permuted.
    auto activation = [&](Shape shape) {
      shape[0] = Dim(1);
      expect(is_static(shape), "convolution gradient sizes other than the batch are symbolic");
      std::vector<int64_t> ints = to_ints(shape);
      return attrs.channels_last ? permuted(ints, channels_first_order(ints.size())) : ints;
    };
    expect(!attrs.filters_last || attrs.channels_last,
           "channels-last filters need channels-last activations");
    auto filter = [&](const Shape& shape) {
      expect(is_static(shape), "convolution gradient weight sizes are symbolic");
      std::vector<int64_t> ints = to_ints(shape);
      return attrs.filters_last ? permuted(ints, channels_first_order(ints.size())) : ints;
    };
    std::vector<int64_t> own = for_input ? activation(node_.shape) : filter(node_.shape);
    std::vector<int64_t> other = for_input ? filter(input(1).shape) : activation(input(1).shape);
    ConvolutionGeometry geometry;
    std::string problem = convolution_backward_geometry(
        activation(input(0).shape), for_input ? own : other, for_input ? other : own,
        attrs.strides, attrs.padding, attrs.dilation, attrs.groups, geometry);
    expect(problem.empty(), std::string(op_name(node_.op)) + ": " + problem);
    size_t rank = geometry.spatial_rank();
    expect(attrs.strides.size() == rank && attrs.padding.size() == rank &&
               attrs.dilation.size() == rank,
           "convolution attributes need one entry per spatial dimension");
  }

  const Graph& graph_;
  ValueId id_;
  const Node& node_;
  const std::string& stage_;
  int32_t symbol_count_;
};

[[noreturn]] void fail_graph(const std::string& stage, const std::string& message) {
  throw Error(ErrorKind::Internal,
              error_message("verify", "",
                            "internal error after stage '" + stage + "': " + message));
}

}  // namespace

void verify(const Graph& graph, const std::string& stage, int32_t symbol_count) {
  if (symbol_count < 0) symbol_count = static_cast<int32_t>(graph.symbol_hints().size());
  for (int64_t hint : graph.symbol_hints()) {
    if (hint < 2) fail_graph(stage, "a size symbol's hint " + std::to_string(hint) + " is below 2");
  }
  std::vector<ValueId> parameters;
  for (ValueId id = 0; id < graph.size(); ++id) {
    NodeVerifier(graph, id, stage, symbol_count).verify();
    if (graph.node(id).op == Op::parameter) parameters.push_back(id);
  }
  std::stable_sort(parameters.begin(), parameters.end(), [&](ValueId a, ValueId b) {
    return graph.node(a).attrs.index < graph.node(b).attrs.index;
  });
  if (parameters != graph.inputs()) fail_graph(stage, "graph inputs are not its parameters");
  for (size_t i = 1; i < parameters.size(); ++i) {
    if (graph.node(parameters[i]).attrs.index == graph.node(parameters[i - 1]).attrs.index) {
      fail_graph(stage, "two parameters have index " +
                            std::to_string(graph.node(parameters[i]).attrs.index));
    }
  }
  for (ValueId output : graph.outputs()) {
    if (output < 0 || output >= graph.size()) {
      fail_graph(stage, "output %" + std::to_string(output) + " is not a value of the graph");
    }
  }
}

}  // namespace kiln::ir
