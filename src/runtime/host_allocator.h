// Host memory for arrays kiln allocates (outputs, arena). Large blocks are kept for reuse when
// their array is freed: a fresh multi-megabyte allocation comes from mmap as untouched pages,
// and faulting those in on every call costs more than a bandwidth-bound kernel itself (16M
// floats: ~10 ms of page faults against ~8 ms of sin+cos). Small blocks go straight to malloc.
#pragma once
#include <cstddef>
#include <memory>

namespace kiln::runtime {

// 64-byte aligned, at least `bytes` long (never null, even for 0 bytes); freed, or kept for
// reuse, when the last owner goes.
std::shared_ptr<void> allocate_host(size_t bytes);

// Frees every kept block (tests, and callers that need the memory back).
void release_cached_host_memory();

}  // namespace kiln::runtime
