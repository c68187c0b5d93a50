// GPU loop pass: a loop of many independent stores (a foreach optimizer step's updates of ten
// tensors of one shape, joined by kernel_groups.h) becomes several loops of a few stores each,
// which the CUDA emitter runs as parts of one combined launch. One thread computing every
// store of such a loop kept so many values live that its launch took 194-246 registers a
// thread (one block a multiprocessor, resnet18's Adam step at 1.2 TB/s), and every other part
// of the combined function, however light, ran at that occupancy.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

// Splits each top-level loop of plain stores into loops of at most kMostStoresPerLoop stores
// (Adam's three updates of one tensor: 64 registers), never parting stores that meet: one
// reading a buffer another stores (in the same iteration, before or after it), two storing one
// buffer, or two reading one buffer at the loop's positions (parted, they would read it twice
// from memory). A kernel of top-level stores none of which reads another's (0-d step counts)
// becomes one-iteration loops, parts of one launch rather than one thread's chain of
// dependent loads.
inline constexpr size_t kMostStoresPerLoop = 3;
bool split_wide_loops(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched
