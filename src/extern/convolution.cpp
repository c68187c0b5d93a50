#include "extern/convolution.h"

#include <cblas.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "extern/blas_kernels.h"
#include "extern/onednn_memory.h"
#include "extern/prepared_weights.h"
#include "extern/winograd_convolution.h"
#include "ir/shape.h"
#include "kiln/error.h"

namespace kiln::externs {
namespace {

using dnnl::memory;
using ir::ConvolutionGeometry;

[[noreturn]] void fail(ErrorKind kind, const std::string& message) {
  throw Error(kind, "kiln: convolution: " + message);
}

// ---- plain loops: float64, and problems with a zero-sized dimension -------------------------

// Any rank is brought to three spatial dimensions by unit ones (size 1, stride 1, no padding),
// so that one triple loop serves 1-d, 2-d and 3-d convolutions.
struct Spatial3 {
  int64_t input[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, output[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  int64_t input_strides[3] = {0, 0, 0}, weight_strides[3] = {0, 0, 0};
};

Spatial3 spatial3(const ConvolutionGeometry& g, const StridedOperand& input,
                  const StridedOperand& weight) {
  Spatial3 s;
  const size_t skip = 3 - g.spatial_rank();
  for (size_t d = 0; d < g.spatial_rank(); ++d) {
    s.input[skip + d] = g.input_size[d];
    s.kernel[skip + d] = g.kernel_size[d];
    s.output[skip + d] = g.output_size[d];
    s.stride[skip + d] = g.strides[d];
    s.padding[skip + d] = g.padding[d];
    s.dilation[skip + d] = g.dilation[d];
    s.input_strides[skip + d] = input.strides[2 + d];
    s.weight_strides[skip + d] = weight.strides[2 + d];
  }
  return s;
}

// The direct definition, accumulated in double: what a problem with an empty dimension gets
// (oneDNN refuses those), and float64 problems too large for BLAS's int sizes.
template <class T>
void convolution_loops(const ConvolutionGeometry& g, const StridedOperand& input,
                       const StridedOperand& weight, const std::optional<StridedOperand>& bias,
                       T* out) {
  const Spatial3 s = spatial3(g, input, weight);
  const T* in = static_cast<const T*>(input.data);
  const T* w = static_cast<const T*>(weight.data);
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t o = 0; o < g.out_channels; ++o) {
      const double start =
          bias ? double(static_cast<const T*>(bias->data)[o * bias->strides[0]]) : 0.0;
      for (int64_t z = 0; z < s.output[0]; ++z)
        for (int64_t y = 0; y < s.output[1]; ++y)
          for (int64_t x = 0; x < s.output[2]; ++x) {
            double sum = start;
            for (int64_t c = 0; c < group_in; ++c) {
              const int64_t channel = (o / group_out) * group_in + c;
              const T* in_base = in + n * input.strides[0] + channel * input.strides[1];
              const T* w_base = w + o * weight.strides[0] + c * weight.strides[1];
              for (int64_t kz = 0; kz < s.kernel[0]; ++kz) {
                int64_t iz = z * s.stride[0] - s.padding[0] + kz * s.dilation[0];
                if (iz < 0 || iz >= s.input[0]) continue;
                for (int64_t ky = 0; ky < s.kernel[1]; ++ky) {
                  int64_t iy = y * s.stride[1] - s.padding[1] + ky * s.dilation[1];
                  if (iy < 0 || iy >= s.input[1]) continue;
                  for (int64_t kx = 0; kx < s.kernel[2]; ++kx) {
                    int64_t ix = x * s.stride[2] - s.padding[2] + kx * s.dilation[2];
                    if (ix < 0 || ix >= s.input[2]) continue;
                    sum += double(in_base[iz * s.input_strides[0] + iy * s.input_strides[1] +
                                          ix * s.input_strides[2]]) *
                           double(w_base[kz * s.weight_strides[0] + ky * s.weight_strides[1] +
                                         kx * s.weight_strides[2]]);
                  }
                }
              }
            }
            *out++ = static_cast<T>(sum);
          }
    }
}

// float64, which oneDNN's convolution lacks, as matrix products on OpenBLAS (im2col): per image
// and group, the input windows are unrolled into a (C / G * kernel, output positions) matrix,
// which the group's (O / G, C / G * kernel) weights multiply. Returns false, writing nothing,
// when a size does not fit BLAS's int.
bool convolution_float64_gemm(const ConvolutionGeometry& g, const StridedOperand& input,
                              const StridedOperand& weight,
                              const std::optional<StridedOperand>& bias, double* out) {
  select_blas_kernels();
  const Spatial3 s = spatial3(g, input, weight);
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  const int64_t taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int64_t positions = s.output[0] * s.output[1] * s.output[2];
  const int64_t depth = group_in * taps;  // the products' inner dimension
  const int64_t int_limit = std::numeric_limits<int>::max();
  if (group_out > int_limit || positions > int_limit || depth > int_limit) return false;
  // The weights row-major as (O, C / G * kernel): BLAS needs one leading dimension.
  std::vector<double> weights(static_cast<size_t>(g.out_channels * depth));
  const double* w = static_cast<const double*>(weight.data);
  double* packed = weights.data();
  for (int64_t o = 0; o < g.out_channels; ++o)
    for (int64_t c = 0; c < group_in; ++c)
      for (int64_t kz = 0; kz < s.kernel[0]; ++kz)
        for (int64_t ky = 0; ky < s.kernel[1]; ++ky)
          for (int64_t kx = 0; kx < s.kernel[2]; ++kx)
            *packed++ = w[o * weight.strides[0] + c * weight.strides[1] + kz * s.weight_strides[0] +
                          ky * s.weight_strides[1] + kx * s.weight_strides[2]];
  std::vector<double> columns(static_cast<size_t>(depth * positions));
  const double* in = static_cast<const double*>(input.data);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      double* column = columns.data();
      for (int64_t c = 0; c < group_in; ++c) {
        const double* base = in + n * input.strides[0] + (group * group_in + c) * input.strides[1];
        for (int64_t kz = 0; kz < s.kernel[0]; ++kz)
          for (int64_t ky = 0; ky < s.kernel[1]; ++ky)
            for (int64_t kx = 0; kx < s.kernel[2]; ++kx)
              for (int64_t z = 0; z < s.output[0]; ++z) {
                const int64_t iz = z * s.stride[0] - s.padding[0] + kz * s.dilation[0];
                for (int64_t y = 0; y < s.output[1]; ++y) {
                  const int64_t iy = y * s.stride[1] - s.padding[1] + ky * s.dilation[1];
                  const bool row_inside = iz >= 0 && iz < s.input[0] && iy >= 0 && iy < s.input[1];
                  for (int64_t x = 0; x < s.output[2]; ++x) {
                    const int64_t ix = x * s.stride[2] - s.padding[2] + kx * s.dilation[2];
                    *column++ = row_inside && ix >= 0 && ix < s.input[2]
                                    ? base[iz * s.input_strides[0] + iy * s.input_strides[1] +
                                           ix * s.input_strides[2]]
                                    : 0.0;
                  }
                }
              }
      }
      double* result = out + (n * g.out_channels + group * group_out) * positions;
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(group_out), int(positions),
                  int(depth), 1.0, weights.data() + group * group_out * depth, int(depth),
                  columns.data(), int(positions), 0.0, result, int(positions));
      if (!bias) continue;
      for (int64_t o = 0; o < group_out; ++o) {
        const double value =
            static_cast<const double*>(bias->data)[(group * group_out + o) * bias->strides[0]];
        for (int64_t p = 0; p < positions; ++p) result[o * positions + p] += value;
      }
    }
  return true;
}

// ---- oneDNN ---------------------------------------------------------------------------------

// One algorithm's primitive for a convolution problem, with the reorders between the caller's
// layouts and the ones it computes in, and buffers owned here for those.
struct Algorithm {
  dnnl::convolution_forward convolution;
  memory::desc library_weight_desc;
  std::optional<dnnl::reorder> input_reorder, weight_reorder, bias_reorder, output_reorder;
  memory input_memory, weight_memory, bias_memory, output_memory;
};

// One convolution problem's primitives. oneDNN computes in the layouts it prefers
// (format_tag::any: channels-last activations as the caller's are, blocked weights); reorders
// move the caller's strided operands in and the result out. `mutex` makes one call at a time
// use them.
struct Primitives {
  std::mutex mutex;
  dnnl::stream stream;
  memory::desc input_desc, weight_desc, bias_desc, output_desc;  // the caller's layouts
  Algorithm direct;
  // Winograd's F(4x4, 3x3) for the problems it suits (winograd_suits), each form made on its
  // first call (a problem that never runs one keeps no buffers for it). `winograd_kept` reads
  // weights transformed once and kept (weights that repeat: inference), the fastest form, but
  // its transform costs more than a convolution (a 512x512 filter: 47 ms). `winograd_changing`
  // is oneDNN's training form, whose kernels transform the weights on every call: worth it where
  // the activations outweigh the weights (at least 8 output positions per input channel:
  // resnet18's layers 1-3 at batch 16, 1.3-1.4x faster than direct with the reorders; its
  // layer 4, 0.9x, is not).
  // Where oneDNN has no Winograd kernels (winograd_available), kiln's own run these forms
  // (extern/winograd_convolution.h): `changing_transform` holds the transform of weights that
  // change, `scratch` the threads' blocks.
  bool winograd_suits = false, winograd_changing_suits = false;
  bool kept_tried = false, changing_tried = false;
  std::optional<Algorithm> winograd_kept, winograd_changing;
  PreparedWeights weights;  // forms: 0 the direct algorithm's, 1 Winograd's
  std::vector<float> changing_transform, scratch;
};

using Cache = PrimitiveCache<Primitives>;

struct {
  std::atomic<int64_t> winograd_calls{0}, kept_weight_hits{0}, winograd_gradients{0};
} counters;

std::vector<int64_t> problem_key(const StridedOperand& input, const StridedOperand& weight,
                                 const std::optional<StridedOperand>& bias,
                                 const ConvolutionGeometry& g,
                                 const std::vector<int64_t>& out_strides) {
  std::vector<int64_t> key{static_cast<int64_t>(g.spatial_rank()), g.groups, bias ? 1 : 0};
  for (const std::vector<int64_t>* list :
       {&input.shape, &input.strides, &weight.shape, &weight.strides, &g.strides, &g.padding,
        &g.dilation, &out_strides})
    key.insert(key.end(), list->begin(), list->end());
  if (bias) key.push_back(bias->strides[0]);
  return key;
}

Algorithm create_algorithm(const dnnl::engine& engine, const Primitives& p,
                           dnnl::prop_kind forward, dnnl::algorithm algorithm, bool bias,
                           const ConvolutionGeometry& g) {
  const auto f32 = memory::data_type::f32;
  const std::vector<int64_t> output_shape = g.output_shape();
  memory::desc any_input(p.input_desc.dims(), f32, memory::format_tag::any);
  memory::desc any_weight(p.weight_desc.dims(), f32, memory::format_tag::any);
  memory::desc any_output(to_dims(output_shape), f32, memory::format_tag::any);
  memory::desc plain_bias({g.out_channels}, f32, memory::format_tag::a);
  memory::dims dilates;  // oneDNN counts the gaps between taps: torch's dilation - 1
  for (int64_t dilation : g.dilation) dilates.push_back(dilation - 1);
  dnnl::convolution_forward::desc desc =
      bias ? dnnl::convolution_forward::desc(forward, algorithm, any_input, any_weight,
                                             plain_bias, any_output, to_dims(g.strides), dilates,
                                             to_dims(g.padding), to_dims(g.padding))
           : dnnl::convolution_forward::desc(forward, algorithm, any_input, any_weight,
                                             any_output, to_dims(g.strides), dilates,
                                             to_dims(g.padding), to_dims(g.padding));
  dnnl::convolution_forward::primitive_desc primitive(desc, engine);
  Algorithm a;
  a.convolution = dnnl::convolution_forward(primitive);
  a.library_weight_desc = primitive.weights_desc();
  plan_reorder(engine, p.input_desc, primitive.src_desc(), primitive.src_desc(), a.input_reorder,
               a.input_memory);
  plan_reorder(engine, p.weight_desc, primitive.weights_desc(), primitive.weights_desc(),
               a.weight_reorder, a.weight_memory);
  if (bias)
    plan_reorder(engine, p.bias_desc, primitive.bias_desc(), primitive.bias_desc(),
                 a.bias_reorder, a.bias_memory);
  plan_reorder(engine, primitive.dst_desc(), p.output_desc, primitive.dst_desc(),
               a.output_reorder, a.output_memory);
  return a;
}

std::shared_ptr<Primitives> create_primitives(dnnl::engine& engine, const StridedOperand& input,
                                              const StridedOperand& weight,
                                              const std::optional<StridedOperand>& bias,
                                              const ConvolutionGeometry& g,
                                              const std::vector<int64_t>& out_strides) {
  auto p = std::make_shared<Primitives>();
  p->stream = dnnl::stream(engine);
  const auto f32 = memory::data_type::f32;
  p->input_desc = plain_desc(input);
  p->weight_desc = grouped_weight_desc(plain_desc(weight), weight.shape, weight.strides, g.groups);
  p->output_desc = memory::desc(to_dims(g.output_shape()), f32, to_dims(out_strides));
  if (bias) p->bias_desc = memory::desc({g.out_channels}, f32, {bias->strides[0]});
  p->direct = create_algorithm(engine, *p, dnnl::prop_kind::forward_inference,
                               dnnl::algorithm::convolution_direct, bool(bias), g);
  p->winograd_suits = winograd_suits(g);
  p->winograd_changing_suits = winograd_changing_suits(g);
  return p;
}

// A Winograd form of the problem (`forward`: inference, the kept form; training, the changing
// one), made by the first call that asks; nullptr when oneDNN has no such kernel here.
Algorithm* winograd_form(Primitives& p, std::optional<Algorithm>& form, bool& tried,
                         dnnl::prop_kind forward, bool bias, const ConvolutionGeometry& g) {
  if (!form && !tried) {
    tried = true;
    try {
      form = create_algorithm(Cache::instance().engine(), p, forward,
                              dnnl::algorithm::convolution_winograd, bias, g);
      if (forward == dnnl::prop_kind::forward_inference)
        form->weight_memory = memory();  // the kept form reads kept weights only
    } catch (const dnnl::error&) {  // no implementation for this CPU or problem
    }
  }
  return form ? &*form : nullptr;
}

std::shared_ptr<Primitives> find_primitives(const StridedOperand& input,
                                            const StridedOperand& weight,
                                            const std::optional<StridedOperand>& bias,
                                            const ConvolutionGeometry& g,
                                            const std::vector<int64_t>& out_strides) {
  return Cache::instance().find(problem_key(input, weight, bias, g, out_strides),
                                [&](dnnl::engine& engine) {
                                  return create_primitives(engine, input, weight, bias, g,
                                                           out_strides);
                                });
}

// The bytes from an operand's first element to its last (strides are positive here), or 0
// when they are far more than its elements (a sparse view: not worth comparing).
size_t operand_span(const StridedOperand& operand) {
  int64_t last = 0, count = 1;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    last += (operand.shape[d] - 1) * operand.strides[d];
    count *= operand.shape[d];
  }
  return last + 1 > 2 * count ? 0 : static_cast<size_t>(last + 1) * sizeof(float);
}

// The weights as `algorithm` reads them: the caller's, or prepared in its layout: kept in
// `entry` when there is one (reordered only when its contents changed), else reordered now.
// nullopt when `algorithm` needs a kept form and the budget has no room for it.
std::optional<memory> weights_for(Primitives& p, Algorithm& algorithm, size_t form,
                                  PreparedWeights::Entry* entry, memory& user) {
  if (!algorithm.weight_reorder) return user;
  if (entry != nullptr && !entry->forms[form] &&
      p.weights.allocate(*entry, form, algorithm.library_weight_desc, Cache::instance().engine()))
    algorithm.weight_reorder->execute(p.stream, user, entry->forms[form]);
  if (entry != nullptr && entry->forms[form]) return entry->forms[form];
  if (form != 0) return std::nullopt;
  algorithm.weight_reorder->execute(p.stream, user, algorithm.weight_memory);
  return algorithm.weight_memory;
}

// kiln's Winograd (extern/winograd_convolution.h) for a problem that suits it where oneDNN
// has none: the weights' transform kept in `entry` when they repeat, made afresh where they
// change and the activations outweigh them; false (nothing written): the direct algorithm's.
bool kiln_winograd(Primitives& p, PreparedWeights::Entry* entry, const StridedOperand& input,
                   const StridedOperand& weight, const std::optional<StridedOperand>& bias,
                   const ConvolutionGeometry& g, void* out, const std::vector<int64_t>& out_strides) {
  const float* transformed = nullptr;
  if (entry != nullptr && entry->repeated) {
    const memory::desc desc({winograd_weight_size(g)}, memory::data_type::f32,
                            memory::format_tag::a);
    if (!entry->forms[1] && p.weights.allocate(*entry, 1, desc, Cache::instance().engine()))
      winograd_transform_weights(weight, static_cast<float*>(entry->forms[1].get_data_handle()));
    if (entry->forms[1]) {
      transformed = static_cast<const float*>(entry->forms[1].get_data_handle());
      p.weights.release(*entry, 0);
    }
  }
  if (transformed == nullptr) {
    if (!p.winograd_changing_suits) return false;
    p.changing_transform.resize(static_cast<size_t>(winograd_weight_size(g)));
    winograd_transform_weights(weight, p.changing_transform.data());
    transformed = p.changing_transform.data();
  }
  winograd_convolution(g, input, transformed,
                       bias ? static_cast<const float*>(bias->data) : nullptr,
                       bias ? bias->strides[0] : 0, static_cast<float*>(out), out_strides,
                       p.scratch);
  counters.winograd_calls++;
  if (entry != nullptr && entry->repeated) counters.kept_weight_hits++;
  return true;
}

void convolution_onednn(StridedOperand input, StridedOperand weight,
                        std::optional<StridedOperand> bias, const ConvolutionGeometry& g,
                        void* out, const std::vector<int64_t>& out_strides) {
  // Copies that outlive the call below, for operands oneDNN cannot describe.
  std::vector<float> input_copy, weight_copy, bias_copy;
  const StridedOperand described = describable_operand(weight, weight_copy);
  const bool weight_in_place = described.data == weight.data;  // a copy's address repeats
  weight = described;
  input = describable_operand(input, input_copy);
  if (bias) bias = describable_operand(*bias, bias_copy);
  std::shared_ptr<Primitives> p = find_primitives(input, weight, bias, g, out_strides);
  const dnnl::engine& engine = Cache::instance().engine();
  std::lock_guard<std::mutex> lock(p->mutex);
  // The caller's memory, wrapped (no copy); oneDNN does not write its inputs.
  memory input_user(p->input_desc, engine, const_cast<void*>(input.data));
  memory weight_user(p->weight_desc, engine, const_cast<void*>(weight.data));
  memory output_user(p->output_desc, engine, out);
  const size_t weight_bytes = weight_in_place ? operand_span(weight) : 0;
  PreparedWeights::Entry* entry =
      weight_bytes > 0 && (p->direct.weight_reorder || p->winograd_suits)
          ? p->weights.find(weight.data, weight_bytes)
          : nullptr;
  if (p->winograd_suits && !winograd_available() &&
      kiln_winograd(*p, entry, input, weight, bias, g, out, out_strides))
    return;
  Algorithm* algorithm = &p->direct;
  std::optional<memory> weights;
  Algorithm* kept = p->winograd_suits && entry != nullptr && entry->repeated
                        ? winograd_form(*p, p->winograd_kept, p->kept_tried,
                                        dnnl::prop_kind::forward_inference, bool(bias), g)
                        : nullptr;
  if (kept != nullptr && (weights = weights_for(*p, *kept, 1, entry, weight_user))) {
    algorithm = kept;
    p->weights.release(*entry, 0);  // the direct form of an earlier call is not needed again
  } else if (Algorithm* changing =  // its kernels transform the weights: nothing kept
                 p->winograd_changing_suits
                     ? winograd_form(*p, p->winograd_changing, p->changing_tried,
                                     dnnl::prop_kind::forward_training, bool(bias), g)
                     : nullptr) {
    algorithm = changing;
    weights = weights_for(*p, *changing, 0, nullptr, weight_user);
  } else {
    weights = weights_for(*p, p->direct, 0, entry, weight_user);
  }
  if (algorithm != &p->direct) counters.winograd_calls++;
  if (entry != nullptr && entry->repeated) counters.kept_weight_hits++;
  auto staged = [&](std::optional<dnnl::reorder>& reorder, memory& user, memory& buffer) {
    if (!reorder) return user;
    reorder->execute(p->stream, user, buffer);
    return buffer;
  };
  Algorithm& a = *algorithm;
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_SRC, staged(a.input_reorder, input_user, a.input_memory)},
      {DNNL_ARG_WEIGHTS, *weights},
      {DNNL_ARG_DST, a.output_reorder ? a.output_memory : output_user}};
  if (bias) {
    memory bias_user(p->bias_desc, engine, const_cast<void*>(bias->data));
    arguments[DNNL_ARG_BIAS] = staged(a.bias_reorder, bias_user, a.bias_memory);
  }
  a.convolution.execute(p->stream, arguments);
  if (a.output_reorder) a.output_reorder->execute(p->stream, a.output_memory, output_user);
  p->stream.wait();
}

// A row-major array's elements stored at `strides` (elements) from `out`.
void copy_to_strided(const char* source, int64_t element_size, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& strides, char* out) {
  std::vector<int64_t> index(shape.size(), 0);
  const int64_t count = ir::element_count(ir::from_ints(shape));
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    std::memcpy(out + offset * element_size, source + k * element_size,
                static_cast<size_t>(element_size));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

bool has_zero(const std::vector<int64_t>& sizes) {
  for (int64_t size : sizes)
    if (size == 0) return true;
  return false;
}

}  // namespace

// Measured on 2 AVX-512 cores (resnet18's 3x3 layers, batch 1-16, reorders included): the
// forward 1.4-2x faster from 64 channels and 196 output positions on, the gradients (batch 16)
// 1.5-2.2x; a few input channels (an image's 3) make it several times slower.
bool winograd_suits(const ConvolutionGeometry& g) {
  if (g.spatial_rank() != 2 || g.groups != 1) return false;
  for (size_t d = 0; d < 2; ++d)
    if (g.kernel_size[d] != 3 || g.strides[d] != 1 || g.dilation[d] != 1 || g.padding[d] > 1)
      return false;
  const int64_t positions = g.batch * g.output_size[0] * g.output_size[1];
  return g.in_channels >= 64 && g.out_channels >= 64 && positions >= 196;
}

bool winograd_changing_suits(const ConvolutionGeometry& g) {
  return winograd_suits(g) && g.batch * g.output_size[0] * g.output_size[1] >= 8 * g.in_channels;
}

ConvolutionCounters convolution_counters() {
  return {counters.winograd_calls.load(), counters.kept_weight_hits.load(),
          counters.winograd_gradients.load()};
}

void count_winograd_gradient() { counters.winograd_gradients++; }

bool winograd_available() {
  static const bool available = [] {
    const memory::desc activations({1, 64, 14, 14}, memory::data_type::f32,
                                   memory::format_tag::any);
    const memory::desc weights({64, 64, 3, 3}, memory::data_type::f32, memory::format_tag::any);
    try {
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, activations,
          weights, activations, {1, 1}, {0, 0}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc(desc, Cache::instance().engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

ConvolutionParameters convolution_parameters(const std::vector<int64_t>& packed,
                                             size_t spatial_rank) {
  if (packed.size() != 3 * spatial_rank + 2)
    fail(ErrorKind::Internal, "the call carries " + std::to_string(packed.size()) +
                                  " parameters for " + std::to_string(spatial_rank) +
                                  " spatial dimensions");
  ConvolutionParameters parameters;
  auto part = [&](size_t k) {
    return std::vector<int64_t>(packed.begin() + static_cast<ptrdiff_t>(k * spatial_rank),
                                packed.begin() + static_cast<ptrdiff_t>((k + 1) * spatial_rank));
  };
  parameters.strides = part(0);
  parameters.padding = part(1);
  parameters.dilation = part(2);
  parameters.groups = packed[3 * spatial_rank];
  parameters.channels_last = packed.back() != 0;  // scheduler.cpp's layout value
  parameters.filters_last = packed.back() == 2;
  return parameters;
}

void convolution(const StridedOperand& input, const StridedOperand& weight,
                 const std::optional<StridedOperand>& bias, const ConvolutionParameters& parameters,
                 void* out, const std::vector<int64_t>& out_shape,
                 std::vector<int64_t> out_strides) {
  ConvolutionGeometry g;
  std::optional<std::vector<int64_t>> bias_shape;
  if (bias) bias_shape = bias->shape;
  std::string problem =
      ir::convolution_geometry(input.shape, weight.shape, bias_shape, parameters.strides,
                               parameters.padding, parameters.dilation, parameters.groups, g);
  if (!problem.empty()) fail(ErrorKind::Internal, problem);
  if (g.output_shape() != out_shape)
    fail(ErrorKind::Internal, "the result buffer has another shape");
  for (const StridedOperand* operand : {&input, &weight, bias ? &*bias : nullptr})
    if (operand && operand->dtype != input.dtype)
      fail(ErrorKind::Internal, "operands of different dtypes");
  const bool empty = has_zero(input.shape) || has_zero(weight.shape);
  const std::vector<int64_t> row_major = ir::contiguous_strides(ir::from_ints(out_shape));
  if (out_strides.empty()) out_strides = row_major;
  if (out_strides.size() != out_shape.size())
    fail(ErrorKind::Internal, "the result's strides do not match its shape");
  if (input.dtype == DType::Float32 && !empty) {
    try {
      return convolution_onednn(input, weight, bias, g, out, out_strides);
    } catch (const dnnl::error& error) {
      fail(ErrorKind::Internal, std::string("oneDNN failed: ") + error.what());
    }
  }
  // The paths below write row-major: another layout gets a row-major result copied into it.
  std::vector<char> staging;
  void* result = out;
  if (out_strides != row_major) {
    staging.resize(static_cast<size_t>(ir::element_count(ir::from_ints(out_shape)) *
                                       dtype_size(input.dtype)));
    result = staging.data();
  }
  switch (input.dtype) {
    case DType::Float32:
      convolution_loops(g, input, weight, bias, static_cast<float*>(result));
      break;
    case DType::Float64:
      if (empty || !convolution_float64_gemm(g, input, weight, bias, static_cast<double*>(result)))
        convolution_loops(g, input, weight, bias, static_cast<double*>(result));
      break;
    default:
      fail(ErrorKind::Unsupported, "dtype " + std::string(dtype_name(input.dtype)) +
                                       " is not supported (use float32 or float64)");
  }
  if (result != out)
    copy_to_strided(staging.data(), dtype_size(input.dtype), out_shape, out_strides,
                    static_cast<char*>(out));
}

}  // namespace kiln::externs
