// The on-disk kernel cache: keys, hits and misses, corruption detection, and processes sharing
// one directory. One real compile per test binary; the "builds" copy that object so the file
// stays fast. Every test works in its own mkdtemp directory.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/error.h"
#include "runtime/cache_maintenance.h"
#include "runtime/cache_root.h"
#include "runtime/disk_cache.h"
#include "runtime/shared_library.h"
#include "runtime/toolchain.h"

namespace {

using kiln::runtime::cache_key;
using kiln::runtime::cache_key_marker;
using kiln::runtime::clear_cache;
using kiln::runtime::CacheCounters;
using kiln::runtime::DiskCache;
using kiln::runtime::SharedLibrary;
namespace filesystem = std::filesystem;

const char* const kAnswerSource = "extern \"C\" int kiln_test_answer() { return 42; }\n";

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    char pattern[] = "/tmp/kiln-cache-test-XXXXXX";
    const char* created = mkdtemp(pattern);
    if (created == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = created;
  }
  ~TemporaryDirectory() { filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

int call_answer(const std::string& object_path) {
  auto opened = SharedLibrary::open(object_path);
  return reinterpret_cast<int (*)()>(opened.use.symbol("kiln_test_answer"))();
}

class DiskCacheTest : public testing::Test {
 protected:
  static std::string answer_key() { return cache_key({"graph text", "options", "target"}); }

  // Compiling is the slow part; do it once and let each "build" copy the bytes. The object
  // holds its key's marker, as kiln's generated sources do (api/pipeline.h).
  static void SetUpTestSuite() {
    TemporaryDirectory scratch;
    std::string source = scratch.path() + "/answer.cpp";
    write_all(source, kAnswerSource + std::string("static __attribute__((used)) const char ") +
                          "kiln_cache_key[] = \"" + cache_key_marker(answer_key()) + "\";\n");
    kiln::runtime::Toolchain::system().compile_shared_object(source, scratch.path() + "/a.so");
    compiled_object_ = new std::string(read_all(scratch.path() + "/a.so"));
  }
  static void TearDownTestSuite() {
    delete compiled_object_;
    compiled_object_ = nullptr;
  }

  // The compiled object as if built for `key`: its key marker rewritten (keys are digests of
  // one length).
  static std::string object_for(const std::string& key) {
    std::string bytes = *compiled_object_;
    const std::string from = cache_key_marker(answer_key()), to = cache_key_marker(key);
    for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1))
      bytes.replace(at, from.size(), to);
    return bytes;
  }

  // A build callback that counts its calls and writes the compiled object for `key` (plus
  // `trailer`, harmless bytes after the ELF data that make two builds differ).
  auto copying_build(int& calls, const std::string& trailer = "", std::string key = answer_key()) {
    return [&calls, trailer, key](const std::string& source_path, const std::string& object_path) {
      ++calls;
      EXPECT_EQ(read_all(source_path), kAnswerSource);
      write_all(object_path, object_for(key) + trailer);
    };
  }

  static std::string* compiled_object_;
  TemporaryDirectory directory_;
  std::string key_ = answer_key();
};

std::string* DiskCacheTest::compiled_object_ = nullptr;

TEST(CacheKey, IsSha256OfLengthPrefixedFields) {
  // Expected digests from Python's hashlib over "<count>;" + "<length>:<bytes>" per field.
  EXPECT_EQ(cache_key({}), "f1ab6b1fa3e07be02cdd3816ad1c1c0f6a540c262e4c805f208a901850e5dde0");
  EXPECT_EQ(cache_key({"abc"}),
            "de202168a580967e3d2d940e04ce4818043576a482952b34032f898cb50f9039");
  EXPECT_EQ(cache_key({"ab", "c"}),
            "4931d25b98ea27eb0adff17094e86b64bdc23e2783a7ff15bc9c056c4c5c55b5");
  // Messages of 55, 56 and 63 bytes straddle SHA-256's one/two padding block boundary.
  EXPECT_EQ(cache_key({std::string(50, 'x')}),
            "088ee64c80d03d31a5a359a1992c6f461557ae5b0cdb5b809b8a71937b6e4df3");
  EXPECT_EQ(cache_key({std::string(51, 'x')}),
            "74a8e5abe53b9323ccb0138cb10ec23fb76e08ed94527ee259f89e9729071271");
  EXPECT_EQ(cache_key({std::string(58, 'x')}),
            "7690b393afe364aa6d7f7fe7f24583a9d103d30c124f20ddda425aaaed6cef67");
  EXPECT_EQ(cache_key({std::string(100, 'a')}),
            "e32557dfc4636d35b4602e26d8266ea3291110412181109024884b033e8ec23f");
}

TEST(CacheKey, ChangesWithEveryField) {
  std::vector<std::string> fields = {"graph", "options", "target", "compiler", "version"};
  std::string base = cache_key(fields);
  for (size_t i = 0; i < fields.size(); ++i) {
    std::vector<std::string> changed = fields;
    changed[i] += "!";
    EXPECT_NE(cache_key(changed), base) << "field " << i;
  }
  EXPECT_NE(cache_key({"ab", "c"}), cache_key({"a", "bc"}));
  EXPECT_NE(cache_key({"a", "b"}), cache_key({"b", "a"}));
  EXPECT_NE(cache_key({"a"}), cache_key({"a", ""}));
  EXPECT_EQ(cache_key(fields), base);
}

TEST(CacheKey, DefaultDirectoryFollowsTheEnvironment) {
  const char* saved = getenv("KILN_CACHE_DIR");
  std::string saved_value = saved ? saved : "";
  setenv("KILN_CACHE_DIR", "/somewhere/kiln-cache", 1);
  EXPECT_EQ(kiln::runtime::default_cache_dir(), "/somewhere/kiln-cache");
  unsetenv("KILN_CACHE_DIR");
  const char* home = getenv("HOME");
  if (home != nullptr && *home != '\0') {
    EXPECT_EQ(kiln::runtime::default_cache_dir(), std::string(home) + "/.cache/kiln");
  }
  if (saved) setenv("KILN_CACHE_DIR", saved_value.c_str(), 1);
}

// The root is kiln's when it holds CACHEDIR.TAG, written where it is empty or holds only
// kiln's layout (a cache from before the tag); a directory of other files is refused, and
// nothing is written there.
TEST(CacheRoot, OnlyAnEmptyOrKilnLaidOutDirectoryIsClaimed) {
  using kiln::runtime::claim_cache_root;
  TemporaryDirectory empty, kiln_layout, project, look_alike;
  EXPECT_TRUE(claim_cache_root(empty.path()));
  EXPECT_TRUE(filesystem::is_regular_file(empty.path() + "/CACHEDIR.TAG"));
  const std::string key = cache_key({"a graph"});
  filesystem::create_directories(kiln_layout.path() + "/" + key.substr(0, 2) + "/" + key);
  filesystem::create_directories(kiln_layout.path() + "/records");
  write_all(kiln_layout.path() + "/toolchain-0123.txt", "memo");
  EXPECT_TRUE(claim_cache_root(kiln_layout.path()));
  write_all(project.path() + "/notes.txt", "the user's");
  // two-character directories of names that are no keys ("go/golang"): not kiln's either
  filesystem::create_directories(look_alike.path() + "/go/golang");
  for (const TemporaryDirectory* refused : {&project, &look_alike}) {
    std::string why;
    EXPECT_FALSE(claim_cache_root(refused->path(), &why));
    EXPECT_NE(why.find("not kiln's cache"), std::string::npos) << why;
    EXPECT_FALSE(filesystem::exists(refused->path() + "/CACHEDIR.TAG"));
    EXPECT_THROW(clear_cache(refused->path()), kiln::Error);
  }
  EXPECT_TRUE(filesystem::exists(look_alike.path() + "/go/golang"));
}

TEST_F(DiskCacheTest, MissThenHitBuildsOnce) {
  CacheCounters before = DiskCache::counters();
  DiskCache cache(directory_.path() + "/nested/deeper");  // created with mkdir -p semantics
  int calls = 0;
  std::string first = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  std::string second = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(DiskCache::counters().misses - before.misses, 1);
  EXPECT_EQ(DiskCache::counters().hits - before.hits, 1);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 0);

  std::string entry = cache.directory() + "/" + key_.substr(0, 2) + "/" + key_;
  EXPECT_EQ(first.rfind(entry + "/", 0), 0u) << first;
  EXPECT_EQ(cache.source_path(key_), entry + "/kernel.cpp");
  EXPECT_EQ(read_all(cache.source_path(key_)), kAnswerSource);
  EXPECT_TRUE(filesystem::exists(entry + "/meta.txt"));
  EXPECT_EQ(call_answer(first), 42);
  for (const auto& file : filesystem::directory_iterator(entry)) {
    EXPECT_EQ(file.path().string().find(".tmp."), std::string::npos) << file.path();
  }

  // A different key is a different entry.
  const std::string other_key = cache_key({"other"});
  std::string other =
      cache.get_or_build(other_key, kAnswerSource, copying_build(calls, "", other_key)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_NE(other, first);
}

// Records (the torch backend's warm start): private files beside the entries, read back only
// when they are the user's own and writable by no one else; keys are digests.
TEST_F(DiskCacheTest, RecordsRoundTripAndAreReadOnlyWhenPrivate) {
  DiskCache cache(directory_.path());
  EXPECT_FALSE(cache.load_record(key_).has_value());
  cache.store_record(key_, std::string("header\n\0graph", 13));
  ASSERT_TRUE(cache.load_record(key_).has_value());
  EXPECT_EQ(*cache.load_record(key_), std::string("header\n\0graph", 13));
  cache.store_record(key_, "replaced");  // atomically, as every cache file
  EXPECT_EQ(*cache.load_record(key_), "replaced");
  const std::string path = cache.directory() + "/records/" + key_;
  EXPECT_EQ(filesystem::status(path).permissions() & filesystem::perms::all,
            filesystem::perms::owner_read | filesystem::perms::owner_write);
  filesystem::permissions(path, filesystem::perms::group_write, filesystem::perm_options::add);
  EXPECT_FALSE(cache.load_record(key_).has_value());  // writable by others: not trusted
  EXPECT_THROW(cache.store_record("../escape", "x"), kiln::Error);
  EXPECT_THROW(cache.load_record("not-a-digest"), kiln::Error);
  clear_cache(cache.directory());  // `python -m kiln.cache clear` removes records too
  EXPECT_FALSE(filesystem::exists(cache.directory() + "/records"));
}

// A record holds its key, size and checksum: one altered in place or copied from another key
// is a miss, and is removed.
TEST_F(DiskCacheTest, DamagedOrForeignRecordsAreMissesAndRemoved) {
  DiskCache cache(directory_.path());
  const std::string other_key = cache_key({"other"});
  cache.store_record(key_, "scale 2.5");
  cache.store_record(other_key, "scale 3.5");
  const std::string path = cache.directory() + "/records/" + key_;
  std::string text = read_all(path);
  text[text.size() - 3] = '3';  // "scale 3.5" under key_'s header
  write_all(path, text);
  std::string why;
  EXPECT_FALSE(cache.load_record(key_, &why).has_value());
  EXPECT_EQ(why, "the record does not match its key, size and checksum");
  EXPECT_FALSE(filesystem::exists(path));
  filesystem::copy_file(cache.directory() + "/records/" + other_key, path);
  EXPECT_FALSE(cache.load_record(key_).has_value());
  EXPECT_EQ(cache.load_record(other_key).value_or(""), "scale 3.5");
}

TEST_F(DiskCacheTest, TruncatedObjectIsDetectedAndRebuilt) {
  DiskCache cache(directory_.path());
  int calls = 0;
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  filesystem::resize_file(object, filesystem::file_size(object) / 2);

  CacheCounters before = DiskCache::counters();
  std::string rebuilt = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 1);
  EXPECT_EQ(DiskCache::counters().hits - before.hits, 0);
  EXPECT_EQ(filesystem::file_size(rebuilt), compiled_object_->size());
  EXPECT_EQ(call_answer(rebuilt), 42);

  // And the repaired entry is a plain hit again.
  cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 1);
}

TEST_F(DiskCacheTest, SameSizeGarbageObjectIsDetectedByChecksum) {
  DiskCache cache(directory_.path());
  int calls = 0;
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  std::string bytes = read_all(object);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_all(object, bytes);

  CacheCounters before = DiskCache::counters();
  std::string rebuilt = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 1);
  EXPECT_EQ(read_all(rebuilt), *compiled_object_);
}

// The cache's object written over in place (cp onto it, a restore) after kiln verified it:
// between the check and the load, or while it is loaded. What runs is the verified bytes; a
// library loaded by its path would run the foreign code, or crash once the file shrank.
TEST_F(DiskCacheTest, WritesIntoTheFileCannotChangeTheLoadedCode) {
  DiskCache cache(directory_.path());
  int calls = 0;
  cache.get_or_build(key_, kAnswerSource, copying_build(calls));
  kiln::runtime::CachedObject verified = cache.get_or_build(key_, kAnswerSource,
                                                            copying_build(calls));
  ASSERT_TRUE(verified.hit);
  // A foreign library of the same size whose answer is 7: `mov $42, %eax` patched.
  std::string foreign = *compiled_object_;
  const size_t move = foreign.find(std::string("\xb8\x2a\x00\x00\x00", 5));
  ASSERT_NE(move, std::string::npos);
  foreign[move + 1] = 7;

  write_all(verified.path, foreign);  // in place: the same inode, after the check
  {
    auto opened = SharedLibrary::open(verified);
    auto answer = reinterpret_cast<int (*)()>(opened.use.symbol("kiln_test_answer"));
    EXPECT_EQ(answer(), 42);
    write_all(verified.path, "");  // truncated under the loaded library
    EXPECT_EQ(answer(), 42);
    write_all(verified.path, foreign);
    EXPECT_EQ(answer(), 42);
  }
  // The next lookup finds the entry damaged and rebuilds it.
  EXPECT_EQ(call_answer(cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path), 42);
  EXPECT_EQ(calls, 2);
}

TEST_F(DiskCacheTest, GarbageOrMissingMetaIsRebuilt) {
  DiskCache cache(directory_.path());
  int calls = 0;
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  std::string meta = filesystem::path(object).parent_path() / "meta.txt";
  std::string good_meta = read_all(meta);

  CacheCounters before = DiskCache::counters();
  write_all(meta, "garbage\x01\x02 not a meta file");
  cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 1);
  EXPECT_EQ(read_all(meta), good_meta);

  // A meta.txt cut short (a crash mid-write would never publish one, but a full disk might).
  write_all(meta, good_meta.substr(0, good_meta.size() / 2));
  cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 2);

  // No meta at all is an unfinished entry: a plain miss, not corruption.
  filesystem::remove(meta);
  CacheCounters before_miss = DiskCache::counters();
  cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(DiskCache::counters().corrupt - before_miss.corrupt, 0);
  EXPECT_EQ(DiskCache::counters().misses - before_miss.misses, 1);
}

// A huge planted file (sparse: 100 GiB that take no disk) is refused by its size, never read
// into memory: the entry is rebuilt, the record a miss.
TEST_F(DiskCacheTest, HugeFilesAreMissesAndNeverRead) {
  constexpr uintmax_t kHuge = uintmax_t(100) << 30;
  DiskCache cache(directory_.path());
  int calls = 0;
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  std::string meta = filesystem::path(object).parent_path() / "meta.txt";
  CacheCounters before = DiskCache::counters();
  filesystem::resize_file(object, kHuge);
  EXPECT_EQ(call_answer(cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path), 42);
  filesystem::resize_file(meta, kHuge);
  EXPECT_EQ(call_answer(cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path), 42);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 2);

  cache.store_record(key_, "a record");
  filesystem::resize_file(cache.directory() + "/records/" + key_, kHuge);
  EXPECT_FALSE(cache.load_record(key_).has_value());
}

// A stray file where a shard or the records directory belongs is not the cache's: it is
// removed rather than failing every compile, and verify reports it and clear removes it.
TEST_F(DiskCacheTest, AFileWhereACacheDirectoryBelongsIsRemoved) {
  DiskCache cache(directory_.path());
  const std::string shard = cache.directory() + "/" + key_.substr(0, 2);
  write_all(shard, "junk");
  int calls = 0;
  EXPECT_EQ(call_answer(cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path), 42);
  EXPECT_TRUE(filesystem::is_directory(shard));
  write_all(cache.directory() + "/records", "junk");
  cache.store_record(key_, "a record");
  EXPECT_EQ(cache.load_record(key_).value_or(""), "a record");

  const std::string stray = cache.directory() + "/zz";
  write_all(stray, "junk");
  kiln::runtime::CacheReport report = kiln::runtime::inspect_cache(cache.directory(), true);
  ASSERT_EQ(report.entries.size(), 2u);
  for (const kiln::runtime::CacheEntryInfo& entry : report.entries)
    EXPECT_EQ(entry.problem.empty(), entry.path != stray) << entry.path << ": " << entry.problem;
  EXPECT_EQ(clear_cache(cache.directory()), 2);
  EXPECT_FALSE(filesystem::exists(stray));
}

// Eviction (the size limit, verify --remove, clear) never removes an entry in use: one being
// built, which has no meta.txt yet, nor one found, until its object is loaded.
TEST_F(DiskCacheTest, EvictionLeavesEntriesInUseAlone) {
  DiskCache cache(directory_.path());
  int calls = 0;
  const std::string old_key = cache_key({"old"});
  cache.get_or_build(old_key, kAnswerSource, copying_build(calls, "", old_key));
  const std::string old_entry = cache.directory() + "/" + old_key.substr(0, 2) + "/" + old_key;
  const std::string entry = cache.directory() + "/" + key_.substr(0, 2) + "/" + key_;
  // Another process's build enforces a one-byte limit while this one compiles.
  auto build = [&](const std::string&, const std::string& object_path) {
    kiln::runtime::enforce_size_limit(cache.directory(), 1);
    write_all(object_path, *compiled_object_);
  };
  kiln::runtime::CachedObject built = cache.get_or_build(key_, kAnswerSource, build);
  EXPECT_EQ(call_answer(built.path), 42);
  EXPECT_FALSE(filesystem::exists(old_entry));  // evicted: no one held it

  kiln::runtime::enforce_size_limit(cache.directory(), 1);
  EXPECT_FALSE(kiln::runtime::remove_cache_entry(entry));
  EXPECT_EQ(clear_cache(cache.directory()), 0);
  EXPECT_TRUE(filesystem::exists(built.path));  // still held: not yet loaded
  built = {};
  kiln::runtime::enforce_size_limit(cache.directory(), 1);
  EXPECT_FALSE(filesystem::exists(entry));
}

// An entry copied under another key with its meta.txt made to match (only the key line
// differs) is not loaded: the object carries the key it was built for.
TEST_F(DiskCacheTest, AnEntryPlantedUnderAnotherKeyIsRebuilt) {
  DiskCache cache(directory_.path());
  int calls = 0;
  const std::string other_key = cache_key({"other"});
  std::string other = cache.get_or_build(other_key, kAnswerSource,
                                         copying_build(calls, "", other_key)).path;
  const std::string entry = cache.directory() + "/" + key_.substr(0, 2) + "/" + key_;
  filesystem::create_directories(filesystem::path(entry).parent_path());
  filesystem::copy(filesystem::path(other).parent_path(), entry,
                   filesystem::copy_options::recursive);
  std::string meta = read_all(entry + "/meta.txt");
  meta.replace(meta.find(other_key), other_key.size(), key_);
  write_all(entry + "/meta.txt", meta);
  const std::string object_name = filesystem::path(other).filename();
  EXPECT_EQ(kiln::runtime::check_cache_entry(entry, key_), object_name + ": built for another key");

  CacheCounters before = DiskCache::counters();
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 1);
  EXPECT_EQ(read_all(object), *compiled_object_);

  // A build that leaves the marker out is refused: its entry could never be loaded.
  auto unmarked = [](const std::string&, const std::string& object_path) {
    write_all(object_path, object_for(cache_key({"yet another"})));
  };
  EXPECT_THROW(cache.get_or_build(cache_key({"unmarked"}), kAnswerSource, unmarked),
               kiln::Error);
}

TEST_F(DiskCacheTest, FailedBuildPublishesNothing) {
  DiskCache cache(directory_.path());
  auto failing_build = [](const std::string& source_path, const std::string& object_path) {
    write_all(object_path, "half an object");  // then the "compiler" fails
    throw kiln::Error(kiln::ErrorKind::Toolchain, "kiln: C++ compiler failed on " + source_path);
  };
  EXPECT_THROW(cache.get_or_build(key_, kAnswerSource, failing_build).path, kiln::Error);
  std::string entry = directory_.path() + "/" + key_.substr(0, 2) + "/" + key_;
  for (const auto& file : filesystem::directory_iterator(entry)) {
    EXPECT_EQ(file.path().filename(), "kernel.cpp") << "left behind: " << file.path();
  }

  // A build that "succeeds" without writing a shared object is refused too.
  auto empty_build = [](const std::string&, const std::string& object_path) {
    write_all(object_path, "not ELF");
  };
  try {
    cache.get_or_build(key_, kAnswerSource, empty_build).path;
    FAIL() << "a non-ELF object was published";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::Toolchain);
  }
  EXPECT_FALSE(filesystem::exists(entry + "/meta.txt"));

  int calls = 0;
  CacheCounters before = DiskCache::counters();
  EXPECT_EQ(call_answer(cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path), 42);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 0);
}

TEST_F(DiskCacheTest, RejectsKeysThatAreNotPlainNames) {
  DiskCache cache(directory_.path());
  int calls = 0;
  for (const char* key : {"", "a", "../escape", "ab/cd"}) {
    EXPECT_THROW(cache.get_or_build(key, kAnswerSource, copying_build(calls)).path, kiln::Error) << key;
  }
  EXPECT_EQ(calls, 0);
}

TEST_F(DiskCacheTest, NewProcessHitsTheEntry) {
  {
    DiskCache cache(directory_.path());
    int calls = 0;
    cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
    ASSERT_EQ(calls, 1);
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes: 0 = hit and loadable, 1 = it rebuilt, 2 = counters disagree, 3 = bad object.
    int exit_code = 0;
    try {
      DiskCache cache(directory_.path());
      CacheCounters before = DiskCache::counters();
      bool built = false;
      std::string object = cache.get_or_build(
          key_, kAnswerSource, [&](const std::string&, const std::string&) { built = true; }).path;
      if (built) {
        exit_code = 1;
      } else if (DiskCache::counters().hits - before.hits != 1) {
        exit_code = 2;
      } else if (call_answer(object) != 42) {
        exit_code = 3;
      }
    } catch (...) {
      exit_code = 4;
    }
    _exit(exit_code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(DiskCacheTest, TwoProcessesBuildingTheSameKeyBothSucceed) {
  const std::string barrier = directory_.path() + "/barrier";
  pid_t children[2];
  for (int index = 0; index < 2; ++index) {
    children[index] = fork();
    ASSERT_GE(children[index], 0);
    if (children[index] != 0) continue;
    int exit_code = 0;
    try {
      DiskCache cache(directory_.path() + "/cache");
      CacheCounters before = DiskCache::counters();
      // Each builder waits until the other has started building too, so both really race
      // through publication; their objects differ (trailer) to catch a meta/object mix-up.
      auto build = [&](const std::string&, const std::string& object_path) {
        write_all(barrier + std::to_string(index), "");
        std::string other = barrier + std::to_string(1 - index);
        for (int wait = 0; wait < 1000 && !filesystem::exists(other); ++wait) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        write_all(object_path, *compiled_object_ + "builder " + std::to_string(index));
      };
      std::string object = cache.get_or_build(key_, kAnswerSource, build).path;
      if (DiskCache::counters().misses - before.misses != 1) {
        exit_code = 1;
      } else if (call_answer(object) != 42) {
        exit_code = 2;
      }
    } catch (...) {
      exit_code = 3;
    }
    _exit(exit_code);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }

  // The entry left behind is whole: a hit, not corrupt, and loadable.
  DiskCache cache(directory_.path() + "/cache");
  CacheCounters before = DiskCache::counters();
  int calls = 0;
  std::string object = cache.get_or_build(key_, kAnswerSource, copying_build(calls)).path;
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(DiskCache::counters().hits - before.hits, 1);
  EXPECT_EQ(DiskCache::counters().corrupt - before.corrupt, 0);
  EXPECT_EQ(call_answer(object), 42);
  for (const auto& file : filesystem::directory_iterator(filesystem::path(object).parent_path())) {
    EXPECT_EQ(file.path().string().find(".tmp."), std::string::npos) << file.path();
  }
}

}  // namespace
