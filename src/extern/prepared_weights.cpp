#include "extern/prepared_weights.h"

#include <atomic>
#include <cstring>

namespace kiln::externs {
namespace {

// Bytes kept by every PreparedWeights of the process: copies and prepared forms. resnet18's
// inference keeps about 0.3 GB (its 45 MB of weights, their copy, their Winograd forms).
constexpr size_t kBudgetBytes = size_t(1) << 30;
constexpr size_t kMaxEntries = 256;  // per PreparedWeights (a problem's distinct weights)
std::atomic<size_t> kept_bytes{0};

bool reserve(size_t bytes) {
  size_t kept = kept_bytes.load();
  do {
    if (kept + bytes > kBudgetBytes) return false;
  } while (!kept_bytes.compare_exchange_weak(kept, kept + bytes));
  return true;
}

size_t entry_bytes(const PreparedWeights::Entry& entry) {
  size_t bytes = entry.contents.size();
  for (const dnnl::memory& form : entry.forms)
    if (form) bytes += form.get_desc().get_size();
  return bytes;
}

// Adds `data` to a set of addresses that grows to a bound, then starts over.
void remember(std::unordered_set<const void*>& addresses, const void* data) {
  if (addresses.size() >= 4 * kMaxEntries) addresses.clear();
  addresses.insert(data);
}

}  // namespace

PreparedWeights::~PreparedWeights() {
  for (auto& [data, entry] : entries_) kept_bytes -= entry_bytes(*entry);
}

void PreparedWeights::forget(const void* data) {
  auto found = entries_.find(data);
  if (found == entries_.end()) return;
  kept_bytes -= entry_bytes(*found->second);
  entries_.erase(found);
}

PreparedWeights::Entry* PreparedWeights::find(const void* data, size_t bytes) {
  if (volatile_.count(data)) return nullptr;
  auto found = entries_.find(data);
  if (found != entries_.end()) {
    Entry& entry = *found->second;
    if (entry.contents.size() == bytes && std::memcmp(entry.contents.data(), data, bytes) == 0) {
      entry.repeated = true;
      return &entry;
    }
    if (entry.contents.size() != bytes || ++entry.changes > 1) {
      forget(data);
      remember(volatile_, data);
      return nullptr;
    }
    for (size_t form = 0; form < kForms; ++form) release(entry, form);
    std::memcpy(entry.contents.data(), data, bytes);
    entry.repeated = false;
    return &entry;
  }
  if (!seen_once_.count(data)) {
    remember(seen_once_, data);
    return nullptr;
  }
  if (entries_.size() >= kMaxEntries || !reserve(bytes)) return nullptr;
  auto entry = std::make_unique<Entry>();
  entry->contents.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  return entries_.emplace(data, std::move(entry)).first->second.get();
}

void PreparedWeights::release(Entry& entry, size_t form) {
  if (!entry.forms[form]) return;
  kept_bytes -= entry.forms[form].get_desc().get_size();
  entry.forms[form] = dnnl::memory();
}

bool PreparedWeights::allocate(Entry& entry, size_t form, const dnnl::memory::desc& desc,
                               const dnnl::engine& engine) {
  release(entry, form);
  if (!reserve(desc.get_size())) return false;
  entry.forms[form] = dnnl::memory(desc, engine);
  return true;
}

}  // namespace kiln::externs
