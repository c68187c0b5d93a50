#include "runtime/shared_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "kiln/error.h"
#include "runtime/environment_numbers.h"
#include "runtime/library_loading.h"

namespace kiln::runtime {
namespace {

constexpr int64_t kDefaultLoadedLibraries = 1024;

std::string last_dynamic_loader_error() {
  const char* message = dlerror();
  return message ? message : "unknown dynamic loader error";
}

std::set<std::string> loaded_object_names() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::set<std::string>*>(data)->insert(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

// The bytes in a sealed in-memory file (memfd), and the name dlopen can load it by; an
// invalid Descriptor where the system has no memfd or no /proc. The name is one no loaded
// object has: glibc knows a library by its name and would hand back the old one, and
// descriptor numbers are reused while a library closed but kept (unique symbols make it
// undeletable) keeps its name. The descriptor is moved to a free number instead; `retired`
// holds those skipped until the load is done.
Descriptor sealed_copy(const std::string& bytes, const std::string& path,
                       const std::set<std::string>& loaded, std::string& name,
                       std::vector<Descriptor>& retired) {
#ifndef MFD_EXEC
  constexpr unsigned kExecutable = 0x0010U;  // Linux 6.3: asked for where memfds default to noexec
#else
  constexpr unsigned kExecutable = MFD_EXEC;
#endif
  const std::string label = "kiln:" + path.substr(path.find_last_of('/') + 1);
  const unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  Descriptor file(memfd_create(label.c_str(), flags | kExecutable));
  if (!file.valid() && errno == EINVAL) file = Descriptor(memfd_create(label.c_str(), flags));
  if (!file.valid() || !write_all(file.get(), bytes) ||
      fcntl(file.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return Descriptor();
  for (;;) {
    name = "/proc/self/fd/" + std::to_string(file.get());
    if (loaded.count(name) == 0) break;
    Descriptor moved(fcntl(file.get(), F_DUPFD_CLOEXEC, 0));
    if (!moved.valid()) return Descriptor();
    retired.push_back(std::exchange(file, std::move(moved)));
  }
  if (access(name.c_str(), R_OK) != 0) return Descriptor();  // no /proc
  return file;
}

// dlopen of the verified bytes, and the libraries they pulled in (libgomp, libmvec) marked never
// to unload: a kernel library is closed once no call runs in it, but OpenMP's worker threads
// sleep inside libgomp between regions, and an unload of libgomp under them would crash the
// process.
// The library is loaded from a sealed copy of `bytes`, not from `path`: a library loaded by
// path stays mapped from its file, so a write into the cache file in place (cp over it, a
// restore) would change the code this process runs, or crash it, and one between the cache's
// check and the dlopen would run bytes never checked. The copy's pages cost about 0.4 ms a
// MB (an 886 KB library's load took 0.65 ms instead of 0.27). Only where memfd or /proc is
// missing, or the copy cannot be mapped executable, is `path` loaded as before (its
// directories are still private).
void* load(const std::string& path, const std::string& bytes) {
  LoadingSection section;  // so that the objects that appear are this load's
  const std::set<std::string> before = loaded_object_names();
  std::string name;
  std::vector<Descriptor> retired;
  Descriptor copy = sealed_copy(bytes, path, before, name, retired);
  if (!copy.valid()) name = path;
  // RTLD_NOW: an unresolved symbol fails here, naming the file, not at the first kernel call.
  // RTLD_LOCAL: kernels of different graphs export the same names; they must not interpose.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr && name != path) {  // a policy that maps no memfd executable (SELinux)
    name = path;
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    throw Error(ErrorKind::Toolchain,
                "kiln: cannot load compiled kernel " + path + ": " + last_dynamic_loader_error());
  }
  link_map* self = nullptr;
  std::string own_name = name;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &self) == 0 && self != nullptr && self->l_name != nullptr)
    own_name = self->l_name;
  for (const std::string& loaded : loaded_object_names()) {
    if (before.count(loaded) != 0 || loaded == own_name || loaded == name) continue;
    // RTLD_NOLOAD | RTLD_NODELETE promotes the loaded object; the extra reference goes again.
    if (void* dependency = dlopen(loaded.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
      dlclose(dependency);
  }
  return handle;  // the mapping keeps the memfd's pages: its descriptor closes here
}

// A file's whole contents, for open(path).
std::string file_bytes(const std::string& path) {
  Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string bytes;
  if (!file.valid() || !read_all(file.get(), bytes, kMaxObjectBytes)) {
    throw Error(ErrorKind::Toolchain,
                "kiln: cannot load compiled kernel " + path + ": " + strerror(errno));
  }
  return bytes;
}

}  // namespace

// The process's loaded reloadable libraries (leaked: never torn down at exit, where a daemon
// thread may still run a kernel).
struct LibraryRegistry {
  std::mutex mutex;
  std::set<SharedLibrary*> loaded;
  uint64_t tick = 0;

  static LibraryRegistry& instance() {
    static auto* registry = new LibraryRegistry;
    return *registry;
  }
  // Under `mutex`: unloads least recently used libraries no call runs in, while over `limit`.
  std::vector<void*> take_victims(int64_t limit) {
    std::vector<void*> victims;
    while (static_cast<int64_t>(loaded.size()) > limit) {
      SharedLibrary* oldest = nullptr;
      for (SharedLibrary* library : loaded)
        if (library->uses_ == 0 && (oldest == nullptr || library->last_use_ < oldest->last_use_))
          oldest = library;
      if (oldest == nullptr) break;  // all busy: the next load tries again
      victims.push_back(std::exchange(oldest->handle_, nullptr));
      loaded.erase(oldest);
    }
    return victims;
  }
};

namespace {
void close_all(const std::vector<void*>& handles) {
  for (void* handle : handles) dlclose(handle);
}
}  // namespace

int64_t loaded_library_limit() {
  return environment_whole_number("KILN_MAX_LOADED_LIBRARIES", kDefaultLoadedLibraries, 1,
                                  "is not a positive whole number of libraries");
}

int64_t loaded_library_count() {
  LibraryRegistry& registry = LibraryRegistry::instance();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return static_cast<int64_t>(registry.loaded.size());
}

SharedLibrary::SharedLibrary(void* handle, std::string path, Reloader reloader)
    : handle_(handle), path_(std::move(path)), reloader_(std::move(reloader)) {}

SharedLibrary::Opened SharedLibrary::open(const std::string& path, Reloader reloader) {
  CachedObject object;
  object.path = path;
  object.bytes = file_bytes(path);
  return open(object, std::move(reloader));
}

SharedLibrary::Opened SharedLibrary::open(const CachedObject& object, Reloader reloader) {
  const int64_t limit = loaded_library_limit();  // a bad setting fails before any work
  const bool reloadable = static_cast<bool>(reloader);
  // The constructor is private, so std::make_shared cannot reach it.
  std::shared_ptr<SharedLibrary> library(
      new SharedLibrary(load(object.path, object.bytes), object.path, std::move(reloader)));
  LibraryRegistry& registry = LibraryRegistry::instance();
  std::vector<void*> victims;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    ++library->uses_;
    library->last_use_ = ++registry.tick;
    generation = library->generation_;
    if (reloadable) {
      registry.loaded.insert(library.get());
      victims = registry.take_victims(limit);
    }
  }
  close_all(victims);
  SharedLibrary* raw = library.get();
  return Opened{std::move(library), Use(raw, generation)};
}

SharedLibrary::Use SharedLibrary::use(const sched::Program* program) {
  LibraryRegistry& registry = LibraryRegistry::instance();
  auto take = [&]() -> std::optional<Use> {  // under registry.mutex
    if (handle_ == nullptr) return std::nullopt;
    ++uses_;
    last_use_ = ++registry.tick;
    return Use(this, generation_);
  };
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (std::optional<Use> loaded = take()) return std::move(*loaded);
  }
  std::lock_guard<std::mutex> loading(load_mutex_);
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (std::optional<Use> loaded = take()) return std::move(*loaded);  // another thread did
  }
  const int64_t limit = loaded_library_limit();
  CachedObject object = reloader_(program);  // kept (with its entry lock) until loaded
  void* handle = load(object.path, object.bytes);
  std::vector<void*> victims;
  std::optional<Use> result;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    handle_ = handle;
    path_ = object.path;
    ++generation_;
    registry.loaded.insert(this);
    result.emplace(*take());
    victims = registry.take_victims(limit);
  }
  close_all(victims);
  return std::move(*result);
}

SharedLibrary::Use::~Use() {
  if (library_ == nullptr) return;
  LibraryRegistry& registry = LibraryRegistry::instance();
  std::lock_guard<std::mutex> lock(registry.mutex);
  --library_->uses_;
}

SharedLibrary::~SharedLibrary() {
  void* handle = nullptr;
  {
    LibraryRegistry& registry = LibraryRegistry::instance();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.loaded.erase(this);
    handle = std::exchange(handle_, nullptr);
  }
  if (handle != nullptr) dlclose(handle);
}

void* SharedLibrary::Use::symbol(const std::string& name) const {
  void* handle;
  {
    LibraryRegistry& registry = LibraryRegistry::instance();
    std::lock_guard<std::mutex> lock(registry.mutex);
    handle = library_->handle_;  // loaded: this Use keeps it so
  }
  dlerror();  // a null symbol is only an error if dlerror() says so
  void* address = dlsym(handle, name.c_str());
  if (address == nullptr) {
    const char* message = dlerror();
    if (message != nullptr) {
      throw Error(ErrorKind::Toolchain,
                  "kiln: symbol " + name + " not found in " + library_->path_ + ": " + message);
    }
  }
  return address;
}

}  // namespace kiln::runtime
