// OpenBLAS's kernels: a CPU too new for the library's model table must not be served by its
// oldest fallback (extern/blas_kernels.cpp). Debian 12's OpenBLAS picked "Prescott" (SSE3) on
// an Emerald Rapids Xeon, 5x slower GEMMs than the CPU's AVX-512 kernels.
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>

#include "extern/blas_kernels.h"

namespace kiln::test {
namespace {

TEST(BlasKernels, AnAvx2CpuGetsVectorKernels) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || std::getenv("OPENBLAS_CORETYPE"))
    GTEST_SKIP() << "the CPU has no AVX2, or the user chose the kernels";
  std::string kernels = externs::blas_kernels();
  EXPECT_FALSE(kernels.empty());
  EXPECT_NE(strcasecmp(kernels.c_str(), "Prescott"), 0) << "OpenBLAS runs " << kernels;
}

}  // namespace
}  // namespace kiln::test
