// kiln-nvrtc LIBRARY ARCHITECTURE IDLE_SECONDS: one of kiln's NVRTC helper processes
// (runtime/cuda/nvrtc_helpers.h). It loads NVRTC from LIBRARY (the file kiln's process loaded),
// compiles a warm-up program for sm_ARCHITECTURE, then compiles the units kiln asks for on its
// stdin (a socket) into kiln's private cache files, as kiln's process would
// (compile_cubin_file), until kiln closes the connection or IDLE_SECONDS pass without a request.
// Built from those few sources alone, not libkiln.so: a helper starts without loading the BLAS
// and oneDNN libraries kiln links.
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc_helpers.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: kiln-nvrtc LIBRARY ARCHITECTURE IDLE_SECONDS (started by kiln)\n");
    return 2;
  }
  const rlimit no_core{0, 0};  // NVRTC crashing here leaves no core file in the user's folder
  setrlimit(RLIMIT_CORE, &no_core);
  try {
    kiln::runtime::cuda::use_nvrtc_library(argv[1]);
    return kiln::runtime::cuda::serve_nvrtc_requests(0, std::stoi(argv[2]), std::stoi(argv[3]));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln-nvrtc: %s\n", error.what());
    return 1;
  }
}
