// The caller's strided float32 operands as oneDNN memory: descriptors for any positive
// strides, a row-major copy for the rest (broadcast or flipped dimensions), grouped weights,
// and the reorders between the caller's layout and the blocked one a primitive prefers.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

// One kind of oneDNN primitives (`Entry`: a problem's primitives and buffers), cached per
// problem (a key of the shapes, strides and attributes that decide them) for the process: every
// compiled function shares them, the same layer in two graphs reuses its primitives. Never
// destroyed (functions may run while statics are torn down); past kLimit problems it starts
// over, which only costs their creation again.
template <class Entry>
class PrimitiveCache {
 public:
  static PrimitiveCache& instance() {
    static PrimitiveCache* cache = new PrimitiveCache;
    return *cache;
  }
  const dnnl::engine& engine() const { return engine_; }
  // The entry for `key`, made by create(engine) the first time.
  template <class Create>
  std::shared_ptr<Entry> find(std::vector<int64_t> key, const Create& create) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(key);
    if (found != entries_.end()) return found->second;
    if (entries_.size() >= kLimit) entries_.clear();
    std::shared_ptr<Entry> created = create(engine_);
    entries_.emplace(std::move(key), created);
    return created;
  }

 private:
  static constexpr size_t kLimit = 512;
  std::mutex mutex_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::map<std::vector<int64_t>, std::shared_ptr<Entry>> entries_;
};

dnnl::memory::dims to_dims(const std::vector<int64_t>& values);

// A float32 operand oneDNN can describe: as it is when every dimension longer than one has a
// positive stride (size-1 dimensions get stride 1), else a row-major copy kept in `copy`,
// which must outlive the returned operand.
StridedOperand describable_operand(StridedOperand operand, std::vector<float>& copy);

// The operand's layout as a oneDNN descriptor (float32).
dnnl::memory::desc plain_desc(const StridedOperand& operand);
// Whether an activation (N, C, *spatial) lies channels-last in memory: (N, *spatial, C), dense
// (size-1 dimensions may have any stride).
bool is_channels_last(const StridedOperand& activation);
// The format a primitive should take an activation of `rank` dimensions in: channels-last (nwc,
// nhwc, ndhwc) where the caller's activations are, so that none is reordered; otherwise the
// library's choice (any: a blocked layout, through reorders).
dnnl::memory::format_tag activation_format(size_t rank, bool channels_last);
// A contiguous row-major float32 descriptor of `shape`.
dnnl::memory::desc row_major_desc(const std::vector<int64_t>& shape);

// A weight (O, C / groups, *kernel) of `layout` as oneDNN's grouped weights
// (G, O / G, C / G, *kernel) when groups > 1; `layout` itself otherwise.
dnnl::memory::desc grouped_weight_desc(const dnnl::memory::desc& layout,
                                       const std::vector<int64_t>& shape,
                                       const std::vector<int64_t>& strides, int64_t groups);

// When `from` and `to` differ: a reorder between them, and a buffer with `library` (one of the
// two: the primitive's layout) that the primitive reads or writes instead of the caller's.
void plan_reorder(const dnnl::engine& engine, const dnnl::memory::desc& from,
                  const dnnl::memory::desc& to, const dnnl::memory::desc& library,
                  std::optional<dnnl::reorder>& reorder, dnnl::memory& buffer);

}  // namespace kiln::externs
