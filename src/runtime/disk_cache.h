// The on-disk cache of compiled kernels: key -> directory holding the source, the shared
// object and metadata. Everything in it is private to the user (runtime/private_files.h):
// kiln loads code from it. Layout: <dir>/<key[0:2]>/<key>/{kernel.cpp, kernel-<checksum>.so,
// meta.txt}. Every file is written under a temporary name and renamed, and meta.txt (written
// last) names the shared object and records its size and checksum, so a reader never loads a
// half-written or corrupt entry: such an entry is detected, counted, and rebuilt. Naming the
// object by its checksum keeps meta.txt and object consistent under concurrent builders
// without a lock (see disk_cache.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/private_files.h"

namespace kiln::runtime {

// Bounds on what the cache reads back: a bigger file (planted, or a sparse one of any size) is
// a miss, never read into memory. Far past what kiln builds (its sources are at most 16 MiB).
inline constexpr size_t kMaxObjectBytes = size_t(256) << 20;
inline constexpr size_t kMaxRecordBytes = size_t(256) << 20;

struct CacheCounters {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t corrupt = 0;  // entries found damaged and rebuilt (each also counts as a miss)
};

// Hex digest of the given fields, each length-prefixed (so ("ab","c") != ("a","bc")).
std::string cache_key(const std::vector<std::string>& fields);

// What an object built for `key` holds: the builder compiles it in (api/pipeline.h:
// key_marker_source), and the cache loads no object without its key's marker, so an entry
// copied under another key is a miss however consistent its meta.txt.
std::string cache_key_marker(const std::string& key);

// Hex FNV-1a 64 of `bytes`: the cache's checksum of objects and of other cache-side keys.
std::string fnv1a_64_hex(const std::string& bytes);

// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln (from $HOME or the password
// database); "" when there is no home (never a shared name under /tmp).
std::string default_cache_dir();

// A verified shared object: its path, a descriptor open on it, and the bytes that were
// checked. What is loaded or run is `bytes`, never the file again (SharedLibrary loads a
// sealed in-memory copy of them): a write to the file after the check (a copy over it in
// place, a restore) cannot change what runs.
struct CachedObject {
  std::string path;
  Descriptor file;
  std::string bytes;
  // The entry's shared lock (cache_maintenance.h: lock_entry): keep the CachedObject until the
  // object is loaded, and no other process evicts the entry before.
  Descriptor entry_lock;
  bool hit = false;  // found in the cache (false: built by this call)
};

// "" if the entry directory holds a valid, private object for `key`, else what is wrong.
std::string check_cache_entry(const std::string& entry_directory, const std::string& key);

class DiskCache {
 public:
  // The cache in `directory` ("" = default_cache_dir()), created 0700 if missing. Refuses a
  // directory another user owns or others can write (Error(Permission)). With `enabled` false,
  // no usable home, or a directory that cannot be written (read-only), it uses a private
  // temporary directory removed at exit (the latter two with a warning on stderr, once).
  static DiskCache open(const std::string& directory, bool enabled = true);
  // Uses `directory` as it is, checked as above but with no fallback (tests, tools).
  explicit DiskCache(std::string directory);
  const std::string& directory() const { return directory_; }

  using BuildFunction =
      std::function<void(const std::string& source_path, const std::string& object_path)>;
  // Returns a valid shared object for `key`. On a miss (or a corrupt or untrusted entry) it
  // writes make_source() to the entry, calls `build(source_path, object_path)` to produce the
  // shared object at a temporary path, validates it (an ELF file with cache_key_marker(key)),
  // and publishes it atomically. Concurrent processes building the same key are safe: the
  // loser of the rename race uses the winner's.
  // After a build, least recently used entries are evicted past the size limit; never one in
  // use, as this one is while the result lives. The source is made only on a miss: a warm
  // start skips the work that produces it.
  // A build that fails because the cache's filesystem is full, over quota or read-only is
  // retried in the process's private temporary directory (a warning, once), where this
  // DiskCache then stays.
  CachedObject get_or_build(const std::string& key, const std::function<std::string()>& make_source,
                            const BuildFunction& build);
  CachedObject get_or_build(const std::string& key, const std::string& source,
                            const BuildFunction& build) {
    return get_or_build(key, [&source] { return source; }, build);
  }
  // The source path an entry has or would have (for error messages and KILN_LOGS).
  std::string source_path(const std::string& key) const;

  // Records: small files beside the entries, <directory>/records/<key>, for what a front end
  // keeps across processes (the torch backend's traced graphs, by the key of what Dynamo
  // handed it). `key` is a cache_key digest. Written atomically and privately, after a header
  // with the key and the bytes' size and checksum; read back only from a private file whose
  // header matches its key and bytes. A damaged record, one copied from another key, or one
  // past kMaxRecordBytes is a miss (nullopt; `why`, when given, says why a record that exists
  // was refused) and is removed. What the bytes mean is still the caller's to check.
  void store_record(const std::string& key, const std::string& bytes) const;
  std::optional<std::string> load_record(const std::string& key, std::string* why = nullptr) const;

  // Process-wide counters (all DiskCache instances).
  static CacheCounters& counters();

 private:
  CachedObject get_or_build_here(const std::string& key,
                                 const std::function<std::string()>& make_source,
                                 const BuildFunction& build);
  std::string entry_directory(const std::string& key) const;
  std::string directory_;
};

}  // namespace kiln::runtime
