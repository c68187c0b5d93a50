// reduce-overhead's outputs: blocks recycled per executable. An output array returned to the
// caller owns its block; when the caller drops it the block goes back to the pool (if the
// executable still exists), so a steady stream of calls allocates nothing, whatever the size
// (the process-wide host allocator keeps only blocks of 1 MiB and more).
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::runtime {

struct OutputPool : std::enable_shared_from_this<OutputPool> {
  // A 64-byte aligned block of at least `bytes`, returned here when its last owner goes.
  std::shared_ptr<void> take(size_t bytes);
  ~OutputPool();

 private:
  void give_back(void* block, size_t size);
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
};

}  // namespace kiln::runtime
