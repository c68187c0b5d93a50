// A dlopen'ed kernel library, closed when the last owner goes away.
//
// A process keeps at most loaded_library_limit() of them loaded at once (each costs about five
// memory maps, and a process that had compiled ~13k graphs ran out of vm.max_map_count: dlopen
// failed). Past the limit the least recently used libraries that no call is running in are
// unloaded; their next use loads them again through their Reloader (which finds the entry in
// the disk cache again, verified, or rebuilds it there). Code is only called through a Use,
// which keeps the library loaded while it lives; a symbol's address is valid for the
// generation() of the Use that resolved it (a reload may map the library elsewhere). Nothing
// else may point into a library: the executable image and constants are copied out of it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "runtime/disk_cache.h"

namespace kiln::sched {
struct Program;
}

namespace kiln::runtime {

// $KILN_MAX_LOADED_LIBRARIES (a positive whole number), else 1024. Anything else is a
// kiln::Error(Value) naming it.
int64_t loaded_library_limit();
// Kernel libraries loaded in this process now (tests, KILN_LOGS=cache).
int64_t loaded_library_count();

class SharedLibrary {
 public:
  // Finds the library's object again after it was unloaded: a verified path, and the entry
  // lock that keeps it until it is loaded (DiskCache::get_or_build; an entry evicted from the
  // disk meanwhile is rebuilt from `program`, the program of the executable asking, when the
  // library is that program's alone). Called with no lock held.
  using Reloader = std::function<CachedObject(const sched::Program* program)>;

  // Keeps the library loaded (and loads it again first if it was unloaded).
  class Use {
   public:
    Use(Use&& other) noexcept
        : library_(std::exchange(other.library_, nullptr)), generation_(other.generation_) {}
    Use& operator=(Use&&) = delete;
    ~Use();
    // Throws if the symbol is missing. Valid while a Use of this generation lives.
    void* symbol(const std::string& name) const;
    uint64_t generation() const { return generation_; }

   private:
    friend class SharedLibrary;
    Use(SharedLibrary* library, uint64_t generation) : library_(library), generation_(generation) {}
    SharedLibrary* library_;
    uint64_t generation_;
  };

  struct Opened;
  // Loads `object.bytes`, the verified bytes (from a sealed in-memory copy: later writes to
  // the file at `object.path` cannot change what runs); `object.path` names it in messages.
  // Throws kiln::Error(Toolchain) with dlerror() if it cannot be loaded. `reloader` empty:
  // the library is never unloaded while it has an owner (and does not count towards the
  // limit); a reloader's CachedObject is loaded the same way.
  static Opened open(const CachedObject& object, Reloader reloader = {});
  // The file at `path` as it is now (a caller's own object, not the cache's: tests).
  static Opened open(const std::string& path, Reloader reloader = {});
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // A Use: the library loaded (loaded again first through the reloader when it was unloaded;
  // `program` is handed to it).
  Use use(const sched::Program* program = nullptr);
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path, Reloader reloader);
  friend struct LibraryRegistry;
  void* handle_;           // null while unloaded; guarded by the registry's mutex
  std::string path_;       // of the last load
  Reloader reloader_;
  int64_t uses_ = 0;       // live Use objects (calls running in the library)
  uint64_t generation_ = 1;  // bumped by every reload
  uint64_t last_use_ = 0;    // registry tick of the last use()
  std::mutex load_mutex_;    // one reload at a time
};

// What open() returns: the library, and a Use that keeps it loaded while the opener reads it.
struct SharedLibrary::Opened {
  std::shared_ptr<SharedLibrary> library;
  Use use;
};

}  // namespace kiln::runtime
