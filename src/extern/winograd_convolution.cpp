#include "extern/winograd_convolution.h"

#include <omp.h>

#include <algorithm>

namespace kiln::externs {
namespace {

// Eight channels at a time (GCC's vector extensions: one AVX register; two SSE ones on CPUs
// without AVX). kiln is built for any x86-64: the loops are compiled for AVX-512, AVX2 and the
// baseline, and the CPU picks (target_clones).
typedef float Lanes __attribute__((vector_size(32), aligned(4)));
// How eight floats in memory are read and written: one unaligned vector load or store (a
// memcpy into a Lanes went through the stack in halves, and each read of it waited).
typedef float LanesInMemory __attribute__((vector_size(32), aligned(4), may_alias));
constexpr int64_t kLanes = 8;
#define KILN_WINOGRAD_TARGETS \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

// `count` (at most kLanes) values `stride` apart from `p`; zeros in the lanes past them.
__attribute__((always_inline)) inline Lanes load(const float* p, int64_t stride, int64_t count) {
  if (stride == 1 && count == kLanes) return *reinterpret_cast<const LanesInMemory*>(p);
  Lanes v = {};
  for (int64_t lane = 0; lane < count; ++lane) v[lane] = p[lane * stride];
  return v;
}

__attribute__((always_inline)) inline void store(float* p, int64_t stride, int64_t count,
                                                 Lanes v) {
  if (stride == 1 && count == kLanes) {
    *reinterpret_cast<LanesInMemory*>(p) = v;
    return;
  }
  for (int64_t lane = 0; lane < count; ++lane) p[lane * stride] = v[lane];
}

// The three transforms, each applied to the rows and then the columns of a tile: B^T d B of a
// 6x6 input tile d, G g G^T of a 3x3 filter g, A^T m A of the 6x6 product m (Lavin and Gray's
// matrices for F(4, 3), with the points 0, +-1, +-2). Each reads its values `in_step` apart
// and writes them `out_step` apart: a tile's row or column, in place on the stack.
__attribute__((always_inline)) inline void input_points(const Lanes* d, int64_t in_step,
                                                        Lanes* out, int64_t out_step) {
  const Lanes d0 = d[0], d1 = d[in_step], d2 = d[2 * in_step], d3 = d[3 * in_step];
  const Lanes d4 = d[4 * in_step], d5 = d[5 * in_step];
  out[0] = 4 * d0 - 5 * d2 + d4;
  out[out_step] = d3 + d4 - 4 * (d1 + d2);
  out[2 * out_step] = d4 - d3 + 4 * (d1 - d2);
  out[3 * out_step] = d4 - d2 + 2 * (d3 - d1);
  out[4 * out_step] = d4 - d2 - 2 * (d3 - d1);
  out[5 * out_step] = 4 * d1 - 5 * d3 + d5;
}

__attribute__((always_inline)) inline void filter_points(const Lanes* g, int64_t in_step,
                                                         Lanes* out, int64_t out_step) {
  const Lanes g0 = g[0], g1 = g[in_step], g2 = g[2 * in_step];
  out[0] = g0 * (1.0f / 4);
  out[out_step] = (g0 + g1 + g2) * (-1.0f / 6);
  out[2 * out_step] = (g0 - g1 + g2) * (-1.0f / 6);
  out[3 * out_step] = g0 * (1.0f / 24) + g1 * (1.0f / 12) + g2 * (1.0f / 6);
  out[4 * out_step] = g0 * (1.0f / 24) - g1 * (1.0f / 12) + g2 * (1.0f / 6);
  out[5 * out_step] = g2;
}

__attribute__((always_inline)) inline void output_points(const Lanes* m, int64_t in_step,
                                                         Lanes* out, int64_t out_step) {
  const Lanes sum12 = m[in_step] + m[2 * in_step], difference12 = m[in_step] - m[2 * in_step];
  const Lanes sum34 = m[3 * in_step] + m[4 * in_step];
  const Lanes difference34 = m[3 * in_step] - m[4 * in_step];
  out[0] = m[0] + sum12 + sum34;
  out[out_step] = difference12 + 2 * difference34;
  out[2 * out_step] = sum12 + 4 * sum34;
  out[3 * out_step] = difference12 + 8 * difference34 + m[5 * in_step];
}

// The weight gradient's two: A dy A^T of a 4x4 tile of the output's gradient dy (6x6), and
// G^T du G of the transformed filter's gradient du (3x3).
__attribute__((always_inline)) inline void gradient_points(const Lanes* y, int64_t in_step,
                                                           Lanes* out, int64_t out_step) {
  const Lanes y0 = y[0], y1 = y[in_step], y2 = y[2 * in_step], y3 = y[3 * in_step];
  const Lanes even = y0 + 4 * y2, odd = 2 * y1 + 8 * y3;
  out[0] = y0;
  out[out_step] = y0 + y1 + y2 + y3;
  out[2 * out_step] = y0 - y1 + y2 - y3;
  out[3 * out_step] = even + odd;
  out[4 * out_step] = even - odd;
  out[5 * out_step] = y3;
}

__attribute__((always_inline)) inline void filter_gradient_points(const Lanes* u,
                                                                  int64_t in_step, Lanes* out,
                                                                  int64_t out_step) {
  const Lanes sum12 = u[in_step] + u[2 * in_step], sum34 = u[3 * in_step] + u[4 * in_step];
  const Lanes difference = u[3 * in_step] - u[4 * in_step];
  out[0] = u[0] * (1.0f / 4) - sum12 * (1.0f / 6) + sum34 * (1.0f / 24);
  out[out_step] = (u[2 * in_step] - u[in_step]) * (1.0f / 6) + difference * (1.0f / 12);
  out[2 * out_step] = (sum34 - sum12) * (1.0f / 6) + u[5 * in_step];
}

// The transformed weights are packed as the products read them: per point, panels of kPanel
// output channels, each (C, kPanel) contiguous (the last panel padded with zeros). Read in
// place from (C, O) rows instead, a panel's rows lay O floats apart, and at 256 or 512 channels
// (1-2 KB apart) they fell into a few sets of the L1 cache and evicted one another.
constexpr int64_t kPanel = 2 * kLanes;

int64_t padded_outputs(int64_t O) { return (O + kPanel - 1) / kPanel * kPanel; }

// The problem in tiles: 4x4 output tiles, tile k of image n at (k / across, k % across).
struct Tiling {
  int64_t channels, outputs, height, width, out_height, out_width, pad_y, pad_x;
  int64_t across, per_image, tiles;
  int64_t in_strides[4], out_strides[4];
};

Tiling tiling(const ir::ConvolutionGeometry& g, const StridedOperand& input,
              const std::vector<int64_t>& out_strides) {
  Tiling t{};
  t.channels = g.in_channels;
  t.outputs = g.out_channels;
  t.height = g.input_size[0];
  t.width = g.input_size[1];
  t.out_height = g.output_size[0];
  t.out_width = g.output_size[1];
  t.pad_y = g.padding[0];
  t.pad_x = g.padding[1];
  t.across = (t.out_width + 3) / 4;
  t.per_image = t.across * ((t.out_height + 3) / 4);
  t.tiles = g.batch * t.per_image;
  for (int d = 0; d < 4; ++d) {
    t.in_strides[d] = input.strides[d];
    t.out_strides[d] = out_strides[d];
  }
  return t;
}

// Asks for the `size` x `size` pixels (`channels` floats each, contiguous) at (y0, x0) of the
// image at `image` (clipped to it) ahead of their use: a tile's pixels lie in 4-6 rows far
// apart, a pattern the hardware's prefetchers do not follow.
__attribute__((always_inline)) inline void prefetch_pixels(const float* image, int64_t y0,
                                                           int64_t x0, int64_t size,
                                                           int64_t height, int64_t width,
                                                           int64_t row_stride,
                                                           int64_t pixel_stride,
                                                           int64_t channels, bool for_writing) {
  for (int64_t y = std::max<int64_t>(y0, 0); y < std::min(y0 + size, height); ++y)
    for (int64_t x = std::max<int64_t>(x0, 0); x < std::min(x0 + size, width); ++x)
      for (int64_t c = 0; c < channels; c += 16) {  // a 64-byte line
        const float* line = image + y * row_stride + x * pixel_stride + c;
        if (for_writing)
          __builtin_prefetch(line, 1);
        else
          __builtin_prefetch(line, 0);
      }
}

// The transformed tiles [first, first + count) into `points`: 36 (count, C) matrices,
// `point_stride` floats apart.
KILN_WINOGRAD_TARGETS
void transform_inputs(const Tiling& t, const float* in, int64_t first, int64_t count,
                      float* points, int64_t point_stride) {
  const int64_t channel_stride = t.in_strides[1], C = t.channels;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t tile = first + k, n = tile / t.per_image, within = tile % t.per_image;
    const int64_t y0 = within / t.across * 4 - t.pad_y, x0 = within % t.across * 4 - t.pad_x;
    if (channel_stride == 1 && tile + 1 < t.tiles) {  // the next tile's pixels
      const int64_t next = (tile + 1) % t.per_image;
      prefetch_pixels(in + (tile + 1) / t.per_image * t.in_strides[0],
                      next / t.across * 4 - t.pad_y, next % t.across * 4 - t.pad_x, 6, t.height,
                      t.width, t.in_strides[2], t.in_strides[3], C, false);
    }
    const float* pixels[6][6];  // nullptr: padding
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const int64_t y = y0 + i, x = x0 + j;
        pixels[i][j] = y >= 0 && y < t.height && x >= 0 && x < t.width
                           ? in + n * t.in_strides[0] + y * t.in_strides[2] + x * t.in_strides[3]
                           : nullptr;
      }
    for (int64_t c = 0; c < C; c += kLanes) {
      const int64_t lanes = std::min(kLanes, C - c);
      Lanes tile[6][6], rows[6][6];  // d, then d B
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 6; ++j)
          tile[i][j] = pixels[i][j] ? load(pixels[i][j] + c * channel_stride, channel_stride, lanes)
                                    : Lanes{};
        input_points(tile[i], 1, rows[i], 1);
      }
      for (int64_t j = 0; j < 6; ++j) {
        Lanes column[6];  // B^T (d B)'s column j
        input_points(&rows[0][j], 6, column, 1);
        for (int64_t i = 0; i < 6; ++i)
          store(points + (i * 6 + j) * point_stride + k * C + c, 1, lanes, column[i]);
      }
    }
  }
}

// The products of tiles [first, first + count) (36 (count, O) matrices in `products`,
// `point_stride` floats apart) transformed back, plus the bias, into their 4x4 output tiles
// (cut at the image's edge).
KILN_WINOGRAD_TARGETS
void transform_outputs(const Tiling& t, const float* products, int64_t point_stride,
                       int64_t first, int64_t count, const float* bias, int64_t bias_stride,
                       float* out) {
  const int64_t channel_stride = t.out_strides[1], O = t.outputs;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t tile = first + k, n = tile / t.per_image, within = tile % t.per_image;
    const int64_t y0 = within / t.across * 4, x0 = within % t.across * 4;
    const int64_t rows_inside = std::min<int64_t>(4, t.out_height - y0);
    const int64_t columns = std::min<int64_t>(4, t.out_width - x0);
    float* corner = out + n * t.out_strides[0] + y0 * t.out_strides[2] + x0 * t.out_strides[3];
    if (channel_stride == 1 && tile + 1 < t.tiles) {  // the next tile's pixels
      const int64_t next = (tile + 1) % t.per_image;
      prefetch_pixels(out + (tile + 1) / t.per_image * t.out_strides[0], next / t.across * 4,
                      next % t.across * 4, 4, t.out_height, t.out_width, t.out_strides[2],
                      t.out_strides[3], O, true);
    }
    for (int64_t o = 0; o < O; o += kLanes) {
      const int64_t lanes = std::min(kLanes, O - o);
      Lanes tile[6][6], rows[6][4];  // m, then m A
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 6; ++j)
          tile[i][j] = load(products + (i * 6 + j) * point_stride + k * O + o, 1, lanes);
        output_points(tile[i], 1, rows[i], 1);
      }
      const Lanes offset = bias ? load(bias + o * bias_stride, bias_stride, lanes) : Lanes{};
      for (int64_t j = 0; j < columns; ++j) {
        Lanes column[4];  // A^T (m A)'s column j
        output_points(&rows[0][j], 4, column, 1);
        for (int64_t i = 0; i < rows_inside; ++i)
          store(corner + o * channel_stride + i * t.out_strides[2] + j * t.out_strides[3],
                channel_stride, lanes, column[i] + offset);
      }
    }
  }
}

// The output gradient's tiles [first, first + count) (4x4, zeros past the image's edge; `dy` at
// the tiling's out_strides) transformed into `points`: 36 matrices `point_stride` apart, each
// in panels of kPanel channels, (count, kPanel) contiguous, as gradient_product reads them.
KILN_WINOGRAD_TARGETS
void transform_gradients(const Tiling& t, const float* dy, int64_t first, int64_t count,
                         float* points, int64_t point_stride) {
  const int64_t channel_stride = t.out_strides[1], O = t.outputs, padded = padded_outputs(O);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t tile = first + k, n = tile / t.per_image, within = tile % t.per_image;
    const int64_t y0 = within / t.across * 4, x0 = within % t.across * 4;
    const int64_t rows_inside = std::min<int64_t>(4, t.out_height - y0);
    const int64_t columns = std::min<int64_t>(4, t.out_width - x0);
    const float* corner = dy + n * t.out_strides[0] + y0 * t.out_strides[2] + x0 * t.out_strides[3];
    for (int64_t o = 0; o < padded; o += kLanes) {
      const int64_t lanes = std::clamp<int64_t>(O - o, 0, kLanes);  // 0: the padding's zeros
      Lanes tile_values[4][4], rows[4][6];  // dy, then dy A^T
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < 4; ++j)
          tile_values[i][j] =
              i < rows_inside && j < columns
                  ? load(corner + o * channel_stride + i * t.out_strides[2] + j * t.out_strides[3],
                         channel_stride, lanes)
                  : Lanes{};
        gradient_points(tile_values[i], 1, rows[i], 1);
      }
      float* panel = points + (o / kPanel * count + k) * kPanel + o % kPanel;
      for (int64_t j = 0; j < 6; ++j) {
        Lanes column[6];  // A (dy A^T)'s column j
        gradient_points(&rows[0][j], 6, column, 1);
        for (int64_t i = 0; i < 6; ++i) store(panel + (i * 6 + j) * point_stride, 1, kLanes, column[i]);
      }
    }
  }
}

// Output channels [o, o + 8) of every input channel: successive input channels are the
// successive rows of each point's panel, so that the 36 points' stores each run on in order.
KILN_WINOGRAD_TARGETS
void transform_filters(const StridedOperand& weight, int64_t o, float* transformed) {
  const int64_t O = weight.shape[0], C = weight.shape[1], panels = padded_outputs(O) / kPanel;
  const int64_t* s = weight.strides.data();
  const int64_t lanes = std::clamp<int64_t>(O - o, 0, kLanes);  // 0: the padding's zeros
  for (int64_t c = 0; c < C; ++c) {
    const float* w = static_cast<const float*>(weight.data) + o * s[0] + c * s[1];
    Lanes filter[3][3], rows[3][6];  // g, then g G^T
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) filter[i][j] = load(w + i * s[2] + j * s[3], s[0], lanes);
      filter_points(filter[i], 1, rows[i], 1);
    }
    float* panel = transformed + (o / kPanel * C + c) * kPanel + o % kPanel;
    for (int64_t j = 0; j < 6; ++j) {
      Lanes column[6];  // G (g G^T)'s column j
      filter_points(&rows[0][j], 6, column, 1);
      for (int64_t i = 0; i < 6; ++i)
        store(panel + (i * 6 + j) * panels * C * kPanel, 1, kLanes, column[i]);
    }
  }
}

// The products (count, C) x (C, O) -> (count, O) of one point, row-major, on the calling
// thread: kiln's own kernel, since a library's costs more to call, 36 times a block, than these
// small products take (dnnl_sgemm's calls took as long as its arithmetic on resnet18's first
// layers). A panel's kDepth rows (16 KB: in L1) are reused by every 6 rows of V; each 6 x 16
// block of results accumulates in 12 registers.
constexpr int64_t kDepth = 256;

// kRows x kPanel results, of which `columns` are stored (rows `m_stride` apart): row r, depth k
// of the left operand is v[r * row_step + k * depth_step].
template <int64_t kRows>
__attribute__((always_inline)) inline void product_block(const float* v, int64_t row_step,
                                                         int64_t depth_step, const float* panel,
                                                         float* m, int64_t m_stride,
                                                         int64_t depth, int64_t columns,
                                                         bool accumulate) {
  Lanes sums[kRows][2];
  for (int64_t r = 0; r < kRows; ++r) sums[r][0] = sums[r][1] = Lanes{};
  for (int64_t k = 0; k < depth; ++k) {
    const Lanes low = *reinterpret_cast<const LanesInMemory*>(panel + k * kPanel);
    const Lanes high = *reinterpret_cast<const LanesInMemory*>(panel + k * kPanel + kLanes);
    for (int64_t r = 0; r < kRows; ++r) {
      const float value = v[r * row_step + k * depth_step];
      sums[r][0] += value * low;
      sums[r][1] += value * high;
    }
  }
  const int64_t widths[2] = {std::min(columns, kLanes), std::max<int64_t>(columns - kLanes, 0)};
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t q = 0; q < 2 && widths[q] > 0; ++q) {
      float* result = m + r * m_stride + q * kLanes;
      if (accumulate) sums[r][q] += load(result, 1, widths[q]);
      store(result, 1, widths[q], sums[r][q]);
    }
}

// `rows` rows of the left operand times one panel: 6 at a time, then the rest.
__attribute__((always_inline)) inline void product_panel(const float* v, int64_t rows,
                                                         int64_t row_step, int64_t depth_step,
                                                         const float* panel, float* m,
                                                         int64_t m_stride, int64_t depth,
                                                         int64_t columns, bool accumulate) {
  int64_t r = 0;
  for (; r + 6 <= rows; r += 6)
    product_block<6>(v + r * row_step, row_step, depth_step, panel, m + r * m_stride, m_stride,
                     depth, columns, accumulate);
  v += r * row_step;
  m += r * m_stride;
  switch (rows - r) {
    case 5: return product_block<5>(v, row_step, depth_step, panel, m, m_stride, depth, columns, accumulate);
    case 4: return product_block<4>(v, row_step, depth_step, panel, m, m_stride, depth, columns, accumulate);
    case 3: return product_block<3>(v, row_step, depth_step, panel, m, m_stride, depth, columns, accumulate);
    case 2: return product_block<2>(v, row_step, depth_step, panel, m, m_stride, depth, columns, accumulate);
    case 1: return product_block<1>(v, row_step, depth_step, panel, m, m_stride, depth, columns, accumulate);
    default: return;
  }
}

KILN_WINOGRAD_TARGETS
void product(const float* v, const float* u, float* m, int64_t count, int64_t C, int64_t O) {
  for (int64_t k = 0; k < C; k += kDepth) {
    const int64_t depth = std::min(kDepth, C - k);
    for (int64_t o = 0; o < O; o += kPanel)
      product_panel(v + k, count, C, 1, u + (o / kPanel * C + k) * kPanel, m + o, O, depth,
                    std::min(kPanel, O - o), k > 0);
  }
}

// The transformed filters' gradient, summed over a block's tiles: du (C, padded O) +=
// V^T (C, count) x dY (count, padded O), dY in panels (transform_gradients).
KILN_WINOGRAD_TARGETS
void gradient_product(const float* v, const float* dy, float* du, int64_t count, int64_t C,
                      int64_t padded) {
  for (int64_t k = 0; k < count; k += kDepth)
    for (int64_t o = 0; o < padded; o += kPanel)
      product_panel(v + k * C, C, 1, C, dy + (o / kPanel * count + k) * kPanel, du + o, padded,
                    std::min(kDepth, count - k), kPanel, true);
}

// The filters' gradient for output channels [o, o + 8) from the transformed one (36 (C, padded
// O) matrices in `du`), written to `out` (O, C, 3, 3), row-major.
KILN_WINOGRAD_TARGETS
void transform_filter_gradients(const float* du, int64_t C, int64_t O, int64_t o, float* out) {
  const int64_t padded = padded_outputs(O), lanes = std::min(kLanes, O - o);
  for (int64_t c = 0; c < C; ++c) {
    Lanes points[6][6], rows[6][3];  // du, then du G
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 6; ++j)
        points[i][j] = *reinterpret_cast<const LanesInMemory*>(du + ((i * 6 + j) * C + c) * padded + o);
      filter_gradient_points(points[i], 1, rows[i], 1);
    }
    for (int64_t j = 0; j < 3; ++j) {
      Lanes column[3];  // G^T (du G)'s column j
      filter_gradient_points(&rows[0][j], 3, column, 1);
      for (int64_t i = 0; i < 3; ++i) store(out + (o * C + c) * 9 + i * 3 + j, C * 9, lanes, column[i]);
    }
  }
}

// Tiles per block: a block's transformed inputs and products ((C + O) x 36 floats a tile) in
// about a core's L2 cache, but at least 24 tiles (the products' rows: fewer, and the weights'
// transform, streamed once per block, costs more than the products), in a number of blocks
// that the threads share evenly.
int64_t block_tiles(const Tiling& t, int threads) {
  constexpr int64_t kBlockBytes = 384 << 10, kFewestRows = 24;
  const int64_t fitting = kBlockBytes / (36 * int64_t(sizeof(float)) * (t.channels + t.outputs));
  const int64_t preferred = std::max(fitting, kFewestRows);
  const int64_t rounds = (t.tiles + threads * preferred - 1) / (threads * preferred);
  const int64_t blocks = threads * rounds;
  return std::max<int64_t>(1, (t.tiles + blocks - 1) / blocks);
}

// `scratch` grown to at least `floats` (kept between calls). Allocated before a parallel region:
// an exception may leave here, none may leave the region.
float* reserved(std::vector<float>& scratch, int64_t floats) {
  if (scratch.size() < static_cast<size_t>(floats)) scratch.resize(static_cast<size_t>(floats));
  return scratch.data();
}

}  // namespace

int64_t winograd_weight_size(const ir::ConvolutionGeometry& g) {
  return 36 * g.in_channels * padded_outputs(g.out_channels);
}

void winograd_transform_weights(const StridedOperand& weight, float* transformed) {
  const int64_t padded = padded_outputs(weight.shape[0]);
  #pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < padded; o += kLanes) transform_filters(weight, o, transformed);
}

void winograd_convolution(const ir::ConvolutionGeometry& g, const StridedOperand& input,
                          const float* transformed, const float* bias, int64_t bias_stride,
                          float* out, const std::vector<int64_t>& out_strides,
                          std::vector<float>& scratch) {
  const Tiling t = tiling(g, input, out_strides);
  const int threads = omp_get_max_threads();
  const int64_t C = t.channels, O = t.outputs, point_weights = C * padded_outputs(O);
  const float* in = static_cast<const float*>(input.data);
  // A point's matrices lie a cache line more than a multiple of their size apart: at a multiple
  // of 4 KB (64 channels, 64 tiles: 16 KB) the 36 points a tile reads or writes fell into the
  // same few sets of the L1 cache and evicted one another.
  if (point_weights > t.tiles * (C + O)) {
    // The weights' transform outweighs the transformed tiles (resnet's last layers): each is
    // read once, by the thread that computes its point's products for all tiles, between the
    // transforms of all tiles.
    const int64_t points_stride = t.tiles * C + 16, products_stride = t.tiles * O + 16;
    float* points = reserved(scratch, 36 * (points_stride + products_stride));
    float* products = points + 36 * points_stride;
    const int64_t chunk = (t.tiles + 4 * threads - 1) / (4 * threads);
    #pragma omp parallel num_threads(threads)
    {
      #pragma omp for schedule(dynamic)
      for (int64_t first = 0; first < t.tiles; first += chunk)
        transform_inputs(t, in, first, std::min(chunk, t.tiles - first), points + first * C,
                         points_stride);
      #pragma omp for schedule(dynamic)
      for (int64_t point = 0; point < 36; ++point)
        product(points + point * points_stride, transformed + point * point_weights,
                products + point * products_stride, t.tiles, C, O);
      #pragma omp for schedule(dynamic)
      for (int64_t first = 0; first < t.tiles; first += chunk)
        transform_outputs(t, products + first * O, products_stride, first,
                          std::min(chunk, t.tiles - first), bias, bias_stride, out);
    }
    return;
  }
  const int64_t block = block_tiles(t, threads);
  const int64_t blocks = (t.tiles + block - 1) / block;
  const int64_t points_stride = block * C + 16, products_stride = block * O + 16;
  const int64_t per_thread = 36 * (points_stride + products_stride);
  float* blocks_scratch = reserved(scratch, per_thread * threads);
  #pragma omp parallel num_threads(threads)
  {
    float* points = blocks_scratch + omp_get_thread_num() * per_thread;
    float* products = points + 36 * points_stride;
    #pragma omp for schedule(dynamic)  // a shared machine's cores run unevenly
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * block, count = std::min(block, t.tiles - first);
      transform_inputs(t, in, first, count, points, points_stride);
      for (int64_t point = 0; point < 36; ++point)
        product(points + point * points_stride, transformed + point * point_weights,
                products + point * products_stride, count, C, O);
      transform_outputs(t, products, products_stride, first, count, bias, bias_stride, out);
    }
  }
}

void winograd_weight_gradient(const ir::ConvolutionGeometry& g, const StridedOperand& input,
                              const StridedOperand& grad_output, float* out,
                              std::vector<float>& scratch) {
  const Tiling t = tiling(g, input, grad_output.strides);
  const int threads = omp_get_max_threads();
  const int64_t C = t.channels, O = t.outputs, padded = padded_outputs(O);
  const int64_t block = block_tiles(t, threads), blocks = (t.tiles + block - 1) / block;
  // Per thread: a block's transformed tiles (a cache line past a multiple of 4 KB apart, as in
  // the forward) and the thread's own sum of the transformed filters' gradient.
  const int64_t points_stride = block * C + 16, gradients_stride = block * padded + 16;
  const int64_t sum_size = 36 * C * padded;
  const int64_t per_thread = 36 * (points_stride + gradients_stride) + sum_size;
  float* const base = reserved(scratch, per_thread * threads);
  const float* in = static_cast<const float*>(input.data);
  const float* dy = static_cast<const float*>(grad_output.data);
  #pragma omp parallel num_threads(threads)
  {
    const int team = omp_get_num_threads();
    float* points = base + omp_get_thread_num() * per_thread;
    float* gradients = points + 36 * points_stride;
    float* sum = gradients + 36 * gradients_stride;
    std::fill(sum, sum + sum_size, 0.0f);
    #pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * block, count = std::min(block, t.tiles - first);
      transform_inputs(t, in, first, count, points, points_stride);
      transform_gradients(t, dy, first, count, gradients, gradients_stride);
      for (int64_t point = 0; point < 36; ++point)
        gradient_product(points + point * points_stride, gradients + point * gradients_stride,
                         sum + point * C * padded, count, C, padded);
    }
    float* total = base + 36 * (points_stride + gradients_stride);  // the first thread's sum
    #pragma omp for schedule(static)
    for (int64_t e = 0; e < sum_size; ++e)
      for (int other = 1; other < team; ++other) total[e] += total[other * per_thread + e];
    #pragma omp for schedule(static)
    for (int64_t o = 0; o < O; o += kLanes) transform_filter_gradients(total, C, O, o, out);
  }
}

}  // namespace kiln::externs
