// The trusted-file rules of the disk cache (runtime/private_files.h) and the escaping of user
// text in generated source: each test plants what another user of the machine could.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "kiln/error.h"
#include "runtime/cache_maintenance.h"
#include "runtime/private_files.h"

namespace {

using namespace kiln::runtime;
namespace filesystem = std::filesystem;

class PrivateFilesTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln-private-files-test-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
  }
  void TearDown() override { filesystem::remove_all(root_); }
  int mode_of(const std::string& path) {
    struct stat information;
    EXPECT_EQ(lstat(path.c_str(), &information), 0) << path;
    return information.st_mode & 07777;
  }
  std::string root_;
};

// Runs `body` with umask 000, restoring the previous umask.
template <class Body>
void with_open_umask(Body body) {
  mode_t previous = umask(0);
  body();
  umask(previous);
}

TEST_F(PrivateFilesTest, CreatedDirectoriesAndFilesArePrivateWhateverTheUmask) {
  with_open_umask([&] {
    ensure_private_directory(root_ + "/a/b");
    write_private_file(root_ + "/a/b/file", "contents");
  });
  EXPECT_EQ(mode_of(root_ + "/a"), 0700);
  EXPECT_EQ(mode_of(root_ + "/a/b"), 0700);
  EXPECT_EQ(mode_of(root_ + "/a/b/file"), 0600);
}

TEST_F(PrivateFilesTest, DirectoriesOthersCanWriteAreRefused) {
  for (int mode : {0777, 0770, 01777, 0702}) {
    std::string directory = root_ + "/shared" + std::to_string(mode);
    ASSERT_EQ(mkdir(directory.c_str(), 0700), 0);
    ASSERT_EQ(chmod(directory.c_str(), static_cast<mode_t>(mode)), 0);
    try {
      ensure_private_directory(directory);
      ADD_FAILURE() << "mode " << mode << " was accepted";
    } catch (const kiln::Error& error) {
      EXPECT_EQ(error.kind(), kiln::ErrorKind::Permission);
      EXPECT_NE(std::string(error.what()).find("writable by"), std::string::npos);
    }
    EXPECT_FALSE(is_private_directory(directory));
  }
}

// A directory above the cache that another user can write lets them swap the cache for a tree
// of their own while kiln compiles (the linker then read their object): refused, through a
// symbolic link too. A sticky one (/tmp) is fine when the entry in it is the user's own.
TEST_F(PrivateFilesTest, DirectoriesAboveTheCacheOthersCanWriteAreRefused) {
  for (int mode : {0777, 0770, 0757}) {
    std::string above = root_ + "/open" + std::to_string(mode);
    ASSERT_EQ(mkdir(above.c_str(), 0700), 0);
    ASSERT_EQ(chmod(above.c_str(), static_cast<mode_t>(mode)), 0);
    std::string link = root_ + "/link" + std::to_string(mode);
    ASSERT_EQ(symlink((above + "/cache").c_str(), link.c_str()), 0);
    for (const std::string& cache : {above + "/cache", link}) {
      try {
        ensure_private_directory(cache);
        ADD_FAILURE() << cache << " under mode " << mode << " was accepted";
      } catch (const kiln::Error& error) {
        EXPECT_EQ(error.kind(), kiln::ErrorKind::Permission);
        EXPECT_NE(std::string(error.what()).find("(above it) is writable by"), std::string::npos)
            << error.what();
      }
    }
  }
  std::string sticky = root_ + "/sticky";
  ASSERT_EQ(mkdir(sticky.c_str(), 0700), 0);
  ASSERT_EQ(chmod(sticky.c_str(), 01777), 0);
  ensure_private_directory(sticky + "/mine/cache");  // the entry in it is the user's own
  if (geteuid() == 0) {  // an entry another user made first in the sticky directory
    std::string theirs = sticky + "/theirs";
    ASSERT_EQ(mkdir(theirs.c_str(), 0777), 0);
    ASSERT_EQ(chown(theirs.c_str(), 12345, 12345), 0);
    EXPECT_THROW(ensure_private_directory(theirs + "/cache"), kiln::Error);
  }
}

TEST_F(PrivateFilesTest, ReadBackFilesMustBePrivateRegularFilesNotLinks) {
  write_private_file(root_ + "/good", "ok");
  EXPECT_TRUE(open_private_file(root_ + "/good").valid());
  write_private_file(root_ + "/writable", "bad", 0666);
  std::string why;
  EXPECT_FALSE(open_private_file(root_ + "/writable", &why).valid());
  EXPECT_NE(why.find("writable by others"), std::string::npos) << why;
  ASSERT_EQ(symlink((root_ + "/good").c_str(), (root_ + "/link").c_str()), 0);
  EXPECT_FALSE(open_private_file(root_ + "/link", &why).valid());
  EXPECT_EQ(why, "it is a symbolic link");
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(open_private_file(root_ + "/fifo").valid());  // and does not block
}

TEST_F(PrivateFilesTest, WritingReplacesAPlantedSymlinkInsteadOfFollowingIt) {
  std::string victim = root_ + "/victim";
  write_private_file(victim, "precious");
  ASSERT_EQ(symlink(victim.c_str(), (root_ + "/memo").c_str()), 0);
  write_private_file(root_ + "/memo", "new");
  std::ifstream file(victim);
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "precious");
  EXPECT_EQ(mode_of(root_ + "/memo") & S_IFMT, 0);  // mode bits only: a plain file now
  EXPECT_TRUE(open_private_file(root_ + "/memo").valid());
}

TEST_F(PrivateFilesTest, TemporaryNamesAreUnpredictable) {
  EXPECT_NE(temporary_name("/x/memo"), temporary_name("/x/memo"));
  EXPECT_EQ(temporary_name("/x/memo").rfind("/x/memo.tmp." + std::to_string(getpid()) + ".", 0),
            0u);
}

TEST_F(PrivateFilesTest, StaleTemporariesOfDeadProcessesAreRemoved) {
  write_private_file(root_ + "/kernel.so.tmp.999999999.abc", "left by a killed build");
  std::string ours = temporary_name(root_ + "/kernel.so");
  write_private_file(ours, "a build in progress");
  write_private_file(root_ + "/meta.txt", "an entry file");
  remove_stale_temporaries(root_);
  EXPECT_FALSE(filesystem::exists(root_ + "/kernel.so.tmp.999999999.abc"));
  EXPECT_TRUE(filesystem::exists(ours));
  EXPECT_TRUE(filesystem::exists(root_ + "/meta.txt"));
}

TEST(CommentText, UserTextCannotLeaveTheComment) {
  using kiln::codegen::comment_text;
  EXPECT_EQ(comment_text("model.py:12"), "model.py:12");
  for (const std::string& payload :
       std::vector<std::string>{"a\n#include <x>", "a\r\n#define X", "a\\", "a\\\nb",
                                std::string("a\0b", 3), "caf\xc3\xa9"}) {
    std::string safe = comment_text(payload);
    for (char character : safe) {
      EXPECT_TRUE(character >= 0x20 && character < 0x7f) << payload;
    }
    EXPECT_NE(safe.back(), '\\') << payload;  // a trailing backslash splices the next line
  }
}

}  // namespace
