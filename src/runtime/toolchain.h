// The system C++ compiler: finds it, fingerprints it for the cache key, and turns one generated
// source file into a shared object. Failures are kiln::Error(Toolchain) naming the source
// file and carrying the compiler's message.
#pragma once
#include <string>
#include <vector>

#include "runtime/embedded_bytes.h"

namespace kiln::runtime {

struct ToolchainFlags {
  // -O3 -march=native -fopenmp -fopenmp-simd -fno-math-errno -fwrapv -mprefer-vector-width=512
  // -fno-builtin-sin/cos(f) ... ; see toolchain.cpp for why each is there.
  std::vector<std::string> compile;
  std::vector<std::string> link;  // -fuse-ld=gold -lmvec -lm, as probed (toolchain.cpp)
};

// The first of $KILN_CXX, $CXX, g++, clang++ that is an executable (found via PATH), as an
// absolute path; "" if none. Toolchain::system() uses it once; exposed for tests.
std::string find_compiler();

class Toolchain {
 public:
  // $KILN_CXX, else $CXX, else g++, else clang++.
  static const Toolchain& system();

  const std::string& compiler() const { return compiler_; }
  // Compiler path + its --version first line + target flags: part of the cache key.
  const std::string& identity() const { return identity_; }
  const ToolchainFlags& flags() const { return flags_; }
  // `-wrapper setpriv,--pdeathsig,KILL` where the compiler takes it (toolchain.cpp), else {}:
  // started with it, the compiler's children die with it. Not part of the identity.
  const std::vector<std::string>& driver_wrapper() const { return driver_wrapper_; }
  // Compiles `source_path` into the shared object `output_path` (written as given; the caller
  // handles atomic placement). A source of several translation units (codegen/cpp/
  // translation_units.h) is compiled unit by unit, `jobs` compiler processes at a time, and
  // linked. `embedded` data is assembled into the library beside the source (embedded_bytes.h).
  // Throws kiln::Error(Toolchain) on failure, kiln::Error(Interrupted) on a Ctrl-C (every
  // unit's compiler killed; runtime/interruptible_work.h).
  void compile_shared_object(const std::string& source_path, const std::string& output_path,
                             int units = 1, int jobs = 1,
                             const std::vector<EmbeddedBytes>& embedded = {}) const;

 private:
  Toolchain();
  std::string compiler_;
  std::string identity_;
  ToolchainFlags flags_;
  std::vector<std::string> driver_wrapper_;
};

}  // namespace kiln::runtime
