// kiln::Array: host arrays. Owning arrays are 64-byte aligned (one cache line, one AVX-512
// vector) so generated kernels may use aligned loads on them.
#include "kiln/array.h"
#include "runtime/host_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "kiln/error.h"
#include "runtime/device_arrays.h"

namespace kiln {
namespace {


[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorKind::Value, error_message("array", "", message));
}

std::string ints_text(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + (values.size() == 1 ? ",)" : ")");
}

// Every extent non-negative, and the byte size of a non-empty array within int64: a shape
// whose count overflowed allocated a few bytes for an array of 2**80 elements. (An empty one
// holds nothing, whatever its other extents: torch makes (2**40, 2**40, 0).)
void check_shape(const std::vector<int64_t>& shape, DType dtype) {
  if (static_cast<int>(dtype) >= kDTypeCount)  // a cast from a bad integer
    throw Error(ErrorKind::Type, error_message("array", "", "unknown dtype " +
                                                              std::to_string(int(dtype))));
  for (int64_t dim : shape) {
    if (dim < 0) fail("negative dimensions are not allowed: " + ints_text(shape));
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return;
  int64_t bytes = dtype_size(dtype);
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, dim, &bytes))  // NumPy's ValueError, not a MemoryError
      throw Error(ErrorKind::Value,
                  error_message("array", "", "array is too big: shape " + ints_text(shape) +
                                                 " needs more than 2**63 bytes"));
  }
}

// Reading the elements of an undefined array (default-constructed or moved from: null data
// for one element) dereferenced null.
void check_defined(const Array& array, const std::string& what) {
  if (!array.defined())
    fail(what + " of an undefined (default-constructed or moved-from) array");
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

double half_to_double(uint16_t bits) {
  _Float16 value;
  std::memcpy(&value, &bits, sizeof value);
  return static_cast<double>(value);
}

// bfloat16 is the upper half of a float32.
double bfloat16_to_double(uint16_t bits) {
  uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof value);
  return static_cast<double>(value);
}

template <class T>
double load(const char* address) {
  T value;
  std::memcpy(&value, address, sizeof value);
  return static_cast<double>(value);
}

double load_as_double(DType dtype, const char* address) {
  switch (dtype) {
    case DType::Bool: return load<uint8_t>(address) != 0 ? 1.0 : 0.0;
    case DType::Int8: return load<int8_t>(address);
    case DType::Int16: return load<int16_t>(address);
    case DType::Int32: return load<int32_t>(address);
    case DType::Int64: return load<int64_t>(address);
    case DType::UInt8: return load<uint8_t>(address);
    case DType::UInt16: return load<uint16_t>(address);
    case DType::UInt32: return load<uint32_t>(address);
    case DType::UInt64: return load<uint64_t>(address);
    case DType::Float16: {
      uint16_t bits;
      std::memcpy(&bits, address, sizeof bits);
      return half_to_double(bits);
    }
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, address, sizeof bits);
      return bfloat16_to_double(bits);
    }
    case DType::Float32: return load<float>(address);
    case DType::Float64: return load<double>(address);
    case DType::Complex64: return load<float>(address);  // the real part
    case DType::Complex128: return load<double>(address);
  }
  return 0;
}

}  // namespace

Array::Array(Array&& other) noexcept
    : owner_(std::move(other.owner_)),
      data_(std::exchange(other.data_, nullptr)),
      dtype_(other.dtype_),
      shape_(std::exchange(other.shape_, {})),
      strides_(std::exchange(other.strides_, {})),
      device_(other.device_) {}

Array& Array::operator=(Array&& other) noexcept {
  if (this != &other) {
    owner_ = std::move(other.owner_);
    data_ = std::exchange(other.data_, nullptr);
    dtype_ = other.dtype_;
    shape_ = std::exchange(other.shape_, {});
    strides_ = std::exchange(other.strides_, {});
    device_ = other.device_;
  }
  return *this;
}

Array Array::empty(DType dtype, std::vector<int64_t> shape, Device device) {
  check_shape(shape, dtype);
  if (device == Device::Cuda) return runtime::empty_device_array(dtype, std::move(shape));
  Array array;
  array.dtype_ = dtype;
  array.strides_ = row_major_strides(shape);
  array.shape_ = std::move(shape);
  array.owner_ = runtime::allocate_host(static_cast<size_t>(array.nbytes()));
  void* data = array.owner_.get();
  array.data_ = data;
  return array;
}

Array Array::zeros(DType dtype, std::vector<int64_t> shape, Device device) {
  Array array = empty(dtype, std::move(shape));
  std::memset(array.data_, 0, static_cast<size_t>(array.nbytes()));
  return array.to(device);
}

Array Array::borrow(void* data, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides) {
  return borrow(data, dtype, std::move(shape), std::move(strides), nullptr);
}

Array Array::borrow(void* data, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, std::shared_ptr<void> owner) {
  return borrow(data, dtype, std::move(shape), std::move(strides), std::move(owner), Device::Cpu);
}

Array Array::borrow(void* data, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, std::shared_ptr<void> owner, Device device) {
  check_shape(shape, dtype);
  if (strides.empty()) strides = row_major_strides(shape);
  if (strides.size() != shape.size()) {
    fail(std::to_string(strides.size()) + " strides " + ints_text(strides) +
         " for an array of shape " + ints_text(shape));
  }
  Array array;
  array.dtype_ = dtype;
  array.shape_ = std::move(shape);
  array.strides_ = std::move(strides);
  if (data == nullptr && array.size() != 0) fail("null data for a non-empty array");
  array.data_ = data;
  array.owner_ = std::move(owner);
  array.device_ = device;
  return array;
}

Array Array::to(Device device) const {
  if (device == device_) return *this;
  check_defined(*this, "to()");
  return runtime::copy_to_other_device(*this);
}

Array Array::view_as_real() const {
  if (!is_complex(dtype_))
    fail("view_as_real needs a complex array, got " + std::string(dtype_name(dtype_)));
  std::vector<int64_t> shape = shape_, strides;
  shape.push_back(2);
  for (int64_t stride : strides_) strides.push_back(2 * stride);
  strides.push_back(1);
  return borrow(data_, component_dtype(dtype_), std::move(shape), std::move(strides), owner_,
                device_);
}

Array Array::view_as_complex() const {
  bool pairs = (dtype_ == DType::Float32 || dtype_ == DType::Float64) && !shape_.empty() &&
               shape_.back() == 2 && strides_.back() == 1;
  for (size_t d = 0; pairs && d + 1 < shape_.size(); ++d) pairs = strides_[d] % 2 == 0 || shape_[d] == 1;
  if (!pairs)
    fail("view_as_complex needs a float32/float64 array whose last axis holds 2 adjacent "
         "elements, got " + std::string(dtype_name(dtype_)) + " " + ints_text(shape_));
  std::vector<int64_t> shape(shape_.begin(), shape_.end() - 1), strides;
  for (size_t d = 0; d + 1 < shape_.size(); ++d) strides.push_back(strides_[d] / 2);
  return borrow(data_, complex_of(dtype_), std::move(shape), std::move(strides), owner_,
                device_);
}

int64_t Array::size() const {
  int64_t count = 1;
  for (int64_t dim : shape_) count *= dim;
  return count;
}

// NumPy's definition: dimensions of size 1 may have any stride, and an empty array is
// contiguous whatever its strides.
bool Array::is_contiguous() const {
  if (size() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

double Array::get(const std::vector<int64_t>& index) const {
  check_defined(*this, "get()");
  if (device_ != Device::Cpu) fail("get() on an array in GPU memory: copy it with to(Device::Cpu)");
  if (index.size() != shape_.size()) {
    fail("index " + ints_text(index) + " does not match the shape " + ints_text(shape_));
  }
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape_[d]) {
      fail("index " + ints_text(index) + " is out of bounds for shape " + ints_text(shape_));
    }
    offset += index[d] * strides_[d];
  }
  return load_as_double(dtype_, static_cast<const char*>(data_) + offset * dtype_size(dtype_));
}

Array Array::contiguous() const {
  check_defined(*this, "contiguous()");
  if (device_ != Device::Cpu) return to(Device::Cpu).to(device_);
  Array result = empty(dtype_, shape_);
  int64_t element_bytes = dtype_size(dtype_);
  const char* source = static_cast<const char*>(data_);
  char* target = static_cast<char*>(result.data_);
  std::vector<int64_t> index(shape_.size(), 0);
  int64_t offset = 0;  // in elements, follows `index` through the strides
  for (int64_t n = 0; n < size(); ++n) {
    std::memcpy(target + n * element_bytes, source + offset * element_bytes,
                static_cast<size_t>(element_bytes));
    for (size_t d = shape_.size(); d-- > 0;) {
      offset += strides_[d];
      if (++index[d] < shape_[d]) break;
      offset -= strides_[d] * shape_[d];
      index[d] = 0;
    }
  }
  return result;
}

}  // namespace kiln
