#include "runtime/private_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

[[noreturn]] void throw_file_error(const std::string& what, const std::string& path) {
  throw Error(ErrorKind::Toolchain,
              "kiln: cache: cannot " + what + " " + path + ": " + strerror(errno));
}

std::string mode_text(mode_t mode);

// Why `information` (of a directory or file) is not private, or "" if it is.
std::string not_private_reason(const struct stat& information) {
  if (information.st_uid != geteuid())
    return "it is owned by uid " + std::to_string(information.st_uid) + ", not by you (uid " +
           std::to_string(geteuid()) + ")";
  if ((information.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return std::string("it is writable by ") +
           ((information.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
           mode_text(information.st_mode) + ")";
  return "";
}

std::string mode_text(mode_t mode) {
  char text[8];
  snprintf(text, sizeof text, "%03o", static_cast<unsigned>(mode & 0777));
  return text;
}

bool trusted_owner(uid_t owner) { return owner == 0 || owner == geteuid(); }

// Why a directory above `path` lets another user rename, replace or redirect what kiln reads
// under it (a swap of the cache root in the middle of a compile loaded their code), or "".
// OpenSSH's StrictModes rule, on the path as given and as resolved (a link's target too):
// each directory above it belongs to root or to you and is writable by no one else, unless
// it is sticky (/tmp), where no one renames what they do not own: then the entry kiln uses
// in it must be yours (or root's), not one another user made first (/tmp/$USER).
std::string unsafe_ancestor_reason(const std::string& path) {
  std::vector<std::string> forms{path};
  if (char* resolved = realpath(path.c_str(), nullptr)) {
    if (path != resolved) forms.emplace_back(resolved);
    free(resolved);
  }
  for (const std::string& form : forms) {
    for (size_t end = form.rfind('/'); end != std::string::npos && end > 0;
         end = form.rfind('/', end - 1)) {
      const std::string above = form.substr(0, end), entry = form.substr(0, form.find('/', end + 1));
      struct stat information, entry_information;
      if (stat(above.c_str(), &information) != 0) return above + ": " + strerror(errno);
      if (!trusted_owner(information.st_uid))
        return above + " (above it) is owned by uid " + std::to_string(information.st_uid);
      if ((information.st_mode & (S_IWGRP | S_IWOTH)) == 0) continue;
      if ((information.st_mode & S_ISVTX) == 0)
        return above + " (above it) is writable by " +
               ((information.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
               mode_text(information.st_mode) + ")";
      if (lstat(entry.c_str(), &entry_information) != 0) return entry + ": " + strerror(errno);
      if (!trusted_owner(entry_information.st_uid))
        return entry + " (in the shared directory " + above + ") is owned by uid " +
               std::to_string(entry_information.st_uid);
    }
  }
  return "";
}

// The private temporary directory of this process (process_private_directory) and the process
// that made it: a forked child inherits both, and must neither build in the parent's directory
// (the parent removes it at exit) nor remove it at its own exit (the parent builds there still).
struct PrivateDirectory {
  std::mutex mutex;
  pid_t owner = 0;
  std::string path;
};
// Never destroyed, so that it outlives the atexit handler that reads it. Locked across fork():
// a child never inherits it locked by a thread that does not exist in the child.
PrivateDirectory& private_directory() {
  static auto* directory = [] {
    auto* made = new PrivateDirectory;
    pthread_atfork([] { private_directory().mutex.lock(); },
                   [] { private_directory().mutex.unlock(); },
                   [] { private_directory().mutex.unlock(); });
    return made;
  }();
  return *directory;
}
void remove_private_directory() {
  PrivateDirectory& directory = private_directory();
  std::lock_guard<std::mutex> lock(directory.mutex);
  if (directory.owner == getpid()) remove_tree(directory.path);
}

}  // namespace

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (descriptor_ >= 0) close(descriptor_);
    descriptor_ = other.release();
  }
  return *this;
}

Descriptor::~Descriptor() {
  if (descriptor_ >= 0) close(descriptor_);
}

void check_cache_path(const std::string& path) {
  if (path.empty() || path[0] != '/')
    throw Error(ErrorKind::Value, "kiln: cache directory must be an absolute path, got '" +
                                      path + "'");
  // The system calls would read it up to the NUL: another directory than the one named.
  if (path.find('\0') != std::string::npos)
    throw Error(ErrorKind::Value, "kiln: cache directory must not contain a NUL character: '" +
                                      path.substr(0, path.find('\0')) + "\\x00...'");
}

void ensure_private_directory(const std::string& path) {
  check_cache_path(path);
  // mkdir -p with 0700; EEXIST is fine (another process may be creating it too). chmod after
  // mkdir: the umask may have removed the owner's bits.
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0700) == 0) {
      chmod(prefix.c_str(), 0700);
    } else if (errno != EEXIST) {
      struct stat existing;
      // Read-only file systems and unwritable parents report EROFS/EACCES even for directories
      // that exist; those are fine.
      if (stat(prefix.c_str(), &existing) != 0 || !S_ISDIR(existing.st_mode))
        throw_file_error("create directory", prefix);
    }
    if (slash == std::string::npos) break;
  }
  struct stat information;
  if (stat(path.c_str(), &information) != 0) throw_file_error("use directory", path);
  if (!S_ISDIR(information.st_mode)) {
    errno = ENOTDIR;
    throw_file_error("use directory", path);
  }
  std::string reason = not_private_reason(information);
  if (!reason.empty())
    throw Error(ErrorKind::Permission,
                "kiln: refusing the kernel cache directory " + path + ": " + reason +
                    ". kiln loads code from it, so it must be yours and writable only by you "
                    "(chmod 700 it, or set KILN_CACHE_DIR / options cache_dir to another one)");
  reason = unsafe_ancestor_reason(path);
  if (!reason.empty())
    throw Error(ErrorKind::Permission,
                "kiln: refusing the kernel cache directory " + path + ": " + reason +
                    ". kiln loads code from it, so no one else may be able to rename or "
                    "replace it or a directory above it (set KILN_CACHE_DIR / options "
                    "cache_dir to a directory under your home)");
  if (access(path.c_str(), W_OK) != 0) throw_file_error("write to directory", path);
}

bool is_private_directory(const std::string& path, std::string* why) {
  struct stat information;
  if (lstat(path.c_str(), &information) != 0 || !S_ISDIR(information.st_mode)) {
    if (why) *why = path + " is not a directory";
    return false;
  }
  std::string reason = not_private_reason(information);
  if (!reason.empty() && why) *why = path + ": " + reason;
  return reason.empty();
}

Descriptor open_private_file(const std::string& path, std::string* why) {
  Descriptor file(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!file.valid()) {
    if (why) *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
    return {};
  }
  struct stat information;
  if (fstat(file.get(), &information) != 0 || !S_ISREG(information.st_mode)) {
    if (why) *why = "it is not a regular file";
    return {};
  }
  std::string reason = not_private_reason(information);
  if (!reason.empty()) {
    if (why) *why = reason;
    return {};
  }
  return file;
}

bool same_file(int descriptor, const std::string& path) {
  struct stat opened, named;
  return fstat(descriptor, &opened) == 0 && lstat(path.c_str(), &named) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

bool read_all(int descriptor, std::string& contents, size_t max_bytes) {
  contents.clear();
  struct stat information;
  if (fstat(descriptor, &information) != 0) return false;
  if (S_ISREG(information.st_mode)) {
    if (static_cast<uint64_t>(information.st_size) > max_bytes) return false;
    contents.reserve(static_cast<size_t>(information.st_size));
  }
  char buffer[65536];
  for (;;) {
    ssize_t count = read(descriptor, buffer, sizeof buffer);
    if (count > 0) {
      if (static_cast<size_t>(count) > max_bytes - contents.size()) return false;  // it grew
      contents.append(buffer, static_cast<size_t>(count));
    } else if (count == 0) {
      return true;
    } else if (errno != EINTR) {
      return false;
    }
  }
}

bool write_all(int descriptor, const std::string& contents) {
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t count = write(descriptor, contents.data() + written, contents.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return false;
    written += static_cast<size_t>(count);
  }
  return true;
}

std::string temporary_name(const std::string& final_path) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_random = [] {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ device() ^
           uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  char suffix[64];
  snprintf(suffix, sizeof suffix, ".tmp.%d.%llx", static_cast<int>(getpid()),
           static_cast<unsigned long long>(process_random + counter.fetch_add(1)));
  return final_path + suffix;
}

void write_private_file(const std::string& path, const std::string& contents, int mode) {
  std::string temporary = temporary_name(path);
  Descriptor file(
      open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file.valid()) throw_file_error("create", temporary);
  bool failed = fchmod(file.get(), static_cast<mode_t>(mode)) != 0 ||
                !write_all(file.get(), contents);
  int saved = errno;
  if (close(file.release()) != 0 && !failed) {
    failed = true;
    saved = errno;
  }
  if (failed || rename(temporary.c_str(), path.c_str()) != 0) {
    if (!failed) saved = errno;
    unlink(temporary.c_str());
    errno = saved;
    throw_file_error("write", path);
  }
}

bool make_private(const std::string& path, int mode, std::string* why) {
  Descriptor file(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat information;
  if (!file.valid() || fstat(file.get(), &information) != 0 || !S_ISREG(information.st_mode) ||
      information.st_uid != geteuid() || fchmod(file.get(), static_cast<mode_t>(mode)) != 0) {
    if (why) *why = "the compiler's output is not a regular file of yours";
    return false;
  }
  return true;
}

std::string process_private_directory() {
  PrivateDirectory& directory = private_directory();
  std::lock_guard<std::mutex> lock(directory.mutex);
  if (directory.owner == getpid()) return directory.path;
  // $TMPDIR, else /tmp: a TMPDIR that is gone (a finished batch job's) must not fail every
  // compile, as it fails none of Python's tempfile.
  const char* base = getenv("TMPDIR");
  std::vector<std::string> patterns;
  if (base != nullptr && base[0] == '/')
    patterns.push_back(std::string(base) + "/kiln-private-XXXXXX");
  patterns.push_back("/tmp/kiln-private-XXXXXX");
  std::vector<char> buffer;
  for (const std::string& pattern : patterns) {
    buffer.assign(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) break;
    if (&pattern == &patterns.back()) throw_file_error("create a temporary directory in", pattern);
  }
  static bool registered = (std::atexit(remove_private_directory), true);
  (void)registered;
  directory.owner = getpid();
  directory.path = buffer.data();
  return directory.path;
}

std::vector<std::string> directory_names(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* directory = opendir(path.c_str())) {
    while (dirent* item = readdir(directory)) {
      std::string name = item->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(directory);
  }
  return names;
}

void remove_tree(const std::string& path) {
  struct stat information;
  if (lstat(path.c_str(), &information) != 0) return;
  if (S_ISDIR(information.st_mode)) {
    for (const std::string& name : directory_names(path)) remove_tree(path + "/" + name);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

}  // namespace kiln::runtime
