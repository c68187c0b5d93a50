// Weights in a library's own layout, kept across calls for as long as the caller's weights keep
// their contents. A model's weights are the same on every inference call, but they reach the
// library as plain (or freshly computed: batch norm folded in) arrays, so each call would
// reorder them again: a pass over them for a blocked layout, many for a Winograd transform (a
// 512x512 3x3 filter: 47 ms on 2 cores, more than its convolution). A hit compares the caller's
// bytes with a copy of those it prepared from (one read of the weights: never a stale result).
// An address is kept from its second call on (weights made afresh at new addresses on every
// call are never copied), and one whose contents keep changing (training updates the weights
// every step) stops being kept after its second change. The bytes kept, copies and prepared
// weights, are bounded for the process.
#pragma once
#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::externs {

class PreparedWeights {
 public:
  // What is kept for one address: a copy of the caller's weights and up to `kForms` prepared
  // forms of them (one per algorithm; an empty memory until prepared).
  static constexpr size_t kForms = 2;
  struct Entry {
    std::vector<char> contents;
    dnnl::memory forms[kForms];
    bool repeated = false;  // the contents were the same on an earlier call
    int changes = 0;
  };

  PreparedWeights() = default;
  PreparedWeights(const PreparedWeights&) = delete;
  PreparedWeights& operator=(const PreparedWeights&) = delete;
  ~PreparedWeights();

  // The entry for the `bytes` at `data`: its forms are valid when its contents were equal
  // (entry->repeated then), else they were dropped and the contents copied afresh. nullptr
  // when the address is not kept (seen for the first time, its contents change on most calls,
  // or the budget is spent): the caller prepares its own copy this call.
  Entry* find(const void* data, size_t bytes);
  // Makes `form` of `entry` a new memory of `desc`, counted against the budget; false (the
  // entry unchanged) when the budget is spent.
  bool allocate(Entry& entry, size_t form, const dnnl::memory::desc& desc,
                const dnnl::engine& engine);
  // Drops `form` of `entry` (no longer needed).
  void release(Entry& entry, size_t form);

 private:
  void forget(const void* data);
  std::unordered_map<const void*, std::unique_ptr<Entry>> entries_;
  std::unordered_set<const void*> seen_once_;
  std::unordered_set<const void*> volatile_;  // addresses whose contents keep changing
};

}  // namespace kiln::externs
