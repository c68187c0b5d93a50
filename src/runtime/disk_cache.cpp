#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "kiln/error.h"
#include "runtime/cache_maintenance.h"
#include "runtime/cache_root.h"

namespace kiln::runtime {
namespace {

// Bump when the entry layout or meta.txt changes: old entries then read as corrupt and rebuild.
constexpr const char* kMetaHeader = "kiln-cache-entry 1";
constexpr const char* kSourceName = "kernel.cpp";
constexpr const char* kMetaName = "meta.txt";
constexpr size_t kMaxMetaBytes = 4096;  // five short lines

// ---- SHA-256 (FIPS 180-4); small and dependency-free, the cache key needs nothing faster ----

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

uint32_t rotate_right(uint32_t value, int bits) { return (value >> bits) | (value << (32 - bits)); }

void sha256_block(std::array<uint32_t, 8>& state, const unsigned char* block) {
  uint32_t schedule[64];
  for (int i = 0; i < 16; ++i) {
    schedule[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
                  uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t sigma0 = rotate_right(schedule[i - 15], 7) ^ rotate_right(schedule[i - 15], 18) ^
                      (schedule[i - 15] >> 3);
    uint32_t sigma1 = rotate_right(schedule[i - 2], 17) ^ rotate_right(schedule[i - 2], 19) ^
                      (schedule[i - 2] >> 10);
    schedule[i] = schedule[i - 16] + sigma0 + schedule[i - 7] + sigma1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t sum1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t temporary1 = h + sum1 + choose + kRoundConstants[i] + schedule[i];
    uint32_t sum0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t temporary2 = sum0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + temporary1;
    d = c;
    c = b;
    b = a;
    a = temporary1 + temporary2;
  }
  state[0] += a, state[1] += b, state[2] += c, state[3] += d;
  state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

std::string sha256_hex(const std::string& message) {
  std::array<uint32_t, 8> state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* bytes = reinterpret_cast<const unsigned char*>(message.data());
  size_t full_blocks = message.size() / 64;
  for (size_t block = 0; block < full_blocks; ++block) sha256_block(state, bytes + 64 * block);
  // Padding: 0x80, zeros, then the message length in bits as a big-endian 64-bit integer.
  unsigned char tail[128] = {};
  size_t remainder = message.size() % 64;
  memcpy(tail, bytes + 64 * full_blocks, remainder);
  tail[remainder] = 0x80;
  size_t tail_size = remainder < 56 ? 64 : 128;
  uint64_t bit_length = uint64_t(message.size()) * 8;
  for (int i = 0; i < 8; ++i) {
    tail[tail_size - 1 - i] = static_cast<unsigned char>(bit_length >> (8 * i));
  }
  for (size_t offset = 0; offset < tail_size; offset += 64) sha256_block(state, tail + offset);
  char hex[65];
  for (int i = 0; i < 8; ++i) snprintf(hex + 8 * i, 9, "%08x", state[i]);
  return std::string(hex, 64);
}

[[noreturn]] void throw_file_error(const std::string& what, const std::string& path) {
  throw Error(ErrorKind::Toolchain,
              "kiln: cache: cannot " + what + " " + path + ": " + strerror(errno));
}

// ---- metadata ----

struct EntryMeta {
  std::string object_name;  // kernel-<checksum>.so, relative to the entry directory
  uint64_t size = 0;
  std::string checksum;
};

std::string format_meta(const std::string& key, const EntryMeta& meta) {
  return std::string(kMetaHeader) + "\nkey " + key + "\nobject " + meta.object_name + "\nsize " +
         std::to_string(meta.size) + "\nfnv1a64 " + meta.checksum + "\n";
}

bool is_hex(const std::string& text, size_t length) {
  if (text.size() != length) return false;
  for (char character : text) {
    if (!isxdigit(static_cast<unsigned char>(character))) return false;
  }
  return true;
}

// Parses meta.txt strictly: any deviation (old format, garbage, truncation) means "corrupt".
bool parse_meta(const std::string& text, const std::string& key, EntryMeta& meta) {
  std::istringstream lines(text);
  std::string header, field, value, size_text;
  if (!std::getline(lines, header) || header != kMetaHeader) return false;
  if (!(lines >> field >> value) || field != "key" || value != key) return false;
  if (!(lines >> field >> meta.object_name) || field != "object") return false;
  // The object name comes from disk: refuse anything that could point outside the entry.
  if (meta.object_name.size() != 26 || meta.object_name.compare(0, 7, "kernel-") != 0 ||
      meta.object_name.compare(23, 3, ".so") != 0 ||
      !is_hex(meta.object_name.substr(7, 16), 16)) {
    return false;
  }
  if (!(lines >> field >> size_text) || field != "size" || size_text.empty() ||
      size_text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  meta.size = std::strtoull(size_text.c_str(), nullptr, 10);  // saturates: too big either way
  if (meta.size > kMaxObjectBytes) return false;  // the object is read whole to verify it
  if (!(lines >> field >> meta.checksum) || field != "fnv1a64" || !is_hex(meta.checksum, 16)) {
    return false;
  }
  return meta.object_name.substr(7, 16) == meta.checksum;
}

std::mutex& counters_mutex() {
  static std::mutex mutex;
  return mutex;
}

void count(int64_t CacheCounters::*counter) {
  std::lock_guard<std::mutex> lock(counters_mutex());
  ++(DiskCache::counters().*counter);
}

void validate_key(const std::string& key) {
  // The key becomes a directory name: only plain characters, never "/" or "..".
  bool plain = key.size() >= 2;
  for (char character : key) {
    plain = plain && (isalnum(static_cast<unsigned char>(character)) || character == '_' ||
                      character == '-');
  }
  if (!plain) {
    throw Error(ErrorKind::Internal, "kiln: cache: invalid key '" + key +
                                         "' (expected 2+ characters of [A-Za-z0-9_-])");
  }
}

// A directory of the cache's layout (a shard, an entry, records), created if missing. Whatever
// else holds its name (a stray file, a symbolic link) is inside the root kiln owns and is never
// used: it is removed, rather than failing every compile.
void ensure_cache_directory(const std::string& path) {
  struct stat information;
  if (lstat(path.c_str(), &information) == 0 && !S_ISDIR(information.st_mode))
    unlink(path.c_str());
  ensure_private_directory(path);
}

// Whether an object's bytes hold `key`'s marker. memmem (two-way, skipping ahead): on a 1.2 MB
// object well under the checksum's 1.2 ms, where std::string::find took 0.4 ms.
bool has_key_marker(const std::string& bytes, const std::string& key) {
  const std::string marker = cache_key_marker(key);
  return memmem(bytes.data(), bytes.size(), marker.data(), marker.size()) != nullptr;
}

}  // namespace

// FNV-1a 64: cheap enough to verify every object on every hit, strong enough to catch
// truncation and garbage (the threat is a crash or a full disk, not an adversary).
std::string fnv1a_64_hex(const std::string& bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  char text[17];
  snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string cache_key_marker(const std::string& key) { return "kiln-cache-key:" + key; }

std::string cache_key(const std::vector<std::string>& fields) {
  // Each field as "<decimal length>:<bytes>", after the field count: no two different field
  // lists produce the same byte string.
  std::string message = std::to_string(fields.size()) + ";";
  for (const std::string& field : fields) {
    message += std::to_string(field.size());
    message += ':';
    message += field;
  }
  return sha256_hex(message);
}

std::string default_cache_dir() {
  const char* configured = getenv("KILN_CACHE_DIR");
  if (configured != nullptr && *configured != '\0') return configured;
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/kiln";
  const char* home = getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/kiln";
  // No $HOME (daemons, some containers): the password database knows the home directory.
  struct passwd entry, *found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/' && std::string(found->pw_dir) != "/")
    return std::string(found->pw_dir) + "/.cache/kiln";
  return "";
}

namespace {

void warn_once(const std::string& directory, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string>& warned = *new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(directory).second) fprintf(stderr, "kiln: warning: %s\n", message.c_str());
}

}  // namespace

DiskCache DiskCache::open(const std::string& requested, bool enabled) {
  if (!enabled) return DiskCache(process_private_directory());
  std::string directory = requested.empty() ? default_cache_dir() : requested;
  if (directory.empty()) {
    warn_once("", "no home directory for the kernel cache (set KILN_CACHE_DIR); compiled "
                  "kernels are kept in a private temporary directory for this process only");
    return DiskCache(process_private_directory());
  }
  try {
    return DiskCache(directory);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::Toolchain) throw;  // refused as unsafe: the user must know
    warn_once(directory, std::string(error.what()) + "; compiled kernels are kept in a private "
                         "temporary directory for this process only");
    return DiskCache(process_private_directory());
  }
}

namespace {

// Throws Error(Toolchain) unless directories can be made in `directory`: access(W_OK) says
// yes to root in /proc, where nothing can be. Tried once per directory and process.
void check_writable(const std::string& directory) {
  static std::mutex mutex;
  static std::set<std::string>& writable = *new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  if (writable.count(directory) != 0) return;
  const std::string probe = temporary_name(directory + "/.write-probe");
  if (mkdir(probe.c_str(), 0700) != 0) throw_file_error("create directories in", directory);
  rmdir(probe.c_str());
  writable.insert(directory);
}

}  // namespace

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
  ensure_private_directory(directory_);
  check_writable(directory_);
  // A directory of the user's own files (KILN_CACHE_DIR set to a project by mistake) is not
  // built in, nor evicted from: open() warns and builds in a private directory instead.
  std::string why;
  if (!claim_cache_root(directory_, &why))
    throw Error(ErrorKind::Toolchain, "kiln: the cache directory " + directory_ + " " + why);
}

CacheCounters& DiskCache::counters() {
  static CacheCounters process_counters;
  return process_counters;
}

std::string DiskCache::entry_directory(const std::string& key) const {
  return directory_ + "/" + key.substr(0, 2) + "/" + key;
}

std::string DiskCache::source_path(const std::string& key) const {
  return entry_directory(key) + "/" + kSourceName;
}

namespace {
constexpr const char* kRecordsName = "records";
constexpr const char* kRecordHeader = "kiln-record 1";
constexpr size_t kMaxRecordHeaderBytes = 256;

void check_record_key(const std::string& key) {
  if (!is_hex(key, 64))
    throw Error(ErrorKind::Internal, "kiln: a cache record's key must be a cache_key digest");
}

// A record's file: the header (its key, the bytes' size and checksum), then the bytes.
std::string format_record(const std::string& key, const std::string& bytes) {
  return std::string(kRecordHeader) + "\nkey " + key + "\nsize " + std::to_string(bytes.size()) +
         "\nfnv1a64 " + fnv1a_64_hex(bytes) + "\n" + bytes;
}

// The bytes of a record file of `key`; nullopt if it is anything but what format_record wrote
// for that key (another key's, cut short, altered).
std::optional<std::string> parse_record(const std::string& text, const std::string& key) {
  size_t header_end = std::string::npos;  // + 1 wraps to 0: the first search starts there
  for (int line = 0; line < 4; ++line) {
    header_end = text.find('\n', header_end + 1);
    if (header_end == std::string::npos) return std::nullopt;
  }
  std::string bytes = text.substr(header_end + 1);
  if (format_record(key, bytes) != text) return std::nullopt;
  return bytes;
}
}  // namespace

void DiskCache::store_record(const std::string& key, const std::string& bytes) const {
  check_record_key(key);
  if (bytes.size() > kMaxRecordBytes) return;  // it would read back as a miss
  const std::string records = directory_ + "/" + kRecordsName;
  ensure_cache_directory(records);
  write_private_file(records + "/" + key, format_record(key, bytes));
}

std::optional<std::string> DiskCache::load_record(const std::string& key, std::string* why) const {
  check_record_key(key);
  const std::string records = directory_ + "/" + kRecordsName, path = records + "/" + key;
  if (!is_private_directory(records)) return std::nullopt;
  std::string problem;
  Descriptor file = open_private_file(path, &problem);
  struct stat existing;
  if (!file.valid()) {
    if (why && lstat(path.c_str(), &existing) == 0) *why = problem;  // there, but not trusted
    return std::nullopt;
  }
  std::string text;
  std::optional<std::string> bytes;
  if (read_all(file.get(), text, kMaxRecordBytes + kMaxRecordHeaderBytes))
    bytes = parse_record(text, key);
  if (!bytes) {
    if (why) *why = "the record does not match its key, size and checksum";
    // Removed unless a writer has just replaced it: the next store would overwrite it anyway,
    // but a planted huge file should not stay.
    if (same_file(file.get(), path)) unlink(path.c_str());
  }
  return bytes;
}

namespace {

// The entry's object if meta.txt describes an intact, private one (see private_files.h);
// an invalid CachedObject otherwise, with `why` saying what is wrong.
CachedObject find_valid_object(const std::string& entry, const std::string& key,
                               std::string& why) {
  std::string shard = entry.substr(0, entry.find_last_of('/'));
  if (!is_private_directory(shard, &why) || !is_private_directory(entry, &why)) return {};
  Descriptor meta_file = open_private_file(entry + "/" + kMetaName, &why);
  std::string meta_text;
  EntryMeta meta;
  if (!meta_file.valid()) {
    why = "meta.txt: " + why;
    return {};
  }
  if (!read_all(meta_file.get(), meta_text, kMaxMetaBytes) ||
      !parse_meta(meta_text, key, meta)) {
    why = "meta.txt is damaged";
    return {};
  }
  CachedObject object;
  object.path = entry + "/" + meta.object_name;
  object.file = open_private_file(object.path, &why);
  std::string bytes;
  if (!object.file.valid()) {
    why = meta.object_name + ": " + why;
    return {};
  }
  // Read no more than meta.txt says: a bigger object (a planted sparse file) is not read.
  if (!read_all(object.file.get(), bytes, meta.size) || bytes.size() != meta.size ||
      fnv1a_64_hex(bytes) != meta.checksum) {
    why = meta.object_name + ": size or checksum differs from meta.txt";
    return {};
  }
  if (!has_key_marker(bytes, key)) {
    why = meta.object_name + ": built for another key";
    return {};
  }
  futimens(meta_file.get(), nullptr);  // last use, for least-recently-used eviction
  object.bytes = std::move(bytes);
  return object;
}

}  // namespace

namespace {

// A build failed because the cache's filesystem is full (our writes or the compiler's, whose
// message quotes the same strerror text), over quota, or read-only: not the user's code.
bool reports_full_filesystem(const std::string& message) {
  for (int code : {ENOSPC, EDQUOT, EROFS})
    if (message.find(strerror(code)) != std::string::npos) return true;
  return false;
}

}  // namespace

CachedObject DiskCache::get_or_build(const std::string& key,
                                     const std::function<std::string()>& make_source,
                                     const BuildFunction& build) {
  try {
    return get_or_build_here(key, make_source, build);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::Toolchain || !reports_full_filesystem(error.what()) ||
        directory_ == process_private_directory())
      throw;
    // A full disk must not fail the user's call, as an unwritable cache does not: what the
    // failed build began (a source, no meta.txt) is removed unless another process holds it,
    // and this cache builds in the process's private directory from now on.
    const std::string entry = entry_directory(key);
    remove_cache_entry(entry);
    rmdir(entry.substr(0, entry.find_last_of('/')).c_str());  // an empty shard
    warn_once(directory_, std::string(error.what()) + "; compiled kernels are kept in a private "
                          "temporary directory for this process only");
    directory_ = process_private_directory();
    return get_or_build_here(key, make_source, build);
  }
}

CachedObject DiskCache::get_or_build_here(const std::string& key,
                                          const std::function<std::string()>& make_source,
                                          const BuildFunction& build) {
  validate_key(key);
  const int64_t limit = cache_size_limit();  // a bad KILN_CACHE_MAX_BYTES fails before any work
  const std::string entry = entry_directory(key);
  const std::string meta_path = entry + "/" + kMetaName;

  // Lookup, under the entry's shared lock (lock_entry), held until the caller has loaded the
  // object. No meta.txt: a miss (also a build that died or is still running). A meta.txt that
  // does not describe an intact private object: corrupt, counted, and rebuilt below.
  Descriptor lock = lock_entry(entry);
  bool had_meta = lock.valid() && access(meta_path.c_str(), F_OK) == 0;
  std::string problem;
  CachedObject found = lock.valid() ? find_valid_object(entry, key, problem) : CachedObject{};
  if (found.file.valid()) {
    count(&CacheCounters::hits);
    found.hit = true;
    found.entry_lock = std::move(lock);
    return found;
  }
  if (had_meta) count(&CacheCounters::corrupt);
  // An entry that is damaged or not the user's own is never loaded; it is replaced, or, when
  // another process holds it (rebuilding it too), rebuilt in place: every file is replaced
  // atomically.
  struct stat existing;
  if (had_meta || (lstat(entry.c_str(), &existing) == 0 && !is_private_directory(entry))) {
    lock = Descriptor();  // our own lock would keep it
    remove_cache_entry(entry);
  }
  count(&CacheCounters::misses);

  // Build, under the entry's lock: eviction leaves it alone. The source is published first so
  // a compiler error can name a file the user can open; without meta.txt it is not an entry,
  // so a failed build leaves nothing to load.
  for (int attempt = 0; !lock.valid(); ++attempt) {
    ensure_cache_directory(directory_ + "/" + key.substr(0, 2));
    ensure_cache_directory(entry);
    lock = lock_entry(entry);  // invalid when evicted (empty) before we held it: again
    if (!lock.valid() && attempt == 10) throw_file_error("lock", entry);
  }
  remove_stale_temporaries(entry);
  const std::string source_file = entry + "/" + kSourceName;
  write_private_file(source_file, make_source());
  const std::string temporary_object = temporary_name(entry + "/kernel.so");
  try {
    build(source_file, temporary_object);
  } catch (...) {
    unlink(temporary_object.c_str());
    throw;
  }

  std::string why, object_bytes;
  CachedObject built;
  if (make_private(temporary_object, 0700, &why)) built.file = open_private_file(temporary_object,
                                                                                 &why);
  bool usable = built.file.valid() &&
                read_all(built.file.get(), object_bytes, kMaxObjectBytes) &&
                object_bytes.size() >= 4 && object_bytes.compare(0, 4, "\x7f" "ELF") == 0;
  if (usable && !has_key_marker(object_bytes, key)) {
    usable = false;  // it would never be loaded: a builder that left the marker out
    why = "it lacks its key's marker (cache_key_marker)";
  }
  if (!usable) {
    unlink(temporary_object.c_str());
    throw Error(ErrorKind::Toolchain, "kiln: cache: building " + source_file +
                                          " produced no usable shared object at " +
                                          temporary_object + (why.empty() ? "" : ": " + why));
  }

  // Publish. The object's name carries its checksum, so every published meta.txt names a file
  // whose bytes are fixed by that name and which was renamed into place before the meta.txt.
  // Concurrent builders (threads or processes) may each rename; whichever meta.txt lands last
  // wins and is valid either way — no lock needed, no window where meta and object disagree.
  EntryMeta meta;
  meta.size = object_bytes.size();
  meta.checksum = fnv1a_64_hex(object_bytes);
  meta.object_name = "kernel-" + meta.checksum + ".so";
  built.path = entry + "/" + meta.object_name;
  if (rename(temporary_object.c_str(), built.path.c_str()) != 0) {
    int saved = errno;
    unlink(temporary_object.c_str());
    errno = saved;
    throw_file_error("publish", built.path);
  }
  write_private_file(meta_path, format_meta(key, meta));
  built.bytes = std::move(object_bytes);
  built.entry_lock = std::move(lock);
  enforce_size_limit(directory_, limit, key);
  return built;
}

std::string check_cache_entry(const std::string& entry_directory, const std::string& key) {
  std::string why;
  return find_valid_object(entry_directory, key, why).file.valid() ? "" : why;
}

}  // namespace kiln::runtime
