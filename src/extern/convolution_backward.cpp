#include "extern/convolution_backward.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "extern/convolution.h"
#include "extern/convolution_backward_float64.h"
#include "extern/onednn_memory.h"
#include "extern/winograd_convolution.h"
#include "ir/convolution_shape.h"
#include "ir/shape.h"
#include "kiln/error.h"

namespace kiln::externs {
namespace {

using dnnl::memory;
using ir::ConvolutionGeometry;

// Which gradient: with respect to the forward's input (oneDNN's backward data) or its weight
// (backward weights).
enum class Gradient : int64_t { Input, Weight };

const char* op_name(Gradient gradient) {
  return gradient == Gradient::Input ? "convolution_backward_input" : "convolution_backward_weight";
}

[[noreturn]] void fail(Gradient gradient, ErrorKind kind, const std::string& message) {
  throw Error(kind, std::string("kiln: ") + op_name(gradient) + ": " + message);
}

// ---- oneDNN (float32) ---------------------------------------------------------------------

// One gradient problem's primitive. As in the forward (extern/convolution.cpp) oneDNN computes
// in the blocked layouts it prefers; reorders move the caller's operands in and the result out,
// through buffers owned here. `operand` is the weight (Input) or the forward's input (Weight).
// `mutex` makes one call at a time use them.
struct Primitives {
  std::mutex mutex;
  dnnl::stream stream;
  memory::desc grad_output_desc, operand_desc, result_desc;  // the caller's layouts
  dnnl::primitive primitive;
  bool winograd = false;  // the primitive is Winograd's (winograd_suits)
  std::optional<dnnl::reorder> grad_output_reorder, operand_reorder, result_reorder;
  memory grad_output_memory, operand_memory, result_memory;  // oneDNN's, when reordered
};

using Cache = PrimitiveCache<Primitives>;

std::vector<int64_t> problem_key(Gradient gradient, const StridedOperand& grad_output,
                                 const StridedOperand& operand, const ConvolutionGeometry& g,
                                 bool channels_last_result) {
  std::vector<int64_t> key{static_cast<int64_t>(gradient), static_cast<int64_t>(g.spatial_rank()),
                           g.groups, channels_last_result};
  for (const std::vector<int64_t>* list :
       {&grad_output.shape, &grad_output.strides, &operand.shape, &operand.strides, &g.input_size,
        &g.kernel_size, &g.strides, &g.padding, &g.dilation})
    key.insert(key.end(), list->begin(), list->end());
  return key;
}

std::vector<int64_t> weight_shape(const ConvolutionGeometry& g) {
  std::vector<int64_t> shape{g.out_channels, g.in_channels / g.groups};
  shape.insert(shape.end(), g.kernel_size.begin(), g.kernel_size.end());
  return shape;
}

std::vector<int64_t> input_shape(const ConvolutionGeometry& g) {
  std::vector<int64_t> shape{g.batch, g.in_channels};
  shape.insert(shape.end(), g.input_size.begin(), g.input_size.end());
  return shape;
}

// The input gradient's memory: row-major (N, C, *spatial), or (N, *spatial, C) seen so.
memory::desc input_gradient_desc(const ConvolutionGeometry& g, bool channels_last) {
  const std::vector<int64_t> shape = input_shape(g);
  if (!channels_last) return row_major_desc(shape);
  const std::vector<int64_t> order = ir::channels_last_order(shape.size());
  std::vector<int64_t> strides = ir::permuted(
      ir::contiguous_strides(ir::from_ints(ir::permuted(shape, order))),
      ir::channels_first_order(shape.size()));
  return memory::desc(to_dims(shape), memory::data_type::f32, to_dims(strides));
}

std::shared_ptr<Primitives> create_primitives(dnnl::engine& engine, Gradient gradient,
                                              const StridedOperand& grad_output,
                                              const StridedOperand& operand,
                                              const ConvolutionGeometry& g,
                                              bool channels_last_result, bool winograd) {
  auto p = std::make_shared<Primitives>();
  p->stream = dnnl::stream(engine);
  p->winograd = winograd;
  const auto f32 = memory::data_type::f32;
  const auto any = memory::format_tag::any;
  const std::vector<int64_t> weights = weight_shape(g);
  const std::vector<int64_t> weight_strides = ir::contiguous_strides(ir::from_ints(weights));
  memory::desc plain_weight =
      grouped_weight_desc(row_major_desc(weights), weights, weight_strides, g.groups);
  // Activations in the caller's layout when it is channels-last: oneDNN's channels-last
  // backward kernels run as fast as its blocked ones here, and reordering every activation
  // into the blocked layout and back took a tenth of a resnet18 training step. Winograd's
  // kernels (winograd_suits) take the blocked layout, and are still 1.5-2.2x faster with the
  // reorders (batch 16: 64 channels of 56x56, backward data 12.3 -> 5.5 ms + 1.2 of reorders,
  // backward weights 10.6 -> 5.8 + 1.3).
  const auto activations =
      winograd ? any : activation_format(input_shape(g).size(), is_channels_last(grad_output));
  memory::desc any_input(to_dims(input_shape(g)), f32, activations);
  memory::desc any_weight(plain_weight.dims(), f32, any);
  memory::desc any_output(to_dims(g.output_shape()), f32, activations);
  memory::dims dilates;  // oneDNN counts the gaps between taps: torch's dilation - 1
  for (int64_t dilation : g.dilation) dilates.push_back(dilation - 1);
  const memory::dims strides = to_dims(g.strides), padding = to_dims(g.padding);
  const auto algorithm =
      winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  // The backward primitives are chosen with the forward training primitive as a hint.
  dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, any_input,
                                      any_weight, any_output, strides, dilates, padding, padding),
      engine);
  p->grad_output_desc = plain_desc(grad_output);
  if (gradient == Gradient::Input) {
    p->operand_desc =
        grouped_weight_desc(plain_desc(operand), operand.shape, operand.strides, g.groups);
    p->result_desc = input_gradient_desc(g, channels_last_result);
    dnnl::convolution_backward_data::primitive_desc primitive(
        dnnl::convolution_backward_data::desc(algorithm, any_input, any_weight, any_output,
                                              strides, dilates, padding, padding),
        engine, hint);
    p->primitive = dnnl::convolution_backward_data(primitive);
    plan_reorder(engine, p->grad_output_desc, primitive.diff_dst_desc(), primitive.diff_dst_desc(),
                 p->grad_output_reorder, p->grad_output_memory);
    plan_reorder(engine, p->operand_desc, primitive.weights_desc(), primitive.weights_desc(),
                 p->operand_reorder, p->operand_memory);
    plan_reorder(engine, primitive.diff_src_desc(), p->result_desc, primitive.diff_src_desc(),
                 p->result_reorder, p->result_memory);
  } else {
    p->operand_desc = plain_desc(operand);
    p->result_desc = plain_weight;
    dnnl::convolution_backward_weights::primitive_desc primitive(
        dnnl::convolution_backward_weights::desc(algorithm, any_input, any_weight, any_output,
                                                 strides, dilates, padding, padding),
        engine, hint);
    p->primitive = dnnl::convolution_backward_weights(primitive);
    plan_reorder(engine, p->grad_output_desc, primitive.diff_dst_desc(), primitive.diff_dst_desc(),
                 p->grad_output_reorder, p->grad_output_memory);
    plan_reorder(engine, p->operand_desc, primitive.src_desc(), primitive.src_desc(),
                 p->operand_reorder, p->operand_memory);
    plan_reorder(engine, primitive.diff_weights_desc(), p->result_desc,
                 primitive.diff_weights_desc(), p->result_reorder, p->result_memory);
  }
  return p;
}

std::shared_ptr<Primitives> find_primitives(Gradient gradient, const StridedOperand& grad_output,
                                            const StridedOperand& operand,
                                            const ConvolutionGeometry& g,
                                            bool channels_last_result) {
  return Cache::instance().find(
      problem_key(gradient, grad_output, operand, g, channels_last_result),
      [&](dnnl::engine& engine) {
        if (winograd_suits(g)) {
          try {
            return create_primitives(engine, gradient, grad_output, operand, g,
                                     channels_last_result, true);
          } catch (const dnnl::error&) {  // no Winograd kernel for this CPU or problem
          }
        }
        return create_primitives(engine, gradient, grad_output, operand, g, channels_last_result,
                                 false);
      });
}

void gradient_onednn(Gradient gradient, StridedOperand grad_output, StridedOperand operand,
                     const ConvolutionGeometry& g, bool channels_last_result, void* out) {
  std::vector<float> grad_output_copy, operand_copy;  // outlive the call below
  grad_output = describable_operand(std::move(grad_output), grad_output_copy);
  operand = describable_operand(std::move(operand), operand_copy);
  std::shared_ptr<Primitives> p =
      find_primitives(gradient, grad_output, operand, g, channels_last_result);
  const dnnl::engine& engine = Cache::instance().engine();
  std::lock_guard<std::mutex> lock(p->mutex);
  // The caller's memory, wrapped (no copy); oneDNN does not write its inputs.
  memory grad_output_user(p->grad_output_desc, engine, const_cast<void*>(grad_output.data));
  memory operand_user(p->operand_desc, engine, const_cast<void*>(operand.data));
  memory result_user(p->result_desc, engine, out);
  auto staged = [&](std::optional<dnnl::reorder>& reorder, memory& user, memory& buffer) {
    if (!reorder) return user;
    reorder->execute(p->stream, user, buffer);
    return buffer;
  };
  memory result = p->result_reorder ? p->result_memory : result_user;
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_DIFF_DST, staged(p->grad_output_reorder, grad_output_user, p->grad_output_memory)}};
  if (gradient == Gradient::Input) {
    arguments[DNNL_ARG_WEIGHTS] = staged(p->operand_reorder, operand_user, p->operand_memory);
    arguments[DNNL_ARG_DIFF_SRC] = result;
  } else {
    arguments[DNNL_ARG_SRC] = staged(p->operand_reorder, operand_user, p->operand_memory);
    arguments[DNNL_ARG_DIFF_WEIGHTS] = result;
  }
  p->primitive.execute(p->stream, arguments);
  if (p->result_reorder) p->result_reorder->execute(p->stream, p->result_memory, result_user);
  p->stream.wait();
  if (p->winograd) count_winograd_gradient();
}

// ---- kiln's Winograd (float32, where oneDNN has none) -----------------------------------------

// A problem's buffers: the weights' transform (made on every call: training changes them) and
// the threads' blocks.
struct WinogradBuffers {
  std::mutex mutex;
  std::vector<float> transform, scratch;
};

std::shared_ptr<WinogradBuffers> winograd_buffers(Gradient gradient,
                                                  const StridedOperand& grad_output,
                                                  const ConvolutionGeometry& g) {
  std::vector<int64_t> key = grad_output.shape;
  key.insert(key.end(), {static_cast<int64_t>(gradient), g.in_channels, g.padding[0], g.padding[1]});
  return PrimitiveCache<WinogradBuffers>::instance().find(
      key, [](const dnnl::engine&) { return std::make_shared<WinogradBuffers>(); });
}

// The input gradient as kiln's Winograd convolution (extern/winograd_convolution.h), where the
// problem suits it and oneDNN has no Winograd kernels: grad_output convolved with the weights'
// channels swapped and taps flipped, padded by 2 - p. false (nothing written) otherwise.
bool input_gradient_winograd(const StridedOperand& grad_output, const StridedOperand& weight,
                             const ConvolutionGeometry& g, bool channels_last_result, void* out) {
  if (winograd_available() || !winograd_suits(g)) return false;
  const std::vector<int64_t>& w = weight.strides;
  const StridedOperand flipped{static_cast<const float*>(weight.data) + 2 * w[2] + 2 * w[3],
                               DType::Float32,
                               {g.in_channels, g.out_channels, 3, 3},
                               {w[1], w[0], -w[2], -w[3]}};
  ConvolutionGeometry transposed;
  const std::vector<int64_t> padding{2 - g.padding[0], 2 - g.padding[1]};
  if (!ir::convolution_geometry(grad_output.shape, flipped.shape, std::nullopt, {1, 1}, padding,
                                {1, 1}, 1, transposed).empty() ||
      transposed.output_size != g.input_size || !winograd_changing_suits(transposed))
    return false;
  const int64_t C = g.in_channels, H = g.input_size[0], W = g.input_size[1];
  const std::vector<int64_t> out_strides =
      channels_last_result ? std::vector<int64_t>{H * W * C, 1, W * C, C}
                           : std::vector<int64_t>{C * H * W, H * W, W, 1};
  std::shared_ptr<WinogradBuffers> buffers = winograd_buffers(Gradient::Input, grad_output, g);
  std::lock_guard<std::mutex> lock(buffers->mutex);
  buffers->transform.resize(static_cast<size_t>(winograd_weight_size(transposed)));
  winograd_transform_weights(flipped, buffers->transform.data());
  winograd_convolution(transposed, grad_output, buffers->transform.data(), nullptr, 0,
                       static_cast<float*>(out), out_strides, buffers->scratch);
  count_winograd_gradient();
  return true;
}

// The weight gradient as kiln's Winograd (winograd_weight_gradient), where the problem suits it
// and the activations outweigh the weights, and oneDNN has no Winograd kernels; false (nothing
// written) otherwise.
bool weight_gradient_winograd(const StridedOperand& grad_output, const StridedOperand& input,
                              const ConvolutionGeometry& g, void* out) {
  if (winograd_available() || !winograd_changing_suits(g)) return false;
  std::shared_ptr<WinogradBuffers> buffers = winograd_buffers(Gradient::Weight, grad_output, g);
  std::lock_guard<std::mutex> lock(buffers->mutex);
  winograd_weight_gradient(g, input, grad_output, static_cast<float*>(out), buffers->scratch);
  count_winograd_gradient();
  return true;
}

// ---- dispatch ---------------------------------------------------------------------------------

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

void compute_gradient(Gradient gradient, const StridedOperand& grad_output,
                      const StridedOperand& operand, const ConvolutionParameters& parameters,
                      void* out, const std::vector<int64_t>& out_shape) {
  const bool for_input = gradient == Gradient::Input;
  ConvolutionGeometry g;
  std::string problem = ir::convolution_backward_geometry(
      grad_output.shape, for_input ? out_shape : operand.shape,
      for_input ? operand.shape : out_shape, parameters.strides, parameters.padding,
      parameters.dilation, parameters.groups, g);
  if (!problem.empty()) fail(gradient, ErrorKind::Internal, problem);
  if (operand.dtype != grad_output.dtype)
    fail(gradient, ErrorKind::Internal, "operands of different dtypes");
  // A sum over no products (an empty batch, no channels, no output positions) is zero; oneDNN
  // refuses empty dimensions.
  if (element_count(grad_output.shape) == 0 || element_count(operand.shape) == 0) {
    std::memset(out, 0,
                static_cast<size_t>(element_count(out_shape)) *
                    static_cast<size_t>(dtype_size(grad_output.dtype)));
    return;
  }
  switch (grad_output.dtype) {
    case DType::Float32:
      if (for_input ? input_gradient_winograd(grad_output, operand, g, parameters.channels_last, out)
                    : weight_gradient_winograd(grad_output, operand, g, out))
        return;
      try {
        return gradient_onednn(gradient, grad_output, operand, g,
                               for_input && parameters.channels_last, out);
      } catch (const dnnl::error& error) {
        fail(gradient, ErrorKind::Internal, std::string("oneDNN failed: ") + error.what());
      }
    case DType::Float64:
      if (for_input && parameters.channels_last)  // channels_last.cpp makes float32 ones only
        fail(gradient, ErrorKind::Internal, "a channels-last float64 gradient");
      if (for_input)
        return detail::convolution_backward_input_float64(g, grad_output, operand,
                                                          static_cast<double*>(out));
      return detail::convolution_backward_weight_float64(g, grad_output, operand,
                                                         static_cast<double*>(out));
    default:
      fail(gradient, ErrorKind::Unsupported,
           "dtype " + std::string(dtype_name(grad_output.dtype)) +
               " is not supported (use float32 or float64)");
  }
}

}  // namespace

void convolution_backward_input(const StridedOperand& grad_output, const StridedOperand& weight,
                                const ConvolutionParameters& parameters, void* out,
                                const std::vector<int64_t>& out_shape) {
  compute_gradient(Gradient::Input, grad_output, weight, parameters, out, out_shape);
}

void convolution_backward_weight(const StridedOperand& grad_output, const StridedOperand& input,
                                 const ConvolutionParameters& parameters, void* out,
                                 const std::vector<int64_t>& out_shape) {
  compute_gradient(Gradient::Weight, grad_output, input, parameters, out, out_shape);
}

}  // namespace kiln::externs
