// The device text of the radix sort of long rows, which codegen/cuda/sort_kernels.cpp's
// sort_text() ends with: the rows' digit counts, and one launch a digit that places each tile.
#pragma once

namespace kiln::codegen::cuda_detail {

constexpr const char* kRadixSortText = R"(
// ---- long rows: a least-significant-digit radix sort (codegen/cuda/sort_kernels.cpp) ------
// 8-bit digits from the lowest; each pass is stable, so the positions, in order at the start,
// break ties. One launch counts every digit of every row's keys; then one launch a digit: a
// block takes the next tile (a counter, so tiles start in order), ranks its keys by digit
// (__match_any_sync within each warp), publishes each digit's count, and looks back over the
// row's earlier tiles' words for the digit's count before it (decoupled look-back, as CUB's
// onesweep), then writes the tile in digit order.
// A tile is kiln_radix_threads x ITEMS elements (the host's choice by the key's size).
constexpr int kiln_radix_threads = 256, kiln_radix_warps = kiln_radix_threads / 32;
template <class K>
KILN_FN unsigned kiln_radix_digit(K key, int shift) {
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
// A block's digit counts of a row added to the row's totals, and zeroed (row -1: zeroed only).
template <int PASSES>
KILN_FN void kiln_radix_flush(unsigned (*histogram)[256], unsigned* totals, long long row) {
  __syncthreads();
#pragma unroll
  for (int d = 0; d < PASSES; ++d) {
    const unsigned c = histogram[d][threadIdx.x];
    if (row >= 0 && c) atomicAdd(&totals[(row * PASSES + d) * 256 + threadIdx.x], c);
    histogram[d][threadIdx.x] = 0;
  }
  __syncthreads();
}
// totals[(row * PASSES + d) * 256 + digit]: how many of the row's keys have `digit` in byte d
// (zero at the start: the sort's first launch clears them).
template <class K, int PASSES, int ITEMS, class Source>
KILN_FN void kiln_radix_histogram(const Source& source, long long n, long long tiles,
                                  long long rows, unsigned* totals) {
  constexpr int tile_size = kiln_radix_threads * ITEMS;
  __shared__ unsigned histogram[PASSES][256];
  long long row = -1, at = 0;
  kiln_radix_flush<PASSES>(histogram, totals, row);
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long r = b / tiles;
    const int first = (int)(b - r * tiles) * tile_size;
    if (r != row) kiln_radix_flush<PASSES>(histogram, totals, row), row = r, at = source.at(r);
    const int last = (int)min((long long)first + tile_size, n);
    for (int i = first + threadIdx.x; i < last; i += kiln_radix_threads) {
      const K key = source.key(at, i);
#pragma unroll
      for (int d = 0; d < PASSES; ++d) atomicAdd(&histogram[d][kiln_radix_digit(key, 8 * d)], 1u);
    }
  }
  kiln_radix_flush<PASSES>(histogram, totals, row);
}
// A half of the workspace, which a pass reads (a Source) or writes (a Sink): each row's keys
// and values (positions or bits; none where the keys alone are sorted), n apart. The sort's
// own Source reads its operand (the first pass and the counts), and its Sink, where the last
// pass can write the result itself, stores it.
template <class K>
struct kiln_radix_half {
  static constexpr bool keys = true, values = true;
  K* key_data;
  int* value_data;
  long long n;
  KILN_FN long long at(long long row) const { return row * n; }
  KILN_FN K key(long long at, int i) const { return key_data[at + i]; }
  KILN_FN int value(long long at, int i) const { return value_data[at + i]; }
  KILN_FN void store_key(long long at, int i, K key) const { key_data[at + i] = key; }
  KILN_FN void store_value(long long at, int i, int value) const { value_data[at + i] = value; }
};
// A (tile, digit)'s look-back word: the pass (from 1) from bit 33 up, bit 32 once the count is
// the digit's in the row's tiles up to this one (else in this tile alone), the count below.
// Words of another pass or call never match (the keys launch clears them once a call).
KILN_FN void kiln_radix_publish(unsigned long long* word, unsigned long long value) {
  *(volatile unsigned long long*)word = value;
}
KILN_FN unsigned long long kiln_radix_read(const unsigned long long* word) {
  return *(const volatile unsigned long long*)word;
}
// The digit's count in the row's tiles before tile b (thread = digit), from their words; tile
// b's own `count` published first, then its inclusive count.
KILN_FN unsigned kiln_radix_look_back(unsigned long long* lookback, long long b, bool first_tile,
                                      int pass, unsigned count) {
  const unsigned long long this_pass = (unsigned long long)(pass + 1) << 33;
  const unsigned long long inclusive = 1ull << 32;
  unsigned long long* const word = lookback + b * 256 + threadIdx.x;
  if (first_tile) {
    kiln_radix_publish(word, this_pass | inclusive | count);
    return 0;
  }
  kiln_radix_publish(word, this_pass | count);
  unsigned earlier = 0;
  for (long long j = b - 1;; --j) {  // tile j was taken before b: its block is running
    unsigned long long seen;
    do seen = kiln_radix_read(lookback + j * 256 + threadIdx.x);
    while ((seen >> 33) != (unsigned long long)(pass + 1));
    earlier += (unsigned)seen;
    if (seen & inclusive) break;
  }
  kiln_radix_publish(word, this_pass | inclusive | (earlier + count));
  return earlier;
}
// One pass: the keys (and VALUES: their positions or bits) of `source` placed by their digit
// into `sink` (what it keeps of them). A tile's elements are put in digit order in shared memory (their places in
// the tile), then written out in that order, so that a warp's stores fill runs of each
// digit's range. Every key is loaded before the first is ranked (a warp's ranking rounds are
// ordered by __syncwarp, which loads do not pass).
template <class K, bool VALUES, int ITEMS, class Source, class Sink>
KILN_FN void kiln_radix_pass(const Source& source, const Sink& sink, const unsigned* totals,
                             unsigned long long* lookback, unsigned* next_tile, long long n,
                             long long tiles, long long rows, int pass, int passes) {
  constexpr int tile_size = kiln_radix_threads * ITEMS;
  __shared__ unsigned space[kiln_radix_warps + 1];
  __shared__ unsigned start[kiln_radix_warps][256];  // a warp's first place for each digit
  __shared__ int shift_out[256];  // a digit's place in the row less its place in the tile
  __shared__ unsigned long long staged_words[tile_size * sizeof(K) / 8];
  __shared__ unsigned taken;
  K* const staged_keys = (K*)staged_words;
  int* const staged_values = (int*)staged_words;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, shift = 8 * pass;
  const unsigned earlier_lanes = (1u << lane) - 1u;
  const int first = warp * (32 * ITEMS) + lane;  // the thread's first in the tile
  for (;;) {
    if (threadIdx.x == 0) taken = atomicAdd(next_tile, 1u);
    for (int w = 0; w < kiln_radix_warps; ++w) start[w][threadIdx.x] = 0;
    __syncthreads();
    const long long b = taken;
    if (b >= rows * tiles) break;
    const long long row = b / tiles;
    const int tile = (int)(b - row * tiles), tile_first = tile * tile_size;
    const int in_tile = (int)min((long long)tile_size, n - tile_first);
    const long long from = source.at(row);
    K key[ITEMS];
    int value[ITEMS];
    unsigned rank[ITEMS];
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
      const int i = first + r * 32;
      key[r] = i < in_tile ? source.key(from, tile_first + i) : (K)0;
      if (VALUES) value[r] = i < in_tile ? source.value(from, tile_first + i) : 0;
    }
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {  // in order: the warp's elements, a round each
      const bool valid = first + r * 32 < in_tile;
      const unsigned digit = valid ? kiln_radix_digit(key[r], shift) : 256u;
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      if (valid) rank[r] = start[warp][digit] + __popc(peers & earlier_lanes);
      __syncwarp();
      if (valid && lane == __ffs(peers) - 1) start[warp][digit] += __popc(peers);
      __syncwarp();
    }
    __syncthreads();
    {  // the digit's place in the row; its warps' counts become their first places in the tile
      unsigned count = 0;
      for (int w = 0; w < kiln_radix_warps; ++w) count += start[w][threadIdx.x];
      const unsigned earlier = kiln_radix_look_back(lookback, b, tile == 0, pass, count);
      unsigned sum;
      const unsigned digit_start = kiln_radix_block_scan(
          totals[(row * passes + pass) * 256 + threadIdx.x], space, &sum);
      unsigned running = kiln_radix_block_scan(count, space, &sum);
      shift_out[threadIdx.x] = (int)(digit_start + earlier) - (int)running;
      for (int w = 0; w < kiln_radix_warps; ++w) {
        const unsigned c = start[w][threadIdx.x];
        start[w][threadIdx.x] = running, running += c;
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {
      if (first + r * 32 >= in_tile) break;
      rank[r] += start[warp][kiln_radix_digit(key[r], shift)];  // the place in the tile
      staged_keys[rank[r]] = key[r];
    }
    __syncthreads();
    const long long at = sink.at(row);
    int to[ITEMS];  // places in the row
#pragma unroll
    for (int r = 0; r < ITEMS; ++r) {  // the tile in digit order: runs of each digit
      const int i = r * kiln_radix_threads + threadIdx.x;
      if (i >= in_tile) break;
      const K k = staged_keys[i];
      to[r] = i + shift_out[kiln_radix_digit(k, shift)];
      if (Sink::keys) sink.store_key(at, to[r], k);
    }
    if (VALUES && Sink::values) {
      __syncthreads();
#pragma unroll
      for (int r = 0; r < ITEMS; ++r) {
        if (first + r * 32 >= in_tile) break;
        staged_values[rank[r]] = value[r];
      }
      __syncthreads();
#pragma unroll
      for (int r = 0; r < ITEMS; ++r) {
        const int i = r * kiln_radix_threads + threadIdx.x;
        if (i >= in_tile) break;
        sink.store_value(at, to[r], staged_values[i]);
      }
    }
    __syncthreads();  // before the next tile's starts
  }
}
)";

}  // namespace kiln::codegen::cuda_detail
