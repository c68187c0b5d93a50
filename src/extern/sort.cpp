#include "extern/sort.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "kiln/error.h"
#include "runtime/thread_budget.h"

#ifdef KILN_HAVE_VQSORT  // Highway's vqsort, where CMake found it (CMakeLists.txt)
#include <hwy/contrib/sort/vqsort.h>
#endif

namespace kiln::externs {
namespace {

// ---- keys: unsigned integers whose order is the sort order ---------------------------------

template <class Storage>
Storage load_raw(const char* data, int64_t offset) {
  Storage value;
  std::memcpy(&value, data + offset * static_cast<int64_t>(sizeof(Storage)), sizeof(Storage));
  return value;
}

// Each dtype as its storage bits U and the key of those bits (U wide). IEEE floats (sign bit
// `kSign`, NaN above kInfinity's magnitude): negative values' bits inverted, positive ones'
// sign bit set, either zero the key of 0.0, every NaN the largest key. Signed integers: the
// sign bit flipped.
template <DType D> struct Keys;
template <class U, U kFlip> struct IntegerKeys {
  using Bits = U;
  static constexpr bool kFloat = false;
  static U key(U bits) { return static_cast<U>(bits ^ kFlip); }
  static U bits(U key) { return static_cast<U>(key ^ kFlip); }
};
template <class U, U kSign, U kInfinity> struct FloatKeys {
  using Bits = U;
  static constexpr bool kFloat = true;
  static constexpr U kZeroKey = kSign;
  static constexpr U kNaNKey = static_cast<U>(~U(0));
  static bool is_zero(U bits) { return static_cast<U>(bits & ~kSign) == 0; }
  static bool is_nan(U bits) { return static_cast<U>(bits & ~kSign) > kInfinity; }
  static U key(U bits) {
    if (is_nan(bits)) return kNaNKey;
    if (is_zero(bits)) return kZeroKey;
    return (bits & kSign) ? static_cast<U>(~bits) : static_cast<U>(bits | kSign);
  }
  static U bits(U key) {  // of a key that is neither zero's nor NaN's
    return (key & kSign) ? static_cast<U>(key ^ kSign) : static_cast<U>(~key);
  }
};
template <> struct Keys<DType::Bool> : IntegerKeys<uint8_t, 0> {};
template <> struct Keys<DType::UInt8> : IntegerKeys<uint8_t, 0> {};
template <> struct Keys<DType::UInt16> : IntegerKeys<uint16_t, 0> {};
template <> struct Keys<DType::UInt32> : IntegerKeys<uint32_t, 0> {};
template <> struct Keys<DType::UInt64> : IntegerKeys<uint64_t, 0> {};
template <> struct Keys<DType::Int8> : IntegerKeys<uint8_t, 0x80u> {};
template <> struct Keys<DType::Int16> : IntegerKeys<uint16_t, 0x8000u> {};
template <> struct Keys<DType::Int32> : IntegerKeys<uint32_t, 0x80000000u> {};
template <> struct Keys<DType::Int64> : IntegerKeys<uint64_t, uint64_t{1} << 63> {};
template <> struct Keys<DType::Float16> : FloatKeys<uint16_t, 0x8000u, 0x7c00u> {};
template <> struct Keys<DType::BFloat16> : FloatKeys<uint16_t, 0x8000u, 0x7f80u> {};
template <> struct Keys<DType::Float32> : FloatKeys<uint32_t, 0x80000000u, 0x7f800000u> {};
template <> struct Keys<DType::Float64>
    : FloatKeys<uint64_t, uint64_t{1} << 63, uint64_t{0x7ff0000000000000}> {};

// ---- sorting one row's items -------------------------------------------------------------

// A 64-bit key with its position (argsort of 64-bit dtypes), laid out as Highway's uint128_t
// {lo, hi} (the key high). Keys of at most 32 bits share one uint64 with a 32-bit position
// instead (key high), and sort's items are the keys alone: in both, comparing the integers
// compares (key, position).
struct alignas(16) Item {
  uint64_t position;
  uint64_t key;
  bool operator<(const Item& other) const {
    return key != other.key ? key < other.key : position < other.position;
  }
};
template <class T> uint64_t digits(const T& item) { return item; }
inline uint64_t digits(const Item& item) { return item.key; }

// Stable radix sort by the bits [first, last) of digits(item), in digits of 8 bits (11-bit
// digits, three passes not four, measured slower here); passes where every item has the same
// digit are skipped. Rows past kCacheResident items take one MSD pass over their highest
// varying digit first, then sort each of its buckets by the lower digits while it sits in
// cache: two passes over memory, not one a digit (1M doubles: 7 scattered passes were 3-6x
// NumPy's sort).
constexpr int kDigitBits = 8;
constexpr size_t kBuckets = size_t{1} << kDigitBits;
constexpr size_t kCacheResident = size_t{1} << 15;

// Histograms of every digit of the bits [first, last) of items[0, n) into counts (one row of
// kBuckets a digit); returns the number of digits.
template <class T>
int digit_histograms(const T* items, size_t n, std::vector<uint32_t>& counts, int first,
                     int last) {
  const int passes = (last - first + kDigitBits - 1) / kDigitBits;
  counts.assign(static_cast<size_t>(passes) * kBuckets, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t value = digits(items[i]);
    for (int p = 0; p < passes; ++p)
      ++counts[static_cast<size_t>(p) * kBuckets + ((value >> (first + p * kDigitBits)) &
                                                    (kBuckets - 1))];
  }
  return passes;
}

// One stable counting pass of items[0, n) into out by the digit at `shift`, whose histogram
// `count` holds (turned into the buckets' ends).
template <class T>
void scatter_by_digit(const T* items, T* out, size_t n, uint32_t* count, int shift) {
  uint32_t offset = 0;
  for (size_t digit = 0; digit < kBuckets; ++digit) {
    const uint32_t c = count[digit];
    count[digit] = offset;
    offset += c;
  }
  for (size_t i = 0; i < n; ++i)
    out[count[(digits(items[i]) >> shift) & (kBuckets - 1)]++] = items[i];
}

// Whether every item of items[0, n) (n > 0) has the digit at `shift` of the first, by that
// digit's histogram `count` (a scan of all the buckets cost more than the pass over short rows).
template <class T>
bool same_digit(const T* items, size_t n, const uint32_t* count, int shift) {
  return count[(digits(items[0]) >> shift) & (kBuckets - 1)] == n;
}

// LSD passes over items[0, n), through scratch; returns where the sorted items lie.
template <class T>
T* lsd_sort(T* items, T* scratch, size_t n, std::vector<uint32_t>& counts, int first, int last) {
  const int passes = digit_histograms(items, n, counts, first, last);
  for (int p = 0; p < passes; ++p) {
    uint32_t* count = &counts[static_cast<size_t>(p) * kBuckets];
    if (same_digit(items, n, count, first + p * kDigitBits)) continue;
    scatter_by_digit(items, scratch, n, count, first + p * kDigitBits);
    std::swap(items, scratch);
  }
  return items;
}

template <class T>
void radix_sort(std::vector<T>& items, std::vector<T>& scratch, std::vector<uint32_t>& counts,
                int first, int last) {
  const size_t n = items.size();
  scratch.resize(n);
  if (n <= kCacheResident) {
    if (lsd_sort(items.data(), scratch.data(), n, counts, first, last) != items.data())
      items.swap(scratch);
    return;
  }
  const int passes = digit_histograms(items.data(), n, counts, first, last);
  int top = passes - 1;  // the highest digit on which the items differ
  while (top >= 0 && same_digit(items.data(), n, &counts[static_cast<size_t>(top) * kBuckets],
                                first + top * kDigitBits))
    --top;
  if (top < 0) return;
  std::vector<uint32_t> ends(&counts[static_cast<size_t>(top) * kBuckets],
                             &counts[static_cast<size_t>(top + 1) * kBuckets]);
  scatter_by_digit(items.data(), scratch.data(), n, ends.data(), first + top * kDigitBits);
  // Each bucket, now in scratch, by the digits below: in its place, through items' range.
  std::vector<uint32_t> bucket_counts;
  size_t begin = 0;
  for (size_t digit = 0; digit < kBuckets; ++digit) {
    const size_t end = ends[digit];
    if (end - begin > 1 && top > 0) {
      T* sorted = lsd_sort(scratch.data() + begin, items.data() + begin, end - begin,
                           bucket_counts, first, first + top * kDigitBits);
      if (sorted != scratch.data() + begin)
        std::copy(sorted, sorted + (end - begin), scratch.data() + begin);
    }
    begin = end;
  }
  items.swap(scratch);
}

// Sorts items by Highway's vqsort (a SIMD quicksort: 1M doubles' keys 5-10x faster than the radix
// passes, rows of 1000 2x) where kiln was built with it; false where not (1-byte keys: their
// one radix pass is quicker). It is not stable, and need not be: no two items differ yet compare
// equal (sort's keys alone stand for equal values, zeros' and NaNs' bits are restored in order;
// argsort's items hold their positions), so any sort orders them as a stable one.
template <class T>
constexpr bool kVectorSorted =
#ifdef KILN_HAVE_VQSORT
    sizeof(T) > 1;
#else
    false;
#endif

template <class T>
bool vector_sort(std::vector<T>& items) {
#ifdef KILN_HAVE_VQSORT
  thread_local hwy::Sorter sorter;
  if constexpr (std::is_same_v<T, Item>) {
    static_assert(sizeof(Item) == sizeof(hwy::uint128_t));
    sorter(reinterpret_cast<hwy::uint128_t*>(items.data()), items.size(), hwy::SortAscending());
    return true;
  } else if constexpr (sizeof(T) > 1) {
    sorter(items.data(), items.size(), hwy::SortAscending());
    return true;
  }
#endif
  (void)items;
  return false;
}

// A bitonic sorting network over N items (a power of two), branch-free: short rows, padded with
// the largest item.
// Fully unrolled (every index a constant): otherwise GCC keeps the loops and branches on the
// direction of each step, a misprediction per comparison.
template <int N, class T>
void network_sort(T* a) {
#pragma GCC unroll 8
  for (int k = 2; k <= N; k *= 2)
#pragma GCC unroll 8
    for (int j = k / 2; j > 0; j /= 2)
#pragma GCC unroll 32
      for (int i = 0; i < N; ++i) {
        const int l = i ^ j;
        if (l <= i || l >= N) continue;
        const T x = a[i], y = a[l];
        const T low = std::min(x, y), high = std::max(x, y);
        const bool up = (i & k) == 0;
        a[i] = up ? low : high;
        a[l] = up ? high : low;
      }
}

template <class T> T largest_item() { return ~T(0); }
template <> inline Item largest_item<Item>() { return {~uint64_t(0), ~uint64_t(0)}; }

constexpr int64_t kNetworkUpTo = 32;  // rows this short: a sorting network

template <int N, class T>
void padded_network_sort(std::vector<T>& items) {
  T a[N];
  const size_t n = items.size();
  for (size_t i = 0; i < static_cast<size_t>(N); ++i) a[i] = i < n ? items[i] : largest_item<T>();
  network_sort<N>(a);
  std::copy(a, a + n, items.begin());
}

// Sorts `items` (or, for k < their count, selects and sorts the first k): keys in the bits
// [first, last) of digits(item). Above the network's rows, radix passes beat std::sort (rows of
// 64 and 200 floats: 1.3-2.5x).
template <class T>
void sort_items(std::vector<T>& items, std::vector<T>& scratch, std::vector<uint32_t>& counts,
                int64_t k, int first, int last) {
  const auto n = static_cast<int64_t>(items.size());
  if (n <= kNetworkUpTo) {
    if (n <= 4) std::sort(items.begin(), items.end());
    else if (n <= 8) padded_network_sort<8>(items);
    else if (n <= 16) padded_network_sort<16>(items);
    else padded_network_sort<32>(items);
  } else if (k < n) {
    if (k == 0) return;
    std::nth_element(items.begin(), items.begin() + (k - 1), items.end());
    std::sort(items.begin(), items.begin() + (k - 1));
  } else if (!vector_sort(items)) {
    radix_sort(items, scratch, counts, first, last);
  }
}

// Puts at each of `picks` (ascending positions) the item a sort puts there, everything before it
// before it: one nth_element each over what lies past the last pick (introselect, linear time),
// where a pick follows the last one directly only the least of the rest moves there, to the
// last place only the largest (median's NaN check).
template <class T>
void select_items(std::vector<T>& items, const std::vector<int64_t>& picks) {
  auto begin = items.begin();
  for (int64_t pick : picks) {
    const auto at = items.begin() + pick;
    if (at == begin) std::iter_swap(at, std::min_element(at, items.end()));
    else if (at + 1 == items.end()) std::iter_swap(at, std::max_element(begin, items.end()));
    else std::nth_element(begin, at, items.end());
    begin = at + 1;
  }
}

// ---- rows ----------------------------------------------------------------------------------

// What one dtype sorts: its keys (Bits wide), the items sorted, and how a row is loaded and
// written.
template <DType D, bool kPositions>
struct RowSorter {
  using K = Keys<D>;
  using Bits = typename K::Bits;
  static constexpr bool kPacked = sizeof(Bits) <= 4;
  using T = std::conditional_t<!kPositions, Bits, std::conditional_t<kPacked, uint64_t, Item>>;
  // The key bits of an item: a packed key is its high half.
  static constexpr int kFirst = kPositions && kPacked ? 32 : 0;
  static constexpr int kLast = kFirst + 8 * static_cast<int>(sizeof(Bits));
  // A key with its position, whichever is sorted: what top-k's heap holds.
  using Positioned = std::conditional_t<kPacked, uint64_t, Item>;

  bool descending;
  std::vector<T> items, scratch;
  std::vector<Bits> zeros, nans;  // sort: the bits of each zero and NaN, in order
  std::vector<uint32_t> counts;   // the radix passes' histograms

  void load(const char* data, int64_t base, int64_t step, int64_t n, int64_t first_position) {
    items.clear();
    zeros.clear();
    nans.clear();
    for (int64_t i = 0; i < n; ++i) {
      const Bits bits = load_raw<Bits>(data, base + i * step);
      Bits key = K::key(bits);
      if constexpr (K::kFloat && !kPositions) {
        if (key == K::kZeroKey) zeros.push_back(bits);
        if (key == K::kNaNKey) nans.push_back(bits);
      }
      if (descending) key = static_cast<Bits>(~key);
      const auto position = static_cast<uint64_t>(first_position + i);
      if constexpr (!kPositions) items.push_back(key);
      else if constexpr (kPacked) items.push_back((static_cast<uint64_t>(key) << 32) | position);
      else items.push_back({position, key});
    }
  }

  static Positioned positioned(Bits key, uint64_t position) {
    if constexpr (kPacked) return (static_cast<uint64_t>(key) << 32) | position;
    else return Positioned{position, key};
  }
  static uint64_t position_of(const Positioned& item) {
    if constexpr (kPacked) return item & 0xffffffffu;
    else return item.position;
  }

  // The first k (0 < k < n) of a row in order, by a heap of the k smallest (key, position)
  // pairs seen so far: most elements are compared with its largest only (top-k of a long row).
  std::vector<Positioned> heap;
  void select(const char* data, int64_t base, int64_t step, int64_t n, int64_t k, char* out,
              int64_t out_step) {
    heap.clear();
    for (int64_t i = 0; i < n; ++i) {
      Bits key = K::key(load_raw<Bits>(data, base + i * step));
      if (descending) key = static_cast<Bits>(~key);
      const Positioned item = positioned(key, static_cast<uint64_t>(i));
      if (static_cast<int64_t>(heap.size()) < k) {
        heap.push_back(item);
        if (static_cast<int64_t>(heap.size()) == k) std::make_heap(heap.begin(), heap.end());
      } else if (item < heap.front()) {
        std::pop_heap(heap.begin(), heap.end());
        heap.back() = item;
        std::push_heap(heap.begin(), heap.end());
      }
    }
    std::sort_heap(heap.begin(), heap.end());
    for (int64_t j = 0; j < k; ++j) {
      const auto position = static_cast<int64_t>(position_of(heap[static_cast<size_t>(j)]));
      if constexpr (kPositions) {
        std::memcpy(out + j * out_step * 8, &position, 8);
      } else {  // the element itself
        const Bits bits = load_raw<Bits>(data, base + position * step);
        std::memcpy(out + j * out_step * static_cast<int64_t>(sizeof(Bits)), &bits, sizeof(Bits));
      }
    }
  }

  // After select_items: the items at `picks`, to out[j * step]. A value whose key is zero's or
  // NaN's is the m-th of those bits, m the count of its key before it (the selection leaves
  // exactly the items a sort puts first there, and a stable sort keeps equal keys in order).
  void store_picks(char* out, int64_t step, const std::vector<int64_t>& picks) {
    for (size_t j = 0; j < picks.size(); ++j) {
      const T& item = items[static_cast<size_t>(picks[j])];
      constexpr int64_t kElement = kPositions ? 8 : static_cast<int64_t>(sizeof(Bits));
      char* place = out + static_cast<int64_t>(j) * step * kElement;
      if constexpr (kPositions) {
        int64_t position;
        if constexpr (kPacked) position = static_cast<int64_t>(item & 0xffffffffu);
        else position = static_cast<int64_t>(item.position);
        std::memcpy(place, &position, 8);
      } else {
        const Bits key = descending ? static_cast<Bits>(~item) : item;
        Bits bits;
        if constexpr (K::kFloat) {
          if (key == K::kZeroKey || key == K::kNaNKey) {
            const auto m = static_cast<size_t>(
                std::count(items.begin(), items.begin() + picks[j], item));
            bits = key == K::kZeroKey ? zeros[m] : nans[m];
          } else {
            bits = K::bits(key);
          }
        } else {
          bits = K::bits(key);
        }
        std::memcpy(place, &bits, sizeof(Bits));
      }
    }
  }

  void store(char* out, int64_t step, int64_t k) {
    size_t zero = 0, nan = 0;
    for (int64_t j = 0; j < k; ++j) {
      const T& item = items[static_cast<size_t>(j)];
      if constexpr (kPositions) {
        int64_t position;
        if constexpr (kPacked) position = static_cast<int64_t>(item & 0xffffffffu);
        else position = static_cast<int64_t>(item.position);
        std::memcpy(out + j * step * 8, &position, 8);
      } else {
        const Bits key = descending ? static_cast<Bits>(~item) : item;
        Bits bits;
        if constexpr (K::kFloat) {
          bits = key == K::kZeroKey  ? zeros[zero++]
                 : key == K::kNaNKey ? nans[nan++]
                                     : K::bits(key);
        } else {
          bits = K::bits(key);
        }
        std::memcpy(out + j * step * static_cast<int64_t>(sizeof(Bits)), &bits, sizeof(Bits));
      }
    }
  }
};

// The offsets of each row's first element, in the input and in the output.
void row_starts(const StridedOperand& input, size_t axis, const std::vector<int64_t>& out_strides,
                std::vector<int64_t>& in_rows, std::vector<int64_t>& out_rows) {
  in_rows.assign(1, 0);
  out_rows.assign(1, 0);
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (d == axis) continue;
    std::vector<int64_t> in_next, out_next;
    in_next.reserve(in_rows.size() * static_cast<size_t>(input.shape[d]));
    out_next.reserve(in_next.capacity());
    for (int64_t i = 0; i < input.shape[d]; ++i)
      for (size_t r = 0; r < in_rows.size(); ++r) {
        in_next.push_back(in_rows[r] + i * input.strides[d]);
        out_next.push_back(out_rows[r] + i * out_strides[d]);
      }
    in_rows.swap(in_next);
    out_rows.swap(out_next);
  }
}

// A top-k of at most a 16th of its row selects through a heap, not nth_element.
constexpr int64_t kHeapFactor = 16;

// A row this long, alone, is sorted in one chunk per thread, the chunks then merged.
constexpr int64_t kChunkedFrom = int64_t{1} << 20;

template <DType D, bool kPositions>
void sort_long_row(const StridedOperand& input, size_t axis, bool descending, char* out,
                   int64_t out_step, int64_t k, int threads) {
  using Sorter = RowSorter<D, kPositions>;
  using T = typename Sorter::T;
  const int64_t n = input.shape[axis], step = input.strides[axis];
  const char* data = static_cast<const char*>(input.data);
  std::vector<T> all(static_cast<size_t>(n)), merged(static_cast<size_t>(n));
  std::vector<typename Sorter::Bits> zeros, nans;
  std::vector<int64_t> bounds(static_cast<size_t>(threads) + 1);
  for (int t = 0; t <= threads; ++t) bounds[static_cast<size_t>(t)] = n * t / threads;
  std::vector<std::vector<typename Sorter::Bits>> chunk_zeros(threads), chunk_nans(threads);
  // A loop over the chunks, not one chunk per thread number: OpenMP may give fewer threads.
  #pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = bounds[static_cast<size_t>(t)], end = bounds[static_cast<size_t>(t) + 1];
    Sorter sorter{descending, {}, {}, {}, {}, {}, {}};
    sorter.load(data, begin * step, step, end - begin, begin);
    sort_items(sorter.items, sorter.scratch, sorter.counts, end - begin, Sorter::kFirst,
               Sorter::kLast);
    std::copy(sorter.items.begin(), sorter.items.end(), all.begin() + begin);
    chunk_zeros[static_cast<size_t>(t)] = std::move(sorter.zeros);
    chunk_nans[static_cast<size_t>(t)] = std::move(sorter.nans);
  }
  // Chunks merged pairwise, from one buffer into the other, level by level; equal keys of
  // different chunks keep the chunks' order (merge takes the first range's first), which is
  // the positions' order.
  for (int width = 1; width < threads; width *= 2) {
    for (int t = 0; t < threads; t += 2 * width) {
      auto bound = [&](int chunk) {
        return static_cast<ptrdiff_t>(bounds[static_cast<size_t>(std::min(chunk, threads))]);
      };
      const ptrdiff_t a = bound(t), m = bound(t + width), e = bound(t + 2 * width);
      std::merge(all.begin() + a, all.begin() + m, all.begin() + m, all.begin() + e,
                 merged.begin() + a);
    }
    all.swap(merged);
  }
  Sorter sorter{descending, std::move(all), {}, {}, {}, {}, {}};
  for (int t = 0; t < threads; ++t) {
    sorter.zeros.insert(sorter.zeros.end(), chunk_zeros[static_cast<size_t>(t)].begin(),
                        chunk_zeros[static_cast<size_t>(t)].end());
    sorter.nans.insert(sorter.nans.end(), chunk_nans[static_cast<size_t>(t)].begin(),
                       chunk_nans[static_cast<size_t>(t)].end());
  }
  sorter.store(out, out_step, k);
}

template <DType D, bool kPositions>
void sort_rows(const StridedOperand& input, size_t axis, bool descending, char* out,
               const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides,
               int most, const std::vector<int64_t>& picks) {
  using Sorter = RowSorter<D, kPositions>;
  const int64_t n = input.shape[axis];
  const int64_t k = out_shape[axis];
  if (kPositions && Sorter::kPacked && n > int64_t{0xffffffff})
    throw Error(ErrorKind::Unsupported, "kiln: argsort of a row of more than 2**32 elements");
  std::vector<int64_t> in_rows, out_rows;
  row_starts(input, axis, out_strides, in_rows, out_rows);
  const auto rows = static_cast<int64_t>(in_rows.size());
  const int64_t element = kPositions ? 8 : dtype_size(input.dtype);
  // Not where vqsort sorts the row: one thread's vqsort of 1.1M doubles took 20-36 ms, two
  // threads' chunks and their merge 70 ms on a busy machine of two cores.
  if (rows == 1 && k == n && n >= kChunkedFrom && most > 1 && picks.empty() &&
      !kVectorSorted<typename Sorter::T>) {
    sort_long_row<D, kPositions>(input, axis, descending, out + out_rows[0] * element,
                                 out_strides[axis], k, most);
    return;
  }
  const char* data = static_cast<const char*>(input.data);
  const int threads = rows * n >= 16384 && rows > 1 ? most : 1;
  #pragma omp parallel num_threads(threads)
  {
    Sorter sorter{descending, {}, {}, {}, {}, {}, {}};
    sorter.items.reserve(static_cast<size_t>(n));
    #pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      if (!picks.empty()) {
        sorter.load(data, in_rows[static_cast<size_t>(r)], input.strides[axis], n, 0);
        select_items(sorter.items, picks);
        sorter.store_picks(out + out_rows[static_cast<size_t>(r)] * element, out_strides[axis],
                           picks);
        continue;
      }
      if (k > 0 && k * kHeapFactor <= n && n > kNetworkUpTo) {
        sorter.select(data, in_rows[static_cast<size_t>(r)], input.strides[axis], n, k,
                      out + out_rows[static_cast<size_t>(r)] * element, out_strides[axis]);
        continue;
      }
      sorter.load(data, in_rows[static_cast<size_t>(r)], input.strides[axis], n, 0);
      sort_items(sorter.items, sorter.scratch, sorter.counts, k, Sorter::kFirst, Sorter::kLast);
      sorter.store(out + out_rows[static_cast<size_t>(r)] * element, out_strides[axis], k);
    }
  }
}

template <bool kPositions>
void sort_dtype(const StridedOperand& input, size_t axis, bool descending, char* out,
                const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides,
                int threads, const std::vector<int64_t>& picks) {
  switch (input.dtype) {
#define KILN_SORT_CASE(name) \
  case DType::name:          \
    return sort_rows<DType::name, kPositions>(input, axis, descending, out, out_shape, \
                                              out_strides, threads, picks);
    KILN_SORT_CASE(Bool)
    KILN_SORT_CASE(Int8)
    KILN_SORT_CASE(Int16)
    KILN_SORT_CASE(Int32)
    KILN_SORT_CASE(Int64)
    KILN_SORT_CASE(UInt8)
    KILN_SORT_CASE(UInt16)
    KILN_SORT_CASE(UInt32)
    KILN_SORT_CASE(UInt64)
    KILN_SORT_CASE(Float16)
    KILN_SORT_CASE(BFloat16)
    KILN_SORT_CASE(Float32)
    KILN_SORT_CASE(Float64)
#undef KILN_SORT_CASE
    default: break;
  }
  throw Error(ErrorKind::Unsupported,
              "kiln: sort of " + std::string(dtype_name(input.dtype)) + " values");
}

}  // namespace

void sort(const StridedOperand& input, int64_t axis, bool descending, bool positions, void* out,
          const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides,
          int threads, const std::vector<int64_t>& picks) {
  const auto along = static_cast<size_t>(axis);
  if (along >= input.shape.size() || out_shape.size() != input.shape.size() ||
      out_shape[along] > input.shape[along])
    throw Error(ErrorKind::Internal, "kiln: sort call with mismatched shapes");
  if (!picks.empty()) {
    bool fits = static_cast<int64_t>(picks.size()) == out_shape[along];
    for (size_t j = 0; fits && j < picks.size(); ++j)
      fits = picks[j] >= (j == 0 ? 0 : picks[j - 1] + 1) && picks[j] < input.shape[along];
    if (!fits) throw Error(ErrorKind::Internal, "kiln: sort call with positions that do not fit");
  }
  for (int64_t extent : out_shape)
    if (extent == 0) return;
  // The free cores only (runtime/thread_budget.h): on a busy machine a second thread's chunk
  // waits descheduled, and the chunked sort of one row ran 1.6x slower on two threads than one.
  if (threads <= 0) threads = runtime::thread_budget(omp_get_max_threads());
  char* bytes = static_cast<char*>(out);
  if (positions)
    sort_dtype<true>(input, along, descending, bytes, out_shape, out_strides, threads, picks);
  else
    sort_dtype<false>(input, along, descending, bytes, out_shape, out_strides, threads, picks);
}

}  // namespace kiln::externs
