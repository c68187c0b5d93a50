// Work spread over threads that a Ctrl-C still stops. The interruption check (process.h) sees
// the signal only on Python's main thread, so that thread runs none of the work: it watches
// for the interruption while threads of its own run the work.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>

namespace kiln::runtime {

// Set once the work is to stop: no item starts after it, and a run_process given it kills its
// child (process.h).
using StopFlag = std::atomic<bool>;

// Runs work(k, stop) for each k in [0, count) on up to `workers` threads. Once the interruption
// check asks for a stop (or an item throws Error(Interrupted)), `stop` is set and
// Error(Interrupted) is thrown after every thread has ended; otherwise the first failed item's
// exception is rethrown then.
void run_interruptibly(size_t count, size_t workers,
                       const std::function<void(size_t k, const StopFlag& stop)>& work);

}  // namespace kiln::runtime
