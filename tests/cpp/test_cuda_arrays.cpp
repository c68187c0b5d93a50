// kiln::Array on the GPU through the public API: Array::empty/zeros/to with Device::Cuda, and a
// function compiled with device "cuda" that takes device arrays and returns them, with no copy.
// Without a GPU (CI) asking for device memory is a clear error, and a CPU function refuses a
// device array before it reads it; with one (scripts/gpu-check, filter Cuda*) the round trips
// and results are checked against the host.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compile_test_util.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln {
namespace {

Options options_for(const std::string& device) {
  Options options;
  options.device = device;
  options.cache_dir = test::test_cache_directory();
  return options;
}

TEST(CudaArrays, AnArrayAlreadyThereIsNotCopied) {
  Array host = Array::from_vector<float>({1, 2, 3}, {3});
  EXPECT_EQ(host.device(), Device::Cpu);
  Array same = host.to(Device::Cpu);
  EXPECT_EQ(same.data(), host.data());
}

TEST(CudaArrays, DeviceMemoryWithoutAGpuIsAClearError) {
  if (runtime::cuda::available()) return;  // CudaArrays.RoundTripsAndDeviceResults
  for (auto make : {+[] { return Array::empty(DType::Float32, {4}, Device::Cuda); },
                    +[] { return Array::from_vector<float>({1, 2}, {2}).to(Device::Cuda); }}) {
    try {
      make();
      FAIL() << "a device array without a GPU";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
      EXPECT_NE(std::string(error.what()).find("needs a GPU"), std::string::npos) << error.what();
    }
  }
}

TEST(CudaArrays, ACpuFunctionRefusesADeviceArrayBeforeReadingIt) {
  Function function = compile([](Tensor x) { return x * 2.0; }, options_for("cpu"));
  // Never dereferenced: the run stops at the check.
  Array on_device = Array::borrow(reinterpret_cast<void*>(0x1000), DType::Float64, {4}, {},
                                  nullptr, Device::Cuda);
  try {
    function(on_device);
    FAIL() << "a CPU function ran on GPU memory";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(error.what()).find("GPU memory"), std::string::npos) << error.what();
  }
}

TEST(CudaArrays, RoundTripsAndDeviceResults) {
  if (!runtime::cuda::available()) return;  // CudaArrays.DeviceMemoryWithoutAGpuIsAClearError
  std::vector<double> values;
  for (int k = 0; k < 24; ++k) values.push_back(0.25 * k - 2);
  Array host = Array::from_vector(values, {4, 6});
  Array device = host.to(Device::Cuda);
  EXPECT_EQ(device.device(), Device::Cuda);
  EXPECT_EQ(device.to_vector<double>(), values);
  EXPECT_THROW(device.get({0, 0}), Error);
  EXPECT_EQ(Array::zeros(DType::Int32, {5}, Device::Cuda).to_vector<int32_t>(),
            std::vector<int32_t>(5, 0));
  // A strided device view (every other column, reversed rows) comes back as that view.
  Array view = Array::borrow(static_cast<char*>(device.data()) + 18 * sizeof(double),
                             DType::Float64, {4, 3}, {-6, 2}, nullptr, Device::Cuda);
  std::vector<double> expected;
  for (int row = 3; row >= 0; --row)
    for (int column = 0; column < 6; column += 2) expected.push_back(values[row * 6 + column]);
  EXPECT_EQ(view.to_vector<double>(), expected);
  EXPECT_EQ(view.contiguous().device(), Device::Cuda);

  Function function = compile([](Tensor x) { return kiln::sin(x) * 2.0 + kiln::sum(x); },
                              options_for("cuda"));
  std::vector<Array> results = function(view);  // read in place, strided
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].device(), Device::Cuda);  // no copy back
  double total = 0;
  for (double v : expected) total += v;
  std::vector<double> got = results[0].to_vector<double>();
  for (size_t k = 0; k < expected.size(); ++k)
    EXPECT_NEAR(got[k], std::sin(expected[k]) * 2 + total, 1e-12) << k;
  // From host arrays the same function returns host arrays.
  EXPECT_EQ(function(view.to(Device::Cpu))[0].device(), Device::Cpu);
}

}  // namespace
}  // namespace kiln
