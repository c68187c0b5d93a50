// OpenBLAS's kernel choice, made right once before kiln's first BLAS call (blas_kernels.cpp).
#pragma once
#include <string>

namespace kiln::externs {

// Idempotent and thread-safe; every path that calls cblas_* calls it first.
void select_blas_kernels();
// The kernels OpenBLAS runs ("SkylakeX", "Haswell", ...), after select_blas_kernels().
std::string blas_kernels();

}  // namespace kiln::externs
