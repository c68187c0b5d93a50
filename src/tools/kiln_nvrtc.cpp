// kiln-nvrtc LIBRARY ARCHITECTURE SOURCE OBJECT: compiles one unit of kiln's CUDA source with
// NVRTC (the library file kiln's process loaded) for sm_ARCHITECTURE into the private file
// OBJECT, as kiln's process would (runtime/cuda/cuda_driver.h, compile_cubin_file). NVRTC
// compiles one program at a time in a process: kiln runs one of these per unit, in parallel.
// A failure's message goes to stderr, for kiln to raise.
#include <cstdio>
#include <string>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: kiln-nvrtc LIBRARY ARCHITECTURE SOURCE OBJECT\n");
    return 2;
  }
  try {
    kiln::runtime::cuda::use_nvrtc_library(argv[1]);
    kiln::runtime::cuda::compile_cubin_file(argv[3], argv[4], std::stoi(argv[2]),
                                            /*in_helper=*/false);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s", error.what());
    return 1;
  }
  return 0;
}
