#include "runtime/library_loading.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>

namespace kiln::runtime {
namespace {

// Never destroyed: threads may load after static destructors ran. Locked across fork(), so a
// child never inherits it locked by a thread that does not exist in the child.
struct Loading {
  std::mutex mutex;
  bool exiting = false;
  std::thread::id exiting_thread;
};

void close_loading_at_exit();

Loading& loading() {
  static auto* state = [] {
    auto* made = new Loading;
    pthread_atfork([] { loading().mutex.lock(); }, [] { loading().mutex.unlock(); },
                   [] { loading().mutex.unlock(); });
    std::atexit(close_loading_at_exit);  // after __libc_start_main's _dl_fini: so run before it
    return made;
  }();
  return *state;
}

void close_loading_at_exit() {
  Loading& state = loading();
  std::lock_guard<std::mutex> lock(state.mutex);  // a load in flight ends first
  state.exiting = true;
  state.exiting_thread = std::this_thread::get_id();
}

// Registers the exit handler when libkiln loads, before any load can be in flight.
[[maybe_unused]] const Loading& registered = loading();

}  // namespace

LoadingSection::LoadingSection() {
  Loading& state = loading();
  state.mutex.lock();
  if (state.exiting && std::this_thread::get_id() != state.exiting_thread) {
    state.mutex.unlock();
    for (;;) pause();
  }
}

LoadingSection::~LoadingSection() { loading().mutex.unlock(); }

void* open_library(const std::string& name, int flags) {
  LoadingSection section;
  return dlopen(name.c_str(), flags);
}

}  // namespace kiln::runtime
