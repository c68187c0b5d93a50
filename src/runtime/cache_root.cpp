#include "runtime/cache_root.h"

#include <sys/stat.h>

#include <vector>

#include "runtime/private_files.h"

namespace kiln::runtime {
namespace {

constexpr const char* kTagName = "CACHEDIR.TAG";
// The standard's signature line, then what made it.
constexpr const char* kTagContents =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kiln (compiled kernels).\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

bool is_kind(const std::string& path, mode_t kind) {
  struct stat information;
  return lstat(path.c_str(), &information) == 0 && (information.st_mode & S_IFMT) == kind;
}

bool is_hex_name(const std::string& name, size_t length) {
  if (name.size() != length) return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_key_name(const std::string& name) {
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          c == '_' || c == '-'))
      return false;
  return !name.empty();
}

bool is_temporary(const std::string& name) { return name.find(".tmp.") != std::string::npos; }

// A directory holding only names that `is_name` takes, or temporary ones.
template <class Predicate>
bool holds_only(const std::string& path, Predicate is_name) {
  if (!is_kind(path, S_IFDIR)) return false;
  for (const std::string& name : directory_names(path))
    if (!is_temporary(name) && !is_name(name)) return false;
  return true;
}

// What kiln makes at the root: shards ("ab") of entries named by their 64-hex-digit keys
// ("ab12..."), records, the toolchain's memos and temporary names ("<name>.tmp.<pid>.<hex>").
bool is_kiln_made(const std::string& root, const std::string& name) {
  const std::string path = root + "/" + name;
  if (is_temporary(name)) return true;
  if (name == "records") return holds_only(path, is_key_name);
  if (name.compare(0, 10, "toolchain-") == 0) return is_kind(path, S_IFREG);
  return is_hex_name(name, 2) && holds_only(path, [&](const std::string& entry) {
           return is_hex_name(entry, 64) && entry.compare(0, 2, name) == 0;
         });
}

}  // namespace

bool claim_cache_root(const std::string& directory, std::string* why) {
  if (is_kind(directory + "/" + kTagName, S_IFREG)) return true;
  for (const std::string& name : directory_names(directory)) {
    if (!is_kiln_made(directory, name)) {
      if (why) {
        *why = "holds files kiln did not make ('" + name + "') and no " + kTagName +
               ": it is not kiln's cache";
      }
      return false;
    }
  }
  write_private_file(directory + "/" + kTagName, kTagContents, 0600);
  return true;
}

}  // namespace kiln::runtime
