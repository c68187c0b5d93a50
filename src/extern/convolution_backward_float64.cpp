#include "extern/convolution_backward_float64.h"

#include <cblas.h>

#include <limits>
#include <string>
#include <vector>

#include "extern/blas_kernels.h"
#include "ir/shape.h"
#include "kiln/error.h"

namespace kiln::externs::detail {
namespace {

// Any rank brought to three spatial dimensions by unit ones in front (size 1, stride 1, no
// padding), so that one set of loops serves 1-d, 2-d and 3-d convolutions.
struct Spatial3 {
  int64_t input[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, output[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};

  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t positions() const { return output[0] * output[1] * output[2]; }
  int64_t input_positions() const { return input[0] * input[1] * input[2]; }
};

Spatial3 spatial3(const ir::ConvolutionGeometry& g) {
  Spatial3 s;
  const size_t skip = 3 - g.spatial_rank();
  for (size_t d = 0; d < g.spatial_rank(); ++d) {
    s.input[skip + d] = g.input_size[d];
    s.kernel[skip + d] = g.kernel_size[d];
    s.output[skip + d] = g.output_size[d];
    s.stride[skip + d] = g.strides[d];
    s.padding[skip + d] = g.padding[d];
    s.dilation[skip + d] = g.dilation[d];
  }
  return s;
}

// The three spatial element strides of an (N, C, *spatial) operand, unit dimensions in front.
void spatial_strides(const StridedOperand& operand, int64_t strides[3]) {
  const size_t rank = operand.shape.size() - 2, skip = 3 - rank;
  for (size_t d = 0; d < 3; ++d) strides[d] = d < skip ? 0 : operand.strides[2 + d - skip];
}

constexpr int64_t kPadding = std::numeric_limits<int64_t>::min();

// For tap t and output position p (im2col order: row t, column p), the element offset of the
// input position it reads, through `strides`; kPadding where it reads the zero padding.
std::vector<int64_t> window_offsets(const Spatial3& s, const int64_t strides[3]) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(s.taps() * s.positions()));
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
              offsets.push_back(row_inside && ix >= 0 && ix < s.input[2]
                                    ? iz * strides[0] + iy * strides[1] + ix * strides[2]
                                    : kPadding);
            }
          }
        }
  return offsets;
}

// The operand's elements in row-major order: its own memory when it is laid out so already,
// else a copy kept in `copy`.
const double* row_major(const StridedOperand& operand, std::vector<double>& copy) {
  std::vector<int64_t> contiguous = ir::contiguous_strides(ir::from_ints(operand.shape));
  bool plain = true;
  int64_t count = 1;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    plain = plain && (operand.shape[d] == 1 || operand.strides[d] == contiguous[d]);
    count *= operand.shape[d];
  }
  const double* source = static_cast<const double*>(operand.data);
  if (plain) return source;
  copy.resize(static_cast<size_t>(count));
  std::vector<int64_t> index(operand.shape.size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * operand.strides[d];
    copy[static_cast<size_t>(k)] = source[offset];
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < operand.shape[d]) break;
      index[d] = 0;
    }
  }
  return copy.data();
}

struct Sizes {
  int64_t group_in, group_out, taps, positions, depth;
};

// The matrix sizes of one group's products; Error(Unsupported) when one does not fit BLAS's int.
Sizes matrix_sizes(const ir::ConvolutionGeometry& g, const Spatial3& s, const char* op) {
  Sizes sizes{g.in_channels / g.groups, g.out_channels / g.groups, s.taps(), s.positions(), 0};
  sizes.depth = sizes.group_in * sizes.taps;
  const int64_t limit = std::numeric_limits<int>::max();
  if (sizes.group_out > limit || sizes.positions > limit || sizes.depth > limit)
    throw Error(ErrorKind::Unsupported, std::string("kiln: ") + op +
                                            ": a float64 problem this large does not fit "
                                            "OpenBLAS's int sizes");
  return sizes;
}

}  // namespace

void convolution_backward_input_float64(const ir::ConvolutionGeometry& g,
                                        const StridedOperand& grad_output,
                                        const StridedOperand& weight, double* out) {
  select_blas_kernels();
  const Spatial3 s = spatial3(g);
  const Sizes m = matrix_sizes(g, s, "convolution_backward_input");
  std::vector<double> gradient_copy, weight_copy;
  const double* gradient = row_major(grad_output, gradient_copy);  // (N, O, positions)
  const double* weights = row_major(weight, weight_copy);          // (O, depth)
  const int64_t unit[3] = {s.input[1] * s.input[2], s.input[2], 1};
  const std::vector<int64_t> offsets = window_offsets(s, unit);  // into a row-major image
  const int64_t image_size = s.input_positions();
  std::fill(out, out + g.batch * g.in_channels * image_size, 0.0);
  std::vector<double> columns(static_cast<size_t>(m.depth * m.positions));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(m.depth), int(m.positions),
                  int(m.group_out), 1.0, weights + group * m.group_out * m.depth, int(m.depth),
                  gradient + (n * g.out_channels + group * m.group_out) * m.positions,
                  int(m.positions), 0.0, columns.data(), int(m.positions));
      double* image = out + (n * g.in_channels + group * m.group_in) * image_size;
      for (int64_t c = 0; c < m.group_in; ++c)
        for (int64_t t = 0; t < m.taps; ++t) {
          const double* row = columns.data() + (c * m.taps + t) * m.positions;
          const int64_t* at = offsets.data() + t * m.positions;
          double* channel = image + c * image_size;
          for (int64_t p = 0; p < m.positions; ++p)
            if (at[p] != kPadding) channel[at[p]] += row[p];
        }
    }
}

void convolution_backward_weight_float64(const ir::ConvolutionGeometry& g,
                                         const StridedOperand& grad_output,
                                         const StridedOperand& input, double* out) {
  select_blas_kernels();
  const Spatial3 s = spatial3(g);
  const Sizes m = matrix_sizes(g, s, "convolution_backward_weight");
  std::vector<double> gradient_copy;
  const double* gradient = row_major(grad_output, gradient_copy);  // (N, O, positions)
  int64_t strides[3];
  spatial_strides(input, strides);
  const std::vector<int64_t> offsets = window_offsets(s, strides);  // into the input as it lies
  const double* in = static_cast<const double*>(input.data);
  std::vector<double> columns(static_cast<size_t>(m.depth * m.positions));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group) {
      double* column = columns.data();
      for (int64_t c = 0; c < m.group_in; ++c) {
        const double* image =
            in + n * input.strides[0] + (group * m.group_in + c) * input.strides[1];
        for (int64_t k = 0; k < m.taps * m.positions; ++k)
          *column++ = offsets[static_cast<size_t>(k)] != kPadding
                          ? image[offsets[static_cast<size_t>(k)]]
                          : 0.0;
      }
      // The first image writes the group's gradient, the others add to it.
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m.group_out), int(m.depth),
                  int(m.positions), 1.0,
                  gradient + (n * g.out_channels + group * m.group_out) * m.positions,
                  int(m.positions), columns.data(), int(m.positions), n == 0 ? 0.0 : 1.0,
                  out + group * m.group_out * m.depth, int(m.depth));
    }
}

}  // namespace kiln::externs::detail
