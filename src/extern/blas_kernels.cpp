// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels once, from the CPU's family and
// model number. A CPU newer than the library is missing from its table and gets the oldest
// kernels, "Prescott" (SSE3): on an Emerald Rapids Xeon (model 207) Debian 12's OpenBLAS 0.3.21
// did that, and kiln's GEMMs ran 5x slower than PyTorch's. When the library fell back like that
// on a CPU whose features (AVX-512, AVX2) a newer table of kernels serves, kiln has it choose
// again with that core, exactly as OPENBLAS_CORETYPE would at start-up. A user's own
// OPENBLAS_CORETYPE is left alone, and so is a library that is not a DYNAMIC_ARCH build (its
// selection entry points are then absent: weak symbols).
#include "extern/blas_kernels.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

extern "C" {
char* openblas_get_corename(void);
__attribute__((weak)) void gotoblas_dynamic_init(void);
__attribute__((weak)) void gotoblas_dynamic_quit(void);
}

namespace kiln::externs {
namespace {

// The OpenBLAS core for this CPU's vector extensions, or nullptr: keep the library's choice.
const char* core_for_this_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

void reselect() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE")) return;
  const char* chosen = openblas_get_corename();
  if (!chosen || strcasecmp(chosen, "Prescott") != 0) return;
  const char* core = core_for_this_cpu();
  if (!core) return;
  // The library reads its choice from the environment; it is there only while it chooses.
  setenv("OPENBLAS_CORETYPE", core, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace

void select_blas_kernels() {
  static std::once_flag once;
  std::call_once(once, reselect);
}

std::string blas_kernels() {
  select_blas_kernels();
  const char* name = openblas_get_corename();
  return name ? name : "";
}

}  // namespace kiln::externs
