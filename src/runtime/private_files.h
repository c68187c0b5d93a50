// Files and directories kiln trusts: the disk cache holds code that kiln loads into the user's
// process, so whatever it reads back must be the user's own and writable by no one else.
// The rules (what ssh does with ~/.ssh, what Python does with __pycache__ is weaker):
// - directories kiln creates are 0700; a directory it is handed must be owned by the effective
//   user and not writable by group or others, else kiln::Error(Permission) names the fix;
// - files are created with O_EXCL | O_NOFOLLOW under unpredictable temporary names, given an
//   explicit mode whatever the umask, then renamed into place;
// - files read back are opened with O_NOFOLLOW and checked on the open descriptor (regular,
//   owned by the user, not group/other-writable), so a check and its use see the same file.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kiln::runtime {

// Throws Error(Value) unless `path` can name the cache directory: absolute, with no NUL.
void check_cache_path(const std::string& path);

// Creates `path` and its missing parents (0700) and checks `path` itself is private. Throws
// Error(Permission) for a directory owned by someone else or writable by group/others, and
// Error(Toolchain) when it cannot be created (read-only file system, a file in the way).
void ensure_private_directory(const std::string& path);

// True if `path` is a directory (not a symbolic link) of the user's, writable only by them;
// otherwise false with `why`. For the directories inside the cache root.
bool is_private_directory(const std::string& path, std::string* why = nullptr);

// An open file descriptor that closes itself.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(int descriptor) : descriptor_(descriptor) {}
  Descriptor(Descriptor&& other) noexcept : descriptor_(other.release()) {}
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor();
  int get() const { return descriptor_; }
  bool valid() const { return descriptor_ >= 0; }
  int release() {
    int descriptor = descriptor_;
    descriptor_ = -1;
    return descriptor;
  }

 private:
  int descriptor_ = -1;
};

// Opens `path` for reading if it is a private regular file (see above); an invalid Descriptor
// when it is missing or fails a check (`why`, when given, says which).
Descriptor open_private_file(const std::string& path, std::string* why = nullptr);

// Whether `path` (not followed if a link) names the file open as `descriptor`: false once it
// was renamed away or replaced.
bool same_file(int descriptor, const std::string& path);

// The whole contents of an open file of at most `max_bytes`; false on a read error or a bigger
// file. The size is checked (fstat) before reading: a huge planted file, sparse or not, is
// refused rather than read into memory.
bool read_all(int descriptor, std::string& contents, size_t max_bytes);

// Writes all of `contents` at the descriptor's offset; false (errno set) on a write error.
bool write_all(int descriptor, const std::string& contents);

// Writes `contents` to `path` through a fresh temporary name and rename (readers see the old
// file or the new one), with `mode` exactly. Throws Error(Toolchain) on failure.
void write_private_file(const std::string& path, const std::string& contents, int mode = 0600);

// A fresh name next to `final_path` ("<final_path>.tmp.<pid>.<random>") that no other writer
// uses; the caller creates it with O_EXCL.
std::string temporary_name(const std::string& final_path);

// Gives the file a private mode (0700 for objects, 0600 otherwise) and checks it is the user's
// own regular file; false (with `why`) if not. Used on what the compiler wrote.
bool make_private(const std::string& path, int mode, std::string* why = nullptr);

// This process's private directory under $TMPDIR (or /tmp), made by mkdtemp at the first call
// and removed with everything in it when the process exits. For compiling without a usable
// disk cache. A forked child gets a directory of its own: the one it inherited is its parent's.
std::string process_private_directory();

// Removes a directory tree (best effort; never follows symbolic links).
void remove_tree(const std::string& path);

// The names in a directory ("." and ".." aside); none where it cannot be read.
std::vector<std::string> directory_names(const std::string& path);

}  // namespace kiln::runtime
