#include "runtime/interruptible_work.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "kiln/error.h"
#include "runtime/process.h"

namespace kiln::runtime {

void run_interruptibly(size_t count, size_t workers,
                       const std::function<void(size_t, const StopFlag&)>& work) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  StopFlag stop{false};
  std::mutex lock;
  std::condition_variable ended;
  size_t running = 0;  // threads not yet ended, under `lock`
  auto loop = [&] {
    for (size_t k = next++; k < count && !stop; k = next++) {
      try {
        work(k, stop);
      } catch (const Error& error) {
        if (error.kind() == ErrorKind::Interrupted) stop = true;
        errors[k] = std::current_exception();
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> hold(lock);
    --running;
    ended.notify_all();
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::max<size_t>(1, std::min(workers, count)); ++t) {
    std::lock_guard<std::mutex> hold(lock);
    try {
      threads.emplace_back(loop);
      ++running;
    } catch (const std::system_error&) {  // no more threads: the ones started do the work
      break;
    }
  }
  if (threads.empty()) {
    running = 1;
    loop();  // here, where run_process asks the interruption check itself
  }
  std::unique_lock<std::mutex> held(lock);
  bool asked = false;
  while (running > 0) {
    const auto poll = std::chrono::milliseconds(kInterruptionPollMilliseconds);
    if (ended.wait_for(held, poll, [&] { return running == 0; }) || asked) continue;
    held.unlock();
    asked = interruption_requested();  // asked once: a yes makes the signal pending again
    held.lock();
    if (asked) stop = true;
  }
  held.unlock();
  for (std::thread& thread : threads) thread.join();
  if (stop) throw Error(ErrorKind::Interrupted, "kiln: interrupted while compiling");
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace kiln::runtime
