#include "extern/sort.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "kiln/error.h"

namespace kiln::externs {
namespace {

// ---- keys: unsigned integers whose order is the sort order ---------------------------------

// An IEEE float's bits (W bits: the sign bit `sign`, NaN above `infinity`'s magnitude) as a key:
// negative values' bits inverted, positive ones' sign bit set, -0.0 as 0.0, every NaN the
// largest key.
template <class U>
U float_key(U bits, U sign, U infinity) {
  const U magnitude = static_cast<U>(bits & static_cast<U>(~sign));
  if (magnitude > infinity) return static_cast<U>(~U(0));
  if (magnitude == 0) return sign;  // either zero
  return (bits & sign) ? static_cast<U>(~bits) : static_cast<U>(bits | sign);
}

template <class Storage>
Storage load_raw(const char* data, int64_t offset) {
  Storage value;
  std::memcpy(&value, data + offset * static_cast<int64_t>(sizeof(Storage)), sizeof(Storage));
  return value;
}

// Key of element `offset` of a `dtype` array, W bits wide (uint8/16/32/64), before descending's
// inversion.
template <DType D>
auto raw_key(const char* data, int64_t offset) {
  if constexpr (D == DType::Bool || D == DType::UInt8) return load_raw<uint8_t>(data, offset);
  else if constexpr (D == DType::Int8) return static_cast<uint8_t>(load_raw<uint8_t>(data, offset) ^ 0x80u);
  else if constexpr (D == DType::UInt16) return load_raw<uint16_t>(data, offset);
  else if constexpr (D == DType::Int16) return static_cast<uint16_t>(load_raw<uint16_t>(data, offset) ^ 0x8000u);
  else if constexpr (D == DType::UInt32) return load_raw<uint32_t>(data, offset);
  else if constexpr (D == DType::Int32) return static_cast<uint32_t>(load_raw<uint32_t>(data, offset) ^ 0x80000000u);
  else if constexpr (D == DType::UInt64) return load_raw<uint64_t>(data, offset);
  else if constexpr (D == DType::Int64) return static_cast<uint64_t>(load_raw<uint64_t>(data, offset) ^ (uint64_t{1} << 63));
  else if constexpr (D == DType::Float16)
    return float_key<uint16_t>(load_raw<uint16_t>(data, offset), 0x8000u, 0x7c00u);
  else if constexpr (D == DType::BFloat16)
    return float_key<uint16_t>(load_raw<uint16_t>(data, offset), 0x8000u, 0x7f80u);
  else if constexpr (D == DType::Float32)
    return float_key<uint32_t>(load_raw<uint32_t>(data, offset), 0x80000000u, 0x7f800000u);
  else
    return float_key<uint64_t>(load_raw<uint64_t>(data, offset), uint64_t{1} << 63,
                               uint64_t{0x7ff0000000000000});
}

// ---- one row ---------------------------------------------------------------------------------

constexpr int64_t kRadixFrom = 256;  // shorter rows: std::sort of (key, position) pairs

// A key with its position; `Packed` keys of at most 32 bits share one uint64 with a 32-bit
// position (key high), so comparing the integers compares (key, position).
template <class Key>
struct Item {
  Key key;
  uint64_t position;
  bool operator<(const Item& other) const {
    return key != other.key ? key < other.key : position < other.position;
  }
};

inline uint64_t key_of(uint64_t packed) { return packed >> 32; }
template <class Key>
Key key_of(const Item<Key>& item) { return item.key; }

// Stable LSD radix sort of `items` by key bytes [0, key_bytes) (byte b of key_of), through
// `scratch` of the same size; passes where every key has the same byte are skipped.
template <class T>
void radix_sort(std::vector<T>& items, std::vector<T>& scratch, int key_bytes) {
  const size_t n = items.size();
  std::vector<uint32_t> counts(static_cast<size_t>(key_bytes) * 256, 0);
  for (const T& item : items) {
    const auto key = key_of(item);
    for (int b = 0; b < key_bytes; ++b) ++counts[static_cast<size_t>(b) * 256 + ((key >> (8 * b)) & 0xff)];
  }
  scratch.resize(n);
  for (int b = 0; b < key_bytes; ++b) {
    uint32_t* count = &counts[static_cast<size_t>(b) * 256];
    if (std::any_of(count, count + 256, [&](uint32_t c) { return c == n; })) continue;
    uint32_t offset = 0;
    for (int digit = 0; digit < 256; ++digit) {
      const uint32_t c = count[digit];
      count[digit] = offset;
      offset += c;
    }
    for (const T& item : items) scratch[count[(key_of(item) >> (8 * b)) & 0xff]++] = item;
    items.swap(scratch);
  }
}

// Sorts (or, for k < n, selects and sorts the first k of) `items`, whose positions ascend.
template <class T>
void sort_items(std::vector<T>& items, std::vector<T>& scratch, int64_t k, int key_bytes) {
  const auto n = static_cast<int64_t>(items.size());
  if (k < n) {  // (key, position) pairs are distinct: their order is the stable one
    if (k == 0) return;
    std::nth_element(items.begin(), items.begin() + (k - 1), items.end());
    std::sort(items.begin(), items.begin() + (k - 1));
  } else if (n < kRadixFrom) {
    std::sort(items.begin(), items.end());
  } else {
    radix_sort(items, scratch, key_bytes);
  }
}

inline uint64_t position_of(uint64_t packed) { return packed & 0xffffffffu; }
template <class Key>
uint64_t position_of(const Item<Key>& item) { return item.position; }

template <DType D>
void sort_rows(const StridedOperand& input, size_t axis, bool descending, int64_t* out,
               const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides) {
  using Raw = decltype(raw_key<D>(nullptr, 0));
  constexpr bool kPacked = sizeof(Raw) <= 4;
  using T = std::conditional_t<kPacked, uint64_t, Item<uint64_t>>;
  const int64_t n = input.shape[axis];
  const int64_t k = out_shape[axis];
  const int64_t in_step = input.strides[axis], out_step = out_strides[axis];
  // Each row's first element, in the input and in the output.
  std::vector<int64_t> in_rows{0}, out_rows{0};
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (d == axis) continue;
    std::vector<int64_t> in_next, out_next;
    for (int64_t i = 0; i < input.shape[d]; ++i)
      for (size_t r = 0; r < in_rows.size(); ++r) {
        in_next.push_back(in_rows[r] + i * input.strides[d]);
        out_next.push_back(out_rows[r] + i * out_strides[d]);
      }
    in_rows.swap(in_next);
    out_rows.swap(out_next);
  }
  if (kPacked && n > int64_t{0xffffffff})
    throw Error(ErrorKind::Unsupported, "kiln: argsort of a row of more than 2**32 elements");
  const auto rows = static_cast<int64_t>(in_rows.size());
  const char* data = static_cast<const char*>(input.data);
  const int threads = rows * n >= 16384 && rows > 1 ? omp_get_max_threads() : 1;
  #pragma omp parallel num_threads(threads)
  {
    std::vector<T> items, scratch;
    items.reserve(static_cast<size_t>(n));
    #pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      items.clear();
      const int64_t base = in_rows[static_cast<size_t>(r)];
      for (int64_t i = 0; i < n; ++i) {
        Raw raw = raw_key<D>(data, base + i * in_step);
        if (descending) raw = static_cast<Raw>(~raw);
        if constexpr (kPacked)
          items.push_back((static_cast<uint64_t>(raw) << 32) | static_cast<uint64_t>(i));
        else
          items.push_back({static_cast<uint64_t>(raw), static_cast<uint64_t>(i)});
      }
      sort_items(items, scratch, k, static_cast<int>(sizeof(Raw)));
      int64_t* row_out = out + out_rows[static_cast<size_t>(r)];
      for (int64_t j = 0; j < k; ++j)
        row_out[j * out_step] = static_cast<int64_t>(position_of(items[static_cast<size_t>(j)]));
    }
  }
}

}  // namespace

void argsort(const StridedOperand& input, int64_t axis, bool descending, int64_t* out,
             const std::vector<int64_t>& out_shape, const std::vector<int64_t>& out_strides) {
  const auto along = static_cast<size_t>(axis);
  if (along >= input.shape.size() || out_shape.size() != input.shape.size() ||
      out_shape[along] > input.shape[along])
    throw Error(ErrorKind::Internal, "kiln: argsort call with mismatched shapes");
  for (int64_t extent : out_shape)
    if (extent == 0) return;
  switch (input.dtype) {
#define KILN_SORT_CASE(name) \
  case DType::name: return sort_rows<DType::name>(input, along, descending, out, out_shape, out_strides);
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
              "kiln: argsort of " + std::string(dtype_name(input.dtype)) + " values");
}

}  // namespace kiln::externs
