#include "runtime/output_pool.h"

#include <cstdlib>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kBlocksPerSize = 4;  // outputs a caller typically holds at once

}  // namespace

std::shared_ptr<void> OutputPool::take(size_t bytes) {
  size_t size = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_.find(size);
    if (found != free_.end() && !found->second.empty()) {
      block = found->second.back();
      found->second.pop_back();
    }
  }
  if (block == nullptr) block = std::aligned_alloc(kAlignment, size);
  if (block == nullptr)
    throw Error(ErrorKind::Memory,
                "kiln: out of memory allocating " + std::to_string(bytes) + " bytes");
  std::weak_ptr<OutputPool> pool = weak_from_this();
  return std::shared_ptr<void>(block, [pool, size](void* p) {
    if (auto alive = pool.lock())
      alive->give_back(p, size);
    else
      std::free(p);
  });
}

void OutputPool::give_back(void* block, size_t size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*>& blocks = free_[size];
    if (blocks.size() < kBlocksPerSize) {
      blocks.push_back(block);
      return;
    }
  }
  std::free(block);
}

OutputPool::~OutputPool() {
  for (auto& [size, blocks] : free_)
    for (void* block : blocks) std::free(block);
}

}  // namespace kiln::runtime
