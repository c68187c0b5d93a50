// kiln::Array: a host array with a dtype, a shape and strides (in elements, NumPy views
// included). Either owning (allocated by kiln, 64-byte aligned) or borrowed (the caller keeps
// the memory alive). Compiled functions read inputs of any strides in place.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/dtype.h"

namespace kiln {

class Array {
 public:
  Array() = default;
  // A new contiguous (row-major) array; contents uninitialised.
  static Array empty(DType dtype, std::vector<int64_t> shape);
  static Array zeros(DType dtype, std::vector<int64_t> shape);
  // Wraps caller memory. Empty strides mean row-major contiguous.
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides = {});
  // Shares ownership of `owner` (e.g. a Python object) while wrapping its memory.
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides, std::shared_ptr<void> owner);
  template <class T>
  static Array from_vector(const std::vector<T>& values, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const;
  int64_t nbytes() const { return size() * dtype_size(dtype_); }
  bool is_contiguous() const;
  bool defined() const { return data_ != nullptr || size() == 0; }

  void* data() const { return data_; }
  template <class T>
  T* data_as() const { return static_cast<T*>(data_); }
  // Element at a multi-index, converted to double (tests and examples; not for hot loops).
  double get(const std::vector<int64_t>& index) const;
  // Flattened row-major copy converted to T (tests and examples).
  template <class T>
  std::vector<T> to_vector() const;
  // A contiguous copy.
  Array contiguous() const;
  // The same memory seen another way, as torch.view_as_real / view_as_complex: a complex
  // array of shape S as its real parts of shape S + [2] (real, imaginary), and back.
  Array view_as_real() const;
  Array view_as_complex() const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }

template <class T>
Array Array::from_vector(const std::vector<T>& values, std::vector<int64_t> shape) {
  Array array = empty(dtype_of<T>(), std::move(shape));
  T* out = array.data_as<T>();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < array.size(); ++i) out[i] = values[i];
  return array;
}

template <class T>
std::vector<T> Array::to_vector() const {
  std::vector<T> result;
  result.reserve(static_cast<size_t>(size()));
  std::vector<int64_t> index(shape_.size(), 0);
  for (int64_t n = 0; n < size(); ++n) {
    result.push_back(static_cast<T>(get(index)));
    for (int d = ndim() - 1; d >= 0; --d) {
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
  return result;
}

}  // namespace kiln
