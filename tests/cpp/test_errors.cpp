// User errors through the public API: each raises a kiln::Error of the right kind that names
// the op, the operands' shapes or dtypes and the user's source line, and leaves the process and
// the disk cache usable. A failing C++ compiler is simulated with a KILN_CXX script.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "compile_test_util.h"
#include "runtime/executable.h"
#include "runtime/numpy_text.h"

namespace kiln::test {
namespace {

std::string here(int line) { return "test_errors.cpp:" + std::to_string(line); }

// Runs `function` on `inputs` and returns the kiln::Error it throws (fails the test if none).
Error expect_error(const Function& function, const std::vector<Array>& inputs) {
  try {
    function(inputs);
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no kiln::Error was thrown";
  return Error(ErrorKind::Internal, "");
}

// A runtime check's message names its values as NumPy's own messages print them: ints, and
// floats as Python's repr (f"{np.float32(0.1)}" prints the float64 0.10000000149011612).
TEST(Errors, RuntimeCheckMessagesPrintValuesAsNumPysMessagesDo) {
  const std::vector<std::pair<double, std::string>> floats = {
      {1.0, "1.0"}, {0.1, "0.1"}, {1e-4, "0.0001"},
      {9.999999747378752e-05, "9.999999747378752e-05"}, {1e-5, "1e-05"}, {1.5e-5, "1.5e-05"},
      {-3.25e-7, "-3.25e-07"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
      {123456789.123, "123456789.123"}, {1e100, "1e+100"}, {5e-324, "5e-324"}, {-0.0, "-0.0"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {100.0, "100.0"},
      {0.0012, "0.0012"}, {12345678901234567890.0, "1.2345678901234567e+19"},
      {std::nan(""), "nan"}, {-INFINITY, "-inf"}, {INFINITY, "inf"}};
  for (const auto& [value, text] : floats) EXPECT_EQ(runtime::float_text(value), text);

  runtime::RuntimeCheck check;
  check.before = "autodetected range of [";
  check.after = "] is not finite";
  check.value_dtype = DType::Float64;
  check.value_count = 2;
  const double range[2] = {-INFINITY, 0.10000000149011612};
  EXPECT_EQ(check.message(range),
            "autodetected range of [-inf, 0.10000000149011612] is not finite");
  check.value_dtype = DType::Int64;
  check.value_count = 1;
  const int64_t bins = 7;
  EXPECT_EQ(check.message(&bins), "autodetected range of [7] is not finite");
  // "{}" in `after`: the values after the first go there, in order
  check.before = "index ";
  check.after = " is out of bounds for axis 0 with size {}";
  check.value_count = 2;
  const int64_t index_and_size[2] = {-3, 1};
  EXPECT_EQ(check.message(index_and_size), "index -3 is out of bounds for axis 0 with size 1");
}

TEST(Errors, ShapeMismatchNamesTheOpBothShapesAndTheLine) {
  static int line = 0;
  Function function = compile(
      [](Tensor a, Tensor b) {
        line = __LINE__ + 1;
        return kiln::add(a, b);
      },
      test_options());
  Array a = make_array(DType::Float32, {3, 4}, {1});
  Error error = expect_error(function, {a, make_array(DType::Float32, {5}, {2})});
  EXPECT_EQ(error.kind(), ErrorKind::Value);
  std::string message = error.what();
  EXPECT_NE(message.find("add"), std::string::npos) << message;
  EXPECT_NE(message.find("(3, 4)"), std::string::npos) << message;
  EXPECT_NE(message.find("(5,)"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
  EXPECT_EQ(function.stats().disk_misses, 0) << "nothing may be compiled for a failed trace";

  // The same Function still compiles and runs for fitting shapes.
  std::vector<Array> sums = function(a, make_array(DType::Float32, {4}, {1, 2, 3, 4}));
  EXPECT_EQ(sums.at(0).to_vector<double>(),
            (std::vector<double>{2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5}));
}

TEST(Errors, BitwiseOpOnFloatsIsATypeError) {
  static int line = 0;
  Function function = compile([](Tensor a, Tensor b) {
    line = __LINE__ + 1;
    return kiln::bitwise_and(a, b);
  }, test_options());
  Array x = make_array(DType::Float64, {2}, {1, 2});
  Error error = expect_error(function, {x, x});
  EXPECT_EQ(error.kind(), ErrorKind::Type);
  std::string message = error.what();
  EXPECT_NE(message.find("bitwise_and"), std::string::npos) << message;
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
}

TEST(Errors, AxisOutOfRangeIsAnAxisError) {
  Array x = make_array(DType::Float32, {2, 3}, {1});
  struct Case {
    std::function<Tensor(Tensor)> body;
    const char* op;
  };
  static int lines[3];
  std::vector<Case> cases = {
      {[](Tensor t) { lines[0] = __LINE__; return kiln::sum(t, {2}); }, "sum"},
      {[](Tensor t) { lines[1] = __LINE__; return kiln::argmax(t, -3); }, "argmax"},
      {[](Tensor t) { lines[2] = __LINE__; return kiln::cumsum(t, 5); }, "cumsum"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    std::function<Tensor(Tensor)> body = cases[k].body;
    Function function = compile([body](Tensor t) { return body(t); }, test_options());
    Error error = expect_error(function, {x});
    EXPECT_EQ(error.kind(), ErrorKind::Axis) << cases[k].op << ": " << error.what();
    std::string message = error.what();
    EXPECT_NE(message.find(cases[k].op), std::string::npos) << message;
    EXPECT_NE(message.find(here(lines[k])), std::string::npos) << message;
    EXPECT_NE(message.find("(2, 3)"), std::string::npos) << message;
  }
}

// ---- a failing C++ compiler ------------------------------------------------------------------

// A stand-in for g++ that works for the toolchain's probes (--version, -Q --help=target) but,
// while $KILN_TEST_BREAK_COMPILER is set, fails every build after leaving a truncated object
// behind, as a compiler killed mid-write would.
const char* kBrokenCompilerScript = R"(#!/bin/sh
output=""
previous=""
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then output="$argument"; fi
  previous="$argument"
done
if [ -n "$KILN_TEST_BREAK_COMPILER" ] && [ -n "$output" ]; then
  printf '\177ELF truncated' > "$output"
  echo "simulated compiler failure" >&2
  exit 1
fi
exec g++ "$@"
)";

// Entries a later compile would load: every meta.txt under the cache directory.
int published_entries(const std::string& directory) {
  int count = 0;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory, ignored)) {
    if (entry.path().filename() == "meta.txt") ++count;
  }
  return count;
}

#define CHILD_CHECK(condition, code)                                       \
  do {                                                                     \
    if (!(condition)) {                                                    \
      std::cerr << "check failed: " #condition " (" << (code) << ")\n";    \
      return code;                                                         \
    }                                                                      \
  } while (0)

// Runs in a child process (the toolchain is chosen once per process). Returns 0 on success.
int broken_compiler_scenario() {
  TemporaryDirectory scratch("kiln-test-toolchain-");
  CHILD_CHECK(!scratch.path().empty(), 1);
  std::string script = scratch.path() + "/broken-g++";
  std::ofstream(script) << kBrokenCompilerScript;
  chmod(script.c_str(), 0755);
  std::string cache = scratch.path() + "/cache";
  setenv("KILN_CXX", script.c_str(), 1);
  setenv("KILN_TEST_BREAK_COMPILER", "1", 1);

  Options options;
  options.cache_dir = cache;
  auto body = [](Tensor x) { return kiln::sin(x) * 2.0; };
  Function function = compile(body, options);
  Array x = make_array(DType::Float32, {8}, {0, 1, 2, 3, 4, 5, 6, 7});
  try {
    function(x);
    CHILD_CHECK(false && "the broken compiler did not raise", 2);
  } catch (const Error& error) {
    std::string message = error.what();
    std::cerr << "caught: " << message << "\n";
    CHILD_CHECK(error.kind() == ErrorKind::Toolchain, 3);
    size_t at = message.find(cache);
    CHILD_CHECK(at != std::string::npos, 4);
    size_t end = message.find("kernel.cpp", at);
    CHILD_CHECK(end != std::string::npos, 5);
    std::string source_path = message.substr(at, end + std::string("kernel.cpp").size() - at);
    CHILD_CHECK(std::filesystem::exists(source_path), 6);  // the user can open it
    CHILD_CHECK(message.find("simulated compiler failure") != std::string::npos, 7);
  }
  CHILD_CHECK(published_entries(cache) == 0, 8);

  // The process carries on: with the compiler repaired the same Function compiles, and the
  // damaged entry is rebuilt rather than loaded.
  unsetenv("KILN_TEST_BREAK_COMPILER");
  std::vector<Array> result = function(x);
  CHILD_CHECK(function.stats().disk_hits == 0, 9);
  CHILD_CHECK(function.stats().disk_misses == 1, 10);
  std::vector<double> values = result.at(0).to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    CHILD_CHECK(std::fabs(values[i] - 2 * std::sin(double(i))) < 1e-5, 11);
  }
  CHILD_CHECK(published_entries(cache) == 1, 12);
  // A new Function finds that entry valid on disk.
  Function again = compile(body, options);
  again(x);
  CHILD_CHECK(again.stats().disk_hits == 1, 13);
  return 0;
}

int missing_compiler_scenario() {
  TemporaryDirectory scratch("kiln-test-toolchain-");
  setenv("KILN_CXX", "/bin/false", 1);
  Options options;
  options.cache_dir = scratch.path();
  Function function = compile([](Tensor x) { return x + 1.0; }, options);
  try {
    function(make_array(DType::Float64, {2}, {1, 2}));
    CHILD_CHECK(false && "/bin/false did not raise", 2);
  } catch (const Error& error) {
    std::cerr << "caught: " << error.what() << "\n";
    CHILD_CHECK(error.kind() == ErrorKind::Toolchain, 3);
    CHILD_CHECK(std::string(error.what()).find("/bin/false") != std::string::npos, 4);
  }
  return 0;
}

void run_in_fresh_process() {
#ifdef GTEST_FLAG_SET
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-exec: a process whose toolchain is unset
#else
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
#endif
}

TEST(ErrorsDeathTest, FailingCompilerIsAToolchainErrorNamingTheSourceAndLeavesNoEntry) {
  run_in_fresh_process();
  EXPECT_EXIT(_exit(broken_compiler_scenario()), ::testing::ExitedWithCode(0), "caught: ");
}

TEST(ErrorsDeathTest, CompilerThatCannotRunIsAToolchainError) {
  run_in_fresh_process();
  EXPECT_EXIT(_exit(missing_compiler_scenario()), ::testing::ExitedWithCode(0), "/bin/false");
}

}  // namespace
}  // namespace kiln::test
