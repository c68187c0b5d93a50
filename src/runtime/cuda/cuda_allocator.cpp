// The caching device allocator (cuda_driver.h: allocate). cuMemAlloc and cuMemFree are slow
// (cuMemFree also waits for the whole device), so freed blocks are kept, by rounded size, and
// handed out again; PyTorch's CUDACachingAllocator does the same, with block splitting kiln
// does not need yet.
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/error.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::runtime::cuda {

using namespace detail;

namespace {

constexpr int64_t kSmallLimit = int64_t(1) << 20;    // up to 1 MiB: rounded to 512 bytes
constexpr int64_t kSmallGranule = 512;
constexpr int64_t kLargeGranule = int64_t(2) << 20;  // above: rounded to 2 MiB

struct BlockCache {
  std::mutex mutex;
  std::multimap<int64_t, CUdeviceptr> free_blocks;  // by rounded size
  int64_t cached = 0;                               // bytes in free_blocks
  int64_t in_use = 0;                               // bytes handed out and not yet given back
};

BlockCache& cache() {
  static BlockCache* instance = new BlockCache;  // never destroyed: arrays may outlive statics
  return *instance;
}

int64_t round_up(int64_t bytes, int64_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

int64_t rounded_size(int64_t bytes) {
  if (bytes <= 0) return kSmallGranule;
  if (bytes <= kSmallLimit) return round_up(bytes, kSmallGranule);
  if (bytes > INT64_MAX - kLargeGranule) {
    throw Error(ErrorKind::Memory,
                "kiln: cannot allocate " + std::to_string(bytes) + " bytes of GPU memory");
  }
  return round_up(bytes, kLargeGranule);
}

// The deleter of every block handed out: back to the free list, never cuMemFree.
void give_back(CUdeviceptr block, int64_t size) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.free_blocks.emplace(size, block);
  c.cached += size;
  c.in_use -= size;
}

std::shared_ptr<void> hand_out(CUdeviceptr block, int64_t size) {
  return std::shared_ptr<void>(reinterpret_cast<void*>(block),
                               [size](void* pointer) { give_back(device_address(pointer), size); });
}

std::string out_of_memory_message(int64_t bytes, int64_t size, CUresult result) {
  int64_t in_use = 0;
  {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    in_use = c.in_use;
  }
  std::string message = "kiln: out of GPU memory allocating " + std::to_string(bytes) +
                        " bytes (" + std::to_string(size) + " rounded) on " + device().name +
                        ": kiln's arrays hold " + std::to_string(in_use) + " bytes";
  size_t free = 0, total = 0;
  if (driver().cuMemGetInfo(&free, &total) == kSuccess) {
    message += ", the GPU has " + std::to_string(free) + " of " + std::to_string(total) +
               " bytes free";
  }
  return message + " (cuMemAlloc: " + describe(result) + ")";
}

}  // namespace

std::shared_ptr<void> allocate(int64_t bytes) {
  if (bytes < 0) {
    throw Error(ErrorKind::Value,
                "kiln: cannot allocate a negative size (" + std::to_string(bytes) + " bytes)");
  }
  make_current();  // throws Unsupported without a GPU
  int64_t size = rounded_size(bytes);
  BlockCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto found = c.free_blocks.find(size);
    if (found != c.free_blocks.end()) {
      CUdeviceptr block = found->second;
      c.free_blocks.erase(found);
      c.cached -= size;
      c.in_use += size;
      return hand_out(block, size);
    }
  }
  const DriverApi& api = driver();
  CUdeviceptr block = 0;
  CUresult result = api.cuMemAlloc(&block, static_cast<size_t>(size));
  if (result == kOutOfMemory) {
    // The cached blocks may be what fills the GPU: give them back to the driver, then retry.
    release_cached_blocks();
    result = api.cuMemAlloc(&block, static_cast<size_t>(size));
  }
  if (result == kOutOfMemory) {
    throw Error(ErrorKind::Memory, out_of_memory_message(bytes, size, result));
  }
  check(result, "cuMemAlloc of " + std::to_string(size) + " bytes");
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.in_use += size;
  }
  return hand_out(block, size);
}

void release_cached_blocks() {
  if (!available()) return;  // nothing was ever cached
  std::multimap<int64_t, CUdeviceptr> blocks;
  BlockCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    blocks.swap(c.free_blocks);
    c.cached = 0;
  }
  if (blocks.empty()) return;
  make_current();
  // Free every block before reporting the first failure, so one bad block leaks only itself.
  CUresult first_failure = kSuccess;
  for (const auto& [size, block] : blocks) {
    CUresult result = driver().cuMemFree(block);
    if (result != kSuccess && first_failure == kSuccess) first_failure = result;
  }
  check(first_failure, "cuMemFree of a cached block");
}

int64_t cached_bytes() {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.cached;
}

}  // namespace kiln::runtime::cuda
