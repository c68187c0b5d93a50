// The system compiler wrapper and shared-object loading: real compiles of tiny translation
// units (each ~0.2 s), so the whole file stays around a second.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/error.h"
#include "runtime/process.h"
#include "runtime/shared_library.h"
#include "runtime/toolchain.h"

namespace {

using kiln::runtime::SharedLibrary;
using kiln::runtime::Toolchain;

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    char pattern[] = "/tmp/kiln-toolchain-test-XXXXXX";
    const char* created = mkdtemp(pattern);
    if (created == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = created;
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string write_source(const std::string& directory, const std::string& name,
                         const std::string& text) {
  std::string path = directory + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string command_output(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t count;
  while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
  pclose(pipe);
  return output;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(Toolchain, FindsCompilerAndComputesIdentityOnce) {
  const Toolchain& toolchain = Toolchain::system();
  EXPECT_EQ(&toolchain, &Toolchain::system());
  ASSERT_FALSE(toolchain.compiler().empty());
  EXPECT_EQ(toolchain.compiler()[0], '/') << toolchain.compiler();
  const std::string& identity = toolchain.identity();
  EXPECT_NE(identity.find(toolchain.compiler()), std::string::npos) << identity;
  EXPECT_NE(identity.find("version "), std::string::npos) << identity;
  EXPECT_NE(identity.find("-march=native"), std::string::npos) << identity;
  EXPECT_NE(identity.find("target "), std::string::npos) << identity;
  // Computed once: the same string object on every call.
  EXPECT_EQ(&identity, &Toolchain::system().identity());

  const auto& flags = toolchain.flags();
  for (const char* flag : {"-O3", "-march=native", "-fPIC", "-shared", "-fopenmp",
                           "-fopenmp-simd", "-fno-math-errno", "-fwrapv",
                           "-fno-builtin-sin", "-fno-builtin-cosf"}) {
    EXPECT_TRUE(contains(flags.compile, flag)) << flag;
  }
  EXPECT_TRUE(contains(flags.link, "-lm"));
  EXPECT_TRUE(contains(flags.link, "-lmvec")) << "glibc 2.36 on this machine ships libmvec";
}

TEST(Toolchain, FindCompilerHonoursKilnCxxAndSkipsMissingOnes) {
  const char* saved = getenv("KILN_CXX");
  std::string saved_value = saved ? saved : "";
  setenv("KILN_CXX", "/bin/sh", 1);  // any executable: selection only checks it exists
  EXPECT_EQ(kiln::runtime::find_compiler(), "/bin/sh");
  setenv("KILN_CXX", "/nonexistent/kiln-no-such-compiler", 1);
  testing::internal::CaptureStderr();
  std::string fallback = kiln::runtime::find_compiler();
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(fallback, "/nonexistent/kiln-no-such-compiler");
  EXPECT_FALSE(fallback.empty());
  EXPECT_NE(warning.find("KILN_CXX"), std::string::npos) << warning;
  if (saved) {
    setenv("KILN_CXX", saved_value.c_str(), 1);
  } else {
    unsetenv("KILN_CXX");
  }
}

TEST(Toolchain, CompilesLoadsAndCallsASharedObject) {
  TemporaryDirectory directory;
  std::string source = write_source(directory.path(), "answer.cpp",
                                    "extern \"C\" int kiln_test_answer() { return 6 * 7; }\n");
  std::string object = directory.path() + "/answer.so";
  Toolchain::system().compile_shared_object(source, object);

  auto opened = SharedLibrary::open(object);
  auto& library = opened.library;
  EXPECT_EQ(library->path(), object);
  auto answer = reinterpret_cast<int (*)()>(opened.use.symbol("kiln_test_answer"));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer(), 42);

  try {
    opened.use.symbol("kiln_no_such_symbol");
    FAIL() << "missing symbol did not throw";
  } catch (const kiln::Error& error) {
    EXPECT_NE(std::string(error.what()).find("kiln_no_such_symbol"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find(object), std::string::npos);
  }
}

// The executable image travels as bytes assembled in by .incbin (runtime/embedded_bytes.h):
// every byte value, an odd length, in a directory whose name needs escaping for the assembler;
// one translation unit (assembled with the compile) and two (assembled at the link).
TEST(Toolchain, EmbedsBytesIntoTheLibraryExactlyAndLeavesNoFileBehind) {
  TemporaryDirectory parent;
  const std::string directory = parent.path() + "/a \"quoted\\ dir";
  std::filesystem::create_directory(directory);
  std::string bytes;
  for (int k = 0; k < 1001; ++k) bytes += static_cast<char>((k * 7) & 255);
  std::string source = write_source(directory, "embed.cpp",  // unit 1 empty, as lay_out_units does
                                    "#if !defined(KILN_UNIT) || KILN_UNIT == 0\n"
                                    "extern \"C\" int kiln_test_answer() { return 42; }\n#endif\n");
  for (int units : {1, 2}) {
    std::string object = directory + "/embed" + std::to_string(units) + ".so";
    Toolchain::system().compile_shared_object(source, object, units, 2,
                                              {{"kiln_test_bytes", "kiln_test_bytes_size", bytes}});
    auto opened = SharedLibrary::open(object);
    auto size = *static_cast<const unsigned long*>(opened.use.symbol("kiln_test_bytes_size"));
    auto* data = static_cast<const char*>(opened.use.symbol("kiln_test_bytes"));
    ASSERT_EQ(size, bytes.size());
    EXPECT_EQ(std::string(data, size), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
    std::string headers = command_output("readelf -lW '" + object + "' | grep GNU_STACK");
    EXPECT_NE(headers.find("RW "), std::string::npos) << "an executable stack: " << headers;
  }
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"embed.cpp", "embed1.so", "embed2.so"}));
}

// Probed once per toolchain and remembered (toolchain memo): the setpriv wrapper where setpriv
// is on PATH, and gold where it links.
TEST(Toolchain, UsesTheDriverWrapperAndGoldWhereTheyWork) {
  const Toolchain& toolchain = Toolchain::system();
  if (!command_output("command -v setpriv").empty()) {
    ASSERT_EQ(toolchain.driver_wrapper().size(), 2u);
    EXPECT_EQ(toolchain.driver_wrapper()[0], "-wrapper");
    EXPECT_NE(toolchain.driver_wrapper()[1].find(",--pdeathsig,KILL"), std::string::npos);
  }
  if (!command_output("command -v ld.gold").empty())
    EXPECT_TRUE(contains(toolchain.flags().link, "-fuse-ld=gold"));
}

TEST(Toolchain, SyntaxErrorThrowsToolchainErrorNamingTheSource) {
  TemporaryDirectory directory;
  std::string source = write_source(directory.path(), "broken.cpp",
                                    "extern \"C\" int kiln_broken( { return 1 }\n");
  std::string object = directory.path() + "/broken.so";
  try {
    Toolchain::system().compile_shared_object(source, object);
    FAIL() << "a syntax error compiled";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::Toolchain);
    std::string message = error.what();
    EXPECT_EQ(message.rfind("kiln: C++ compiler failed on " + source + ":\n", 0), 0u) << message;
    EXPECT_NE(message.find("error"), std::string::npos) << message;  // the compiler's words
  }
  EXPECT_FALSE(std::filesystem::exists(object));
}

// Python sees Ctrl-C only on its main thread (the interruption check answers there alone), yet
// a compile split into units runs their compilers on other threads: the check's yes must still
// kill every unit's compiler, including one whose compile would take many seconds.
std::thread::id checking_thread;
std::chrono::steady_clock::time_point interrupt_at;
bool ctrl_c_on_the_checking_thread() {
  return std::this_thread::get_id() == checking_thread &&
         std::chrono::steady_clock::now() >= interrupt_at;
}

TEST(Toolchain, CtrlCSeenOnTheCallingThreadKillsEveryUnitsCompiler) {
  TemporaryDirectory directory;
  // Unit 1 evaluates constants for several seconds; unit 0 is done at once.
  std::string source = write_source(directory.path(), "units.cpp",
      "#if !defined(KILN_UNIT) || KILN_UNIT == 0\n"
      "extern \"C\" int kiln_test_answer() { return 42; }\n#endif\n"
      "#if !defined(KILN_UNIT) || KILN_UNIT == 1\n"
      "constexpr long spin(long s) {\n"
      "  for (long i = 0; i < 1000; ++i)\n"
      "    for (long j = 0; j < 1000; ++j) s = (s * 31 + j) % 1000003;\n"
      "  return s;\n}\n"
      "template <long K> struct Slow { static constexpr long value = spin(K); };\n"
      "static_assert(Slow<1>::value + Slow<2>::value + Slow<3>::value + Slow<4>::value >= 0);\n"
      "#endif\n");
  const std::string object = directory.path() + "/units.so";
  checking_thread = std::this_thread::get_id();
  interrupt_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  kiln::runtime::set_interruption_check(ctrl_c_on_the_checking_thread);
  try {
    Toolchain::system().compile_shared_object(source, object, 2, 2);
    ADD_FAILURE() << "the compile ended without the interruption";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::Interrupted) << error.what();
  }
  kiln::runtime::set_interruption_check(nullptr);
  EXPECT_EQ(command_output("pgrep -f '" + directory.path() + "/[u]nits.cpp'"), "")
      << "a unit's compiler still runs";
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(directory.path()))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, (std::vector<std::string>{"units.cpp"}));
}

TEST(Toolchain, DeclareSimdSinCallsLibmvecVariant) {
  TemporaryDirectory directory;
  std::string source = write_source(directory.path(), "vector_sin.cpp", R"(
#pragma omp declare simd notinbranch
extern "C" float sinf(float);
extern "C" void kiln_test_sin(const float* input, float* output) {
#pragma omp simd
  for (int i = 0; i < 1024; ++i) output[i] = sinf(input[i]);
}
)");
  std::string object = directory.path() + "/vector_sin.so";
  Toolchain::system().compile_shared_object(source, object);

  // The vector variants are named _ZGV<isa>N<lanes>v_sinf (vector function ABI).
  std::string symbols = command_output("nm -D '" + object + "' 2>&1");
  EXPECT_NE(symbols.find("_ZGV"), std::string::npos) << symbols;
  EXPECT_NE(symbols.find("v_sinf"), std::string::npos) << symbols;

  auto opened = SharedLibrary::open(object);
  auto& library = opened.library;
  auto vector_sin =
      reinterpret_cast<void (*)(const float*, float*)>(opened.use.symbol("kiln_test_sin"));
  std::vector<float> input(1024), output(1024);
  for (int i = 0; i < 1024; ++i) input[i] = -10.0f + 0.02f * static_cast<float>(i);
  vector_sin(input.data(), output.data());
  for (int i = 0; i < 1024; ++i) {
    // libmvec promises 4 ulp; |sin| <= 1 so an absolute bound of 1e-6 covers it.
    EXPECT_NEAR(output[i], std::sin(static_cast<double>(input[i])), 1e-6) << "i=" << i;
  }
}

// Past KILN_MAX_LOADED_LIBRARIES the least recently used library no Use holds is unloaded;
// its next use() loads it again through its reloader, and the generation says so.
TEST(SharedLibrary, UnloadsTheLeastRecentlyUsedPastTheLimitAndReloads) {
  TemporaryDirectory directory;
  std::vector<std::string> objects;
  for (int k = 0; k < 3; ++k) {
    std::string name = "value" + std::to_string(k);
    std::string source = write_source(directory.path(), name + ".cpp",
                                      "extern \"C\" int kiln_test_value() { return " +
                                          std::to_string(k) + "; }\n");
    objects.push_back(directory.path() + "/" + name + ".so");
    Toolchain::system().compile_shared_object(source, objects.back());
  }
  const char* saved = getenv("KILN_MAX_LOADED_LIBRARIES");
  const std::string saved_value = saved ? saved : "";
  setenv("KILN_MAX_LOADED_LIBRARIES", "2", 1);
  const int64_t before = kiln::runtime::loaded_library_count();
  int reloads = 0;
  std::vector<std::shared_ptr<SharedLibrary>> libraries;
  for (const std::string& object : objects) {
    libraries.push_back(SharedLibrary::open(object, [&reloads, object](const auto*) {
                          ++reloads;
                          kiln::runtime::CachedObject found;
                          found.path = object;
                          std::ifstream file(object, std::ios::binary);
                          found.bytes.assign(std::istreambuf_iterator<char>(file), {});
                          return found;
                        }).library);
  }
  EXPECT_LE(kiln::runtime::loaded_library_count() - before, 2);
  {
    SharedLibrary::Use first = libraries[0]->use();  // the oldest: unloaded, loaded again
    EXPECT_EQ(reloads, 1);
    EXPECT_GT(first.generation(), 1u);
    EXPECT_EQ(reinterpret_cast<int (*)()>(first.symbol("kiln_test_value"))(), 0);
    // In use, it stays loaded while the others come and go.
    for (int round = 0; round < 2; ++round)
      for (size_t k = 1; k < libraries.size(); ++k)
        EXPECT_EQ(reinterpret_cast<int (*)()>(libraries[k]->use().symbol("kiln_test_value"))(),
                  static_cast<int>(k));
    EXPECT_EQ(reinterpret_cast<int (*)()>(first.symbol("kiln_test_value"))(), 0);
  }
  libraries.clear();
  EXPECT_EQ(kiln::runtime::loaded_library_count(), before);
  setenv("KILN_MAX_LOADED_LIBRARIES", "0", 1);
  EXPECT_THROW(SharedLibrary::open(objects[0]), kiln::Error);
  if (saved)
    setenv("KILN_MAX_LOADED_LIBRARIES", saved_value.c_str(), 1);
  else
    unsetenv("KILN_MAX_LOADED_LIBRARIES");
}

// Kernel libraries are loaded from in-memory copies known to glibc by /proc/self/fd/N names,
// and descriptor numbers are reused. A library that dlclose keeps (a unique symbol makes it
// undeletable) keeps its name: a later library given the same name would be handed the old
// one's code. Each load must get a name no loaded library has.
TEST(SharedLibrary, ALibraryKeptAfterCloseIsNeverMistakenForTheNextOne) {
  TemporaryDirectory directory;
  std::vector<std::string> objects;
  for (int k = 0; k < 2; ++k) {
    std::string name = "kept" + std::to_string(k);
    // A template's static member is a STB_GNU_UNIQUE symbol: glibc never unloads its library.
    std::string source = write_source(
        directory.path(), name + ".cpp",
        "template <class T> struct " + name + " { static int value; };\n"
        "template <class T> int " + name + "<T>::value = " + std::to_string(10 + k) + ";\n"
        "extern \"C\" int kiln_test_value() { return " + name + "<int>::value; }\n");
    objects.push_back(directory.path() + "/" + name + ".so");
    Toolchain::system().compile_shared_object(source, objects.back());
  }
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 2; ++k) {
      auto opened = SharedLibrary::open(objects[k]);
      EXPECT_EQ(reinterpret_cast<int (*)()>(opened.use.symbol("kiln_test_value"))(), 10 + k)
          << "round " << round << ", library " << k;
    }
  }
}

TEST(SharedLibrary, MissingFileThrowsNamingThePath) {
  std::string path = "/nonexistent/kiln-no-such-library.so";
  try {
    SharedLibrary::open(path);
    FAIL() << "opening a missing file did not throw";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::Toolchain);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

}  // namespace
