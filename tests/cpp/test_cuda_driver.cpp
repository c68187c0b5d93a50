// The CUDA driver layer (runtime/cuda/cuda_driver.h). Each test checks something on both kinds of
// machine: without a GPU, that every entry point refuses with a clear Unsupported error; with
// one, that kernels compile, load, run and are timed, and that the allocator reuses blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc_helpers.h"
#include "runtime/disk_cache.h"
#include "runtime/private_files.h"

namespace {

namespace cuda = kiln::runtime::cuda;
using kiln::Error;
using kiln::ErrorKind;

constexpr const char* kAddOne = R"(
extern "C" __global__ void add_one(float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
)";

// Runs `body`, which must throw kiln::Error of `kind` whose message contains `text`.
template <typename Body>
void expect_error(Body body, ErrorKind kind, const std::string& text) {
  try {
    body();
    ADD_FAILURE() << "no kiln::Error thrown; expected one containing: " << text;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).rfind("kiln: ", 0), 0u) << error.what();
  }
}

void expect_unsupported(void (*body)()) {
  expect_error(body, ErrorKind::Unsupported, "device=\"cuda\" needs an NVIDIA GPU");
}

// The architecture to compile for: the device's, or Turing's (the oldest CUDA 13 compiles for).
int target_architecture() { return cuda::available() ? cuda::device().architecture : 75; }

bool nvrtc_found() {
  try {
    cuda::nvrtc_version();
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(CudaDriver, AvailabilityAndDevice) {
  if (!cuda::available()) {
    EXPECT_FALSE(cuda::unavailable_reason().empty());
    EXPECT_FALSE(cuda::available());  // the answer is cached, not recomputed differently
    expect_error([] { cuda::device(); }, ErrorKind::Unsupported,
                 "kiln: device=\"cuda\" needs an NVIDIA GPU and its driver: " +
                     cuda::unavailable_reason());
    expect_unsupported([] { cuda::make_current(); });
    int host_value = 0;
    EXPECT_FALSE(cuda::is_device_pointer(&host_value));
    EXPECT_FALSE(cuda::is_device_pointer(nullptr));
  } else {
    EXPECT_TRUE(cuda::unavailable_reason().empty());
    const cuda::DeviceInfo& info = cuda::device();
    EXPECT_GE(info.architecture, 70);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.multiprocessors, 0);
    EXPECT_EQ(info.shared_memory_per_block, 48 * 1024);
    EXPECT_GE(info.shared_memory_per_block_optin, info.shared_memory_per_block);
    EXPECT_GE(info.max_threads_per_block, 1024);
    EXPECT_EQ(info.warp_size, 32);
    EXPECT_GE(info.driver_version, 11000);
    EXPECT_GT(info.total_memory, int64_t(1) << 30);
    EXPECT_EQ(&cuda::device(), &info);  // queried once
    cuda::make_current();
    cuda::make_current();  // already current: a no-op
    int host_value = 0;
    EXPECT_FALSE(cuda::is_device_pointer(&host_value));
  }
}

TEST(CudaDriver, MemoryNeedsTheDevice) {
  if (!cuda::available()) {
    expect_unsupported([] { cuda::allocate(16); });
    expect_unsupported([] { cuda::synchronize(nullptr); });
    expect_unsupported([] { cuda::time_ms(nullptr, [] {}); });
    expect_unsupported([] { cuda::Module::load("not a cubin"); });
    expect_unsupported([] {
      char host[4] = {};
      cuda::copy_to_host(host, host, 4, nullptr);
    });
    EXPECT_EQ(cuda::cached_bytes(), 0);
    cuda::release_cached_blocks();  // nothing to release: no error
  } else {
    std::shared_ptr<void> block = cuda::allocate(16);
    ASSERT_NE(block.get(), nullptr);
    EXPECT_TRUE(cuda::is_device_pointer(block.get()));
    EXPECT_NE(cuda::allocate(0).get(), nullptr);
    expect_error([] { cuda::allocate(-1); }, ErrorKind::Value, "negative");
  }
}

TEST(CudaDriver, NvrtcCompilesOrSaysWhatItTried) {
  if (!nvrtc_found()) {
    // No GPU is needed to compile, but NVRTC is; the message lists where it was looked for.
    expect_error([] { cuda::nvrtc_version(); }, ErrorKind::Unsupported, "libnvrtc.so.13");
    expect_error([] { cuda::compile_cubin(kAddOne, "add_one.cu", 90); }, ErrorKind::Unsupported,
                 "/usr/local/cuda/lib64/libnvrtc.so");
    EXPECT_TRUE(!cuda::available()) << "a GPU machine should have NVRTC for these tests";
    return;
  }
  EXPECT_GE(cuda::nvrtc_version(), 12000);
  std::string cubin = cuda::compile_cubin(kAddOne, "add_one.cu", target_architecture());
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  // A compile error names the program and carries NVRTC's log (file name, line, message).
  expect_error(
      [] {
        cuda::compile_cubin("extern \"C\" __global__ void broken() {\n  undeclared_name = 1;\n}",
                            "broken.cu", target_architecture());
      },
      ErrorKind::Internal,
      "kiln: NVRTC could not compile broken.cu: broken.cu(2): error: identifier "
      "\"undeclared_name\" is undefined");
  // Warnings (a generated kernel's unused variables, hundreds of them) stay out of the message,
  // so the error is in it however long the log.
  expect_error(
      [] {
        std::string source = "extern \"C\" __global__ void noisy() {\n";
        for (int k = 0; k < 400; ++k) source += "  int unused" + std::to_string(k) + " = 0;\n";
        cuda::compile_cubin(source + "  undeclared_name = 1;\n}", "noisy.cu", target_architecture());
      },
      ErrorKind::Internal,
      "kiln: NVRTC could not compile noisy.cu: noisy.cu(402): error: identifier "
      "\"undeclared_name\" is undefined");
  expect_error([] { cuda::compile_cubin(kAddOne, "add_one.cu", 0); }, ErrorKind::Value,
               "architecture 0");
}

TEST(CudaDriver, CompileLoadLaunchCopyBack) {
  if (!cuda::available()) {
    expect_unsupported([] { cuda::Module::load(std::string(64, '\0')); });
    return;
  }
  std::string cubin = cuda::compile_cubin(kAddOne, "add_one.cu", cuda::device().architecture);
  std::shared_ptr<cuda::Module> module = cuda::Module::load(cubin);
  void* add_one = module->function("add_one");
  ASSERT_NE(add_one, nullptr);
  expect_error([&] { module->function("no_such_kernel"); }, ErrorKind::Internal,
               "cuModuleGetFunction(\"no_such_kernel\") failed: CUDA_ERROR_NOT_FOUND");

  constexpr long long kCount = 1000;
  std::vector<float> host(kCount);
  for (long long i = 0; i < kCount; ++i) host[i] = static_cast<float>(i) * 0.5f;
  std::shared_ptr<void> device_data = cuda::allocate(kCount * sizeof(float));
  cuda::copy_to_device(device_data.get(), host.data(), kCount * sizeof(float), nullptr);

  void* pointer = device_data.get();
  long long count = kCount;
  void* params[] = {&pointer, &count};
  cuda::launch(add_one, {(kCount + 255) / 256, 1, 1}, {256, 1, 1}, 0, nullptr, params, "add_one");
  std::vector<float> result(kCount, -1.0f);
  cuda::copy_to_host(result.data(), device_data.get(), kCount * sizeof(float), nullptr);
  for (long long i = 0; i < kCount; ++i) ASSERT_EQ(result[i], host[i] + 1.0f) << "at " << i;

  // Device-to-device copy and zeroing.
  std::shared_ptr<void> copy = cuda::allocate(kCount * sizeof(float));
  cuda::copy_device_to_device(copy.get(), device_data.get(), kCount * sizeof(float), nullptr);
  cuda::memset_zero(device_data.get(), kCount * sizeof(float), nullptr);
  std::vector<float> zeros(kCount, -1.0f);
  cuda::copy_to_host(zeros.data(), device_data.get(), kCount * sizeof(float), nullptr);
  cuda::copy_to_host(result.data(), copy.get(), kCount * sizeof(float), nullptr);
  for (long long i = 0; i < kCount; ++i) {
    ASSERT_EQ(zeros[i], 0.0f) << "at " << i;
    ASSERT_EQ(result[i], host[i] + 1.0f) << "at " << i;
  }

  // A launch the driver refuses names the kernel and the configuration.
  expect_error(
      [&] {
        cuda::launch(add_one, {1, 1, 1}, {4096, 1, 1}, 0, nullptr, params, "add_one");
      },
      ErrorKind::Internal, "cuLaunchKernel of add_one (grid 1x1x1, block 4096x1x1");
  expect_error(
      [&] { cuda::launch(add_one, {0, 1, 1}, {256, 1, 1}, 0, nullptr, params, "add_one"); },
      ErrorKind::Value, "add_one");
  // Above 48 KiB of dynamic shared memory needs the opt-in; beyond the device's limit is refused.
  cuda::set_max_dynamic_shared(add_one, 64 * 1024);
  expect_error(
      [&] {
        cuda::set_max_dynamic_shared(add_one, cuda::device().shared_memory_per_block_optin + 1);
      },
      ErrorKind::Value, "dynamic shared memory");
  cuda::synchronize(nullptr);
}

// A loop's induction variable: both 32-bit words land, in stream order, queued directly and in a
// captured graph (a reduce-overhead replay of a host loop).
TEST(CudaDriver, WriteInt64OnTheStreamAndInAGraph) {
  if (!cuda::available()) {
    expect_unsupported([] { cuda::write_int64(nullptr, 1, nullptr); });
    return;
  }
  std::shared_ptr<void> slot = cuda::allocate(sizeof(int64_t));
  auto read = [&] {
    int64_t value = 0;
    cuda::copy_to_host(&value, slot.get(), sizeof value, nullptr);
    return value;
  };
  constexpr int64_t kWords = -0x123456789abcdefLL;  // both words differ, the high one negative
  cuda::memset_zero(slot.get(), sizeof(int64_t), nullptr);
  cuda::write_int64(slot.get(), kWords, nullptr);
  EXPECT_EQ(read(), kWords);
  cuda::write_int64(slot.get(), 7, nullptr);
  cuda::write_int64(slot.get(), int64_t{1} << 40, nullptr);  // the later write wins
  EXPECT_EQ(read(), int64_t{1} << 40);
  std::shared_ptr<cuda::Graph> graph = cuda::Graph::capture(
      [&](void* stream) { cuda::write_int64(slot.get(), 123456789012345LL, stream); });
  cuda::memset_zero(slot.get(), sizeof(int64_t), nullptr);
  EXPECT_EQ(read(), 0);
  graph->launch(nullptr);
  EXPECT_EQ(read(), 123456789012345LL);
}

TEST(CudaDriver, AllocatorReusesFreedBlocks) {
  if (!cuda::available()) {
    expect_unsupported([] { cuda::allocate(1 << 20); });
    EXPECT_EQ(cuda::cached_bytes(), 0);
    return;
  }
  cuda::synchronize(nullptr);
  cuda::release_cached_blocks();
  ASSERT_EQ(cuda::cached_bytes(), 0);

  std::shared_ptr<void> small = cuda::allocate(1000);  // rounded to 1024 bytes
  void* small_address = small.get();
  small.reset();
  EXPECT_EQ(cuda::cached_bytes(), 1024);
  small = cuda::allocate(1000);
  EXPECT_EQ(small.get(), small_address);
  EXPECT_EQ(cuda::cached_bytes(), 0);
  std::shared_ptr<void> also_small = cuda::allocate(1010);  // same rounded size, a new block
  EXPECT_NE(also_small.get(), small_address);

  std::shared_ptr<void> large = cuda::allocate(3 << 20);  // rounded to 4 MiB
  void* large_address = large.get();
  large.reset();
  EXPECT_EQ(cuda::cached_bytes(), 4 << 20);
  large = cuda::allocate((4 << 20) - 100);  // the same 4 MiB class
  EXPECT_EQ(large.get(), large_address);

  small.reset();
  also_small.reset();
  large.reset();
  EXPECT_EQ(cuda::cached_bytes(), 2048 + (4 << 20));
  cuda::release_cached_blocks();
  EXPECT_EQ(cuda::cached_bytes(), 0);

  // More than the GPU has: the cache is released, the retry fails, the error says so.
  expect_error([] { cuda::allocate(int64_t(1) << 50); }, ErrorKind::Memory,
               "kiln: out of GPU memory allocating 1125899906842624 bytes");
}

TEST(CudaDriver, TimeMsMeasuresKernels) {
  if (!cuda::available()) {
    expect_unsupported([] { cuda::time_ms(nullptr, [] {}); });
    return;
  }
  std::string cubin = cuda::compile_cubin(kAddOne, "add_one.cu", cuda::device().architecture);
  std::shared_ptr<cuda::Module> module = cuda::Module::load(cubin);
  void* add_one = module->function("add_one");
  constexpr long long kCount = 1 << 22;
  std::shared_ptr<void> data = cuda::allocate(kCount * sizeof(float));
  cuda::memset_zero(data.get(), kCount * sizeof(float), nullptr);
  void* pointer = data.get();
  long long count = kCount;
  void* params[] = {&pointer, &count};
  constexpr int kLaunches = 10;
  double milliseconds = cuda::time_ms(nullptr, [&] {
    for (int i = 0; i < kLaunches; ++i) {
      cuda::launch(add_one, {kCount / 256, 1, 1}, {256, 1, 1}, 0, nullptr, params, "add_one");
    }
  });
  EXPECT_GT(milliseconds, 0.0);
  EXPECT_LT(milliseconds, 10000.0);
  std::vector<float> head(16);
  cuda::copy_to_host(head.data(), data.get(), head.size() * sizeof(float), nullptr);
  for (float value : head) EXPECT_EQ(value, static_cast<float>(kLaunches));
}

}  // namespace

// A program's units compile in kiln-nvrtc processes (NVRTC compiles one program at a time in a
// process): helpers built beside libkiln.so, kept from compile to compile, make the cubin this
// process would, from several threads at once; a compile error comes back with NVRTC's message
// and leaves the helper serving.
TEST(CudaDriver, NvrtcHelpersCompileAsThisProcessDoes) {
  char directory_template[] = "/tmp/kiln-nvrtc-test-XXXXXX";
  ASSERT_NE(mkdtemp(directory_template), nullptr);
  const std::string directory = directory_template;
  const std::string source = directory + "/kernel.cpp", broken = directory + "/broken.cpp";
  kiln::runtime::write_private_file(source, kAddOne);
  kiln::runtime::write_private_file(broken,
                                    "extern \"C\" __global__ void broken() {\n  undeclared = 1;\n}");
  if (!nvrtc_found()) {
    EXPECT_EQ(cuda::compile_in_helper(source, directory + "/a.cubin", 90),
              cuda::HelperCompile::no_helper);
    expect_error([&] { cuda::compile_cubin_file(source, directory + "/a.cubin", 90); },
                 ErrorKind::Unsupported, "libnvrtc.so.13");
    return;
  }
  ASSERT_FALSE(cuda::nvrtc_helper_path().empty()) << "kiln-nvrtc is built beside libkiln.so";
  const int architecture = target_architecture();
  // A helper started for a thread that ends at once outlives it (a child started with
  // PR_SET_PDEATHSIG dies with the thread that started it), and serves the next compiles.
  cuda::HelperCompile first = cuda::HelperCompile::no_helper;
  std::thread([&] {
    first = cuda::compile_in_helper(source, directory + "/first.cubin", architecture);
  }).join();
  EXPECT_EQ(first, cuda::HelperCompile::compiled);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int started = cuda::nvrtc_helpers_running();
  EXPECT_GE(started, 1);
  EXPECT_LE(started, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> threads;
  std::atomic<int> compiled{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      compiled += cuda::compile_in_helper(source, directory + "/helper" + std::to_string(k) +
                                                      ".cubin", architecture) ==
                  cuda::HelperCompile::compiled;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(compiled.load(), 4);
  EXPECT_GE(cuda::nvrtc_helpers_running(), started);
  cuda::compile_cubin_file(source, directory + "/here.cubin", architecture);
  std::string from_here;
  kiln::runtime::Descriptor here = kiln::runtime::open_private_file(directory + "/here.cubin");
  constexpr size_t kMost = kiln::runtime::kMaxObjectBytes;
  ASSERT_TRUE(here.valid() && kiln::runtime::read_all(here.get(), from_here, kMost));
  EXPECT_EQ(from_here.substr(0, 4), "\x7f" "ELF");
  for (int k = 0; k < 4; ++k) {
    std::string from_helper;
    kiln::runtime::Descriptor file =
        kiln::runtime::open_private_file(directory + "/helper" + std::to_string(k) + ".cubin");
    ASSERT_TRUE(file.valid() && kiln::runtime::read_all(file.get(), from_helper, kMost)) << k;
    EXPECT_EQ(from_helper, from_here) << k;
  }
  expect_error(
      [&] { cuda::compile_in_helper(broken, directory + "/broken.cubin", architecture); },
      ErrorKind::Internal,
      "kiln: NVRTC could not compile kernel.cu: kernel.cu(2): error: identifier \"undeclared\"");
  const int serving = cuda::nvrtc_helpers_running();
  EXPECT_EQ(cuda::compile_in_helper(source, directory + "/after.cubin", architecture),
            cuda::HelperCompile::compiled);
  EXPECT_EQ(cuda::nvrtc_helpers_running(), serving);  // the same helpers, none lost or added
  std::filesystem::remove_all(directory);
}

// NVRTC's ptxas crashes on some valid kernels (CUDA 13.0 on tests/cpp/data/ptxas_crash_sm90.cu).
// A crash costs the helper that compiled the unit, never this process: compile_in_helper says
// the helper died and how, and compile_cubin_file_isolated compiles the unit again with other
// ptxas settings. A helper killed while it compiles is the same case as a crash.
TEST(CudaDriver, NvrtcCrashCostsAHelperNotThisProcess) {
  if (!nvrtc_found() || cuda::nvrtc_helper_path().empty())
    GTEST_SKIP() << "no NVRTC here: compile_in_helper has no helper to lose (tested above)";
  char directory_template[] = "/tmp/kiln-nvrtc-crash-XXXXXX";
  ASSERT_NE(mkdtemp(directory_template), nullptr);
  const std::string directory = directory_template;
  std::ifstream data(KILN_TEST_DATA_DIR "/ptxas_crash_sm90.cu");
  const std::string crashing((std::istreambuf_iterator<char>(data)), {});
  ASSERT_GT(crashing.size(), 1000u);
  const std::string source = directory + "/crash.cu";
  kiln::runtime::write_private_file(source, crashing);

  std::string death;
  const cuda::HelperCompile plain =
      cuda::compile_in_helper(source, directory + "/plain.cubin", 90, {}, &death);
  const bool crashes_here = plain == cuda::HelperCompile::died;  // a later NVRTC may be fixed
  if (crashes_here) EXPECT_NE(death.find("signal"), std::string::npos) << death;
  else EXPECT_EQ(plain, cuda::HelperCompile::compiled);

  const std::string note =
      cuda::compile_cubin_file_isolated(source, directory + "/isolated.cubin", 90);
  std::string cubin;
  kiln::runtime::Descriptor object = kiln::runtime::open_private_file(directory + "/isolated.cubin");
  ASSERT_TRUE(object.valid() &&
              kiln::runtime::read_all(object.get(), cubin, kiln::runtime::kMaxObjectBytes));
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  if (crashes_here) {
    EXPECT_NE(note.find("with the default options"), std::string::npos) << note;
    EXPECT_NE(note.find("compiled with --ptxas-options="), std::string::npos) << note;
  } else {
    EXPECT_EQ(note, "");
  }

  // A helper killed mid-compile: every helper of this process is killed as soon as it starts;
  // compile_cubin_file_isolated runs out of settings and says so.
  std::atomic<bool> done{false};
  std::thread killer([&] {
    while (!done) {
      for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string pid = entry.path().filename();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat_file(entry.path() / "stat");
        const std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
        // "PID (COMMAND) STATE PARENT ...": kiln-nvrtc processes whose parent is this one
        const size_t command_end = stat.rfind(')');
        if (stat.find(" (kiln-nvrtc) ") == std::string::npos || command_end == std::string::npos)
          continue;
        std::istringstream fields(stat.substr(command_end + 1));
        std::string state;
        int parent = 0;
        if (fields >> state >> parent && parent == getpid()) kill(std::stoi(pid), SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  try {
    cuda::compile_cubin_file_isolated(source, directory + "/killed.cubin", 90);
    ADD_FAILURE() << "every helper was killed, yet the unit compiled";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Internal);
    const std::string message = error.what();
    EXPECT_NE(message.find("kiln: the CUDA compiler crashed on " + source), std::string::npos)
        << message;
    EXPECT_NE(message.find("killed by signal 9"), std::string::npos) << message;
    EXPECT_NE(message.find("--ptxas-options=-O0"), std::string::npos) << message;
  }
  done = true;
  killer.join();
  std::filesystem::remove_all(directory);
}
