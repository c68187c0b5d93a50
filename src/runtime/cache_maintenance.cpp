#include "runtime/cache_maintenance.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kiln/error.h"
#include "runtime/cache_root.h"
#include "runtime/disk_cache.h"
#include "runtime/private_files.h"
#include "runtime/environment_numbers.h"

namespace kiln::runtime {
namespace {

constexpr int64_t kDefaultLimit = int64_t(1) << 30;
constexpr time_t kStaleSeconds = 3600;

bool is_directory(const std::string& path) {
  struct stat information;
  return lstat(path.c_str(), &information) == 0 && S_ISDIR(information.st_mode);
}

// Bytes of the regular files in a tree (symbolic links not followed).
int64_t tree_bytes(const std::string& path) {
  struct stat information;
  if (lstat(path.c_str(), &information) != 0) return 0;
  if (!S_ISDIR(information.st_mode)) return S_ISREG(information.st_mode) ? information.st_size : 0;
  int64_t total = 0;
  for (const std::string& name : directory_names(path)) total += tree_bytes(path + "/" + name);
  return total;
}

// The pid in "<name>.tmp.<pid>.<hex>", or 0 if the name is not a kiln temporary file.
pid_t temporary_owner(const std::string& name) {
  size_t marker = name.find(".tmp.");
  if (marker == std::string::npos) return 0;
  char* end = nullptr;
  long pid = std::strtol(name.c_str() + marker + 5, &end, 10);
  return (pid > 0 && end != nullptr && *end == '.') ? static_cast<pid_t>(pid) : 0;
}

// Entry directories (<directory>/<2 chars>/<key>), skipping memos and the evicted. What holds a
// shard's name but is not a directory (a stray file) is visited as an entry of key "": kiln
// never uses it, and it is reported and removed as a bad entry.
template <class Visit>
void for_each_entry(const std::string& directory, Visit visit) {
  for (const std::string& shard : directory_names(directory)) {
    std::string shard_path = directory + "/" + shard;
    if (shard.size() != 2) continue;
    if (!is_directory(shard_path)) {
      visit("", shard_path);
      continue;
    }
    for (const std::string& key : directory_names(shard_path))
      if (key.compare(0, 2, shard) == 0 && is_directory(shard_path + "/" + key))
        visit(key, shard_path + "/" + key);
  }
}

Descriptor open_directory(const std::string& path) {
  return Descriptor(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

Descriptor lock_entry(const std::string& entry_directory) {
  for (;;) {
    Descriptor directory = open_directory(entry_directory);
    if (!directory.valid()) return directory;
    int result;
    do result = flock(directory.get(), LOCK_SH);
    while (result != 0 && errno == EINTR);
    // Locked (or a file system without flock: unprotected, as without the lock), unless it
    // was removed while we waited: then look again.
    if (same_file(directory.get(), entry_directory)) return directory;
  }
}

int64_t cache_size_limit() {
  // A whole number, as KILN_UNIT_BYTES: anything else is an error, never a silent default.
  return environment_whole_number("KILN_CACHE_MAX_BYTES", kDefaultLimit, 0,
                                  "is not a number of bytes (0 for no limit)");
}

// Throws unless `directory` is missing or kiln's (cache_root.h): what is not kiln's is not
// listed, evicted or cleared. Followed if it is a symbolic link, as compiling follows it (a
// link was never checked, and `clear` removed the two-letter files of the directory it named).
static void check_cache_root(const std::string& directory) {
  check_cache_path(directory);
  struct stat information;
  if (stat(directory.c_str(), &information) != 0) return;  // missing: nothing in it
  std::string why = "is not a directory";
  if (!S_ISDIR(information.st_mode) || !claim_cache_root(directory, &why))
    throw Error(ErrorKind::Value, "kiln: " + directory + " " + why + "; nothing was changed");
}

CacheReport inspect_cache(const std::string& directory, bool verify) {
  check_cache_root(directory);
  CacheReport report;
  report.directory = directory;
  report.limit = cache_size_limit();
  report.total_bytes = tree_bytes(directory);
  for_each_entry(directory, [&](const std::string& key, const std::string& path) {
    CacheEntryInfo info;
    info.key = key;
    info.path = path;
    info.bytes = tree_bytes(path);
    struct stat meta;
    if (stat((path + "/meta.txt").c_str(), &meta) == 0) info.last_used = meta.st_mtime;
    if (verify) {
      info.problem = key.empty() ? "not a directory (a shard belongs there)"
                                 : check_cache_entry(path, key);
    }
    report.entries.push_back(std::move(info));
  });
  return report;
}

bool remove_cache_entry(const std::string& entry_directory) {
  // The exclusive lock, not waited for: an entry someone holds (lock_entry) stays. Without
  // flock (some network file systems) it is removed as before.
  Descriptor directory = open_directory(entry_directory);
  if (directory.valid()) {
    if (flock(directory.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) return false;
    if (!same_file(directory.get(), entry_directory)) return false;  // removed meanwhile
  }
  // Renamed first: a concurrent reader finds the whole entry or none (a miss it rebuilds).
  std::string doomed = temporary_name(entry_directory + ".evicted");
  if (rename(entry_directory.c_str(), doomed.c_str()) != 0) return false;
  directory = Descriptor();
  remove_tree(doomed);
  return true;
}

void enforce_size_limit(const std::string& directory, int64_t limit, const std::string& keep) {
  CacheReport report = inspect_cache(directory, false);
  // The same walk finds what killed builds left behind.
  for (const CacheEntryInfo& entry : report.entries) remove_stale_temporaries(entry.path);
  if (limit <= 0) return;
  if (report.total_bytes <= limit) return;
  std::sort(report.entries.begin(), report.entries.end(),
            [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
              return a.last_used < b.last_used;
            });
  int64_t total = report.total_bytes;
  for (const CacheEntryInfo& entry : report.entries) {
    if (total <= limit / 5 * 4) break;
    if (entry.key == keep) continue;
    if (remove_cache_entry(entry.path)) total -= entry.bytes;
  }
}

void remove_stale_temporaries(const std::string& directory) {
  time_t now = time(nullptr);
  for (const std::string& name : directory_names(directory)) {
    pid_t owner = temporary_owner(name);
    if (owner == 0) continue;
    std::string path = directory + "/" + name;
    struct stat information;
    if (lstat(path.c_str(), &information) != 0) continue;
    bool owner_gone = kill(owner, 0) != 0 && errno == ESRCH;
    if (owner_gone || now - information.st_mtime > kStaleSeconds) remove_tree(path);
  }
}

int64_t clear_cache(const std::string& directory) {
  check_cache_root(directory);
  int64_t removed = 0;
  for_each_entry(directory, [&](const std::string&, const std::string& path) {
    removed += remove_cache_entry(path) ? 1 : 0;
  });
  for (const std::string& name : directory_names(directory)) {
    std::string path = directory + "/" + name;
    if (name.compare(0, 10, "toolchain-") == 0 || name == "records" || temporary_owner(name) != 0)
      remove_tree(path);
    if (name.size() == 2 && is_directory(path)) {
      for (const std::string& leftover : directory_names(path))
        if (temporary_owner(leftover) != 0) remove_tree(path + "/" + leftover);
      rmdir(path.c_str());
    }
  }
  return removed;
}

}  // namespace kiln::runtime
