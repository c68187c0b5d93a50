// Keeping the disk cache bounded and inspectable: the size limit with least-recently-used
// eviction, cleaning of temporary files that a killed build left, and the listing, checking
// and clearing behind `python -m kiln.cache` (and the C++ API).
#pragma once
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "runtime/private_files.h"

namespace kiln::runtime {

// $KILN_CACHE_MAX_BYTES (bytes; 0 = no limit), else 1 GiB. Anything but a whole number of
// bytes is an Error(Value) naming the variable.
int64_t cache_size_limit();

struct CacheEntryInfo {
  std::string key;       // "" for what holds a shard's name but is not a directory (bad)
  std::string path;      // the entry's directory
  int64_t bytes = 0;     // all its files
  time_t last_used = 0;  // meta.txt's modification time: set at build and on every disk hit
  std::string problem;   // "" if the entry verified (only filled when verifying)
};

struct CacheReport {
  std::string directory;
  std::vector<CacheEntryInfo> entries;
  int64_t total_bytes = 0;  // entries and everything else under the directory
  int64_t limit = 0;
};

// Lists the entries; with `verify`, checks each one's metadata, checksum and permissions.
CacheReport inspect_cache(const std::string& directory, bool verify);

// Removes stale temporary files (see remove_stale_temporaries) and evicts least recently used
// entries (never `keep`, nor one in use: see lock_entry) until the cache is at most 80% of
// `limit` whenever it exceeds `limit` (0: no limit). An entry is renamed away before it is
// deleted, so a reader sees it whole or not at all; a library already loaded stays valid.
void enforce_size_limit(const std::string& directory, int64_t limit, const std::string& keep = "");

// A shared lock (flock) on an entry's directory. Every process that reads or builds an entry
// holds one until it has loaded the object (CachedObject::entry_lock), and removing an entry
// takes the exclusive lock without waiting, so an entry in use, being built (no meta.txt yet)
// or just found, is never removed under its user. Invalid when the entry directory does not
// exist (errno says why).
Descriptor lock_entry(const std::string& entry_directory);

// Removes one entry (see enforce_size_limit); false if it did not exist or is in use.
bool remove_cache_entry(const std::string& entry_directory);

// Removes temporary files in `directory` left by builds whose process is gone or that are more
// than an hour old (a killed compile).
void remove_stale_temporaries(const std::string& directory);

// Removes every entry, memo and temporary file; returns how many entries went.
int64_t clear_cache(const std::string& directory);

}  // namespace kiln::runtime
