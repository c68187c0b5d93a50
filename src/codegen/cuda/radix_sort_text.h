// The device text of the radix sort of long rows, which codegen/cuda/sort_kernels.cpp's
// sort_text() ends with: the counts, prefix sums and scatter of one 8-bit digit.
#pragma once

namespace kiln::codegen::cuda_detail {

constexpr const char* kRadixSortText = R"(
// ---- long rows: a least-significant-digit radix sort (codegen/cuda/sort_kernels.cpp) ------
// 8-bit digits from the lowest; each pass is stable, so the positions, in order at the start,
// break ties. A pass counts each tile's digits, scans the counts of each row's digit across
// its tiles, and scatters: an element's place is its digit's start in the row, the earlier
// tiles' and warps' elements of that digit, and its rank among its warp's (__match_any_sync).
constexpr int kiln_radix_threads = 256, kiln_radix_warps = kiln_radix_threads / 32;
constexpr int kiln_radix_items = 16, kiln_radix_tile = kiln_radix_threads * kiln_radix_items;
KILN_FN unsigned kiln_radix_digit(unsigned long long key, int shift) {
  return (unsigned)(key >> shift) & 255u;
}
// The block's exclusive scan of one value a thread (kiln_radix_threads threads); *total: the
// sum. `space`: kiln_radix_warps + 1 words of shared memory.
KILN_FN unsigned kiln_radix_block_scan(unsigned value, unsigned* space, unsigned* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned inclusive = value;
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned other = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += other;
  }
  if (lane == 31) space[warp] = inclusive;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned running = 0;
    for (int w = 0; w < kiln_radix_warps; ++w) {
      const unsigned c = space[w];
      space[w] = running, running += c;
    }
    space[kiln_radix_warps] = running;
  }
  __syncthreads();
  const unsigned result = space[warp] + inclusive - value;
  *total = space[kiln_radix_warps];
  __syncthreads();  // before the space is used again
  return result;
}
// counts[(row * 256 + digit) * tiles + tile]: how many of the tile's keys have the digit.
template <class K>
KILN_FN void kiln_radix_count(const K* keys, long long n, long long tiles, long long rows,
                              int shift, unsigned* counts) {
  __shared__ unsigned histogram[256];
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long row = b / tiles, tile = b - row * tiles;
    histogram[threadIdx.x] = 0;
    __syncthreads();
    const K* row_keys = keys + row * n;
    const long long last = min((tile + 1) * kiln_radix_tile, n);
    for (long long i = tile * kiln_radix_tile + threadIdx.x; i < last; i += kiln_radix_threads)
      atomicAdd(&histogram[kiln_radix_digit(row_keys[i], shift)], 1u);
    __syncthreads();
    counts[(row * 256 + threadIdx.x) * tiles + tile] = histogram[threadIdx.x];
    __syncthreads();  // before the next tile's zeros
  }
}
// Each (row, digit)'s counts across the tiles become their exclusive prefix sums; totals[row *
// 256 + digit]: the row's count of the digit.
KILN_FN void kiln_radix_scan(unsigned* counts, unsigned* totals, long long tiles, long long lists) {
  __shared__ unsigned space[kiln_radix_warps + 1];
  for (long long list = blockIdx.x; list < lists; list += gridDim.x) {
    unsigned* c = counts + list * tiles;
    unsigned carry = 0;
    for (long long first = 0; first < tiles; first += kiln_radix_threads) {
      const long long t = first + threadIdx.x;
      const unsigned value = t < tiles ? c[t] : 0u;
      unsigned sum;
      const unsigned before = kiln_radix_block_scan(value, space, &sum);
      if (t < tiles) c[t] = carry + before;
      carry += sum;
    }
    if (threadIdx.x == 0) totals[list] = carry;
  }
}
// One pass: the keys and positions of half `in` placed by their digit into half `out`. A
// tile's elements are first put in digit order in shared memory (their places in the tile),
// then written out in that order, so that a warp's stores fill runs of each digit's range
// (stored from the registers they were ranked in, a warp's 32 stores fell into ~30 sectors).
template <class K>
KILN_FN void kiln_radix_scatter(const K* keys, const int* positions, K* keys_out,
                                int* positions_out, const unsigned* counts,
                                const unsigned* totals, long long n, long long tiles,
                                long long rows, int shift) {
  __shared__ unsigned space[kiln_radix_warps + 1];
  __shared__ unsigned start[kiln_radix_warps][256];  // a warp's first place for each digit
  __shared__ int shift_out[256];  // a digit's place in the row less its place in the tile
  __shared__ unsigned long long staged_words[kiln_radix_tile * sizeof(K) / 8];
  K* const staged_keys = (K*)staged_words;
  int* const staged_positions = (int*)staged_words;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned earlier_lanes = (1u << lane) - 1u;
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long row = b / tiles, tile = b - row * tiles;
    unsigned sum;
    const unsigned digit_start =
        kiln_radix_block_scan(totals[row * 256 + threadIdx.x], space, &sum);
    const unsigned tile_start = digit_start + counts[(row * 256 + threadIdx.x) * tiles + tile];
    for (int w = 0; w < kiln_radix_warps; ++w) start[w][threadIdx.x] = 0;
    __syncthreads();
    const long long first = tile * kiln_radix_tile + warp * (32 * kiln_radix_items) + lane;
    const int in_tile = (int)min((long long)kiln_radix_tile, n - tile * kiln_radix_tile);
    K key[kiln_radix_items];
    int position[kiln_radix_items];
    unsigned rank[kiln_radix_items];
#pragma unroll
    for (int r = 0; r < kiln_radix_items; ++r) {  // in order: the warp's elements, a round each
      const long long i = first + r * 32;
      const bool valid = i < n;
      key[r] = valid ? keys[row * n + i] : (K)0;
      position[r] = valid ? positions[row * n + i] : 0;
      const unsigned digit = valid ? kiln_radix_digit(key[r], shift) : 256u;
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      if (valid) rank[r] = start[warp][digit] + __popc(peers & earlier_lanes);
      __syncwarp();
      if (valid && lane == __ffs(peers) - 1) start[warp][digit] += __popc(peers);
      __syncwarp();
    }
    __syncthreads();
    {  // a digit's warps' counts become their first places in the tile
      unsigned count = 0;
      for (int w = 0; w < kiln_radix_warps; ++w) count += start[w][threadIdx.x];
      unsigned tile_total;
      unsigned running = kiln_radix_block_scan(count, space, &tile_total);
      shift_out[threadIdx.x] = (int)tile_start - (int)running;
      for (int w = 0; w < kiln_radix_warps; ++w) {
        const unsigned c = start[w][threadIdx.x];
        start[w][threadIdx.x] = running, running += c;
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kiln_radix_items; ++r) {
      if (first + r * 32 >= n) break;
      rank[r] += start[warp][kiln_radix_digit(key[r], shift)];  // the place in the tile
      staged_keys[rank[r]] = key[r];
    }
    __syncthreads();
    int to[kiln_radix_items];  // places in the row
#pragma unroll
    for (int r = 0; r < kiln_radix_items; ++r) {  // the tile in digit order: runs of each digit
      const int i = r * kiln_radix_threads + threadIdx.x;
      if (i >= in_tile) break;
      const K k = staged_keys[i];
      to[r] = i + shift_out[kiln_radix_digit(k, shift)];
      keys_out[row * n + to[r]] = k;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kiln_radix_items; ++r) {
      if (first + r * 32 >= n) break;
      staged_positions[rank[r]] = position[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kiln_radix_items; ++r) {
      const int i = r * kiln_radix_threads + threadIdx.x;
      if (i >= in_tile) break;
      positions_out[row * n + to[r]] = staged_positions[i];
    }
    __syncthreads();  // before the next tile's starts
  }
}
)";

}  // namespace kiln::codegen::cuda_detail
