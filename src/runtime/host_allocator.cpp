#include "runtime/host_allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kCachedFrom = size_t(1) << 20;  // blocks below 1 MiB are not worth keeping
constexpr size_t kCacheLimit = size_t(1) << 30;  // at most 1 GiB kept for reuse

// Freed large blocks by exact rounded size. Process-wide: every compiled function shares it.
struct BlockCache {
  std::mutex mutex;
  std::multimap<size_t, void*> blocks;
  size_t bytes = 0;
};

BlockCache& cache() {
  static BlockCache* instance = new BlockCache;  // never destroyed: arrays may outlive statics
  return *instance;
}

void give_back(void* block, size_t size) {
  BlockCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + size <= kCacheLimit) {
      c.blocks.emplace(size, block);
      c.bytes += size;
      return;
    }
  }
  std::free(block);
}

}  // namespace

std::shared_ptr<void> allocate_host(size_t bytes) {
  size_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (size == 0) size = kAlignment;
  if (size >= kCachedFrom) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto found = c.blocks.find(size);
    if (found != c.blocks.end()) {
      void* block = found->second;
      c.blocks.erase(found);
      c.bytes -= size;
      return std::shared_ptr<void>(block, [size](void* p) { give_back(p, size); });
    }
  }
  void* block = std::aligned_alloc(kAlignment, size);
  if (block == nullptr)
    throw Error(ErrorKind::Memory,
                "kiln: out of memory allocating " + std::to_string(bytes) + " bytes");
  if (size < kCachedFrom) return std::shared_ptr<void>(block, std::free);
  return std::shared_ptr<void>(block, [size](void* p) { give_back(p, size); });
}

void release_cached_host_memory() {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, block] : c.blocks) std::free(block);
  c.blocks.clear();
  c.bytes = 0;
}

}  // namespace kiln::runtime
