// Little-endian byte writer and bounds-checked reader for kiln's serialised IR. The reader
// takes bytes that come back from a disk cache and may be damaged: every read is checked, and
// anything out of range is an Error(Value) ("<what> is damaged: ..."), never a wild read.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"

namespace kiln::ir {

class ByteWriter {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put_string(std::string_view text) {
    put<uint64_t>(text.size());
    bytes_.append(text);
  }
  template <class T>
  void put_vector(const std::vector<T>& values) {
    put<uint64_t>(values.size());
    for (const T& value : values) put(value);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  ByteReader(std::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof value);
    position_ += sizeof value;
    return value;
  }
  std::string get_string() {
    uint64_t size = get<uint64_t>();
    need(size);
    std::string text(bytes_.substr(position_, size));
    position_ += size;
    return text;
  }
  template <class T>
  std::vector<T> get_vector() {
    uint64_t size = count(sizeof(T));
    std::vector<T> values;
    values.reserve(size);
    for (uint64_t k = 0; k < size; ++k) values.push_back(get<T>());
    return values;
  }
  // A element count whose elements take at least `element_bytes` each: checked against the
  // bytes left, so a damaged count cannot make the reader allocate without bound.
  uint64_t count(uint64_t element_bytes = 1) {
    uint64_t size = get<uint64_t>();
    if (element_bytes > 0 && size > (bytes_.size() - position_) / element_bytes)
      fail("a count runs past the end");
    return size;
  }
  // An integer that must lie in [low, high).
  template <class T>
  T get_in_range(int64_t low, int64_t high, const char* name) {
    T value = get<T>();
    if (static_cast<int64_t>(value) < low || static_cast<int64_t>(value) >= high)
      fail(std::string(name) + " " + std::to_string(static_cast<int64_t>(value)) +
           " is out of range");
    return value;
  }
  bool at_end() const { return position_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorKind::Value, "kiln: " + what_ + " is damaged: " + why + " (at byte " +
                                      std::to_string(position_) + ")");
  }

 private:
  void need(uint64_t size) {
    if (size > bytes_.size() - position_) fail("it ends early");
  }
  std::string_view bytes_;
  std::string what_;
  size_t position_ = 0;
};

}  // namespace kiln::ir
