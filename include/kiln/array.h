// kiln::Array: an array with a dtype, a shape and strides (in elements, NumPy views included),
// in host memory or in the memory of the CUDA device kiln runs on. Either owning (allocated by
// kiln: 64-byte aligned on the host, from kiln's caching allocator on the GPU) or borrowed (the
// caller keeps the memory alive). Compiled functions read inputs of any strides in place; a
// function compiled with device "cuda" given device arrays returns device arrays, with no copy.
//
//   kiln::Array x = kiln::Array::from_vector(values, {n}).to(kiln::Device::Cuda);
//   kiln::Array y = gpu_step(x)[0];                  // on the GPU
//   std::vector<float> host = y.to_vector<float>();  // copied back
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln {

// Where an array's memory lies: the host, or global memory of the CUDA device kiln runs on
// (device 0, or $KILN_CUDA_DEVICE).
enum class Device : uint8_t { Cpu, Cuda };

class Array {
 public:
  Array() = default;
  Array(const Array&) = default;
  Array& operator=(const Array&) = default;
  // An array moved from is undefined, as a default-constructed one (an error where it is
  // used), never a 0-d view of the first element of the memory it handed on.
  Array(Array&& other) noexcept;
  Array& operator=(Array&& other) noexcept;
  ~Array() = default;
  // A new contiguous (row-major) array; contents uninitialised. Device::Cuda on a machine
  // without a usable GPU: Error(Unsupported) saying why.
  static Array empty(DType dtype, std::vector<int64_t> shape, Device device = Device::Cpu);
  static Array zeros(DType dtype, std::vector<int64_t> shape, Device device = Device::Cpu);
  // Wraps caller memory. Empty strides mean row-major contiguous.
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides = {});
  // Shares ownership of `owner` (e.g. a Python object) while wrapping its memory.
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides, std::shared_ptr<void> owner);
  // Wraps caller memory on `device` (for Device::Cuda a device pointer: cuMemAlloc's,
  // cudaMalloc's, a torch CUDA tensor's data_ptr()).
  static Array borrow(void* data, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides, std::shared_ptr<void> owner, Device device);
  template <class T>
  static Array from_vector(const std::vector<T>& values, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
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
  // The array on `device`: itself when it is there already, else a contiguous copy (the call
  // returns once the copy is done).
  Array to(Device device) const;
  // Element at a multi-index, converted to double (tests and examples; not for hot loops; a
  // device array: Error(Value), copy it with to(Device::Cpu) first).
  double get(const std::vector<int64_t>& index) const;
  // Flattened row-major copy converted to T (tests and examples), on the host.
  template <class T>
  std::vector<T> to_vector() const;
  // A contiguous copy, on the same device.
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
  Device device_ = Device::Cpu;
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
  // One value per element: fewer would leave elements uninitialised, more would be dropped.
  if (static_cast<int64_t>(values.size()) != array.size())
    throw Error(ErrorKind::Value, "kiln::Array::from_vector: " + std::to_string(values.size()) +
                                      " values for a shape of " + std::to_string(array.size()) +
                                      " elements");
  T* out = array.data_as<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return array;
}

template <class T>
std::vector<T> Array::to_vector() const {
  if (device_ != Device::Cpu) return to(Device::Cpu).to_vector<T>();
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
